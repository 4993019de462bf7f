"""Pictures (matplotlib): how a loop nest is cut into blocks and threads, what one
tile's buffers hold, the tile-size search's cost surface, times, memory traffic,
and the host-address packing of transfers.

Every function returns a :class:`Figure` (a ``matplotlib.figure.Figure`` that also
renders itself as PNG in IPython, with or without pyplot); nothing here imports
IPython or ipywidgets.  The data come from :mod:`polymagic.report.explore`
(the mapping's own filters and buffer plans, enumerated at small sizes), from
:mod:`polymagic.tiles.search` and from run reports.

=================================  ==================================================
:func:`iteration_space`            a statement's instances projected to two loops,
                                   coloured by thread block with tiles outlined; one
                                   block's points coloured by thread
:func:`footprint`                  one tile's data on each array: the block's
                                   footprint, the buffer's bounding box, copy-in and
                                   copy-out (seed 000 §3, Figure 1)
:func:`tile_search`                the §4.3 cost over the evaluated tile vectors,
                                   with the chosen and the default point
:func:`autotune`                   the autotuner's score over two tile sizes (heat
                                   map), the chosen configuration starred
:func:`schedules`                  seed 003 §4.2: the block-level (outer) scattering
                                   next to the thread-level (regular) one of a kernel
:func:`localisation`               seed 001 §4: C(t) with I(t), O(t), G(t) over t, the
                                   placement ρ and the drift (:func:`localisation_of`
                                   for a function's loop and array)
:func:`times`                      CPU reference vs device (GPU / emulator) times
:func:`memory_traffic`             global-memory loads/stores counted by the emulator
                                   per variant (``--shared none/auto/all``), and
                                   the warp transactions (32-byte sectors)
:func:`packing`                    seed 002 Figure 7: interleaved CSLMADs packed
:func:`transfer_packing`           where the elements of (strided) NumPy arrays land
                                   in the packed device buffers of a run
=================================  ==================================================
"""
from __future__ import annotations

import io
import itertools
import math
import textwrap
from typing import Mapping, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure as _MplFigure
from matplotlib.patches import Patch, Rectangle

from ..compiler import Compiled
from ..runtime.run import RunReport
from ..scop import Scop
from . import explore as E

_BLUE_LIGHT = "#c6dbef"
_BLUE = "#4292c6"
_GREEN = "#2ca02c"
_RED = "#d62728"
_ORANGE = "#ff7f0e"
_GREY = "#f0f0f0"


