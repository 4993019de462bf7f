"""Widgets to explore a mapping: ``%%polycuda --explore`` and ``fn.explore()``.

One :class:`Explorer` is a panel of controls above a tab view, all ipywidgets,
updated in place (nothing is printed, so no page of output scrolls away):

controls
    tile sizes per band member (block-tile members, then sub-tiled sequential
    members, as ``--tile``), threads per block (x, y, z, as ``--block``), the
    shared-memory limit M_up in KB (``--shared-mem``), the buffers
    (``--shared none/auto/all``), the device-memory limit (``--device-mem``: runs
    split their launches to fit), the target, a *Run* button (and *Compare
    shared*: the emulator's global-memory loads/stores with none/auto/all).
tabs
    CUDA (highlighted), Mapping (loops to blocks and threads, schedule tree),
    Memory plan (buffers, bytes, the planner's decision and reason per array),
    Pictures (iteration space, one tile's footprint, the tile-size search's cost
    surface), Timings (runs: table and bars; traffic per variant).

Changing a control regenerates code, plan and the visible picture after a short
quiet period (``debounce_s``, 0.3 s: dragging a slider regenerates once).  The
compile is cached by source + options (:func:`polymagic.compiler.compile_source`),
and a configuration not seen before re-runs only the mapping and the code
generation: the Scop, dependences and schedule come from the pipeline's stage
cache, and the views read the mapping the compile kept (``Compiled.mapping``)
instead of mapping again.  Nothing on this path compiles with NVRTC or a C
compiler, or counts with barvinok (those wait for *Run*); the CUDA view is
highlighted in one regular-expression pass.  ``benchmarks/regen.py`` measures it.
Going back to a configuration costs only the views.  Pictures are drawn only while their tab is shown (and again when it is
opened after a change).  ``Explorer.timings`` keeps every regeneration's duration.

Runs use copies of the notebook's arrays: exploring never writes into them.
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace
from html import escape
from typing import Any, Callable, Mapping

import ipywidgets as W
import numpy as np

from ..errors import PolymagicError
from ..options import Options, option_names
from . import explore as E

TABS = ("CUDA", "Mapping", "Memory plan", "Pictures", "Timings")
PICTURES = ("iteration space", "tile footprint", "tile search", "schedules", "localisation",
            "autotune")

#: stage toggles: control -> (Options field, how the control's value maps to it, the
#: issue the feature arrives with).  A toggle whose field Options does not have (yet)
#: is shown disabled with a tooltip saying so; fields are looked up at run time, so
#: a toggle comes alive as soon as its stage lands.
STAGE_TOGGLES = {
    "mapping": (("mapping",), "superposition (seed 003) or a single schedule", 4),
    "registers": (("registers",), "register promotion (seed 004 §4.2)", 3),
    "localise": (("localise", "no_localise"), "localisation along sequential loops "
                 "(seed 001)", 5),
    "reductions": (("reductions", "reduction", "no_reductions"),
                   "thread-level tree reductions (seed 003 §5)", 4),
}


def _option_field(names: tuple[str, ...]) -> str | None:
    """The first of ``names`` that Options has (None: the stage has not landed)."""
    have = option_names()
    return next((n for n in names if n in have), None)
TARGETS = ("emulator", "openmp", "gpu", "auto")

#: ``autotuner(source, options, language=..., namespace=..., progress=...)`` returning
#: a :class:`polymagic.api.autotune.AutotuneResult`: the api layer above hands it in
#: (:func:`polymagic.api.explorer.explore`), since the report never imports the api
Autotuner = Callable[..., Any]


class Debouncer:
    """Calls ``fn`` once, ``delay`` seconds after the last of a burst of calls: on the
    running asyncio loop (the Jupyter kernel's) when there is one, else on a timer
    thread; at once when ``delay`` is 0."""

    def __init__(self, delay: float, fn):
        self.delay = delay
        self.fn = fn
        self._handle = None
        self._lock = threading.Lock()
        #: calls are dropped (the holder regenerates once itself, see Explorer.set):
        #: no timer thread is started per control set
        self.held = False

    def __call__(self) -> None:
        if self.held:
            return
        if self.delay <= 0:
            self.fn()
            return
        with self._lock:
            self.cancel()
            try:
                loop = asyncio.get_running_loop()
                self._handle = loop.call_later(self.delay, self.fn)
            except RuntimeError:
                t = threading.Timer(self.delay, self.fn)
                t.daemon = True
                t.start()
                self._handle = t

    def cancel(self) -> None:
        h, self._handle = self._handle, None
        if h is not None:
            h.cancel()

    @property
    def pending(self) -> bool:
        """A call is scheduled and has not run (nor been cancelled) yet."""
        h = self._handle
        if h is None:
            return False
        if isinstance(h, threading.Timer):
            return h.is_alive()
        return not h.cancelled()


def _pre(text: str) -> str:
    return (f'<pre style="font-size:85%;line-height:1.35;margin:0;white-space:pre-wrap">'
            f'{escape(text)}</pre>')


def _band(compiled, options: Options) -> list[tuple[str, int]]:
    """(label, size) of every ``--tile`` entry: the widest tiled band's block-tile
    members, then its sub-tiled members (planned with buffers, so they show)."""
    from ..mapping import DEFAULT_SUB_TILE, DEFAULT_TILES
    opts = options if options.shared != "none" else options.with_(shared="auto")
    try:
        info = E.mapping_of(compiled, opts)
    except Exception:      # noqa: BLE001 - the controls still work with defaults
        info = None
    best = None
    if info is not None:
        tiled = [k for k in info.kernels if k.members]
        if tiled:
            best = max(tiled, key=lambda k: len(k.members) + len(k.sub_tiles))
    tile = list(E.effective_options(compiled, options).tile or ())
    out = []
    if best is None:
        labels = [(f"t{j}", DEFAULT_TILES[2][j]) for j in range(2)]
    else:
        labels = [(f"{m.loop} (block)", m.tile) for m in best.members]
        for s in best.sub_tiles:
            name = s.split(" (sub-tile")[0]
            labels.append((f"{name} (sub-tile)", DEFAULT_SUB_TILE))
    for j, (label, size) in enumerate(labels):
        out.append((label, tile[j] if j < len(tile) else size))
    return out


class Explorer:
    """The exploration panel for one function (see the module docstring).

    ``source``/``language``: the function; ``options``: the starting configuration
    (sizes, tiles, ...); ``namespace``: where run inputs come from (copied);
    ``report``: a run already made (its sizes and times are shown);
    ``autotuner``: what the *Autotune* button runs (:data:`Autotuner`; without one
    the button is disabled).  Set control values
    (``explorer.controls['tile0'].value = 16``) and the views follow; with
    ``debounce_s=0`` they follow at once (tests, scripts)."""

    def __init__(self, source: str, options: Options | None = None, language: str = "c",
                 namespace: Mapping | None = None, report=None, compiled=None,
                 debounce_s: float = 0.3, autotuner: Autotuner | None = None):
        from ..compiler import compile_source
        self.source = source
        self.language = language
        self.autotuner = autotuner
        options = options or Options()
        sizes = dict(options.sizes)
        if report is not None:
            sizes = {**{k: v for k, v in report.sizes.items()}, **sizes}
        self.base = options.with_(sizes=sizes, explore=False, quiet=True, json=False)
        self.namespace = namespace or {}
        self.compiled = compiled or compile_source(source, self.base, language=language)
        made_with = self.base.compile           # the first compile's options (its key)
        self.base = E.effective_options(self.compiled, self.base)
        self.current: Options = self.base      # the configuration the views show
        self.timings: list[dict] = []          # one entry per regeneration
        self.runs: dict[str, object] = {}      # label -> RunReport
        self.variants: dict[str, object] = {}  # compare shared: label -> RunReport
        self.search = None                     # TileSearchResult
        self.autotuned = None                  # api.autotune.AutotuneResult
        self.error: str | None = None
        self._stale_picture = True
        self._pictures: dict[tuple, bytes] = {}   # PNGs by configuration and picture
        self._busy = threading.Lock()
        self._build()
        # the controls spell the first compile's tiles and block out (options() ==
        # ``spelled``): while they still show them, that compile is the configuration
        self._first_compile = (self.options().compile, made_with)
        self._last_run: dict[str, object] = {}   # configuration label -> its last run
        if report is not None:
            self.runs[self._run_label(self.base, report)] = report
            self._last_run[self._label(self.base)] = report
        self._debounce = Debouncer(debounce_s, self._regenerate_safely)
        # the first views show the compile just made: the controls spell its tiles and
        # block out, options another compile would be keyed by (issue 22: the first
        # visit compiled twice)
        self._first: object | None = self.compiled
        self.regenerate()

    # ---- building ----------------------------------------------------------------
    def _build(self) -> None:
        o = self.base
        style = {"description_width": "110px"}
        lay = W.Layout(width="330px")
        self.controls: dict[str, W.Widget] = {}
        self.band = _band(self.compiled, o)
        for j, (label, size) in enumerate(self.band):
            self.controls[f"tile{j}"] = W.IntSlider(
                value=int(size), min=1, max=max(256, int(size)), description=label,
                style=style, layout=lay, continuous_update=True)
        block = list(o.block or self._block_default())
        block = (block + [1, 1, 1])[:3]
        for a, v in zip("xyz", block):
            self.controls[f"block_{a}"] = W.IntSlider(
                value=int(v), min=1, max=1024, description=f"threads {a}", style=style,
                layout=lay, continuous_update=True)
        self.controls["shared"] = W.ToggleButtons(options=["none", "auto", "all"],
                                                  value=o.shared, description="shared",
                                                  style={**style, "button_width": "60px"})
        self.controls["shared_mem"] = W.IntSlider(
            value=max(1, min(48, o.shared_mem // 1024)), min=1, max=48,
            description="M_up (KB)", style=style, layout=lay, continuous_update=True)
        mem = [("no limit", 0), ("64 KB", 64 << 10), ("256 KB", 256 << 10), ("1 MB", 1 << 20),
               ("16 MB", 16 << 20), ("256 MB", 256 << 20), ("4 GB", 4 << 30)]
        if o.device_mem and o.device_mem not in [v for _, v in mem]:
            mem.append((f"{o.device_mem} B", o.device_mem))
        self.controls["device_mem"] = W.Dropdown(options=mem, value=o.device_mem or 0,
                                                 description="device mem", style=style,
                                                 layout=W.Layout(width="240px"))
        self.controls["target"] = W.Dropdown(options=list(TARGETS),
                                             value=o.target if o.target in TARGETS
                                             else "emulator",
                                             description="target", style=style,
                                             layout=W.Layout(width="240px"))
        self._stage_fields: dict[str, str | None] = {}
        for name, (names, what, issue) in STAGE_TOGGLES.items():
            fld = _option_field(names)
            self._stage_fields[name] = fld
            current = getattr(o, fld) if fld else None
            if name == "mapping":
                from ..options import MAPPINGS as _M
                choices = list(_M) if fld else ["superposition", "single"]
                w = W.ToggleButtons(options=choices,
                                    value=current if current in choices else choices[0],
                                    description="mapping",
                                    style={**style, "button_width": "100px"})
            elif fld == "localise":            # --localise LOOP[:w]: a loop and a window
                loops = list(dict.fromkeys(it for st in self.compiled.scop.statements
                                           for it in st.iterators))
                # auto: where the analytic model predicts fewer global accesses
                choices = [("auto", None), ("off", "off")] + [
                    (f"{lp} (w={w_})", (lp, w_)) for lp in loops for w_ in (1, 2)]
                if current is not None and current not in [v for _, v in choices]:
                    choices.append((f"{current[0]} (w={current[1]})", tuple(current)))
                value = tuple(current) if current is not None else (
                    None if self.base.localise_auto else "off")
                w = W.Dropdown(options=choices, value=value, description="localise",
                               style=style, layout=W.Layout(width="240px"))
            else:
                on = bool(current) if fld and not fld.startswith("no_") else \
                    (not current if fld else False)
                w = W.Checkbox(value=on, description=name, style=style, indent=False,
                               layout=W.Layout(width="200px"))
            w.disabled = fld is None
            w.tooltip = (what if fld else f"arrives with issue {issue}: {what}")
            self.controls[name] = w
        for c in self.controls.values():
            c.observe(self._changed, names="value")
        self.run_button = W.Button(description="Run", button_style="primary", icon="play",
                                   tooltip="compile, run on the target, check against the CPU")
        self.compare_button = W.Button(description="Compare shared", icon="bar-chart",
                                       tooltip="emulator runs with --shared none/auto/all")
        self.autotune_button = W.Button(description="Autotune", icon="tachometer",
                                        tooltip="try tile/block candidates around these "
                                                "sizes (polymagic.api.autotune: timed on a "
                                                "GPU, else ranked on the emulator)",
                                        disabled=self.autotuner is None)
        self.autotune_button.on_click(lambda _b: self._safely(self.autotune))
        self.run_button.on_click(lambda _b: self._safely(self.run))
        self.compare_button.on_click(lambda _b: self._safely(self.compare_shared))
        self.progress = W.IntProgress(value=0, min=0, max=3, layout=W.Layout(width="160px",
                                                                            visibility="hidden"))
        self.status = W.HTML()
        # views
        self.cuda = W.HTML()
        self.mapping = W.HTML()
        self.memory = W.HTML()
        stmts = [s.name for s in self.compiled.scop.statements]
        self.picture_kind = W.ToggleButtons(options=list(PICTURES), value=PICTURES[0],
                                            style={"button_width": "105px"})
        self.statement = W.Dropdown(options=["(default)"] + stmts, value="(default)",
                                    description="statement", layout=W.Layout(width="220px"))
        self.search_button = W.Button(description="Search tile sizes", icon="search",
                                      tooltip="seed 000 §4.3 tile-size search (seconds)")
        self.use_search = W.Button(description="Use the chosen sizes", disabled=True)
        self.search_button.on_click(lambda _b: self._safely(self.search_tiles))
        self.use_search.on_click(lambda _b: self._safely(self.apply_search))
        self.picture = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.picture_note = W.HTML()
        for c in (self.picture_kind, self.statement):
            c.observe(lambda _c: self._safely(self.draw_picture), names="value")
        self.times_table = W.HTML()
        self.times_picture = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.traffic_picture = W.Image(format="png", layout=W.Layout(max_width="100%"))
        pictures = W.VBox([W.HBox([self.picture_kind, self.statement]),
                           W.HBox([self.search_button, self.use_search]),
                           self.picture_note, self.picture])
        timings = W.VBox([self.times_table, self.times_picture, self.traffic_picture])
        boxed = W.Layout(max_height="560px", overflow="auto")
        self.tabs = W.Tab(children=[W.Box([self.cuda], layout=boxed),
                                    W.Box([self.mapping], layout=boxed),
                                    W.Box([self.memory], layout=boxed), pictures, timings])
        for i, t in enumerate(TABS):
            self.tabs.set_title(i, t)
        self.tabs.observe(self._tab_changed, names="selected_index")
        c = self.controls
        tiles = [c[f"tile{j}"] for j in range(len(self.band))]
        left = W.VBox([W.HTML("<b>tile sizes</b>")] + tiles +
                      [W.HTML("<b>threads per block</b>"), c["block_x"], c["block_y"],
                       c["block_z"]])
        stages = W.VBox([W.HTML("<b>stages</b>"), c["mapping"], c["localise"],
                         W.HBox([c["registers"], c["reductions"]])])
        right = W.VBox([W.HTML("<b>memory and target</b>"), c["shared"], c["shared_mem"],
                        c["device_mem"], c["target"], stages,
                        W.HBox([self.run_button, self.compare_button, self.autotune_button]),
                        self.progress])
        name = escape(self.compiled.scop.name)
        self.widget = W.VBox([W.HTML(f"<b>polymagic explorer: {name}</b>"),
                              W.HBox([left, right]), self.status, self.tabs])
        self.widget.add_class("polymagic-explorer")

    def _block_default(self) -> tuple[int, ...]:
        try:
            k = E.mapping_of(self.compiled, self.base).kernel()
            return k.block
        except Exception:      # noqa: BLE001
            return (32, 8, 1)

    # ---- the configuration ---------------------------------------------------------
    def options(self) -> Options:
        """The Options the controls describe (raises OptionsError when invalid)."""
        from ..errors import OptionsError
        c = self.controls
        tile = tuple(int(c[f"tile{j}"].value) for j in range(len(self.band)))
        block = tuple(int(c[f"block_{a}"].value) for a in "xyz")
        while len(block) > 1 and block[-1] == 1:
            block = block[:-1]
        if int(np.prod(block)) > 1024:
            raise OptionsError(f"threads per block {'x'.join(map(str, block))} = "
                               f"{int(np.prod(block))} > 1024")
        stages = {}
        for name, fld in self._stage_fields.items():
            if fld is None:
                continue
            v = c[name].value
            if fld == "localise":
                stages["localise_auto"] = v != "off"
                v = None if v == "off" else v
            stages[fld] = (not v) if fld.startswith("no_") and isinstance(v, bool) else v
        return self.base.with_(tile=tile or None, tile_levels=(tile,) if tile else (),
                               tile_auto=False, block=block, shared=c["shared"].value,
                               shared_mem=int(c["shared_mem"].value) * 1024,
                               device_mem=int(c["device_mem"].value) or None,
                               target=c["target"].value, **stages)

    def _as_compiled(self, o: Options) -> Options:
        """``o`` with the compile options the first compile was made with while the
        controls still spell that compile's tiles and block out (issue 22: its
        mapping is read, not made again, and Run reuses it), else ``o`` itself."""
        spelled, made_with = self._first_compile
        return replace(o, compile=made_with) if o.compile == spelled else o

    def _run_label(self, o: Options, report) -> str:
        tile = ",".join(map(str, o.tile or ())) or "default"
        return f"#{len(self.runs) + 1} {report.target}, tile {tile}, shared {o.shared}"

    def _label(self, o: Options) -> str:
        tile = ",".join(map(str, o.tile or ()))
        block = "x".join(map(str, o.block or ()))
        dev = f" device-mem {o.device_mem} B" if o.device_mem else ""
        stages = "".join(f" {fld} {getattr(o, fld)}" for fld in self._stage_fields.values()
                         if fld is not None and getattr(o, fld) != getattr(Options(), fld))
        return (f"tile {tile or 'default'} block {block or 'default'} shared {o.shared}"
                f"{dev}{stages}")

    # ---- regeneration ----------------------------------------------------------------
    def _changed(self, _change=None) -> None:
        self.status.value = '<span style="color:#57606a">changed: regenerating…</span>'
        self._debounce()

    def _regenerate_safely(self) -> None:
        self._debounce._handle = None
        self._safely(self.regenerate)

    def _safely(self, fn) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - a callback must never raise into the kernel
            self._fail(e)

    def _fail(self, e: Exception) -> None:
        self.error = f"{type(e).__name__}: {e}" if not isinstance(e, PolymagicError) else str(e)
        self.status.value = (f'<span style="color:#cf222e"><b>error:</b> '
                             f'{escape(self.error)}</span>')

    def regenerate(self) -> dict:
        """Compile (cached) and refresh the views for the current controls; returns
        this regeneration's timing entry."""
        from ..compiler import compile_source
        from ..compiler.driver import is_cached
        from .html import highlight_fast
        with self._busy:
            t0 = time.perf_counter()
            o = self.options()
            made = self._as_compiled(o)         # what the views describe
            first, self._first = self._first, None
            cached = first is not None or is_cached(self.source, made, self.language)
            try:
                compiled = first or compile_source(self.source, made, language=self.language)
            except PolymagicError as e:
                self._fail(e)
                return {}
            t_compile = time.perf_counter() - t0
            self.compiled, self.current = compiled, o
            self.error = None
            self.cuda.value = highlight_fast(compiled.cuda)
            sched = self._schedule_text(compiled)
            mapped = E.mapping_of(compiled, made).schedule
            self.mapping.value = _pre(
                E.mapping_text(compiled, made) + "\n\nschedule tree (isl's scheduler):\n" + sched
                + ("\n\nmapped schedule tree (tiles, block/thread filters pm_b*/pm_t*, copy "
                   "statements pm_in_*/pm_out_*, barriers pm_sync*):\n"
                   + E.schedule_text(mapped) if mapped is not None else ""))
            self.memory.value = _pre(self._memory_text(compiled, o))
            t_views = time.perf_counter() - t0
            self._stale_picture = True
            drew = False
            if self.tabs.selected_index == TABS.index("Pictures"):
                self.draw_picture()
                drew = True
            dt = time.perf_counter() - t0
            entry = {"seconds": dt, "compile_cached": cached, "compile_s": t_compile,
                     "views_s": t_views - t_compile, "picture_s": dt - t_views if drew else 0.0,
                     "picture": drew, "options": self._label(o)}
            self.timings.append(entry)
            how = "cached compile" if cached else f"compiled in {compiled.compile_s:.2f} s"
            self.status.value = (f'<span style="color:#1a7f37">regenerated in '
                                 f'{dt * 1000:.0f} ms</span> <span style="color:#57606a">'
                                 f'({how}{", picture drawn" if drew else ""}) — '
                                 f'{escape(compiled.summary)}</span>')
            return entry

    @staticmethod
    def _schedule_text(compiled) -> str:
        return E.schedule_text(compiled.schedule.schedule)   # ScheduleResult's isl tree

    def _memory_text(self, compiled, o: Options) -> str:
        text = E.memory_text(compiled, self._as_compiled(o))
        last = self._last_run.get(self._label(o))
        if last is not None and last.transfers:
            t = last.transfers
            text += (f"\n\nhost<->device (last run of this configuration): H2D "
                     f"{t.get('bytes_h2d', 0)} B, D2H {t.get('bytes_d2h', 0)} B "
                     f"(whole arrays: {t.get('whole_h2d', 0)} B / {t.get('whole_d2h', 0)} B)"
                     + (f", {t.get('tiles')} launch tile(s) within --device-mem"
                        if t.get("mode") == "tiled" else ""))
        else:
            text += "\n\nhost<->device bytes: press Run to see the transfer plan's volumes"
        return text

    def _tab_changed(self, change) -> None:
        if change["new"] == TABS.index("Pictures") and self._stale_picture:
            self._safely(self.draw_picture)

    # ---- pictures ------------------------------------------------------------------
    def draw_picture(self) -> None:
        """Draw the selected picture for the current configuration."""
        from . import plots as P
        o = self._as_compiled(self.current)
        kind = self.picture_kind.value
        stmt = None if self.statement.value == "(default)" else self.statement.value
        note = ""
        if kind == "tile search" and self.search is None:
            self.picture.value = b""
            self.picture_note.value = ("press <i>Search tile sizes</i> to run seed 000 "
                                       "§4.3's search at these sizes (a few seconds)")
            self._stale_picture = False
            return
        if kind == "autotune" and self.autotuned is None:
            self.picture.value = b""
            self.picture_note.value = ("press <i>Autotune</i> to try tile/block candidates "
                                       "around these sizes (seconds to a minute)")
            self._stale_picture = False
            return
        key = (o.compile, kind, stmt,
               id(self.search) if kind == "tile search" else
               id(self.autotuned) if kind == "autotune" else None)
        png = self._pictures.get(key)
        if png is None:
            if kind == "iteration space":
                fig = P.iteration_space(self.compiled, o, statement=stmt)
            elif kind == "tile footprint":
                kernel = None
                if stmt is not None:
                    kernel = E.mapping_of(self.compiled, o).kernel_of(stmt).name
                fig = P.footprint(self.compiled, o, kernel=kernel)
            elif kind == "schedules":
                fig = P.schedules(self.compiled, o, statement=stmt)
            elif kind == "localisation":
                fig = P.localisation_of(self.compiled, sizes=o.sizes)
            elif kind == "autotune":
                fig = P.autotune(self.autotuned)
            else:
                fig = P.tile_search(self.search)
            png = self._pictures[key] = P.to_png(fig)
        self.picture.value = png
        self.picture_note.value = note
        self._stale_picture = False

    def search_tiles(self):
        """Seed 000 §4.3's tile-size search for the current configuration."""
        from ..compiler import schedule_for
        from ..tiles.search import search_tile_sizes
        o = self.options()
        self.status.value = '<span style="color:#57606a">searching tile sizes…</span>'
        self.search = search_tile_sizes(self.compiled.scop, schedule_for(self.compiled, o),
                                        o.compile)
        self.use_search.disabled = not self.search.searched
        self.status.value = escape(self.search.summary())
        self.picture_kind.value = "tile search"
        self.draw_picture()
        return self.search

    def apply_search(self) -> None:
        """Set the tile sliders to the searched sizes."""
        if self.search is None:
            return
        self.set(**{f"tile{j}": int(v) for j, v in enumerate(self.search.tile[:len(self.band)])})

    def autotune(self):
        """``--autotune`` from the current controls (the ``autotuner`` handed in:
        polymagic.api.autotune), with the progress bar; shows the heat map and sets
        the controls to the choice."""
        if self.autotuner is None:
            raise PolymagicError("this explorer has no autotuner (open it with "
                                 "polymagic.api.explorer.explore or fn.explore())")
        o = self.options()
        self.progress.layout.visibility = "visible"
        self.progress.value = 0
        self.progress.max = max(1, o.autotune_candidates)

        def progress(i, n, _c):
            self.progress.max = n
            self.progress.value = i
            self.status.value = (f'<span style="color:#57606a">autotune: candidate {i}/{n}'
                                 f'…</span>')
        try:
            result = self.autotuner(self.source, o, language=self.language,
                                    namespace=self._inputs(), progress=progress)
        finally:
            self.progress.layout.visibility = "hidden"
        self.autotuned = result
        best = result.best
        if best is not None:
            values = {f"tile{j}": int(v) for j, v in enumerate(best.tile[:len(self.band)])}
            blk = (tuple(best.block) + (1, 1, 1))[:3]
            values.update(block_x=blk[0], block_y=blk[1], block_z=blk[2])
            self.set(**values)
        self.tabs.selected_index = TABS.index("Pictures")
        self.picture_kind.value = "autotune"
        self.draw_picture()
        self.status.value = escape(result.summary())
        return result

    def set(self, **values) -> dict:
        """Set several controls (``tile0=16, shared='none'`` ...) and regenerate once;
        returns the regeneration's timing entry."""
        unknown = [k for k in values if k not in self.controls]
        if unknown:
            raise KeyError(f"no control {', '.join(unknown)} (controls: "
                           f"{', '.join(self.controls)})")
        with self._held():
            for k, v in values.items():
                c = self.controls[k]
                if isinstance(c, W.IntSlider):
                    c.max = max(c.max, int(v))
                c.value = v
        return self.regenerate()

    def _held(self):
        deb = self._debounce

        class _Hold:
            def __enter__(self_):
                self_.held, deb.held = deb.held, True

            def __exit__(self_, *exc):
                deb.held = self_.held
                deb.cancel()
        return _Hold()

    # ---- runs ----------------------------------------------------------------------
    def _inputs(self) -> dict:
        return {k: (v.copy() if isinstance(v, np.ndarray) else v)
                for k, v in self.namespace.items()
                if k in {p.name for p in self.compiled.scop.params}}

    def run(self):
        """Run the current configuration (on copies of the inputs) and show its times."""
        from ..compiler import compile_source
        from ..runtime.run import run
        o = self.options()
        made = self._as_compiled(o)
        self.status.value = '<span style="color:#57606a">running…</span>'
        compiled = compile_source(self.source, made, language=self.language)
        report = run(compiled, made, namespace=self._inputs())
        self.runs[self._run_label(o, report)] = report
        self._last_run[self._label(o)] = report
        self._show_runs(compiled, report)
        self.memory.value = _pre(self._memory_text(compiled, o))
        verdict = "OK" if report.ok else "MISMATCH"
        color = "#1a7f37" if report.ok else "#cf222e"
        self.status.value = (f'<span style="color:{color}"><b>{verdict}</b></span> on '
                             f'{escape(report.target)}: {escape(report.message or "")}')
        self.tabs.selected_index = TABS.index("Timings")
        return report

    def _show_runs(self, compiled, report) -> None:
        from . import fmt
        from . import plots as P
        rows = fmt.times(report, compiled.compile_s)
        cells = "".join(f"<tr><td style='padding-right:12px'>{escape(k)}</td>"
                        f"<td style='text-align:right;font-family:monospace'>{escape(v)}</td>"
                        f"</tr>" for k, v in rows)
        cnt = report.counters or {}
        extra = (f"<div>emulator counters: {cnt.get('loads', 0):,} global loads, "
                 f"{cnt.get('stores', 0):,} global stores</div>" if cnt else "")
        self.times_table.value = (f"<div><b>{escape(self._label(self.current))}</b>: "
                                  f"{escape(fmt.check_line(report))}</div>"
                                  f"<table>{cells}</table>{extra}")
        recent = dict(list(self.runs.items())[-4:])
        self.times_picture.value = P.to_png(P.times(recent))

    def compare_shared(self) -> dict:
        """Emulator runs with ``--shared none``, ``auto`` and ``all``: global-memory
        loads and stores per variant (progress bar while running)."""
        from ..compiler import compile_source
        from ..runtime.run import run
        from . import plots as P
        o = self.options().with_(target="emulator")
        self.progress.layout.visibility = "visible"
        self.progress.value = 0
        out = {}
        try:
            for i, v in enumerate(("none", "auto", "all")):
                self.status.value = f'<span style="color:#57606a">emulator run {i + 1}/3: ' \
                                    f'--shared {v}…</span>'
                ov = self._as_compiled(o.with_(shared=v))
                out[v] = run(compile_source(self.source, ov, language=self.language), ov,
                             namespace=self._inputs())
                self.progress.value = i + 1
        finally:
            self.progress.layout.visibility = "hidden"
        self.variants = out
        self.traffic_picture.value = P.to_png(P.memory_traffic(out))
        loads = ", ".join(f"{k}: {r.counters.get('loads', 0):,}" for k, r in out.items())
        self.status.value = f"global loads per variant (emulator): {escape(loads)}"
        self.tabs.selected_index = TABS.index("Timings")
        return out

    # ---- display -------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, tuple):            # (data, metadata)
            bundle[0]["text/plain"] = repr(self)
        elif isinstance(bundle, dict):
            bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        o = self.current
        return f"<polymagic Explorer of {self.compiled.scop.name}: {self._label(o)}>"


def autotune_progress(total: int):
    """A progress bar for ``--autotune`` and its callback ``(i, n, candidate)``."""
    bar = W.IntProgress(value=0, min=0, max=max(1, int(total)), description="autotune",
                        bar_style="info", layout=W.Layout(width="420px"))

    def progress(i: int, n: int, candidate) -> None:
        bar.max = max(1, n)
        bar.value = i
        bar.description = f"autotune {i}/{n}"
        if i >= n:
            bar.bar_style = "success"
    return bar, progress


def explore(compiled, options: Options, report=None, namespace: Mapping | None = None,
            **kwargs) -> Explorer:
    """An :class:`Explorer` for a compiled function (what ``--explore`` shows)."""
    return Explorer(compiled.scop.source, options, compiled.scop.language, namespace,
                    report, compiled, **kwargs)


__all__ = ["Explorer", "Debouncer", "explore", "autotune_progress", "TABS", "PICTURES"]
