"""What the pictures and the exploration widgets show, computed (no IPython, no widgets).

The pipeline's :class:`~polymagic.compiler.Compiled` keeps the mapping stage's result
(``Compiled.mapping``: what the code was generated from); :func:`mapping_of` reads
it (re-running the mapping only for options other than the compile's, cached by
source + options) and keeps, per kernel, what the pictures need:

* the tile and thread sizes of each mapped band member and the sub-tiled members;
* the shared-memory buffers (:class:`polymagic.memory.plan.BufferPlan`: extents,
  lower bounds ``g(prefix)``, copy-in and copy-out relations) and the planner's
  decision per array;
* the *mapping filters*: for every statement, the set of its instances with the
  block and thread ids as parameters (``pm_bx``, ``pm_tx`` ...), read off the
  filter nodes of the mapped schedule tree.  They are what the generated code
  scans, so the pictures show the real assignment of iterations to blocks and
  threads, not a re-derivation.

Everything is enumerated at *small sizes* (:func:`picture_sizes`: each size
parameter capped, 64 by default), point by point with isl.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import islpy as isl
import numpy as np

from .. import kir
from ..compiler import Compiled
from ..mapping import MappingResult
from ..names import strip_generated
from ..notes import Note
from .islnp import eval_pw_multi_aff, set_points
from ..options import Options

AXES = ("x", "y", "z")
IDS = [kir.THREAD_IDS[a] for a in AXES] + [kir.BLOCK_IDS[a] for a in AXES]

#: default cap of every size parameter in pictures (points are enumerated one by one)
PICTURE_CAP = 64


# ---- the mapping, kept -------------------------------------------------------------

@dataclass
class KernelInfo:
    """One kernel of the mapping, with what the pictures need."""
    name: str                                  # 'kernel0' (as in the CUDA)
    mark: str                                  # 'pm_kernel0' (the schedule tree's mark)
    statements: list[str]
    members: list                              # mapping.MappedMember, outermost first
    sub_tiles: list[str]
    sequential: list[str]
    block: tuple[int, int, int]
    buffers: list = field(default_factory=list)        # memory.plan.BufferPlan
    decisions: list[Note] = field(default_factory=list)
    filters: dict[str, isl.Set] = field(default_factory=dict)   # stmt -> instances with ids

    @property
    def axes(self) -> list[str]:
        return [m.axis for m in self.members]

    @property
    def shared_bytes(self) -> int:
        return sum(b.nbytes for b in self.buffers)


@dataclass
class MappingInfo:
    kernels: list[KernelInfo]
    host_loops: list[str]
    tile: tuple[int, ...] | None               # the tile vector used (after --tile auto)
    seconds: float = 0.0
    schedule: isl.Schedule | None = None       # the mapped tree: tiles, id filters, copies
    source: MappingResult | None = None        # the mapping stage's result read

    def kernel(self, name: str | None = None) -> KernelInfo:
        """A kernel by name ('kernel0' or 'pm_kernel0'); default: the first tiled one."""
        if name is None:
            tiled = [k for k in self.kernels if k.members]
            return (tiled or self.kernels)[0]
        for k in self.kernels:
            if name in (k.name, k.mark):
                return k
        raise KeyError(f"no kernel {name!r} (kernels: {', '.join(k.name for k in self.kernels)})")

    def kernel_of(self, stmt: str) -> KernelInfo:
        for k in self.kernels:
            if stmt in k.statements:
                return k
        raise KeyError(f"statement {stmt} is in no kernel")


_MAPPINGS: dict[tuple, MappingInfo] = {}
#: how often :func:`mapping_of` ran the mapping stage itself (tests count it)
MAPPING_RUNS = {"fresh": 0}


def effective_options(compiled: Compiled, options: Options) -> Options:
    """``options`` with ``--tile auto`` replaced by the tile vector the search chose
    (``Compiled.chosen_tile``)."""
    if not options.tile_auto:
        return options
    tile = compiled.chosen_tile
    if tile is None:
        return options.with_(tile_auto=False)
    return options.with_(tile=tile, tile_levels=(tile,), tile_auto=False)


def mapping_of(compiled: Compiled, options: Options) -> MappingInfo:
    """The mapping stage's plans and filters for ``compiled`` (cached)."""
    from ..mapping import map_schedule
    kept = compiled.mapping
    if kept is not None and compiled.options.size_independent() != \
            options.compile.size_independent():
        kept = None                      # another configuration than the compile's
    options = effective_options(compiled, options)
    key = (compiled.scop.source, compiled.scop.language, options.compile.size_independent(),
           id(kept) if kept is not None else None)
    hit = _MAPPINGS.get(key)
    if hit is not None and (kept is None or hit.source is kept):
        return hit
    t0 = time.perf_counter()
    scop = compiled.scop
    # the compile's own mapping when it is for these options (what the code was
    # generated from); else the mapping stage again (the views of another shared
    # setting, say, as the explorer's tile controls ask for)
    if kept is None:
        MAPPING_RUNS["fresh"] += 1
    mapping = kept if kept is not None else map_schedule(scop, compiled.schedule,
                                                         options.compile)
    filters = _mapping_filters(mapping.schedule, {s.name for s in scop.statements})
    kernels = []
    for mark, plan in mapping.plans.items():
        mem = plan.memory
        kernels.append(KernelInfo(
            strip_generated(mark), mark, list(plan.statements), list(plan.members),
            list(plan.sub_tiles), list(plan.sequential), plan.block,
            list(mem.buffers) if mem else [], list(mem.decisions) if mem else [],
            filters.get(mark, {})))
    info = MappingInfo(kernels, list(mapping.host_loops), options.tile,
                       time.perf_counter() - t0, mapping.schedule, mapping)
    _MAPPINGS[key] = info
    return info


