"""Autotuning (``--autotune``): try a few tile/block sizes, keep the best.

Seed 000 §4.3 *predicts* good tile sizes from a data-movement model; autotuning
*measures*.  :func:`autotune` builds a bounded list of candidate ``(--tile, --block)``
configurations and scores each one:

candidates (at most ``options.autotune_candidates``, in this order)
    the starting configuration (``--tile``/``--block`` or the mapping's defaults);
    the tile vector seed 000 §4.3's search chooses at the run's sizes
    (:func:`polymagic.tiles.search.search_tile_sizes`), when it searched;
    a 3 × 3 grid around the start over two tile sizes (halved, kept, doubled): the
    two innermost block-tile members of the widest tiled band (the thread y and x
    axes), or for a one-member band its tile size and the threads on x; then the
    start with the threads on y halved and doubled.  Candidates whose buffers
    would exceed M_up (``--shared-mem``, by the §4.3 model's M(t)) or whose blocks
    would have more than 1024 threads are skipped before anything runs.
score (lower is better, 1.0 is the best seen)
    on a GPU (``--target gpu``, or ``auto`` where CuPy sees one): the kernels' time
    at the run's sizes (CUDA events, the fastest of ``reps`` runs), relative to the
    fastest candidate.  Without a GPU the candidates are ranked, not timed: each
    runs on the race-hunting emulator at *reduced sizes* (every size halved until
    a run has at most ``max_instances`` statement instances) and is checked there
    against the CPU reference; its score is the geometric mean of its global-memory
    traffic counted by the emulator — warp transactions (32-byte sectors, seed 003
    §6.3: coalescing counts) where the emulator counted them, else loads + stores —
    and its §4.3 predicted data-movement
    cost at the run's sizes (each relative to the best candidate), divided by
    how well its grid fills the GPU at the run's sizes (warps of its widest launch
    over min(132 SMs × 8 warps, the most warps any candidate has), capped at 1;
    seed 000 §4.1 fixes the outer-level processes to a multiple of the processors).  A candidate
    that fails its check, races or does not compile is never chosen.
time
    ``options.autotune_budget`` seconds: once spent, the remaining candidates are
    skipped (the start is always evaluated).

The result (:class:`AutotuneResult`) keeps every candidate; the magic binds the
callable with the chosen configuration, the CLI reports it (``autotune`` in the
JSON), and :func:`polymagic.report.plots.autotune` draws the score as a heat map
over the two varied tile sizes.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping

import numpy as np

from ..errors import PolymagicError
from ..notes import Note, Stage
from ..options import Options

#: statement instances of one emulator run while ranking (≈ 0.1-0.5 s each)
MAX_INSTANCES = 2_000_000
#: SMs of the GPU the grid-fill term assumes (an H100 SXM5, as in tile_search), and
#: the warps per SM that count as a filled GPU (256 threads: one default block)
SMS = 132
WARPS_PER_SM = 8
#: launches the block counter follows before it stops (host loops can be long)
MAX_LAUNCHES = 20_000


@dataclass
class AutotuneCandidate:
    """One configuration and how it scored."""
    tile: tuple[int, ...]
    block: tuple[int, ...]
    source: str                         # 'start', 'tile search', 'grid', 'threads'
    ok: bool = False                    # ran, passed its check (emulator mode)
    skipped: str = ""                   # why it did not run ('' when it ran)
    error: str = ""
    shared_bytes: int | None = None     # largest shared memory of a block (compiled)
    blocks: int | None = None           # blocks of the widest launch, at the run's sizes
    warps: int | None = None            # its warps (blocks × ⌈threads / 32⌉)
    loads: int | None = None            # emulator: global loads at the reduced sizes
    stores: int | None = None
    transactions: int | None = None     # emulator: 32-byte sectors of those accesses
    model_cost: float | None = None     # seed 000 §4.3 predicted cycles at the run's sizes
    seconds: float | None = None        # GPU: kernel time (best of reps); emulator: its time
    score: float = math.inf
    #: the parts of an emulator-ranked score (None on the GPU, where the score is the
    #: time): memory traffic and model cost relative to the candidate with the least,
    #: and the share of the GPU its grid fills (0..1); score = √(traffic × cost) / fill,
    #: divided by the best candidate's
    traffic_ratio: float | None = None
    cost_ratio: float | None = None
    fill: float | None = None

    @property
    def traffic(self) -> int | None:
        return None if self.loads is None else self.loads + (self.stores or 0)

    def label(self) -> str:
        return f"--tile {','.join(map(str, self.tile))} --block {'x'.join(map(str, self.block))}"

    def as_dict(self) -> dict:
        d = asdict(self)
        d["tile"], d["block"] = list(self.tile), list(self.block)
        return d


@dataclass
class AutotuneResult:
    """Every candidate, the choice and how they were scored."""
    mode: str                           # 'gpu' (timed) or 'emulator' (ranked)
    candidates: list[AutotuneCandidate]
    best: AutotuneCandidate | None
    start: AutotuneCandidate
    sizes: dict                         # the run's size parameters
    tune_sizes: dict                    # sizes the candidates ran at
    axes: tuple[str, str]               # names of the heat map's two dimensions
    axis_index: tuple[tuple[str, int], tuple[str, int]]   # ('tile'|'block', index) each
    labels: list[str]                   # names of the tile vector's entries
    seconds: float = 0.0
    notes: list[Note] = field(default_factory=list)

    def options(self, options: Options) -> Options:
        """``options`` with the chosen tile and block sizes (the start when none ran)."""
        c = self.best or self.start
        return options.with_(tile=c.tile, tile_levels=(c.tile,), tile_auto=False,
                             block=c.block)

    def axis_value(self, c: AutotuneCandidate, k: int) -> int:
        what, j = self.axis_index[k]
        vec = c.tile if what == "tile" else c.block
        return vec[j] if j < len(vec) else 1

    def summary(self) -> str:
        ran = [c for c in self.candidates if not c.skipped]
        how = ("timed on the GPU" if self.mode == "gpu" else
               "ranked by emulator counters and the seed 000 §4.3 cost model at "
               + ", ".join(f"{k}={v}" for k, v in self.tune_sizes.items()))
        if self.best is None:
            return (f"autotune: no candidate ran successfully ({len(ran)} tried, {how}); "
                    f"kept {self.start.label()}")
        return (f"autotune: {self.best.label()} chosen from {len(ran)} candidate(s) "
                f"({how}){self.why_best()}; {self.seconds:.1f} s")

    def score_rule(self) -> str:
        """How the score is computed (the tables' caption)."""
        if self.mode == "gpu":
            return "score: kernel time relative to the fastest candidate (lower is better)"
        return ("score: √(memory sectors × model cost), each relative to the candidate with "
                "the least, divided by the share of the GPU the grid fills, then relative to "
                "the best candidate (1.00; lower is better)")

    def why_best(self) -> str:
        """Why the choice beat the start, from the score's parts ('' when it is the
        start or the start did not run)."""
        b, s = self.best, self.start
        if b is None or b is s or not s.ok or not math.isfinite(s.score):
            return ": the start itself" if b is s else ""
        text = f": score 1.00 against the start's {s.score:.2f}"
        if self.mode == "gpu" or None in (b.traffic_ratio, s.traffic_ratio, b.fill, s.fill):
            return text

        def ratio(x: float, y: float, what: str) -> str:
            if abs(x / y - 1) < 0.005:
                return f"the same {what}"
            return f"{x / y:.2f}x {'more' if x > y else 'less'} {what}"
        gains, costs = [], []
        for mine, theirs, what in ((b.traffic_ratio, s.traffic_ratio, "memory traffic"),
                                   (b.cost_ratio, s.cost_ratio, "model cost")):
            if mine is None or theirs is None:
                continue
            (gains if mine < theirs else costs).append(ratio(mine, theirs, what))
        if b.fill > s.fill * 1.005:
            gains.insert(0, f"its grid fills {b.fill / s.fill:.2f}x more of the GPU "
                            f"({b.blocks} blocks against {s.blocks})")
        elif b.fill < s.fill / 1.005:
            costs.append(f"its grid fills {s.fill / b.fill:.2f}x less of the GPU")
        parts = gains + ([f"which outweighs {' and '.join(costs)}"] if gains and costs
                         else costs)
        return text + (f" ({', '.join(parts)})" if parts else "")

    def as_dict(self) -> dict:
        """JSON-ready: mode, sizes, every candidate and the choice."""
        return {"mode": self.mode, "sizes": dict(self.sizes),
                "tune_sizes": dict(self.tune_sizes), "axes": list(self.axes),
                "labels": list(self.labels),
                "candidates": [c.as_dict() for c in self.candidates],
                "choice": self.best.as_dict() if self.best else None,
                "start": self.start.as_dict(), "seconds": self.seconds,
                "notes": [str(n) for n in self.notes], "summary": self.summary()}


# ---- candidates ---------------------------------------------------------------------

def _band(compiled, options: Options) -> tuple[int, int, list[str]]:
    """(block-tile members m, sub-tiled members s, labels) of the widest tiled band."""
    from ..mapping import map_schedule
    mapping = map_schedule(compiled.scop, compiled.schedule, options.compile)
    best = (0, 0, [])
    for plan in mapping.plans.values():
        members, subs = list(plan.members), list(plan.sub_tiles)
        if members and len(members) + len(subs) > best[0] + best[1]:
            labels = [f"{m.loop} ({'block'})" for m in members] + \
                     [f"{s.split(' (sub-tile')[0]} (sub-tile)" for s in subs]
            best = (len(members), len(subs), labels)
    return best


def _start(options: Options, m: int, s: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    from ..mapping import DEFAULT_BLOCKS, DEFAULT_SUB_TILE, DEFAULT_TILES
    dflt = tuple(DEFAULT_TILES[m]) + (DEFAULT_SUB_TILE,) * s
    given = tuple(options.tile or ())
    tile = tuple(given[j] if j < len(given) else dflt[j] for j in range(m + s))
    block = tuple(options.block or DEFAULT_BLOCKS[m])
    block = (block + (1, 1, 1))[:3]
    while len(block) > 1 and block[-1] == 1:
        block = block[:-1]
    return tile, block


def _halve_double(v: int) -> list[int]:
    return sorted({max(1, v // 2), v, v * 2})


def _set(vec: tuple[int, ...], j: int, v: int) -> tuple[int, ...]:
    vec = tuple(vec) + (1,) * max(0, j + 1 - len(vec))
    return vec[:j] + (v,) + vec[j + 1:]


def candidates(m: int, s: int, tile: tuple[int, ...], block: tuple[int, ...],
               searched: tuple[int, ...] | None, limit: int
               ) -> tuple[list[AutotuneCandidate], tuple[tuple[str, int], tuple[str, int]]]:
    """The candidate list (see the module docstring) and the heat map's two axes
    (``('tile', j)`` or ``('block', axis)``)."""
    out: list[AutotuneCandidate] = []
    seen = set()

    def add(t, b, source):
        t, b = tuple(int(x) for x in t), tuple(int(x) for x in b)
        if (t, b) not in seen:
            seen.add((t, b))
            out.append(AutotuneCandidate(t, b, source))

    add(tile, block, "start")
    if searched is not None and len(searched) == len(tile):
        add(searched, block, "tile search")
    if m >= 2:
        axes = (("tile", m - 2), ("tile", m - 1))        # threads y, threads x
    else:
        axes = (("tile", 0), ("block", 0))               # tile size, threads on x
    grid = []
    for a in _halve_double(tile[axes[0][1]]):
        for b in _halve_double(tile[axes[1][1]] if axes[1][0] == "tile" else block[0]):
            t = _set(tile, axes[0][1], a)
            blk = block
            if axes[1][0] == "tile":
                t = _set(t, axes[1][1], b)
            else:
                blk = _set(block, 0, b)
            grid.append((t, blk))
    # nearest to the start first, so a small limit keeps a cross around it
    def dist(tb):
        t, blk = tb
        return sum(abs(math.log2(x / y)) for x, y in zip(t + blk, tile + block))
    for t, blk in sorted(grid, key=dist):
        add(t, blk, "grid")
    if m >= 2 and len(block) >= 2:
        for v in (block[1] // 2, block[1] * 2):
            if v >= 1:
                add(tile, _set(block, 1, v), "threads")
    return out[:max(1, limit)], axes


# ---- sizes -----------------------------------------------------------------------

def reduced_sizes(scop, sizes: Mapping[str, int], max_instances: int = MAX_INSTANCES,
                  floor: int = 8) -> dict[str, int]:
    """The run's sizes, the largest halved until one run has at most
    ``max_instances`` statement instances (barvinok's count), never below
    ``floor`` nor outside the function's context."""
    import islpy as isl
    from ..runtime.limits import instances
    out = {k: int(v) for k, v in sizes.items() if k in scop.size_params}

    def fits_context(vals) -> bool:
        ctx = scop.context
        for k, v in vals.items():
            pos = ctx.find_dim_by_name(isl.dim_type.param, k)
            if pos >= 0:
                ctx = ctx.fix_val(isl.dim_type.param, pos, isl.Val(int(v)))
        return not ctx.is_empty()

    frozen: set[str] = set()
    for _ in range(200):
        if instances(scop, out) <= max_instances:
            break
        cands = [k for k in out if k not in frozen and out[k] // 2 >= floor]
        if not cands:
            break
        k = max(cands, key=lambda n: out[n])
        trial = {**out, k: out[k] // 2}
        if fits_context(trial):
            out = trial
        else:
            frozen.add(k)
    return out


def launch_blocks(compiled, ints: Mapping[str, int]) -> tuple[int, int]:
    """(blocks, warps) of the launch of the host driver with the most warps at these
    sizes (warps: blocks × ⌈threads per block / 32⌉)."""
    from ..runtime.gpu import load_host
    host = load_host(compiled.host_py)
    kernels = compiled.program.kernels
    most = [0, 0, 0]                      # blocks, warps, launches

    class _Enough(Exception):
        pass

    def launch(name, grid, extra=None):
        n = 1
        for g in grid:
            n *= max(int(g), 0)
        warps = n * -(-math.prod(kernels[name].block) // 32)
        if warps > most[1]:
            most[0], most[1] = n, warps
        most[2] += 1
        if most[2] >= MAX_LAUNCHES:
            raise _Enough

    try:
        host(dict(ints), launch)
    except _Enough:
        pass
    return most[0], most[1]


# ---- the search -----------------------------------------------------------------

Progress = Callable[[int, int, AutotuneCandidate], None]


def autotune(source: str, options: Options, language: str = "c",
             namespace: Mapping | None = None, progress: Progress | None = None,
             max_instances: int = MAX_INSTANCES, reps: int = 3) -> AutotuneResult:
    """Try the candidate configurations of ``source`` and choose one (see the
    module docstring).  ``namespace``: where the run's arrays and sizes come from
    (only read; runs use copies).  ``progress(i, n, candidate)`` is called after
    each candidate (``i`` of ``n`` done)."""
    from ..compiler import compile_source
    from ..runtime.run import choose_target
    t0 = time.perf_counter()
    base = options.with_(explore=False, autotune=False, quiet=True, json=False)
    base_compiled = compile_source(source, base, language=language)
    if base.tile_auto:                       # start from what the search chose
        from ..report.explore import effective_options
        base = effective_options(base_compiled, base)
    scop = base_compiled.scop
    ns = {k: v for k, v in (namespace or {}).items()
          if k in {p.name for p in scop.params}}
    sizes, scalars = _run_sizes(scop, base, ns)
    target, _why = choose_target(base.target if base.target != "openmp" else "emulator")
    mode = "gpu" if target == "gpu" else "emulator"
    notes: list[Note] = []
    m, s, labels = _band(base_compiled, base)
    if not m:
        start = AutotuneCandidate(tuple(base.tile or ()), tuple(base.block or ()), "start",
                                  skipped="no tiled kernel")
        return AutotuneResult(mode, [start], None, start, sizes, sizes, ("t0", "t1"),
                              (("tile", 0), ("tile", 1)), labels,
                              time.perf_counter() - t0,
                              [_note("no parallel loop is tiled: nothing to tune")])
    tile, block = _start(base, m, s)
    # seed 000 §4.3: the model's choice, and the model to cost every candidate
    model, searched = None, None
    try:
        from ..compiler import schedule_for
        from ..tiles.search import search_tile_sizes
        asked = base.with_(tile=tile, tile_levels=(tile,), block=block)
        found = search_tile_sizes(scop, schedule_for(base_compiled, asked), asked.compile,
                                  sizes=sizes)
        model = found.model
        if found.searched:
            searched = tuple(found.tile)
        notes.append(_note(found.summary()))
    except PolymagicError as e:
        notes.append(_note(f"tile search skipped: {e}", "fallback"))
    cands, axis_index = candidates(m, s, tile, block, searched,
                                   max(1, int(base.autotune_candidates)))
    axes = tuple(labels[j] if what == "tile" and j < len(labels) else
                 f"threads {'xyz'[j]}" for what, j in axis_index)
    tune = sizes if mode == "gpu" else reduced_sizes(scop, sizes, max_instances)
    if mode != "gpu" and tune != sizes:
        notes.append(_note("candidates ran on the emulator at reduced sizes "
                           + ", ".join(f"{k}={v}" for k, v in tune.items())))
    budget = float(base.autotune_budget)
    for i, c in enumerate(cands):
        if i and time.perf_counter() - t0 > budget:
            c.skipped = f"time budget of {budget:g} s spent"
        else:
            _evaluate(c, source, language, base, mode, model, sizes, tune, scalars, ns,
                      reps, m)
        if progress is not None:
            progress(i + 1, len(cands), c)
    _score(cands, mode)
    ok = [c for c in cands if c.ok and math.isfinite(c.score)]
    best = min(ok, key=lambda c: (c.score, cands.index(c)), default=None)
    skipped = [c for c in cands if c.skipped]
    if skipped:
        notes.append(_note(f"{len(skipped)} candidate(s) skipped: "
                           + "; ".join(f"{c.label()}: {c.skipped}" for c in skipped[:3])
                           + (" ..." if len(skipped) > 3 else "")))
    failed = [c for c in cands if not c.skipped and not c.ok]
    if failed:
        notes.append(_note(f"{len(failed)} candidate(s) failed: "
                           + "; ".join(f"{c.label()}: {c.error}" for c in failed[:3])))
    return AutotuneResult(mode, cands, best, cands[0], sizes, tune, axes, axis_index,
                          labels, time.perf_counter() - t0, notes)


def _run_sizes(scop, options: Options, ns: Mapping) -> tuple[dict, dict]:
    """The run's size parameters (and the scalars given), checked as a run checks
    them: from ``--size`` without allocating anything when it names every size,
    else through the runtime's input gathering (sizes read off the arrays)."""
    from ..errors import InputError
    from ..runtime.run import check_context, check_value_names, gather_inputs
    if all(n in options.sizes for n in scop.size_params) and not options.inputs:
        from ..expr import evaluate
        from ..runtime.limits import check_memory
        check_value_names(scop, options.sizes)
        sizes = {n: options.sizes[n] for n in scop.size_params}
        bad = [n for n, v in sizes.items() if isinstance(v, bool) or not isinstance(v, int)]
        if bad:
            raise InputError(f"size parameter {bad[0]} must be an integer, got "
                             f"{sizes[bad[0]]!r}")
        check_context(scop, sizes)
        env = {**scop.constants, **sizes}
        shapes = {p.name: tuple(max(int(evaluate(e, env)), 0)
                                for e in scop.arrays[p.name].shape)
                  for p in scop.array_params}
        check_memory(scop, shapes, sizes, options.run)
        scalars = {p.name: options.sizes[p.name] for p in scop.scalar_params
                   if p.name in options.sizes}
        return sizes, scalars
    inputs = gather_inputs(scop, options, ns)
    return ({n: int(inputs.args[n]) for n in scop.size_params},
            {p.name: inputs.args[p.name] for p in scop.scalar_params})


def _model_cost(model, tile: tuple[int, ...], block: tuple[int, ...], m_up: int
                ) -> tuple[float | None, str]:
    """§4.3 cost of ``tile`` with these threads per block, and why it is infeasible
    ('' when it fits M_up and the 1024-thread limit)."""
    if model is None or len(tile) != model.n_vars:
        return None, ""
    import dataclasses
    from ..memory.plan import STATIC_SHARED_LIMIT
    blk = (tuple(block) + (1, 1, 1))[:3]
    kernels = [dataclasses.replace(k, block=tuple(blk[k.m - 1 - j] for j in range(k.m)))
               for k in model.kernels]
    mm = dataclasses.replace(model, kernels=kernels, m_up=min(m_up, STATIC_SHARED_LIMIT),
                             min_blocks={})
    try:
        cost = mm.cost(tile)
        why = [v for v in mm.violations(tile) if "M_up" in v or "> 1024" in v]
    except (ValueError, ZeroDivisionError, ArithmeticError):
        return None, ""
    return cost, (why[0] if why else "")


def _evaluate(c: AutotuneCandidate, source: str, language: str, base: Options, mode: str,
              model, sizes: dict, tune: dict, scalars: dict, ns: Mapping, reps: int,
              m: int) -> None:
    from ..compiler import compile_source
    from ..report.jsonout import shared_bytes
    from ..runtime.run import execute, gather_inputs, run_device
    if math.prod(c.block) > 1024:
        c.skipped = f"{math.prod(c.block)} threads per block > 1024"
        return
    c.model_cost, why = _model_cost(model, c.tile, c.block, base.shared_mem)
    if why:
        c.skipped = why
        return
    o = base.with_(tile=c.tile, tile_levels=(c.tile,), tile_auto=False, block=c.block)
    try:
        compiled = compile_source(source, o, language=language)
        c.shared_bytes = shared_bytes(compiled.program)
        c.blocks, c.warps = launch_blocks(compiled, sizes)
        if mode == "gpu":
            o = o.with_(target="gpu")
            copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in ns.items()}
            inputs = gather_inputs(compiled.scop, o.with_(sizes={**scalars, **sizes}), copies)
            ints = {n: inputs.args[n] for n in compiled.scop.size_params}
            best = math.inf
            for _ in range(max(1, reps)):
                arrays = {n: a.copy() for n, a in inputs.arrays().items()}
                r = run_device(compiled, "gpu", o, arrays, ints, scalars)
                best = min(best, r.seconds)
            c.seconds, c.ok = best, True
        else:
            o = o.with_(target="emulator", sizes={**scalars, **tune}, inputs=None)
            inputs = gather_inputs(compiled.scop, o, None)
            r = execute(compiled, o, inputs, check=True)
            from ..report.fmt import transactions
            c.loads = int((r.counters or {}).get("loads", 0))
            c.stores = int((r.counters or {}).get("stores", 0))
            tx = transactions(r.counters)
            c.transactions = int(tx["transactions"]) if tx else None
            c.seconds = r.device_s
            c.ok = bool(r.ok)
            if not r.ok:
                c.error = f"check failed at the reduced sizes ({r.mismatches} mismatches)"
    except PolymagicError as e:
        c.ok, c.error = False, str(e).splitlines()[0][:300]


def _score(cands: list[AutotuneCandidate], mode: str) -> None:
    ran = [c for c in cands if c.ok]
    if not ran:
        return
    if mode == "gpu":
        fastest = min(c.seconds for c in ran)
        for c in ran:
            c.score = c.seconds / fastest if fastest > 0 else 1.0
        return
    sectors = all(c.transactions for c in ran)
    measure = {id(c): (c.transactions if sectors else c.traffic) for c in ran}
    least = min((v for v in measure.values() if v), default=0)
    costs = [c.model_cost for c in ran if c.model_cost]
    cheapest = min(costs, default=0.0)
    need = min(SMS * WARPS_PER_SM, max((c.warps or 0) for c in ran)) or 1
    for c in ran:
        parts = []
        if least and measure[id(c)]:
            c.traffic_ratio = measure[id(c)] / least
            parts.append(c.traffic_ratio)
        if cheapest and c.model_cost:
            c.cost_ratio = c.model_cost / cheapest
            parts.append(c.cost_ratio)
        rel = math.prod(parts) ** (1 / len(parts)) if parts else 1.0
        c.fill = min(1.0, (c.warps or need) / need)
        c.score = rel / max(c.fill, 1e-9)
    top = min(c.score for c in ran)
    for c in ran:
        c.score = c.score / top if top > 0 else 1.0


__all__ = ["autotune", "AutotuneResult", "AutotuneCandidate", "candidates", "reduced_sizes",
           "launch_blocks", "MAX_INSTANCES"]


def _note(text: str, kind: str = "info") -> Note:
    """A line of the autotune result."""
    return Note(Stage.AUTOTUNE, text, kind=kind)
