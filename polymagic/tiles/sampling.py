"""Sampling the real mapper and planner for seed 000 §4.3's tile-size search, and
fitting :mod:`.model`'s model to the samples.

The planner (:func:`polymagic.mapping.map_schedule` with
:func:`polymagic.memory.plan.plan_kernel_memory`) is run at ``L + 1`` tile vectors
(a base point and one step along each tile size), in forked worker processes, and
every buffer extent and every per-dimension extent of one block's copy-in and
copy-out boxes is fitted as an affine function of the tile sizes (seed 000 §4.2's
"local memory storage needed ... as a function of tile sizes").  The fit is checked
at a held-out tile vector, and the occurrence counts ``N`` against the prefix points
of the planner's copy sets there; a failed check raises :class:`FitError`.  What
the model needs beyond the mapping's result (bands before tiling, superposition
block loops and thread tiles, seed 003 §4.2) the mapper's observer records.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction

import islpy as isl
import numpy as np

from ..errors import OptionsError
from ..mapping import (DEFAULT_BLOCKS, DEFAULT_SUB_TILE, DEFAULT_TILES, BandEvent,
                       GroupBuffersEvent, MappingObserver, MappingResult, SuperKernelEvent,
                       default_block, map_schedule, superposed, tied_axes)
from ..notes import Note, Stage
from ..options import CompileOptions
from ..schedule import ScheduleResult
from ..dtypes import DTYPES
from ..scop import Scop
from ..memory.plan import STATIC_SHARED_LIMIT, BufferPlan
from .model import H100, Affine, BufferModel, GpuModel, KernelModel, TileModel, min_blocks


class _Recorder(MappingObserver):
    """What seed 000 §4.3's model needs of the mapping beyond its
    :class:`~polymagic.mapping.MappingResult` (the mapper's observer,
    :mod:`polymagic.mapping.observer`): each single-mapping band before it is tiled;
    per superposition kernel (seed 003 §4.2) its domain, host prefix, block loops
    ``Θ_out`` before ``TL_k`` tiles them, thread axes tied to each block loop and
    default sizes, and per thread-tile buffer the block loops whose tiles its thread
    tiles split and whether its copies sit inside the sub-tile loop."""

    def __init__(self) -> None:
        self.bands: dict[str, BandEvent] = {}
        self.kernels: dict[str, SuperKernelEvent] = {}
        self.groups: dict[str, list[GroupBuffersEvent]] = {}

    def band(self, event: BandEvent) -> None:
        self.bands[event.kernel] = event

    def super_kernel(self, event: SuperKernelEvent) -> None:
        self.kernels[event.kernel] = event

    def group_buffers(self, event: GroupBuffersEvent) -> None:
        self.groups.setdefault(event.kernel, []).append(event)

    def info(self, kernel: str) -> dict:
        """A superposition kernel's record: its event's fields, ``bufs`` (buffer ->
        (split block loops, sub-tiled)) and ``sub`` (instances -> sub-tiled loop,
        over every sub-tiled thread group; None without)."""
        ev = self.kernels[kernel]
        groups = self.groups.get(kernel, [])
        sub = None
        for g in groups:
            if g.sub_tile_loop is not None:
                sub = g.sub_tile_loop if sub is None else sub.union(g.sub_tile_loop)
        return {"domain": ev.domain, "statements": list(ev.statements), "host": ev.host,
                "block": ev.block_loops, "sub": sub,
                "bufs": {b: (g.split, g.sub_tiled) for g in groups for b in g.buffers},
                "tied": [list(axes) for axes in ev.tied],
                "default_block": ev.default_block, "defaults": ev.defaults}


def _map(scop: Scop, sched: ScheduleResult, options: CompileOptions
         ) -> tuple[MappingResult, _Recorder]:
    """:func:`polymagic.mapping.map_schedule` with a :class:`_Recorder` watching."""
    rec = _Recorder()
    return map_schedule(scop, sched, options, observer=rec), rec


def _fix(s, sizes: dict):
    """Fix every parameter of a set to its size (0 for block/thread ids), drop them."""
    for pos in range(s.dim(isl.dim_type.param)):
        name = s.get_dim_name(isl.dim_type.param, pos)
        s = s.fix_val(isl.dim_type.param, pos, isl.Val(int(sizes.get(name, 0))))
    return s.project_out(isl.dim_type.param, 0, s.dim(isl.dim_type.param))


def _card(s: isl.Set) -> int:
    """Number of points of a parameter-free set: its box when it is one, else barvinok."""
    if s.is_empty():
        return 0
    n = s.dim(isl.dim_type.set)
    lo = [s.dim_min_val(d).to_python() for d in range(n)]
    hi = [s.dim_max_val(d).to_python() for d in range(n)]
    box = isl.Set("{ [%s] : %s }" % (", ".join(f"x{d}" for d in range(n)),
                                       " and ".join(f"{a} <= x{d} <= {b}" for d, (a, b)
                                                    in enumerate(zip(lo, hi))) or "1 = 1"))
    if s.reset_tuple_id().is_equal(box):
        return math.prod(b - a + 1 for a, b in zip(lo, hi))
    return int(s.count_val().to_python())


def _box_extents(rel: isl.Map) -> tuple[int, ...] | None:
    """Per-dimension extent of one block's elements, largest over every block (the
    deltas of two elements of one block, as Algorithm 2's bounding box does)."""
    d = rel.reverse().apply_range(rel).deltas()
    d = d.project_out(isl.dim_type.param, 0, d.dim(isl.dim_type.param))
    out = []
    for k in range(d.dim(isl.dim_type.set)):
        v = d.dim_max_val(k)
        if not v.is_int():
            return None
        out.append(int(v.to_python()) + 1)
    return tuple(out)