def _involves_ids(s: isl.Set) -> bool:
    for name in IDS:
        pos = s.find_dim_by_name(isl.dim_type.param, name)
        if pos >= 0 and s.involves_dims(isl.dim_type.param, pos, 1):
            return True
    return False


def _mapping_filters(schedule: isl.Schedule, statements: set[str]) -> dict[str, dict[str, isl.Set]]:
    """kernel mark -> statement -> its instances constrained by every filter of the
    kernel that mentions block or thread ids (the block filter and the thread filter)."""
    from ..mapping import kernel_mark
    out: dict[str, dict[str, isl.Set]] = {}
    stack: list[tuple[int, str]] = []          # (tree depth of the mark, name)

    def visit(node: isl.ScheduleNode) -> bool:
        depth = node.get_tree_depth()
        while stack and depth <= stack[-1][0]:
            stack.pop()
        name = kernel_mark(node)
        if name:
            stack.append((depth, name))
            out.setdefault(name, {})
        elif node.get_type() == isl.schedule_node_type.filter and stack:
            kern = out[stack[-1][1]]
            sets: list[isl.Set] = []
            node.filter_get_filter().foreach_set(sets.append)
            for s in sets:
                stmt = s.get_tuple_name()
                if stmt in statements and _involves_ids(s):
                    kern[stmt] = s if stmt not in kern else kern[stmt].intersect(s)
        return True

    schedule.get_root().foreach_descendant_top_down(visit)
    return out


# ---- enumeration at small sizes ----------------------------------------------------

def picture_sizes(scop, sizes: Mapping | None = None, cap: int = PICTURE_CAP) -> dict[str, int]:
    """Values of the size parameters for pictures: the given ones capped at ``cap``
    (missing ones: ``cap``), then checked against the function's context (a
    context such as ``n >= 3`` is honoured by raising the value to its minimum)."""
    sizes = dict(sizes or {})
    out: dict[str, int] = {}
    for name in scop.size_params:
        v = sizes.get(name, cap)
        try:
            v = int(v)
        except (TypeError, ValueError):
            v = cap
        out[name] = max(1, min(v, cap))
    ctx = scop.context
    for name, v in list(out.items()):
        pos = ctx.find_dim_by_name(isl.dim_type.param, name)
        if pos < 0:
            continue
        fixed = fix_params(ctx, {k: x for k, x in out.items() if k != name}, keep=[name])
        lo = fixed.dim_min_val(0) if not fixed.is_empty() else None
        if lo is not None and lo.is_int() and lo.to_python() > v:
            out[name] = int(lo.to_python())
        ctx = ctx.fix_val(isl.dim_type.param, pos, isl.Val(out[name]))
    return out


def fix_params(obj, values: Mapping[str, int], keep: Sequence[str] = ()):
    """Fix the named parameters of an isl set or map and drop them; parameters in
    ``keep`` become set dimensions (appended in that order) instead."""
    out_type = isl.dim_type.set if isinstance(obj, isl.Set) else isl.dim_type.out
    for name, v in values.items():
        pos = obj.find_dim_by_name(isl.dim_type.param, name)
        if pos >= 0 and name not in keep:
            obj = obj.fix_val(isl.dim_type.param, pos, isl.Val(int(v)))
            obj = obj.project_out(isl.dim_type.param, pos, 1)
    for name in keep:
        pos = obj.find_dim_by_name(isl.dim_type.param, name)
        if pos < 0:
            raise KeyError(f"no parameter {name}")
        obj = obj.move_dims(out_type, obj.dim(out_type), isl.dim_type.param, pos, 1)
    for pos in range(obj.dim(isl.dim_type.param) - 1, -1, -1):
        if obj.involves_dims(isl.dim_type.param, pos, 1):
            raise ValueError(f"parameter {obj.get_dim_name(isl.dim_type.param, pos)} "
                             f"has no value")
        obj = obj.project_out(isl.dim_type.param, pos, 1)
    return obj