class Figure(_MplFigure):
    """A matplotlib Figure that shows itself as PNG in IPython (no pyplot needed)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("layout", None)
        super().__init__(*args, **kwargs)
        FigureCanvasAgg(self)

    def _repr_png_(self) -> bytes:
        return to_png(self)


def to_png(fig: _MplFigure, dpi: int = 80) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _wrap(text: str, width: int = 70) -> str:
    return "\n".join(textwrap.wrap(text, width)) if text else ""


def _block_cmap(n: int) -> ListedColormap:
    base = [
        "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2",
        "#dbdb8d", "#9edae5", "#d9d9d9", "#6baed6", "#fd8d3c", "#74c476", "#9e9ac8",
    ]
    return ListedColormap([base[i % len(base)] for i in range(max(n, 1))])


def _grid(coords: np.ndarray, values: np.ndarray, fill=np.nan):
    """Integer points (rows, 1 or 2 columns) -> a dense 2-D image and its extent."""
    if coords.shape[1] == 1:
        coords = np.column_stack([np.zeros(len(coords), np.int64), coords[:, 0]])
    lo = coords.min(axis=0)
    hi = coords.max(axis=0)
    img = np.full((hi[0] - lo[0] + 1, hi[1] - lo[1] + 1), fill, dtype=float)
    img[coords[:, 0] - lo[0], coords[:, 1] - lo[1]] = values
    extent = (lo[1] - 0.5, hi[1] + 0.5, hi[0] + 0.5, lo[0] - 0.5)
    return img, extent, lo


def _integer_ticks(ax) -> None:
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True, steps=[1, 2, 4, 5, 8, 10]))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=6, integer=True, steps=[1, 2, 4, 5, 8, 10]))


def _as2d(c: np.ndarray) -> np.ndarray:
    return np.column_stack([np.zeros(len(c), np.int64), c[:, 0]]) if c.shape[1] == 1 else c


# ---- iteration space -----------------------------------------------------------------

def iteration_space(compiled, options, statement: str | None = None,
                    loops: Sequence[str] | None = None, sizes: Mapping | None = None,
                    block: Sequence[int] | None = None, cap: int = E.PICTURE_CAP,
                    annotate: int = 256) -> Figure:
    """The instances of ``statement`` (default: the deepest statement of a tiled
    kernel) at picture sizes, projected to ``loops`` (default: its mapped loops):
    left, coloured by thread block, each tile outlined; right, the points of one
    block (default: the first) coloured by thread, annotated with the thread index
    when there are at most ``annotate`` of them."""
    ip = E.iteration_points(compiled, options, statement, loops, sizes, cap)
    fig = Figure(figsize=(10.5, 4.6))
    ax1, ax2 = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.06, right=0.97, top=0.86, bottom=0.11, wspace=0.22)
    sizes_txt = ", ".join(f"{k}={v}" for k, v in ip.sizes.items())
    if not len(ip.coords):
        ax1.text(0.5, 0.5, f"{ip.statement} has no instances at {sizes_txt}",
                 ha="center", va="center", transform=ax1.transAxes)
        ax2.set_axis_off()
        return fig
    bid = ip.block_ids()
    nblocks = int(bid.max()) + 1
    img, extent, _ = _grid(ip.coords, bid)
    ax1.imshow(img, cmap=_block_cmap(nblocks), vmin=-0.5, vmax=nblocks - 0.5,
               extent=extent, interpolation="nearest", aspect="auto")
    c2 = _as2d(ip.coords)
    uniq = np.unique(ip.blocks, axis=0)
    for b in uniq:
        sel = np.all(ip.blocks == b, axis=1)
        lo, hi = c2[sel].min(axis=0), c2[sel].max(axis=0)
        ax1.add_patch(Rectangle((lo[1] - 0.5, lo[0] - 0.5), hi[1] - lo[1] + 1,
                                hi[0] - lo[0] + 1, fill=False, lw=1.2, ec="#333333"))
        if nblocks <= 64:
            ax1.text((lo[1] + hi[1]) / 2, (lo[0] + hi[0]) / 2, _bname(b, ip),
                     ha="center", va="center", fontsize=7, color="#222222")
    ylab, xlab = (ip.loops if len(ip.loops) == 2 else ("", ip.loops[0]))
    ax1.set_xlabel(xlab)
    ax1.set_ylabel(ylab)
    _integer_ticks(ax1)
    tiles = " × ".join(f"{lp}:{ip.tiles[lp]}" for lp in ip.loops if lp in ip.tiles)
    ax1.set_title(_wrap(f"{ip.statement} on ({', '.join(ip.loops)}), {sizes_txt}: "
                        f"{nblocks} block(s)" + (f", tiles {tiles}" if tiles else ""), 60),
                  fontsize=9)
    # one block, by thread
    if block is None:
        target = uniq[0]
    else:
        target = np.array((tuple(block) + (0, 0, 0))[:3])
    sel = np.all(ip.blocks == target, axis=1)
    if not sel.any():
        ax2.text(0.5, 0.5, f"block {tuple(int(v) for v in target)} runs no instance",
                 ha="center", va="center", transform=ax2.transAxes)
        ax2.set_axis_off()
        return fig
    tl = ip.thread_linear()[sel]
    pts = ip.coords[sel]
    nthreads = int(np.prod(ip.block_dims))
    img2, extent2, lo2 = _grid(pts, tl)
    im = ax2.imshow(img2, cmap="viridis", vmin=0, vmax=max(nthreads - 1, 1), extent=extent2,
                    interpolation="nearest", aspect="auto")
    p2 = _as2d(pts)
    if len(pts) <= annotate:
        for (r, c), t in zip(p2, tl):
            ax2.text(c, r, str(int(t)), ha="center", va="center", fontsize=6,
                     color="white" if t < nthreads / 2 else "black")
    fig.colorbar(im, ax=ax2, shrink=0.8,
                 label="thread: threadIdx.x + blockDim.x·threadIdx.y")
    ax2.set_xlabel(xlab)
    ax2.set_ylabel(ylab)
    _integer_ticks(ax2)
    bx, by, bz = ip.block_dims
    ax2.set_title(_wrap(f"block {_bname(target, ip)} of {ip.kernel}: {len(pts)} point(s) on "
                        f"{bx}x{by}x{bz} threads "
                        f"({'cyclic' if len(pts) > nthreads else 'one each'})", 60), fontsize=9)
    return fig


def _bname(b, ip: E.IterationPoints) -> str:
    used = [i for i, n in enumerate(ip.block_dims) if n > 1] or [0]
    return "(" + ",".join(str(int(b[i])) for i in used) + ")"


# ---- one tile's data footprint ---------------------------------------------------------

def footprint(compiled, options, kernel: str | None = None, block: Sequence[int] = (0, 0, 0),
              sizes: Mapping | None = None, cap: int = E.PICTURE_CAP) -> Figure:
    """The data block ``block`` of ``kernel`` touches on each array (light blue; its
    first sub-tile darker), each buffer's bounding box at that tile (orange), the
    elements copied in (green dots) and out (red crosses).  Arrays of more than two
    dimensions are projected onto their last two."""
    fp = E.tile_footprint(compiled, options, kernel, block, sizes, cap)
    arrays = [a for a in fp.arrays if len(a.shape) >= 1]
    n = max(len(arrays), 1)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(max(6.0, 4.4 * cols), 4.3 * rows + 0.6))
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax in axes[len(arrays):]:
        ax.set_axis_off()
    for ax, a in zip(axes, arrays):
        _footprint_axes(ax, a)
    sizes_txt = ", ".join(f"{k}={v}" for k, v in fp.sizes.items())
    b = ",".join(str(v) for v in fp.block)
    fig.suptitle(f"{fp.kernel}, block ({b}): data of one tile at {sizes_txt}", fontsize=10)
    handles = [Patch(color=_BLUE_LIGHT, label="block's footprint"),
               Patch(color=_BLUE, label="first (sub-)tile"),
               Patch(fill=False, ec=_ORANGE, lw=2, label="buffer (bounding box)"),
               Patch(fc=(0.17, 0.63, 0.17, 0.45), ec=_GREEN, lw=2, label="copy-in"),
               Patch(fill=False, ec=_RED, lw=2, ls=":", label="copy-out")]
    fig.legend(handles=handles, loc="lower center", ncol=5 if cols > 1 else 3, fontsize=8,
               frameon=False)
    h = 4.3 * rows + 0.6
    fig.subplots_adjust(left=0.06, right=0.98, top=1 - 1.25 / h,
                        bottom=(0.75 if cols > 1 else 1.0) / h,
                        hspace=0.55, wspace=0.22)
    return fig


def _proj(c: np.ndarray) -> np.ndarray:
    """Element coordinates -> 2-D (row, column) for drawing."""
    if c.shape[1] == 1:
        return np.column_stack([np.zeros(len(c), np.int64), c[:, 0]])
    return c[:, -2:]


def _mask(pts: np.ndarray, shape2) -> np.ndarray:
    m = np.zeros(shape2, dtype=bool)
    p = _proj(pts)
    ok = (p[:, 0] >= 0) & (p[:, 0] < shape2[0]) & (p[:, 1] >= 0) & (p[:, 1] < shape2[1])
    m[p[ok, 0], p[ok, 1]] = True
    return m


def _outline(ax, mask: np.ndarray, color: str, ls: str, inset: float = 0.0) -> None:
    """The border of the cells of ``mask``, as line segments along cell edges
    (``inset``: drawn that far inside the cells, so it shows next to a box)."""
    segs = []
    padded = np.pad(mask, 1)
    h = 0.5 - inset
    rows, cols = np.nonzero(mask)
    for r, c in zip(rows, cols):
        up, down = not padded[r, c + 1], not padded[r + 2, c + 1]
        left, right = not padded[r + 1, c], not padded[r + 1, c + 2]
        x0 = c - (h if left else 0.5)
        x1 = c + (h if right else 0.5)
        y0 = r - (h if up else 0.5)
        y1 = r + (h if down else 0.5)
        if up:
            segs.append(((x0, r - h), (x1, r - h)))
        if down:
            segs.append(((x0, r + h), (x1, r + h)))
        if left:
            segs.append(((c - h, y0), (c - h, y1)))
        if right:
            segs.append(((c + h, y0), (c + h, y1)))
    if segs:
        from matplotlib.collections import LineCollection
        ax.add_collection(LineCollection(segs, colors=color, linewidths=1.6, linestyles=ls,
                                         zorder=7))


def _footprint_axes(ax, a: E.ArrayFootprint) -> None:
    shape2 = (1, a.shape[0]) if len(a.shape) == 1 else a.shape[-2:]
    img = np.zeros(shape2, dtype=float)
    for pts, val in ((a.touched, 1), (a.current, 2)):
        p = _proj(pts)
        ok = (p[:, 0] >= 0) & (p[:, 0] < shape2[0]) & (p[:, 1] >= 0) & (p[:, 1] < shape2[1])
        img[p[ok, 0], p[ok, 1]] = val
    cmap = ListedColormap([_GREY, _BLUE_LIGHT, _BLUE])
    ax.imshow(img, cmap=cmap, vmin=-0.5, vmax=2.5, interpolation="nearest",
              extent=(-0.5, shape2[1] - 0.5, shape2[0] - 0.5, -0.5), aspect="auto")
    for b in a.buffers:
        lo = (0,) + b.lower if len(b.lower) == 1 else b.lower[-2:]
        ext = (1,) + b.extents if len(b.extents) == 1 else b.extents[-2:]
        ax.add_patch(Rectangle((lo[1] - 0.5, lo[0] - 0.5), ext[1], ext[0], fill=False,
                               ec=_ORANGE, lw=2.5, ls="--", zorder=6))
        # inside the box's top-left corner, on white: above it, it ran into the title
        ax.text(lo[1], lo[0], f"{b.name}[{']['.join(map(str, b.extents))}]",
                color=_ORANGE, fontsize=7, va="top", ha="left", zorder=9,
                bbox=dict(fc="white", ec="none", alpha=0.85, pad=1.0))
        if len(b.copy_in):
            mask = _mask(b.copy_in, shape2)
            rgba = np.zeros(shape2 + (4,))
            rgba[mask] = (0.17, 0.63, 0.17, 0.45)
            ax.imshow(rgba, interpolation="nearest", aspect="auto",
                      extent=(-0.5, shape2[1] - 0.5, shape2[0] - 0.5, -0.5))
            _outline(ax, mask, _GREEN, "-")
        if len(b.copy_out):
            _outline(ax, _mask(b.copy_out, shape2), _RED, ":", inset=0.35)
    ax.set_xlim(-0.5, shape2[1] - 0.5)
    ax.set_ylim(shape2[0] - 0.5, -0.5)
    _integer_ticks(ax)
    if shape2[0] == 1:
        ax.set_yticks([])
    dims = "".join(f"[{n}]" for n in a.shape)
    proj = " (last two dims)" if len(a.shape) > 2 else ""
    why = a.decision if a.decision else ("no buffer" if not a.buffers else "")
    if len(why) > 150:
        why = why[:149] + "…"
    ax.set_title(_wrap(f"{a.array}{dims}{proj}: {why}", 56), fontsize=7.5, pad=6)


# ---- tile-size search ----------------------------------------------------------------

def tile_search(result, dims: Sequence[int] = (0, 1)) -> Figure:
    """The tile vectors the search evaluated (``result.table()``), on log2 axes of
    two tile sizes, coloured by the predicted data-movement cost (the cheapest over
    the other sizes); infeasible ones grey, the chosen point a red star, the
    default sizes a black diamond.  One tile size: the cost curve."""
    rows = result.table()
    fig = Figure(figsize=(6.4, 4.8))
    ax = fig.subplots()
    fig.suptitle(_wrap(result.summary(), 90), fontsize=8)
    if not rows:
        ax.text(0.5, 0.5, "no candidates evaluated", ha="center", va="center",
                transform=ax.transAxes)
        return fig
    nv = len(rows[0]["tile"])
    if nv == 1 or len(dims) < 2:
        d = dims[0]
        pts = sorted((r["tile"][d], r["cost"], r["feasible"]) for r in rows
                     if math.isfinite(r["cost"]))
        best: dict[int, tuple[float, bool]] = {}
        for t, c, f in pts:
            if t not in best or c < best[t][0]:
                best[t] = (c, f)
        ts = sorted(best)
        ax.plot(ts, [best[t][0] for t in ts], "-", color="#888888")
        ax.scatter(ts, [best[t][0] for t in ts], c=[_BLUE if best[t][1] else "#bbbbbb"
                                                     for t in ts], zorder=3)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"t{d}")
        ax.set_ylabel("predicted cycles")
        ax.scatter([result.tile[d]], [result.cost or np.nan], marker="*", s=250, c=_RED,
                   zorder=4, label=f"chosen t{d}={result.tile[d]}")
        ax.legend(fontsize=8)
        return fig
    d0, d1 = dims[0], dims[1]
    cells: dict[tuple[int, int], tuple[float, bool]] = {}
    for r in rows:
        key = (r["tile"][d0], r["tile"][d1])
        c, f = r["cost"], r["feasible"]
        if not math.isfinite(c):
            continue
        old = cells.get(key)
        # feasible beats infeasible, then cheaper
        if old is None or (f and not old[1]) or (f == old[1] and c < old[0]):
            cells[key] = (c, f)
    feas = [(k, c) for k, (c, f) in cells.items() if f]
    infe = [k for k, (c, f) in cells.items() if not f]
    if infe:
        ax.scatter([k[1] for k in infe], [k[0] for k in infe], marker="x", s=18,
                   c="#bbbbbb", label="infeasible")
    if feas:
        costs = np.log10([c for _, c in feas])
        sc = ax.scatter([k[1] for k, _ in feas], [k[0] for k, _ in feas], c=costs,
                        cmap="viridis_r", s=60, marker="s", label="feasible")
        fig.colorbar(sc, ax=ax, label="log10 predicted cycles (cheapest over other sizes)")
    t = result.tile
    ax.scatter([t[d1]], [t[d0]], marker="*", s=320, c=_RED, edgecolors="white", zorder=5,
               label=f"chosen {','.join(map(str, t))}")
    dt = result.default_tile
    if dt and len(dt) > max(d0, d1):
        ax.scatter([dt[d1]], [dt[d0]], marker="D", s=60, facecolors="none",
                   edgecolors="black", zorder=5, label=f"default {','.join(map(str, dt))}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel(f"t{d1} (tile size)")
    ax.set_ylabel(f"t{d0} (tile size)")
    ax.legend(fontsize=7, loc="lower left")
    return fig


# ---- seed 003: the block schedule next to the thread schedule --------------------------

def schedules(compiled, options, statement: str | None = None,
              loops: Sequence[str] | None = None, sizes: Mapping | None = None,
              block: Sequence[int] | None = None, cap: int = 32, annotate: int = 128
              ) -> Figure:
    """Seed 003 §4.2 for one kernel: left, the outer (block-level) scattering
    function — the statement's instances projected to two loops, coloured by the
    block that runs them; right, the regular (thread-level) one inside one block —
    each point coloured by its thread and labelled ``thread:step`` (the step: its
    position in that thread's own sequence, lexicographic in the two loops, as the
    thread's loops run).  Both functions are written out in the titles.  Block and
    thread of each point come from the mapped schedule tree's filters."""
    ip = E.iteration_points(compiled, options, statement, loops, sizes, cap)
    info = E.mapping_of(compiled, options)
    outer, regular = E.scattering_functions(info, info.kernel_of(ip.statement).name)
    fig = Figure(figsize=(12.5, 5.5))
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": (1, 1.25)})
    fig.subplots_adjust(left=0.05, right=0.98, top=0.80, bottom=0.11, wspace=0.18)
    sizes_txt = ", ".join(f"{k}={v}" for k, v in ip.sizes.items())
    fig.suptitle(_wrap(f"{ip.kernel}, {ip.statement} at {sizes_txt} (seed 003 §4.2: "
                       f"superposed scattering = (outer, regular))", 110), fontsize=9)
    if not len(ip.coords):
        ax1.text(0.5, 0.5, f"{ip.statement} has no instances at {sizes_txt}", ha="center",
                 va="center", transform=ax1.transAxes)
        ax2.set_axis_off()
        return fig
    ylab, xlab = (ip.loops if len(ip.loops) == 2 else ("", ip.loops[0]))
    bid = ip.block_ids()
    nblocks = int(bid.max()) + 1
    img, extent, _ = _grid(ip.coords, bid)
    ax1.imshow(img, cmap=_block_cmap(nblocks), vmin=-0.5, vmax=nblocks - 0.5, extent=extent,
               interpolation="nearest", aspect="auto")
    c2 = _as2d(ip.coords)
    uniq = np.unique(ip.blocks, axis=0)
    for b in uniq:
        sel = np.all(ip.blocks == b, axis=1)
        lo, hi = c2[sel].min(axis=0), c2[sel].max(axis=0)
        ax1.add_patch(Rectangle((lo[1] - 0.5, lo[0] - 0.5), hi[1] - lo[1] + 1,
                                hi[0] - lo[0] + 1, fill=False, lw=1.2, ec="#333333"))
        if nblocks <= 64:
            ax1.text((lo[1] + hi[1]) / 2, (lo[0] + hi[0]) / 2, _bname(b, ip), ha="center",
                     va="center", fontsize=9 if nblocks <= 16 else 7)
    ax1.set_xlabel(xlab)
    ax1.set_ylabel(ylab)
    _integer_ticks(ax1)
    ax1.set_title(_wrap(f"block level: Θ_out* = {outer}, {nblocks} block(s)", 62), fontsize=8.5)
    target = uniq[0] if block is None else np.array((tuple(block) + (0, 0, 0))[:3])
    sel = np.all(ip.blocks == target, axis=1)
    if not sel.any():
        ax2.text(0.5, 0.5, f"block {tuple(int(v) for v in target)} runs no instance",
                 ha="center", va="center", transform=ax2.transAxes)
        ax2.set_axis_off()
        return fig
    pts, tl = ip.coords[sel], ip.thread_linear()[sel]
    order = np.lexsort(pts.T[::-1])
    step = np.zeros(len(pts), np.int64)
    seen: dict[int, int] = {}
    for idx in order:
        t = int(tl[idx])
        step[idx] = seen.get(t, 0)
        seen[t] = step[idx] + 1
    nthreads = int(np.prod(ip.block_dims))
    img2, extent2, _ = _grid(pts, tl)
    im = ax2.imshow(img2, cmap="viridis", vmin=0, vmax=max(nthreads - 1, 1), extent=extent2,
                    interpolation="nearest", aspect="auto")
    p2 = _as2d(pts)
    fig.colorbar(im, ax=ax2, shrink=0.8, label="thread (linear id)")
    one_step = int(step.max()) == 0          # then the label is the thread id alone
    if len(pts) <= annotate:
        labels = [f"{int(t)}" if one_step else f"{int(t)}:{int(k)}" for t, k in zip(tl, step)]
        size = _label_size(fig, ax2, len(np.unique(p2[:, 1])), len(np.unique(p2[:, 0])),
                           max(len(x) for x in labels))
        for (r, c), t, text in zip(p2, tl, labels):
            ax2.text(c, r, text, ha="center", va="center", fontsize=size,
                     color="white" if t < nthreads / 2 else "black")
    ax2.set_xlabel(xlab)
    ax2.set_ylabel(ylab)
    _integer_ticks(ax2)
    steps = int(step.max()) + 1
    what = "labels: thread id" if one_step else "labels thread:step"
    ax2.set_title(_wrap(f"thread level in block {_bname(target, ip)}: Θ = {regular}; "
                        f"{len(seen)} thread(s), up to {steps} step(s) each "
                        f"({what})", 62), fontsize=8.5)
    return fig


def _label_size(fig, ax, cols: int, rows: int, chars: int) -> float:
    """The largest font size (5 to 10 pt) at which a label of ``chars`` characters
    fits one cell of a ``rows`` × ``cols`` grid drawn in ``ax``."""
    box = ax.get_position()
    cell_w = box.width * fig.get_figwidth() * 72 / max(cols, 1)      # points
    cell_h = box.height * fig.get_figheight() * 72 / max(rows, 1)
    return float(max(5.0, min(10.0, cell_w / (0.65 * max(chars, 1) + 0.6), cell_h * 0.6)))


# ---- seed 001: C(t), I(t), O(t), G(t) and the drift -------------------------------------

def localisation(loc) -> Figure:
    """Seed 001 §4 from :func:`polymagic.report.explore.localisation`: left, the
    cached set C(t) of each time step (rows) over the array's elements (columns,
    lexicographic): elements kept for t+1 (G(t)) blue, moved out after t (O(t))
    orange, moved in for t (I(t)) outlined green, each labelled with its place
    ρ(x, t) in the local storage; right, the local storage L over t: each slot with
    the element it holds, an arrow from L[ρ(x, t)] to L[ρ(x, t+1)] for every kept
    element (the drift δ, Definition 4)."""
    steps = loc.steps
    fig = Figure(figsize=(11.0, 1.6 + 0.42 * max(len(steps), 3)))
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1.0]})
    h = fig.get_figheight()
    fig.subplots_adjust(left=0.06, right=0.98, top=1 - 1.0 / h, bottom=1.0 / h, wspace=0.18)
    drifts = sorted(loc.drifts())
    dtxt = ("constant drift " + str(drifts[0]) + ": modulo addressing applies (§4.4)"
            if len(drifts) == 1 else
            f"drifts {', '.join(map(str, drifts))}: two-pass in-situ reorganisation (§4.4)"
            if drifts else "nothing kept between steps")
    sizes_txt = ", ".join(f"{k}={v}" for k, v in loc.sizes.items())
    fig.suptitle(_wrap(f"localisation of {loc.array} along {loc.time} (seed 001 §4, window "
                       f"w={loc.window}) at {sizes_txt}: local storage {loc.storage} "
                       f"element(s); {dtxt}", 130), fontsize=9)
    if not steps:
        ax1.text(0.5, 0.5, "no time steps", ha="center", va="center", transform=ax1.transAxes)
        ax2.set_axis_off()
        return fig
    elems = sorted({tuple(int(v) for v in r) for s in steps for r in s.cached})
    col = {x: k for k, x in enumerate(elems)}
    img = np.full((len(steps), max(len(elems), 1)), np.nan)
    for r, s in enumerate(steps):
        for x in s.rho:
            img[r, col[x]] = 1.0 if x in s.drift else 0.0
    ax1.imshow(img, cmap=ListedColormap([_ORANGE, _BLUE_LIGHT]), vmin=-0.5, vmax=1.5,
               aspect="auto", interpolation="nearest",
               extent=(-0.5, len(elems) - 0.5, len(steps) - 0.5, -0.5))
    small = len(elems) <= 48
    for r, s in enumerate(steps):
        ins = {tuple(int(v) for v in x) for x in s.move_in}
        for x, p in s.rho.items():
            if x in ins:
                ax1.add_patch(Rectangle((col[x] - 0.45, r - 0.45), 0.9, 0.9, fill=False,
                                        ec=_GREEN, lw=1.8))
            if small:
                ax1.text(col[x], r, str(p), ha="center", va="center", fontsize=7)
    ax1.set_yticks(range(len(steps)), [_step(loc, s) for s in steps], fontsize=7)
    every = max(1, len(elems) // 16)
    ax1.set_xticks(range(0, len(elems), every),
                   [",".join(map(str, elems[k])) for k in range(0, len(elems), every)],
                   fontsize=7, rotation=0 if len(elems[0]) == 1 else 45)
    ax1.set_xlabel(f"elements x of {loc.array} (lexicographic); numbers: ρ(x, {loc.time})")
    ax1.set_title("C(t): kept G(t) blue, moved out O(t) orange, moved in I(t) green frame",
                  fontsize=8.5)
    fig.legend(handles=[Patch(color=_BLUE_LIGHT, label="G(t) = C(t) ∩ C(t+1): kept"),
                        Patch(color=_ORANGE, label="O(t) = C(t) − C(t+1): moved out"),
                        Patch(fill=False, ec=_GREEN, lw=1.8,
                              label="I(t) = C(t) − C(t−1): moved in")],
               fontsize=7, loc="lower left", ncol=3, frameon=False)
    width = max(loc.storage, 1)
    ax2.imshow(np.zeros((len(steps), width)), cmap=ListedColormap([_GREY]), aspect="auto",
               extent=(-0.5, width - 0.5, len(steps) - 0.5, -0.5))
    arrows = []
    for r, s in enumerate(steps):
        for x, p in s.rho.items():
            if small:
                ax2.text(p, r, ",".join(map(str, x)), ha="center", va="center", fontsize=7)
        if r + 1 < len(steps):
            arrows += [(s.rho[x], r + 0.3, d, 0.4) for x, d in s.drift.items()]
    if arrows:
        a = np.array(arrows, dtype=float)
        ax2.quiver(a[:, 0], a[:, 1], a[:, 2], a[:, 3], angles="xy", scale_units="xy",
                   scale=1, color=_BLUE, width=0.004, headwidth=4)
    for k in range(width + 1):
        ax2.axvline(k - 0.5, color="white", lw=1)
    ax2.set_xticks(range(width))
    ax2.set_yticks(range(len(steps)), [_step(loc, s) for s in steps], fontsize=7)
    ax2.set_xlabel("local storage L[ρ]")
    ax2.set_title("L over t: arrows are the drift δ(x, t) = ρ(x, t+1) − ρ(x, t)",
                  fontsize=8.5)
    return fig


def _step(loc, s) -> str:
    outer = ",".join(map(str, s.t[:-1]))
    return (f"({outer}) " if outer else "") + f"{loc.time}={s.t[-1]}"


def _scop_of(program: Compiled | Scop) -> Scop:
    """The Scop of a compile result, or the Scop itself (pictures never parse)."""
    return program.scop if isinstance(program, Compiled) else program


def localisation_of(program: Compiled | Scop, array: str | None = None,
                    time: str | None = None, window: int = 1, sizes: Mapping | None = None,
                    max_steps: int = 10) -> Figure:
    """:func:`localisation` for a function (its Compiled or Scop), from the
    localisation stage (:func:`polymagic.memory.localise.localise` along the loop
    ``time``, default the first loop of the deepest statement that has one prefix
    for every statement inside it) for ``array``
    (default: the first array written inside it), at picture sizes."""
    from ..memory.localise import localise, time_prefix
    scop = _scop_of(program)
    if time is None:          # the first loop (deepest statement first) with one prefix
        loops = [lp for st in sorted(scop.statements, key=lambda s: -len(s.iterators))
                 for lp in st.iterators]
        for lp in dict.fromkeys(loops):
            try:
                prefix = time_prefix(scop, lp)
            except ValueError:
                continue
            time = lp
            break
        else:
            raise KeyError(f"{scop.name} has no loop to localise along")
    else:
        prefix = time_prefix(scop, time)
    if array is None:
        inside = [a for st in scop.statements if time in st.iterators for a in st.accesses]
        written = [a.array for a in inside if a.is_write]
        array = (written or [a.array for a in inside])[0]
    loc = localise(scop, prefix, array, window)
    sz = E.picture_sizes(scop, sizes, cap=12)
    return localisation(E.localisation(loc, sz, array=array, time=time, max_steps=max_steps))


# ---- autotuning --------------------------------------------------------------------

def autotune(result) -> Figure:
    """The autotuner's score (:class:`polymagic.api.autotune.AutotuneResult`) as a heat map
    over its two varied sizes (``result.axes``): each cell the best score of the
    candidates with those two sizes (1.0: the best seen; lower is better), annotated;
    the chosen configuration a red star, the start a black frame.  Candidates that
    did not run (skipped, failed) show as hatched cells."""
    cands = result.candidates
    xs = sorted({result.axis_value(c, 1) for c in cands})
    ys = sorted({result.axis_value(c, 0) for c in cands})
    img = np.full((len(ys), len(xs)), np.nan)
    tried = np.zeros((len(ys), len(xs)), dtype=bool)
    for c in cands:
        r, k = ys.index(result.axis_value(c, 0)), xs.index(result.axis_value(c, 1))
        tried[r, k] = True
        if c.ok and math.isfinite(c.score):
            img[r, k] = c.score if np.isnan(img[r, k]) else min(img[r, k], c.score)
    fig = Figure(figsize=(6.4, 5.0))
    ax = fig.subplots()
    fig.subplots_adjust(left=0.14, right=0.95, top=0.82, bottom=0.24)
    how = "GPU kernel time relative to the fastest" if result.mode == "gpu" else \
        ("emulator traffic (sectors) × §4.3 cost (geometric mean) / grid fill, "
         "relative to the best")
    fig.suptitle(_wrap(result.summary(), 100) + "\n" + _wrap(f"score: {how}", 100), fontsize=7.5)
    if np.isfinite(img).any():
        finite = img[np.isfinite(img)]
        im = ax.imshow(img, cmap="viridis_r", origin="lower", aspect="auto",
                       vmin=float(finite.min()), vmax=float(max(finite.max(), finite.min() * 1.01)),
                       interpolation="nearest")
        fig.colorbar(im, ax=ax, shrink=0.85, label="score (lower is better)")
    for r in range(len(ys)):
        for k in range(len(xs)):
            if np.isfinite(img[r, k]):
                ax.text(k, r, f"{img[r, k]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if img[r, k] < np.nanmedian(img) else "black")
            elif tried[r, k]:
                ax.add_patch(Rectangle((k - 0.5, r - 0.5), 1, 1, fill=False, hatch="//",
                                       ec="#999999", lw=0))
                ax.text(k, r, "–", ha="center", va="center", fontsize=8, color="#666666")
    start = result.start
    ax.add_patch(Rectangle((xs.index(result.axis_value(start, 1)) - 0.5,
                            ys.index(result.axis_value(start, 0)) - 0.5), 1, 1, fill=False,
                           ec="black", lw=2.0, label=f"start {start.label()}"))
    if result.best is not None:
        b = result.best
        ax.scatter([xs.index(result.axis_value(b, 1)) + 0.3],
                   [ys.index(result.axis_value(b, 0)) + 0.3], marker="*", s=260, c=_RED,
                   edgecolors="white", zorder=5, label=f"chosen {b.label()}")
    ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_yticks(range(len(ys)), [str(v) for v in ys])
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.set_ylim(-0.5, len(ys) - 0.5)
    ax.set_xlabel(result.axes[1])
    ax.set_ylabel(result.axes[0])
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2,
              frameon=False)
    return fig


# ---- times and counters ----------------------------------------------------------------

def _reports(reports: RunReport | Mapping[str, RunReport]) -> dict[str, RunReport]:
    if isinstance(reports, RunReport):
        return {reports.target: reports}
    return dict(reports)


def times(reports) -> Figure:
    """Horizontal bars of the CPU reference, device kernels (GPU, emulator or
    OpenMP), and host<->device copies, per run (``{label: RunReport}`` or one
    report).  Log scale; the emulator's times say nothing about GPU speed."""
    from . import fmt
    runs = _reports(reports)
    fig = Figure(figsize=(9.0, 1.1 + 0.55 * max(len(runs), 1) * 2))
    ax = fig.subplots()
    labels, vals, colors = [], [], []
    palette = {"CPU reference": "#7f7f7f", "gpu": "#2ca02c", "emulator": "#1f77b4",
               "openmp": "#9467bd", "H2D": "#ff7f0e", "D2H": "#d62728"}
    for name, r in runs.items():
        items = [("CPU reference", r.cpu_s), (r.target, r.device_s)]
        if r.target == "gpu":
            items += [("H2D", r.h2d_s), ("D2H", r.d2h_s)]
        for what, v in items:
            if v and v > 0:
                labels.append(f"{name}: {what}" if len(runs) > 1 else what)
                vals.append(v)
                colors.append(palette.get(what, "#1f77b4"))
    if not vals:
        ax.text(0.5, 0.5, "no times yet: run first", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    y = np.arange(len(vals))[::-1]
    ax.barh(y, vals, color=colors)
    ax.set_yticks(y, labels, fontsize=7.5)
    fig.subplots_adjust(left=min(0.5, 0.04 + 0.0088 * max(len(s) for s in labels)),
                        right=0.97, top=1 - 0.45 / fig.get_figheight(),
                        bottom=0.6 / fig.get_figheight())
    ax.set_xscale("log")
    ax.set_xlabel("seconds")
    for yy, v in zip(y, vals):
        ax.text(v, yy, " " + fmt.seconds(v), va="center", fontsize=8)
    ax.set_xlim(min(vals) / 3, max(vals) * 8)
    fig.suptitle("CPU reference vs device kernels (the emulator's times are no GPU speed)",
                 fontsize=9)
    return fig


def memory_traffic(reports) -> Figure:
    """Global-memory loads and stores counted by the emulator, per variant
    (``{label: RunReport}``, e.g. from :func:`explore.shared_variants`); where the
    emulator counted warp transactions (seed 003 §6.3), a second panel with the
    32-byte sectors and the sectors per request of each variant."""
    from .fmt import transactions
    runs = _reports(reports)
    names = [n for n, r in runs.items() if r.counters]
    tx = {n: transactions(runs[n].counters) for n in names}
    with_tx = [n for n in names if tx[n]]
    fig = Figure(figsize=(11.0 if with_tx else 6.4, 3.8))
    axes = fig.subplots(1, 2) if with_tx else [fig.subplots()]
    ax = axes[0]
    if not names:
        ax.text(0.5, 0.5, "no emulator counters (run with --target emulator)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    loads = [runs[n].counters.get("loads", 0) for n in names]
    stores = [runs[n].counters.get("stores", 0) for n in names]
    x = np.arange(len(names))
    ax.bar(x - 0.2, loads, 0.4, label="loads", color=_BLUE)
    ax.bar(x + 0.2, stores, 0.4, label="stores", color=_ORANGE)
    for xx, v in zip(x - 0.2, loads):
        ax.text(xx, v, f"{v:,}", ha="center", va="bottom", fontsize=7)
    for xx, v in zip(x + 0.2, stores):
        ax.text(xx, v, f"{v:,}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, names)
    ax.set_ylabel("global-memory element accesses")
    ax.legend(fontsize=8)
    ax.set_title("global-memory traffic counted by the emulator", fontsize=9)
    ax.margins(y=0.15)
    if with_tx:
        ax2 = axes[1]
        xt = np.arange(len(with_tx))
        sectors = [tx[n]["transactions"] for n in with_tx]
        ax2.bar(xt, sectors, 0.5, color=_GREEN)
        for xx, n, v in zip(xt, with_tx, sectors):
            per = tx[n]["transactions_per_request"]
            ax2.text(xx, v, f"{v:,}" + (f"\n{per:.2f}/request" if per else ""), ha="center",
                     va="bottom", fontsize=7)
        ax2.set_xticks(xt, with_tx)
        ax2.set_ylabel("32-byte sectors (loads + stores)")
        ax2.set_title("warp transactions per variant (seed 003 §6.3)", fontsize=9)
        ax2.margins(y=0.25)
        fig.subplots_adjust(wspace=0.3)
    return fig


# ---- seed 002: packing ---------------------------------------------------------------

def figure7_members():
    """Seed 002 Figure 7(a): three CSLMADs of stride 4 and u = 5, bases b_A,
    b_A + 5 and b_A + 15 (with b_A = 0)."""
    from ..transfers.lmad import CSLMAD
    return [CSLMAD(0, (4,), (5,)), CSLMAD(5, (4,), (5,)), CSLMAD(15, (4,), (5,))]


def _strip(ax, y: float, n: int, lo: int, colors: dict[int, str], label: str) -> None:
    for k in range(n):
        ax.add_patch(Rectangle((k, y), 1, 0.8, fc=colors.get(lo + k, "white"), ec="#999999",
                               lw=0.5))
    ax.text(-0.6, y + 0.4, label, ha="right", va="center", fontsize=8)


_MEMBER_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                  "#e377c2", "#17becf", "#bcbd22"]


def packing(members=None, labels: Sequence[str] | None = None) -> Figure:
    """Seed 002 §4.3: host addresses of a group of CSLMADs (top) and where each
    lands in the packed device buffer (bottom), from
    :func:`polymagic.transfers.lmad.analyse_group`.  Default: Figure 7's example."""
    from ..transfers.lmad import analyse_group
    members = list(members) if members is not None else figure7_members()
    labels = list(labels) if labels else [chr(ord("A") + i) for i in range(len(members))]
    g = analyse_group(members)
    host: dict[int, str] = {}
    dev: dict[int, str] = {}
    links = []
    for m, f in enumerate(members):
        col = _MEMBER_COLORS[m % len(_MEMBER_COLORS)]
        for cnt in itertools.product(*(range(u) for u in f.bounds)):
            a = f.at(cnt)
            s = g.device_offset(m, cnt)
            host[a] = col
            dev[s] = col
            links.append((a, s, col))
    lo = min(host)
    hi = max(host)
    nh = hi - lo + 1
    fig = Figure(figsize=(min(16, 2 + 0.28 * max(nh, g.size)), 2.8))
    ax = fig.subplots()
    _strip(ax, 2.0, nh, lo, host, "host")
    _strip(ax, 0.0, g.size, 0, dev, "device")
    for a, s, col in links:
        ax.plot([a - lo + 0.5, s + 0.5], [2.0, 0.8], color=col, lw=0.6, alpha=0.7)
    ax.set_xlim(-3, max(nh, g.size) + 0.5)
    ax.set_ylim(-0.3, 3.2)
    ax.set_axis_off()
    refs = ", ".join(f"{lb}: {f.base} + {f.strides[0] if f.strides else 0}·i, i < "
                     f"{f.bounds[0] if f.bounds else 1}" for lb, f in zip(labels, members))
    ax.set_title(_wrap(f"{g.case}: {nh} host addresses ({refs}) -> {g.size} device "
                       f"elements" + (f" (q={g.q}, periods {g.periods})" if g.packed else ""),
                       120), fontsize=9)
    ax.legend(handles=[Patch(color=_MEMBER_COLORS[m % len(_MEMBER_COLORS)], label=lb)
                       for m, lb in enumerate(labels)], fontsize=8, loc="upper right",
              ncol=len(labels))
    return fig


def transfer_packing(plan, arrays: Mapping[str, np.ndarray], max_links: int = 400) -> Figure:
    """Seed 002 §4 at run time: for each device buffer of a transfer plan
    (:func:`explore.transfer_plan`), the host addresses (in elements, from the lowest
    one) of the elements copied in, coloured per array — gaps are memory a strided
    view skips — and the packed device slots they land in."""
    comps = plan.components
    fig = Figure(figsize=(12, 1.0 + 2.2 * max(len(comps), 1)))
    axes = np.atleast_1d(fig.subplots(max(len(comps), 1), 1))
    names = list(plan.layouts)
    colors = {n: _MEMBER_COLORS[i % len(_MEMBER_COLORS)] for i, n in enumerate(names)}
    for ax, comp in zip(axes, comps):
        host: dict[int, str] = {}
        dev: dict[int, str] = {}
        links = []
        item = comp.itemsize
        for n in comp.arrays:
            lay = plan.layouts[n]
            a = arrays[n]
            ptr = int(a.__array_interface__["data"][0])
            for box in lay.copy_in:
                for x in itertools.product(*(range(l, h + 1) for l, h in zip(box.lo, box.hi))):
                    addr = (ptr + sum(i * s for i, s in zip(x, a.strides))) // item
                    s = lay.slot(x)
                    host[addr] = colors[n]
                    dev[s] = colors[n]
                    links.append((addr, s, colors[n]))
        if not host:
            ax.set_axis_off()
            continue
        lo, hi = min(host), max(host)
        nh = hi - lo + 1
        scale = max(nh, comp.size)
        # strips drawn as images: one pixel per element
        himg = np.ones((1, nh, 3))
        for addr, col in host.items():
            himg[0, addr - lo] = _rgb(col)
        dimg = np.ones((1, comp.size, 3))
        for s, col in dev.items():
            if 0 <= s < comp.size:
                dimg[0, s] = _rgb(col)
        ax.imshow(himg, extent=(0, nh, 2.0, 2.8), aspect="auto", interpolation="nearest")
        ax.imshow(dimg, extent=(0, comp.size, 0.0, 0.8), aspect="auto",
                  interpolation="nearest")
        ax.add_patch(Rectangle((0, 2.0), nh, 0.8, fill=False, ec="#999999", lw=0.5))
        ax.add_patch(Rectangle((0, 0.0), comp.size, 0.8, fill=False, ec="#999999", lw=0.5))
        step = max(1, len(links) // max_links)
        for a_, s, col in links[::step]:
            ax.plot([a_ - lo + 0.5, s + 0.5], [2.0, 0.8], color=col, lw=0.4, alpha=0.5)
        ax.text(-0.01 * scale, 2.4, "host", ha="right", va="center", fontsize=8)
        ax.text(-0.01 * scale, 0.4, "device", ha="right", va="center", fontsize=8)
        ax.set_xlim(-0.08 * scale, scale * 1.01)
        ax.set_ylim(-0.2, 3.0)
        ax.set_axis_off()
        used = len(host)
        ax.set_title(_wrap(f"buffer {comp.index} ({', '.join(comp.arrays)}): {comp.case}; "
                           f"{used} elements used in a host span of {nh}, "
                           f"packed into {comp.size} device elements", 120), fontsize=9)
    if comps:
        axes[0].legend(handles=[Patch(color=colors[n], label=n) for n in names],
                       fontsize=8, loc="upper right", ncol=len(names))
    return fig


def _rgb(col: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb
    return to_rgb(col)


# ---- seed 000 §3 on a whole program ------------------------------------------------------

def data_spaces(program: Compiled | Scop, sizes: Mapping | None = None,
                delta: float = 0.3) -> Figure:
    """Seed 000 §3 with the whole program as one block (its Figure 1): per array, each
    reference's data space (markers; filled: read, open squares: write), each
    partition's Algorithm 2 box (dashed) with its Algorithm 1 decision, the merged
    buffer (orange), copy-in (green) and copy-out (red).  ``program``: the function's
    Compiled or Scop."""
    scop = _scop_of(program)
    arrays = E.program_data_spaces(scop, sizes, delta)
    n = max(len(arrays), 1)
    fig = Figure(figsize=(6.2 * n, 5.4))
    axes = np.atleast_1d(fig.subplots(1, n))
    fig.subplots_adjust(left=0.06, right=0.98, top=0.80, bottom=0.2, wspace=0.2)
    for ax, a in zip(axes, arrays):
        _data_space_axes(ax, a)
    fig.suptitle(f"{scop.name}: data spaces, partitions and local buffers "
                 f"(seed 000 §3, the whole program as one block)", fontsize=10)
    return fig


_REF_MARKERS = ["o", "s", "^", "D", "v", "P"]
_REF_COLORS = ["#1f77b4", "#9467bd", "#2ca02c", "#8c564b", "#e377c2", "#17becf"]


def _data_space_axes(ax, a: "E.ArrayDataSpaces") -> None:
    lo = np.array(a.lower[-2:] if len(a.lower) >= 2 else (0,) + a.lower)
    ext = np.array(a.extents[-2:] if len(a.extents) >= 2 else (1,) + a.extents)
    r0, c0 = lo - 1
    r1, c1 = lo + ext
    shape2 = (int(r1 - r0 + 1), int(c1 - c0 + 1))
    ext_img = (c0 - 0.5, c1 + 0.5, r1 + 0.5, r0 - 0.5)
    ax.imshow(np.zeros(shape2), cmap=ListedColormap([_GREY]), extent=ext_img,
              interpolation="nearest", aspect="auto")

    def local(pts):
        p = _proj(pts) - np.array([r0, c0])
        return p

    for pv in a.partitions:
        if len(pv.copy_in):
            m = _mask(local(pv.copy_in) + 0, shape2)
            rgba = np.zeros(shape2 + (4,))
            rgba[m] = (0.17, 0.63, 0.17, 0.30)
            ax.imshow(rgba, extent=ext_img, interpolation="nearest", aspect="auto")
    for k, r in enumerate(a.refs):
        p = _proj(r.points)
        col = _REF_COLORS[k % len(_REF_COLORS)]
        if r.is_write:
            ax.scatter(p[:, 1], p[:, 0], s=46, marker="s", facecolors="none", edgecolors=col,
                       lw=1.3, label=r.label)
        else:
            ax.scatter(p[:, 1], p[:, 0], s=14, marker=_REF_MARKERS[k % len(_REF_MARKERS)],
                       c=col, label=r.label)
    for j, pv in enumerate(a.partitions):
        plo = pv.lower[-2:] if len(pv.lower) >= 2 else (0,) + pv.lower
        pext = pv.extents[-2:] if len(pv.extents) >= 2 else (1,) + pv.extents
        ax.add_patch(Rectangle((plo[1] - 0.5, plo[0] - 0.5), pext[1], pext[0], fill=False,
                               ec="#555555", lw=1.0, ls="--"))
        verdict = "buffer" if pv.beneficial else "no buffer"
        ax.text(plo[1] - 0.4, plo[0] + pext[0] - 0.6, f"P{j}: {verdict}", fontsize=7,
                color="#333333", va="bottom")
        if len(pv.copy_out):
            m = _mask(local(pv.copy_out), shape2)
            segs_ax = ax
            _outline_at(segs_ax, m, r0, c0, _RED, ":", inset=0.3)
    ax.add_patch(Rectangle((lo[1] - 0.5, lo[0] - 0.5), ext[1], ext[0], fill=False, ec=_ORANGE,
                           lw=2.2))
    dims = "][".join(map(str, a.extents))
    offs = ", ".join(map(str, a.lower))
    ax.set_title(_wrap(f"{a.array}: merged buffer L{a.array}[{dims}], offsets ({offs}); "
                       + "; ".join(f"P{j}: {pv.reason}" for j, pv in enumerate(a.partitions)),
                       70), fontsize=8)
    ax.set_xlim(c0 - 0.5, c1 + 0.5)
    ax.set_ylim(r1 + 0.5, r0 - 0.5)
    _integer_ticks(ax)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2,
              frameon=False)


def _outline_at(ax, mask: np.ndarray, r0: int, c0: int, color: str, ls: str,
                inset: float = 0.0) -> None:
    """:func:`_outline` for a mask whose cell (0, 0) is element (r0, c0)."""
    from matplotlib.collections import LineCollection
    before = len(ax.collections)
    _outline(ax, mask, color, ls, inset)
    for coll in ax.collections[before:]:
        if isinstance(coll, LineCollection):
            coll.set_segments([[(x + c0, y + r0) for x, y in seg] for seg in coll.get_segments()])


__all__ = ["Figure", "to_png", "iteration_space", "footprint", "tile_search", "autotune",
           "schedules", "localisation", "localisation_of", "times",
           "memory_traffic", "packing", "transfer_packing", "figure7_members", "data_spaces"]