_WORK: tuple | None = None      # (scop, sched, options, sizes) for forked workers


def _sample(tile: tuple[int, ...], bands: bool = False, counts: bool = False) -> dict:
    """Run the planner at one tile vector; plain data only (crosses processes).
    Vector copies off: their row padding (16-byte pitch) is not affine in the tile
    sizes; the final plan adds it and re-checks M_up."""
    scop, sched, options, sizes = _WORK
    opts = options.with_(tile=tuple(tile), tile_levels=(tuple(tile),),
                         keep_register_buffers=True, vector=False)
    mapping, rec = _map(scop, sched, opts)
    out: dict = {"tile": tuple(tile), "kernels": {}}
    is_super = superposed(sched, opts)
    for name, plan in mapping.plans.items():
        if not plan.members:
            continue
        mem = plan.memory
        info = rec.info(name) if is_super else None
        kd = {"m": len(plan.members), "s": len(plan.sub_tiles),
              "threads": math.prod(plan.block), "superposed": is_super,
              "dropped": mem.dropped_any if mem else False,
              "buffers": {}}
        if is_super:
            kd["s"] = int(any(sub for _, sub in info["bufs"].values()))
            kd.update(_super_threads(info, options, kd["m"]))
        for b in (mem.buffers if mem else []):
            kd["buffers"][b.name] = _buffer_sample(b, sizes, counts, is_super)
            if is_super:
                tied, sub = info["bufs"].get(b.name, ((), False))
                kd["buffers"][b.name].update(
                    r=kd["m"] + (1 if sub else 0), tt=tied)
        if bands and is_super:
            kd.update(_super_band(scop, info, kd, sizes))
        elif bands:
            kd.update(_single_band(scop, rec.bands[name], kd["m"] + kd["s"], sizes))
        out["kernels"][name] = kd
    return out


def _buffer_sample(b: BufferPlan, sizes: dict, counts: bool, is_super: bool) -> dict:
    """A planned buffer as plain data: extents, copy boxes and (``counts``) the
    number of its copies (prefix points of its copy sets)."""
    occ = occ_in = occ_out = None
    if counts:
        rel = b.copy_in if b.copy_in is not None else b.copy_out
        occ = _card(_fix(rel.domain(), sizes)) if rel is not None else None
        if is_super:
            occ_in = occ if b.copy_in is not None else None
            occ_out = (_card(_fix(b.copy_out.domain(), sizes))
                       if b.copy_out is not None else None)
    return {"array": b.array, "level": b.level,
            "itemsize": int(np.dtype(DTYPES[b.ctype]).itemsize),
            "extents": tuple(b.extents),
            "in": _box_extents(b.copy_in) if b.copy_in is not None else None,
            "out": _box_extents(b.copy_out) if b.copy_out is not None else None,
            "occ": occ, "occ_in": occ_in, "occ_out": occ_out}