def points(s: isl.Set) -> np.ndarray:
    """Every integer point of a bounded, parameter-free set, as rows (lexicographic)."""
    return set_points(s)


@dataclass
class IterationPoints:
    """Instances of one statement projected to two (or one) loops, each with the
    block and thread that runs it (the first one, where a projection merges several)."""
    statement: str
    kernel: str
    loops: tuple[str, ...]
    coords: np.ndarray            # (n, len(loops))
    blocks: np.ndarray            # (n, 3): bx, by, bz
    threads: np.ndarray           # (n, 3): tx, ty, tz
    sizes: dict
    tiles: dict                   # loop -> tile size (mapped loops only)
    block_dims: tuple[int, int, int]

    def block_ids(self) -> np.ndarray:
        """One integer per distinct block, in order of first appearance."""
        _, inv = np.unique(self.blocks, axis=0, return_inverse=True)
        return inv.reshape(-1)

    def thread_linear(self) -> np.ndarray:
        bx, by, _ = self.block_dims
        return self.threads[:, 0] + bx * (self.threads[:, 1] + by * self.threads[:, 2])


def _instance_set(scop, kernel: KernelInfo, stmt: str) -> isl.Set:
    """Instances of ``stmt`` with the block and thread ids as parameters (unused axes: 0)."""
    st = scop.statement(stmt)
    s = kernel.filters.get(stmt)
    dom = st.domain.intersect_params(scop.context)
    s = dom if s is None else s.intersect(dom)
    used = set(kernel.axes)
    # superposition kernels map thread loops of their own (not band members): a
    # thread axis is used whenever the block has more than one thread along it
    threads = used | {a for a, b in zip(AXES, kernel.block) if b > 1}
    zero = {}
    for a in AXES:
        if a not in threads:
            zero[kir.THREAD_IDS[a]] = 0
        if a not in used:
            zero[kir.BLOCK_IDS[a]] = 0
    for name, v in zero.items():
        pos = s.find_dim_by_name(isl.dim_type.param, name)
        if pos >= 0:
            s = s.fix_val(isl.dim_type.param, pos, isl.Val(v))
    # ids not mentioned at all: add them as parameters fixed to 0
    for name in IDS:
        if s.find_dim_by_name(isl.dim_type.param, name) < 0:
            sp = isl.Set(f"[{name}] -> {{ : {name} = 0 }}")
            s = s.intersect_params(sp)
    return s


def default_statement(scop, info: MappingInfo) -> str:
    """The statement with the most loops among those of tiled kernels (ties: first)."""
    tiled = [s for k in info.kernels if k.members for s in k.statements]
    cands = [scop.statement(s) for s in tiled] or list(scop.statements)
    return max(cands, key=lambda s: len(s.iterators)).name


def default_loops(scop, kernel: KernelInfo, stmt: str) -> tuple[str, ...]:
    """The two loops to project on: the mapped band members that are iterators of the
    statement, then its other loops, outermost first."""
    its = list(scop.statement(stmt).iterators)
    mapped = [m.loop for m in kernel.members if m.loop in its]
    rest = [i for i in its if i not in mapped]
    # the innermost mapped loop on the x axis of the picture
    loops = (mapped + rest)[:2]
    return tuple(loops)