def _single_band(scop: Scop, band: BandEvent, n: int, sizes: dict) -> dict:
    """lo/hi of a single-mapping band's first ``n`` members at the sizes, and its
    launches (points of the host prefix)."""
    out: dict = {}
    rng = isl.UnionMap.from_multi_union_pw_aff(band.schedule).intersect_domain(
        band.domain).range()
    rng = _fix(isl.Set.from_union_set(rng).intersect_params(scop.context), sizes)
    if rng.is_empty():
        out["lo"], out["hi"] = (0,) * n, (-1,) * n
    else:
        out["lo"] = tuple(rng.dim_min_val(j).to_python() for j in range(n))
        out["hi"] = tuple(rng.dim_max_val(j).to_python() for j in range(n))
    hp = band.prefix.intersect_domain(band.domain).range()
    sets: list[isl.Set] = []
    hp.foreach_set(sets.append)
    out["launches"] = (_card(_fix(sets[0].intersect_params(
        scop.context.align_params(sets[0].get_space())), sizes)) if sets else 0)
    return out


def _split_design(b: int) -> tuple[int, int, int]:
    """Base, step and held-out sizes of a block loop split into thread tiles of ``b``
    threads: where the thread tiles align with the block tiles (t | b or b | t), the
    held-out point at ``b`` itself (the extents are affine in ``min(t, b)``)."""
    if b >= 4:
        return (b // 4, b // 2, b)
    return (1, b, 2 * b) if b > 1 else (1, 2, 3)


def _tied_vars(scop, sched, options: CompileOptions) -> dict[int, int]:
    """Tile variables that some superposition kernel splits into thread tiles (a
    block loop its thread groups also run on a thread axis), with the fewest threads
    on such an axis."""
    out: dict[int, int] = {}
    for k in sched.superposition.kernels():
        blk = default_block(k, options)
        for j, axes in enumerate(tied_axes(k)):
            for a in axes:
                b = blk["xyz".index(a)]
                out[j] = min(out.get(j, b), b)
    return out


def _super_threads(info: dict, options: CompileOptions, m: int) -> dict:
    """Threads of a superposition kernel as the model's ``P = fixed · Π min(B_j, t_j)``
    (:func:`polymagic.mapping.superposition.tiles_and_threads`: without ``--block`` a block
    loop's tile caps the threads of the axis running the same loop), and per block
    loop the threads of that axis (its thread tiles).  ``caps`` None: a block loop
    on several thread axes, or an axis tied to several block loops (not modelled)."""
    blk = info["default_block"]
    tied = [0] * m
    caps: list[int] | None = [1] * m
    fixed = 1
    owners: dict[str, list[int]] = {}
    for j, axes in enumerate(info["tied"]):
        for a in axes:
            owners.setdefault(a, []).append(j)
        if axes:
            tied[j] = blk["xyz".index(axes[0])]
    if options.block:
        fixed = math.prod(blk)
    else:
        for a, n in zip("xyz", blk):
            js = sorted(set(owners.get(a, [])))
            if not js:
                fixed *= n
            elif len(js) == 1 and len(set(info["tied"][js[0]])) == 1:
                caps[js[0]] = n
            else:
                caps = None
                break
    return {"caps": tuple(caps) if caps is not None else None, "fixed": fixed,
            "tied": tuple(tied), "defaults": info["defaults"]}


def _super_band(scop: Scop, info: dict, kd: dict, sizes: dict) -> dict:
    """lo/hi of a superposition kernel's block loops ``Θ_out`` (and of the loop its
    thread groups sub-tile), and its launches (points of the host prefix)."""
    def bounds(um: isl.UnionMap) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        rng = um.range()
        if rng.is_empty():
            return None
        st = isl.Set.from_union_set(rng)
        st = _fix(st.intersect_params(scop.context.align_params(st.get_space())), sizes)
        if st.is_empty():
            return None
        n = st.dim(isl.dim_type.set)
        return (tuple(st.dim_min_val(j).to_python() for j in range(n)),
                tuple(st.dim_max_val(j).to_python() for j in range(n)))
    lo: tuple[int, ...] = ()
    hi: tuple[int, ...] = ()
    b = bounds(isl.UnionMap.from_multi_union_pw_aff(info["block"]).intersect_domain(
        info["domain"])) if info["block"] is not None else None
    lo, hi = b if b is not None else ((0,) * kd["m"], (-1,) * kd["m"])
    if kd["s"]:
        b = bounds(info["sub"])
        lo, hi = lo + (b[0] if b else (0,)), hi + (b[1] if b else (-1,))
    hp = info["host"].range()
    sets: list[isl.Set] = []
    hp.foreach_set(sets.append)
    launches = (_card(_fix(sets[0].intersect_params(
        scop.context.align_params(sets[0].get_space())), sizes)) if sets else 0)
    return {"lo": lo, "hi": hi, "launches": launches}


def _run_samples(points: list[tuple[int, ...]], flags: list[dict], workers: int) -> list[dict]:
    """The samples, in ``workers`` forked processes (the planner is isl-bound, one core
    each); in turn where fork is unavailable or unsafe (other threads: a Jupyter
    kernel's heartbeat and I/O threads)."""
    if (workers > 1 and len(points) > 1 and threading.active_count() == 1
            and "fork" in multiprocessing.get_all_start_methods()):
        try:
            with ProcessPoolExecutor(min(workers, len(points)),
                                     mp_context=multiprocessing.get_context("fork")) as ex:
                futs = [ex.submit(_sample, p, **f) for p, f in zip(points, flags)]
                return [f.result() for f in futs]
        except (OSError, RuntimeError):
            pass                                    # no processes here: run them in turn
    return [_sample(p, **f) for p, f in zip(points, flags)]


def _fit(points: list[tuple[int, ...]], values: list[int]) -> Affine:
    """The affine function through L+1 points (base, base + step·e_i)."""
    A = np.array([[1.0, *p] for p in points])
    sol = np.linalg.solve(A, np.array(values, dtype=float))
    fr = [Fraction(float(c)).limit_denominator(64) for c in sol]
    return Affine(fr[0], tuple(fr[1:]))


class FitError(Exception):
    """The planner's extents are not affine in the tile sizes (or changed shape)."""


def _fit_buffers(samples: list[dict], points: list[tuple[int, ...]], held: dict
                 ) -> list[KernelModel]:
    base = samples[0]["kernels"]
    kernels = []
    for name, kd in base.items():
        for smp in samples[1:] + [held]:
            other = smp["kernels"].get(name)
            if other is None or (other["m"], other["s"]) != (kd["m"], kd["s"]):
                raise FitError(f"{name}: the band's mapping changes with the tile sizes")
            if set(other["buffers"]) != set(kd["buffers"]):
                raise FitError(f"{name}: the planner buffers {sorted(kd['buffers'])} at "
                               f"{samples[0]['tile']} but {sorted(other['buffers'])} at "
                               f"{smp['tile']} (its decisions depend on the tile sizes)")
        bufs = []
        for bname, bd in kd["buffers"].items():
            per = [smp["kernels"][name]["buffers"][bname] for smp in samples]
            hb = held["kernels"][name]["buffers"][bname]
            for other in per + [hb]:
                if (other["level"], other["array"], other.get("r"), other.get("tt")) != \
                        (bd["level"], bd["array"], bd.get("r"), bd.get("tt")):
                    raise FitError(f"{name}: {bname} changes level with the tile sizes")
            fitted = {}
            for key in ("extents", "in", "out"):
                if bd[key] is None:
                    fitted[key] = None
                    continue
                if any(o[key] is None or len(o[key]) != len(bd[key]) for o in per + [hb]):
                    raise FitError(f"{name}: {bname}: {key} unbounded or of changing rank")
                affs = tuple(_fit(points, [o[key][d] for o in per])
                             for d in range(len(bd[key])))
                # a thread-tile buffer spans min(t_j, B_j) along a split block loop
                at = tuple(min(v, kd["tied"][j]) if j in (bd.get("tt") or ()) else v
                           for j, v in enumerate(held["tile"]))
                pred = tuple(a(at) for a in affs)
                if pred != tuple(hb[key]):
                    what = {"extents": "extents", "in": "copy-in box", "out": "copy-out box"}
                    raise FitError(
                        f"{name}: {bname}: {what[key]} not affine in the tile sizes: the "
                        f"fit predicts {list(pred)} at {held['tile']}, the planner gives "
                        f"{list(hb[key])}")
                fitted[key] = affs
            bufs.append(BufferModel(name, bname, bd["array"], bd["level"], bd["itemsize"],
                                    fitted["extents"], fitted["in"], fitted["out"],
                                    r=bd.get("r"), thread_tiles=tuple(bd.get("tt") or ())))
        kernels.append((name, kd, bufs))
    return kernels


def _blocks_of(options: CompileOptions, m: int) -> tuple[int, ...]:
    """B_j, threads of block-tile member j (outermost first), as mapping.tile_sizes."""
    blk = list(options.block or DEFAULT_BLOCKS[m])
    blk = (blk + [1, 1, 1])[:3]
    return tuple(blk[m - 1 - j] for j in range(m))


def fit_model(scop: Scop, sched: ScheduleResult, options: CompileOptions, sizes: dict,
              gpu: GpuModel = H100,
              workers: int | None = None) -> tuple[TileModel, list[Note]]:
    """Sample the real planner and fit M(t), V(t), N(t) (raises :class:`FitError`)."""
    global _WORK
    missing = [p for p in scop.size_params if p not in sizes]
    if missing:
        raise OptionsError(f"tile search: give the size of {', '.join(missing)} (--size)")
    notes: list[Note] = []
    depth = max((s.domain.dim(isl.dim_type.set) for s in scop.statements), default=1)
    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    # the buffers' sizes do not depend on M_up: sample under the planner's own limit
    # so that no buffer is dropped at the sample points
    _WORK = (scop, sched, options.with_(shared_mem=STATIC_SHARED_LIMIT), sizes)
    is_super = superposed(sched, options)
    tied = _tied_vars(scop, sched, options) if is_super else {}
    try:
        for scale in (8, 4):
            # base, step and held-out size per variable; a block loop split into thread
            # tiles (superposition) is sampled where they align (_split_design)
            design = [_split_design(tied[j]) if j in tied else
                      (scale, 2 * scale, scale + scale // 2 * (j + 1))
                      for j in range(max(depth, 1))]
            # the superposition's copies are also counted at the base point: its N
            # (step loops, thread tiles) is calibrated at one point, checked at another
            first = _sample(tuple(d[0] for d in design), bands=True, counts=is_super)
            ks = first["kernels"]
            if not ks:
                raise FitError("no tiled kernel: nothing to search")
            L = max(kd["m"] + kd["s"] for kd in ks.values())
            base = tuple(d[0] for d in design[:L])
            first["tile"] = base
            pts = [base] + [tuple(design[i][1] if i == j else design[i][0] for i in range(L))
                            for j in range(L)]
            held_pt = tuple(d[2] for d in design[:L])
            rest = _run_samples(pts[1:] + [held_pt], [{}] * L + [{"counts": True}], workers)
            samples, held = [first] + rest[:-1], rest[-1]
            if any(kd["dropped"] for smp in samples + [held] for kd in smp["kernels"].values()):
                notes.append(tile_note(
                    None, None,
                    f"sampling at tiles of {scale}: buffers over the planner's "
                    "limit were dropped; sampling at smaller tiles"))
                continue
            break
        else:
            raise FitError("buffers are dropped even at the smallest sampled tiles")
        fitted = _fit_buffers(samples, pts, held)
    finally:
        _WORK = None
    kernels = []
    for name, kd, bufs in fitted:
        if kd["superposed"]:
            if kd["caps"] is None:
                raise FitError(f"{name}: a block loop runs on several thread axes: its "
                               "threads are not modelled")
            km = KernelModel(name, kd["m"], kd["s"], kd["caps"], kd["lo"], kd["hi"],
                             kd["launches"], bufs, kd["fixed"], kd["tied"], kd["defaults"],
                             True, bool(options.block))
        else:
            km = KernelModel(name, kd["m"], kd["s"], _blocks_of(options, kd["m"]), kd["lo"],
                             kd["hi"], kd["launches"], bufs)
        hk = held["kernels"][name]
        if km.threads_at(held["tile"]) != hk["threads"]:
            raise FitError(f"{name}: {hk['threads']} threads at {held['tile']}, the model "
                           f"expects {km.threads_at(held['tile'])}")
        kernels.append(km)
    m_up = min(options.shared_mem, STATIC_SHARED_LIMIT)
    model = TileModel(L, kernels, gpu, m_up, dict(sizes))
    occ = model.occurrences(held["tile"])
    for k in kernels:
        for b in k.buffers:
            got = held["kernels"][k.name]["buffers"][b.name]["occ"]
            want = occ[(k.name, b.name)]
            if got is None:
                continue
            if k.superposed:
                notes += _calibrate(model, k, b, held["tile"], held, samples[0])
                continue
            if got > want:
                raise FitError(f"{k.name}: {b.name}: the planner copies {got} times at "
                               f"{held['tile']}, the model counts {want}")
            if got < want:
                b.fill = got / want
                notes.append(tile_note(
                    k.name, b.name,
                    f"the planner copies {got} times at "
                    f"{held['tile']}, launches × tiles give {want} (non-rectangular "
                    f"tile space): N scaled by {b.fill:.3g}"))
    model.min_blocks.update(min_blocks(model))
    return model, notes


#: relative error of a superposition buffer's N at the base sample point past which the
#: model is refused (its thread tiles need not align with the block tiles: ⌈t/B⌉ is exact


SUPER_COUNT_TOLERANCE = 0.25


def tile_note(kernel: str | None, buffer: str | None, text: str) -> Note:
    """A note of the tile search's sampling (seed 000 §4.3), about a kernel's buffer."""
    return Note(Stage.TILES, text, kernel=kernel, subject=buffer, kind="info")


def _calibrate(model: TileModel, k: KernelModel, b: BufferModel, tile: tuple[int, ...],
               held: dict, base: dict) -> list[Note]:
    """N of a superposition buffer's copy-in and copy-out (§4.3's sums over I and O):
    launches × block tiles × thread tiles per block tile
    (:meth:`KernelModel.occurrences`), scaled so that it equals the planner's count
    at the held-out ``tile`` (the step loops inside the kernel and the thread tiles of
    thread loops that are not block loops are constant in the tile sizes), and
    compared with the planner's count at the base sample point.  Where the two
    disagree by more than :data:`SUPER_COUNT_TOLERANCE` (a copy-in skipped in a
    thread's first sub-tile, thread tiles not aligned with the block tiles) the
    larger ratio is kept, so the model over- rather than under-estimates N; the notes
    say so."""
    notes: list[Note] = []
    hb = held["kernels"][k.name]["buffers"][b.name]
    bb = base["kernels"][k.name]["buffers"][b.name]
    for out in (False, True):
        key = "occ_out" if out else "occ_in"
        got, got0 = hb.get(key), bb.get(key)
        if got is None:
            continue
        want = k.occurrences(b, model.tiles(k, tile), tile, out) / \
            ((b.fill_out if out and b.fill_out is not None else b.fill) or 1)
        want0 = k.occurrences(b, model.tiles(k, base["tile"]), base["tile"], out) / \
            ((b.fill_out if out and b.fill_out is not None else b.fill) or 1)
        ratios = [g / w for g, w in ((got, want), (got0, want0)) if g is not None and w]
        fill = ratios[0] if ratios else 1.0
        if len(ratios) == 2 and abs(ratios[1] - ratios[0]) > \
                SUPER_COUNT_TOLERANCE * max(ratios):
            fill = max(ratios)
            notes.append(tile_note(
                k.name, b.name,
                f"copy-{'out' if out else 'in'} counted "
                f"{got0} times at {base['tile']} and {got} at {tile}: N over-"
                "estimated where they differ (not a product of tile counts)"))
        if out:
            b.fill_out = fill
        else:
            b.fill = fill
    return notes


def default_tile(m: int, s: int) -> tuple[int, ...]:
    """The sizes the mapping uses without --tile for a band of m + s members."""
    return tuple(DEFAULT_TILES[m]) + (DEFAULT_SUB_TILE,) * s


def fallback_default(scop: Scop, sched: ScheduleResult, options: CompileOptions) -> tuple[int, ...]:
    """Default sizes of the largest tiled band, from a plain mapping (no planning)."""
    try:
        mapping, rec = _map(scop, sched, options.with_(tile=None, tile_levels=(),
                                                       keep_register_buffers=True,
                                                       vector=False))
        ms = [(len(p.members), len(p.sub_tiles)) for p in mapping.plans.values() if p.members]
        if rec.kernels:
            ev = max(rec.kernels.values(), key=lambda e: len(e.defaults))
            if ev.defaults:
                return tuple(ev.defaults)
    except Exception:          # noqa: BLE001 - the defaults are only a fallback
        ms = []
    if not ms:
        return tuple(DEFAULT_TILES[2])
    return default_tile(*max(ms, key=sum))