def iteration_points(compiled, options: Options, statement: str | None = None,
                     loops: Sequence[str] | None = None, sizes: Mapping | None = None,
                     cap: int = PICTURE_CAP) -> IterationPoints:
    """The instances of ``statement`` at picture sizes, projected to ``loops``, with
    the block and thread of each (from the mapping filters)."""
    scop = compiled.scop
    info = mapping_of(compiled, options)
    stmt = statement or default_statement(scop, info)
    names = [s.name for s in scop.statements]
    if stmt not in names:
        raise KeyError(f"no statement {stmt!r} (statements: {', '.join(names)})")
    kernel = info.kernel_of(stmt)
    its = list(scop.statement(stmt).iterators)
    loops = tuple(loops) if loops else default_loops(scop, kernel, stmt)
    bad = [lp for lp in loops if lp not in its]
    if bad or not 1 <= len(loops) <= 2:
        raise KeyError(f"{stmt} has loops {', '.join(its) or 'none'}; choose one or two "
                       f"of them (got {', '.join(loops) or 'none'})")
    psizes = picture_sizes(scop, sizes if sizes is not None else options.sizes, cap)
    s = fix_params(_instance_set(scop, kernel, stmt), psizes, keep=IDS)
    # keep the chosen loops (in the asked order) and the ids
    keep = [its.index(lp) for lp in loops]
    for d in range(len(its) - 1, -1, -1):
        if d not in keep:
            s = s.project_out(isl.dim_type.set, d, 1)
    order = sorted(keep)
    nl = len(order)
    dom = s.project_out(isl.dim_type.set, nl, len(IDS))
    pts = points(dom)
    # ids as functions of the projected point (the first block/thread where several)
    ids_of = isl.Map.from_domain(s).move_dims(isl.dim_type.out, 0, isl.dim_type.in_, nl,
                                              len(IDS))
    ids, ok = eval_pw_multi_aff(ids_of.lexmin_pw_multi_aff(), pts)
    pts, ids = pts[ok], ids[ok]
    cols = [order.index(its.index(lp)) for lp in loops]
    coords = pts[:, cols]
    tiles = {m.loop: m.tile for m in kernel.members}
    return IterationPoints(stmt, kernel.name, loops, coords, ids[:, 3:6], ids[:, 0:3],
                           psizes, tiles, kernel.block)


# ---- one tile's data footprint ----------------------------------------------------

@dataclass
class BufferBox:
    """One buffer at one tile: where it sits in the array and what is copied."""
    name: str
    level: str                     # 'block' or 'sub-tile'
    lower: tuple[int, ...]         # g(prefix) at this tile
    extents: tuple[int, ...]
    copy_in: np.ndarray            # element coordinates loaded into the buffer
    copy_out: np.ndarray           # element coordinates stored back
    reason: str
    prefix: tuple[int, ...]        # the tile's prefix values (host loops, tile indices ...)


@dataclass
class ArrayFootprint:
    array: str
    shape: tuple[int, ...]
    touched: np.ndarray            # elements the block accesses (all its sub-tiles)
    current: np.ndarray            # elements the chosen sub-tile accesses
    written: np.ndarray            # elements the block writes
    buffers: list[BufferBox]
    decision: str                  # the planner's line for this array


@dataclass
class TileFootprint:
    kernel: str
    block: tuple[int, int, int]
    sizes: dict
    arrays: list[ArrayFootprint]


def _block_instances(scop, kernel: KernelInfo, block: Sequence[int], psizes: Mapping
                     ) -> isl.UnionSet:
    """The instances block ``block`` (bx, by, bz) runs, at picture sizes."""
    vals = dict(psizes)
    for a, b in zip(AXES, tuple(block) + (0, 0, 0)):
        vals[kir.BLOCK_IDS[a]] = int(b)
    out = None
    for stmt in kernel.statements:
        s = _instance_set(scop, kernel, stmt)
        s = fix_params(s, vals, keep=[kir.THREAD_IDS[a] for a in AXES])
        s = s.project_out(isl.dim_type.set, s.dim(isl.dim_type.set) - 3, 3)
        s = s.set_tuple_name(stmt)
        u = isl.UnionSet.from_set(s)
        out = u if out is None else out.union(u)
    return out


def _accesses(scop, kernel: KernelInfo, psizes: Mapping) -> dict[str, list[tuple[isl.Map, bool]]]:
    out: dict[str, list[tuple[isl.Map, bool]]] = {}
    for stmt in kernel.statements:
        st = scop.statement(stmt)
        for acc in st.accesses:
            rel = fix_params(acc.relation, psizes)
            out.setdefault(acc.array, []).append((rel, acc.is_write))
    return out


def _apply(rels: list[isl.Map], inst: isl.UnionSet) -> isl.UnionSet | None:
    out = None
    for r in rels:
        img = inst.apply(isl.UnionMap.from_map(r))
        out = img if out is None else out.union(img)
    return out


def _union_points(u: isl.UnionSet | None, array: str, ndim: int) -> np.ndarray:
    if u is None:
        return np.zeros((0, ndim), np.int64)
    sets: list[isl.Set] = []
    u.foreach_set(lambda s: sets.append(s) if s.get_tuple_name() == array else None)
    if not sets:
        return np.zeros((0, ndim), np.int64)
    return points(sets[0]).reshape(-1, ndim)


def _prefix_point(prefix: isl.UnionMap, inst: isl.UnionSet, psizes: Mapping) -> isl.Set | None:
    pre = fix_params(prefix, psizes) if isinstance(prefix, isl.Map) else _fix_umap(prefix, psizes)
    rng = pre.intersect_domain(inst).range()
    sets: list[isl.Set] = []
    rng.foreach_set(sets.append)
    if not sets:
        return None
    return sets[0].lexmin()


def _fix_umap(u: isl.UnionMap, values: Mapping) -> isl.UnionMap:
    maps: list[isl.Map] = []
    u.foreach_map(maps.append)
    out = None
    for m in maps:
        fm = fix_params(m, {**values, **{i: 0 for i in IDS}})
        um = isl.UnionMap.from_map(fm)
        out = um if out is None else out.union(um)
    return out if out is not None else u


def _buffer_box(b, pt: isl.Set, psizes: Mapping, ndim: int) -> BufferBox:
    vals = {**psizes, **{i: 0 for i in IDS}}
    pt_vals = tuple(int(v) for v in points(pt)[0]) if not pt.is_empty() else ()
    lower = []
    for pa in b.lower:
        m = fix_params(isl.Map.from_pw_aff(pa), vals)
        r = m.intersect_domain(pt.reset_tuple_id()).range()
        lower.append(int(r.dim_min_val(0).to_python()) if not r.is_empty() else 0)

    def region(rel) -> np.ndarray:
        if rel is None:
            return np.zeros((0, ndim), np.int64)
        m = fix_params(rel, vals)
        r = m.intersect_domain(pt.reset_tuple_id()).range()
        return points(r).reshape(-1, ndim)
    return BufferBox(b.name, b.level, tuple(lower), tuple(b.extents), region(b.copy_in),
                     region(b.copy_out), b.reason, pt_vals)


def tile_footprint(compiled, options: Options, kernel: str | None = None,
                   block: Sequence[int] = (0, 0, 0), sizes: Mapping | None = None,
                   cap: int = PICTURE_CAP) -> TileFootprint:
    """The data one thread block touches on each array, at picture sizes, with each
    buffer's bounding box and copy-in/copy-out sets at the block's first tile prefix
    (its first sub-tile and host-loop iteration)."""
    scop = compiled.scop
    info = mapping_of(compiled, options)
    k = info.kernel(kernel)
    psizes = picture_sizes(scop, sizes if sizes is not None else options.sizes, cap)
    inst = _block_instances(scop, k, block, psizes)
    accs = _accesses(scop, k, psizes)
    env = {**scop.constants, **psizes}
    from ..expr import evaluate
    out = []
    for array, rels in accs.items():
        decl = scop.arrays[array]
        shape = tuple(int(evaluate(e, env)) for e in decl.shape)
        ndim = len(shape)
        touched = _union_points(_apply([r for r, _ in rels], inst), array, ndim)
        written = _union_points(_apply([r for r, w in rels if w], inst), array, ndim)
        boxes, current = [], None
        for b in (x for x in k.buffers if x.array == array):
            pt = _prefix_point(b.prefix, inst, psizes)
            if pt is None:
                continue
            boxes.append(_buffer_box(b, pt, psizes, ndim))
            if current is None:
                pre = _fix_umap(b.prefix, psizes)
                sub = pre.intersect_range(isl.UnionSet.from_set(pt)).domain().intersect(inst)
                current = _union_points(_apply([r for r, _ in rels], sub), array, ndim)
        decision = next((d.text for d in k.decisions
                         if d.kernel == k.name and d.where is None and d.subject == array), "")
        out.append(ArrayFootprint(array, shape, touched,
                                  touched if current is None else current, written,
                                  boxes, decision))
    return TileFootprint(k.name, tuple(int(v) for v in (tuple(block) + (0, 0, 0))[:3]),
                         psizes, out)


# ---- text views --------------------------------------------------------------------

def mapping_text(compiled, options: Options) -> str:
    """The mapping in words: per kernel, loops to blocks/threads, tiles, grid."""
    info = mapping_of(compiled, options)
    lines = [compiled.summary, ""]
    if info.host_loops:
        lines.append(f"host loops (a launch per iteration): {', '.join(info.host_loops)}")
    if info.tile:
        lines.append(f"--tile {','.join(map(str, info.tile))}")
    for k in info.kernels:
        lines.append(f"{k.name}: statements {', '.join(k.statements)}; block "
                     f"{k.block[0]}x{k.block[1]}x{k.block[2]} threads")
        if not k.members:
            lines.append("  one thread (no parallel loop)" +
                         (f"; sequential: {', '.join(k.sequential)}" if k.sequential else ""))
        for m in k.members:
            per = -(-m.tile // m.threads)
            lines.append(f"  {m.loop}: tile {m.tile} -> blockIdx.{m.axis}, {m.threads} "
                         f"thread(s) on threadIdx.{m.axis} ({per} iteration(s) per thread, "
                         f"cyclic)")
        for s in k.sub_tiles:
            lines.append(f"  {s}: sequential, sub-tiled for the shared-memory buffers")
        for s in k.sequential:
            lines.append(f"  {s}: sequential inside each thread")
    return "\n".join(lines)


def memory_rows(compiled, options: Options) -> list[dict]:
    """One row per planned buffer: kernel, buffer, array, extents, bytes, level, reason."""
    info = mapping_of(compiled, options)
    rows = []
    for k in info.kernels:
        for b in k.buffers:
            rows.append({"kernel": k.name, "buffer": b.name, "array": b.array,
                         "extents": tuple(b.extents), "bytes": b.nbytes, "level": b.level,
                         "reason": b.reason})
    return rows


def memory_text(compiled, options: Options) -> str:
    """The memory plan: buffers, bytes per block against the limit, and the
    planner's decision (with its reason) for every array of every kernel."""
    from ..memory.plan import STATIC_SHARED_LIMIT
    info = mapping_of(compiled, options)
    limit = min(options.shared_mem, STATIC_SHARED_LIMIT)
    lines = [f"--shared {options.shared}, M_up = {limit // 1024} KB per block"
             + (f" (--shared-mem {options.shared_mem // 1024} KB capped at the 48 KB "
                "static limit)" if options.shared_mem > STATIC_SHARED_LIMIT else "")]
    for k in info.kernels:
        if not k.members:
            continue
        lines.append("")
        lines.append(f"{k.name}: {len(k.buffers)} buffer(s), {k.shared_bytes} B of shared "
                     f"memory per block")
        for b in k.buffers:
            lines.append(f"  {b.name}[{']['.join(map(str, b.extents))}] {b.ctype}: "
                         f"{b.nbytes} B, per {b.level}, copy-in "
                         f"{'yes' if b.copy_in is not None else 'no'}, copy-out "
                         f"{'yes' if b.copy_out is not None else 'no'}")
        for d in k.decisions:
            lines.append("  decision: " + d.after_kernel())
        if options.shared == "none":
            lines.append("  (--shared none: no buffers were planned)")
    return "\n".join(lines)


def schedule_text(schedule: isl.Schedule) -> str:
    """An isl schedule tree in block YAML style (one node per line, indented)."""
    p = isl.Printer.to_str(schedule.get_ctx()).set_yaml_style(isl.yaml_style.BLOCK)
    return p.print_schedule(schedule).get_str()


# ---- runs of several variants ------------------------------------------------------

def run_variants(source: str, options: Options, variants: Mapping[str, Mapping],
                 namespace: Mapping | None = None, language: str = "c") -> dict:
    """Compile and run one configuration per variant (``{'none': {'shared': 'none'}}``:
    label -> Options fields); returns label -> RunReport.  Arrays in ``namespace``
    are inputs only: every variant runs on copies."""
    from ..compiler import compile_source
    from ..runtime.run import run
    ns = {k: (v.copy() if isinstance(v, np.ndarray) else v)
          for k, v in (namespace or {}).items()}
    out = {}
    for label, fields in variants.items():
        opts = options.with_(**dict(fields))
        compiled = compile_source(source, opts, language=language)
        out[label] = run(compiled, opts, namespace={k: (v.copy() if isinstance(v, np.ndarray)
                                                        else v) for k, v in ns.items()})
    return out


def shared_variants(source: str, options: Options, namespace: Mapping | None = None,
                    language: str = "c", target: str = "emulator") -> dict:
    """``--shared none``, ``auto`` and ``all`` on the emulator (its counters count
    global-memory loads and stores): label -> RunReport."""
    return run_variants(source, options.with_(target=target),
                        {v: {"shared": v} for v in ("none", "auto", "all")},
                        namespace, language)


def transfer_plan(compiled, arrays: Mapping[str, np.ndarray], sizes: Mapping[str, int]):
    """The host<->device transfer plan of a run on these arrays (seed 002 §4), as the
    runtime makes it: :class:`polymagic.transfers.plan.TransferPlan`."""
    from ..transfers.session import plan_session
    ints = {n: int(sizes[n]) for n in compiled.scop.size_params}
    return plan_session(compiled.program, compiled.scop, arrays, ints).plan


# ---- seed 001 §4: the cached set C(t) and its movement ------------------------------

@dataclass
class LocalisationStep:
    """One step p = (outer..., t): C(p), I(p), O(p), G(p) as element rows
    (lexicographic), the compact placement ρ(x, p) and the drift δ(x, p) of the
    kept elements."""
    t: tuple[int, ...]
    cached: np.ndarray
    move_in: np.ndarray
    move_out: np.ndarray
    kept: np.ndarray
    rho: dict
    drift: dict


@dataclass
class LocalisationView:
    """The steps of seed 001 §4's sets at picture sizes."""
    array: str
    time: str
    window: int
    sizes: dict
    steps: list[LocalisationStep]

    @property
    def storage(self) -> int:
        """Local storage the steps shown need: max |C(p)|."""
        return max((len(s.cached) for s in self.steps), default=0)

    def drifts(self) -> set[int]:
        return {d for s in self.steps for d in s.drift.values()}


def _rows_at(m: isl.Map, p: tuple[int, ...]) -> np.ndarray:
    pt = isl.Set("{ [" + ", ".join(str(int(v)) for v in p) + "] }")
    return points(m.intersect_domain(pt).range())


def localisation(sets, sizes: Mapping | None = None, times: Sequence[Sequence[int]] | None = None,
                 array: str = "", time: str = "t", window: int | None = None,
                 max_steps: int = 12) -> LocalisationView:
    """Enumerate seed 001 §4's sets at the given sizes for the pictures.

    ``sets``: the localisation stage's result (:class:`polymagic.memory.localise.
    Localisation`: its C, I, O and G maps ``{ [p] -> A[x] }``), or a cached-set map
    C alone (I, O, G then come from :func:`polymagic.memory.localise.access_sets`).
    Steps: ``times`` (prefix points), default the first ``max_steps`` prefixes.
    ρ(x, p) is x's lexicographic rank in C(p) (§4.1); the drift of x ∈ G(p) is
    ρ(x, p+1) − ρ(x, p) (Definition 4), p+1 stepping the last (time) dimension."""
    from ..memory.localise import access_sets
    if isinstance(sets, isl.Map):
        c, i, o, g = access_sets(sets, 1)
        window = window or 1
    else:
        c, i, o, g = sets.cached, sets.move_in, sets.move_out, sets.kept
        window = window or sets.window
        array = array or sets.array
    names = [c.get_dim_name(isl.dim_type.param, k) for k in range(c.dim(isl.dim_type.param))]
    vals = {k: int((sizes or {}).get(k, PICTURE_CAP)) for k in names}
    c, i, o, g = (fix_params(m, vals) for m in (c, i, o, g))
    array = array or (c.get_tuple_name(isl.dim_type.out) or "")
    if times is None:
        ts = points(c.domain())
        times = [tuple(int(v) for v in r) for r in ts[:max_steps]]
    steps = []
    for p in times:
        p = tuple(int(v) for v in p)
        cached = _rows_at(c, p)
        nxt = {tuple(int(v) for v in r): k
               for k, r in enumerate(_rows_at(c, p[:-1] + (p[-1] + 1,)))}
        rho = {tuple(int(v) for v in r): k for k, r in enumerate(cached)}
        kept = _rows_at(g, p)
        drift = {x: nxt[x] - rho[x] for x in (tuple(int(v) for v in r) for r in kept)
                 if x in nxt and x in rho}
        steps.append(LocalisationStep(p, cached, _rows_at(i, p), _rows_at(o, p), kept, rho,
                                      drift))
    return LocalisationView(array, time, window, vals, steps)


def scattering_functions(info: MappingInfo, kernel: str | None = None) -> tuple[str, str]:
    """Seed 003 §4.2's two scattering functions of one kernel as the mapping built it:
    the outer (block-level) one, ``(kernel_id, ⌊i/T⌋_y, ⌊j/T⌋_x)``, and the regular
    (thread-level) one: sub-tile loops, the thread dimensions, then each thread's own
    loops (cyclic steps and the sequential members)."""
    k = info.kernel(kernel)
    kid = info.kernels.index(k)
    outer = [str(kid)] + [f"⌊{m.loop}/{m.tile}⌋_{m.axis}" for m in k.members]
    regular = []
    for s in k.sub_tiles:
        name, _, rest = s.partition(" (sub-tile ")
        regular.append(f"⌊{name}/{rest.rstrip(')')}⌋")
    for m in k.members:
        regular.append(f"({m.loop} mod {m.tile}) mod {m.threads}_{m.axis}"
                       if m.threads < m.tile else f"{m.loop} mod {m.tile}_{m.axis}")
    for m in k.members:
        if m.threads < m.tile:
            regular.append(f"⌊({m.loop} mod {m.tile})/{m.threads}⌋")
    regular += [s.split(" (sub-tile")[0] for s in k.sub_tiles] + list(k.sequential)
    return "(" + ", ".join(outer) + ")", "(" + ", ".join(regular) + ")"


# ---- seed 000 §3 on a whole program (one block) ------------------------------------

@dataclass
class RefSpace:
    label: str                     # 'S0 read A[i + j][j + 1]'
    points: np.ndarray
    is_write: bool


@dataclass
class PartitionView:
    refs: list[int]                # indices into ArrayDataSpaces.refs
    lower: tuple[int, ...]
    extents: tuple[int, ...]
    copy_in: np.ndarray
    copy_out: np.ndarray
    beneficial: bool
    reason: str


@dataclass
class ArrayDataSpaces:
    array: str
    refs: list[RefSpace]
    partitions: list[PartitionView]
    lower: tuple[int, ...]         # the merged buffer (all partitions): offsets g
    extents: tuple[int, ...]       # and extents (seed 000 Figure 1's LA, LB)


def program_data_spaces(scop, sizes: Mapping | None = None, delta: float = 0.3
                        ) -> list[ArrayDataSpaces]:
    """Seed 000 §3 with the whole program as one block (as in its Figure 1): each
    reference's data space, the partitions (overlap-graph components) with their
    Algorithm 2 boxes, copy-in and copy-out sets and Algorithm 1 decisions, and
    the merged buffer of each array.  ``sizes`` fix any size parameters."""
    from ..memory.scratchpad import bounding_box, data_spaces, partition, reuse
    sizes = dict(sizes or {})
    prefix = isl.UnionMap.empty(scop.context.get_space())
    for st in scop.statements:
        prefix = prefix.union(isl.UnionMap.from_map(
            isl.Map.from_domain_and_range(st.domain, isl.Set("{ [] }")).align_params(
                scop.context.get_space())))
    parts = partition(data_spaces(scop, prefix))
    psizes = {n: int(sizes.get(n, PICTURE_CAP)) for n in scop.size_params}
    ctx = scop.context
    out = []
    for array in dict.fromkeys(p.array for p in parts):
        aparts = [p for p in parts if p.array == array]
        refs: list[RefSpace] = []
        index: dict[int, int] = {}
        for p in aparts:
            for d in p.spaces:
                acc = scop.statement(d.stmt).accesses[d.ref]
                text = _access_text(acc, scop.statement(d.stmt))
                index[id(d)] = len(refs)
                rng = fix_params(d.relation, psizes).range()
                refs.append(RefSpace(f"{d.stmt} {'write' if d.is_write else 'read'} {text}",
                                     points(rng), d.is_write))
        views = []
        union = None
        for p in aparts:
            u = p.union()
            union = u if union is None else union.union(u)
            box = bounding_box(u, ctx)
            ok, why = reuse(p, delta, psizes)
            views.append(PartitionView(
                [index[id(d)] for d in p.spaces], _lower_const(box.lower, psizes),
                tuple(box.extents), _range_points(p.copy_in, psizes),
                _range_points(p.copy_out, psizes), ok, why))
        mbox = bounding_box(union, ctx)
        out.append(ArrayDataSpaces(array, refs, views, _lower_const(mbox.lower, psizes),
                                   tuple(mbox.extents)))
    return out


def _access_text(acc, st) -> str:
    """``A[i + j][j + 1]`` from an access relation ``{ S[i, j] -> A[i + j, 1 + j] }``."""
    try:
        pma = isl.PwMultiAff.from_map(acc.relation)
        pieces: list = []
        pma.foreach_piece(lambda _s, ma: pieces.append(ma))
        ma = pieces[0]
        subs = []
        for o in range(ma.dim(isl.dim_type.out)):
            t = str(ma.get_at(o))
            subs.append(t[t.index("[(") + 2:t.rindex(")]")])
        return acc.array + "".join(f"[{x}]" for x in subs)
    except Exception:      # noqa: BLE001 - a label only
        return acc.array


def _lower_const(lower, psizes) -> tuple[int, ...]:
    out = []
    for pa in lower:
        m = fix_params(isl.Map.from_pw_aff(pa), psizes)
        r = m.range()
        out.append(int(r.dim_min_val(0).to_python()) if not r.is_empty() else 0)
    return tuple(out)


def _range_points(rel, psizes) -> np.ndarray:
    if rel is None:
        return np.zeros((0, 0), np.int64)
    return points(fix_params(rel, psizes).range())


__all__ = ["KernelInfo", "MappingInfo", "mapping_of", "picture_sizes", "iteration_points",
           "IterationPoints", "tile_footprint", "TileFootprint", "ArrayFootprint",
           "BufferBox", "mapping_text", "memory_text", "memory_rows", "run_variants",
           "shared_variants", "transfer_plan", "effective_options", "fix_params", "points",
           "program_data_spaces", "schedule_text", "ArrayDataSpaces", "PartitionView", "RefSpace",
           "localisation", "LocalisationView", "LocalisationStep", "scattering_functions"]
