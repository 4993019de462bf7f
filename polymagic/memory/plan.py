"""Memory planning for one thread-block tile: shared-memory buffers and copy code.

Seed 000 §3 decides *what* to buffer (data spaces, partitions, Algorithm 1 and 2,
see :mod:`.scratchpad`); this module decides *where* and emits the copies into the
schedule tree, following seed 004 §4.2 (Algorithm 2: copy-in, compute, copy-out
ordered by an extra sequence level) and seed 000 §4.1-4.2 (multi-level tiling: the
sequential members of the band are sub-tiled so a sub-tile's data fits in M_up;
copy code is hoisted out of the sub-tile loop when an array's data space does not
depend on it, e.g. gemm's C).

Copies are new statements grafted into the tree with isl extension nodes, so
isl's AST generator scans them (each element once, even when references overlap,
seed 000 §3.1.3).  The innermost copy dimension is distributed cyclically over
threadIdx.x (then y, z) so consecutive threads touch consecutive addresses
(coalescing, seed 004 §4.2).  Barriers (``__syncthreads``) are grafted as
zero-dimensional statements: before the copy-in (the previous sub-tile may still
read the buffers), after it, and between compute and copy-out (seed 004 §4.3).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import functools
import math

import islpy as isl

from .. import kir
from ..notes import Note, Stage
from ..options import CompileOptions
from ..names import buffer_stem
from ..scop import Scop
from ..thread_space import (AXES, THREAD_IDS, cyclic_condition, linear_thread_group_text,
                            linear_thread_id_text, thread_axes, thread_bounds, thread_zero)
from .registers import RegisterPlan
from .scratchpad import (Box, DataSpace, Partition, bounding_box, copy_in_hull, data_spaces,
                         partition, reuse)
from .staging import no_reuse, staging_verdict

#: Largest static shared memory a block may declare without the opt-in attribute.
STATIC_SHARED_LIMIT = 48 * 1024
#: Largest shared memory a block may use with the opt-in attribute (H100: 227 KB);
#: buffers over STATIC_SHARED_LIMIT are dynamic shared memory.
MAX_SHARED = 227 * 1024


@dataclass(frozen=True)
class BufferPlan:
    """One shared-memory buffer: a partition of an array for one block tile."""
    name: str
    array: str
    ctype: str
    extents: tuple[int, ...]
    lower: list[isl.PwAff]          # g: lower bounds as functions of the prefix
    prefix: isl.UnionMap            # statement instances -> prefix at the buffer's level
    refs: list[tuple[str, int]]     # (statement, access index) rewritten to the buffer
    level: str                      # 'block' (hoisted out of the sub-tile loop) or 'sub-tile'
    reason: str
    copy_in: isl.Map | None
    copy_out: isl.Map | None
    vector: int = 0                 # elements per 16-byte copy (0: scalar copies only)

    @property
    def nbytes(self) -> int:
        from ..scop import buffer_bytes
        return buffer_bytes(self.ctype, self.extents)


@dataclass(frozen=True)
class KernelMemory:
    """The memory plan of one kernel: its shared buffers (seed 000 §3), registers
    (seed 004 §4.2) and one decision line per array; a builder makes a new one
    (:meth:`noted`, :func:`dataclasses.replace`) rather than editing it."""
    buffers: tuple[BufferPlan, ...] = ()
    decisions: tuple[Note, ...] = ()   # one line per array
    registers: tuple[RegisterPlan, ...] = ()   # seed 004 §4.2
    #: (array, rule) of the partitions Algorithm 1 would buffer per sub-tile but whose
    #: copies do not pay (:mod:`.staging`: rule ``R0``, ``R1`` or ``R3``)
    unstaged: tuple[tuple[str, str], ...] = ()

    def noted(self, *notes: Note) -> "KernelMemory":
        """The plan with ``notes`` after its decisions."""
        return replace(self, decisions=self.decisions + notes)

    @property
    def shared_bytes(self) -> int:
        return sum(b.nbytes for b in self.buffers)

    @property
    def dropped_any(self) -> bool:
        """A buffer was dropped to fit ``--shared-mem`` (:func:`fit_buffers`' notes: the
        memory plan's only fallbacks about one array)."""
        return any(d.stage == Stage.MEMORY and d.kind == "fallback" and d.subject is not None
                   for d in self.decisions)


#: why an array with may-accesses (frontend/c/mayaccess.py) stays in global memory
GLOBAL_ONLY = ("read or written through a data-dependent subscript or condition: global "
               "memory only")


def memory_note(kernel: str, array: str | None, text: str, kind: str = "decision") -> Note:
    """A buffer decision of the memory plan: ``kernel: array: text``."""
    return Note(Stage.MEMORY, text, kernel=kernel, subject=array, kind=kind)


def is_decision_about(note: Note, kernel: str, arrays) -> bool:
    """``note`` is a decision of ``kernel`` (not of a part of it) about one of
    ``arrays``: the lines a later decision (registers, ``__constant__`` memory)
    replaces."""
    return note.kernel == kernel and note.where is None and note.subject in arrays


def prefix_map(node: isl.ScheduleNode) -> isl.UnionMap:
    """The prefix schedule of ``node``'s statement instances (the loops above it,
    restricted to its domain): what a copy or barrier grafted there is scheduled by."""
    return node.get_prefix_schedule_union_map().intersect_domain(node.get_domain())


def _candidates(scop: Scop, spaces: list[DataSpace], options: CompileOptions,
                read_only: bool = False) -> list[tuple[Partition, Box, bool, str]]:
    """Partitions of the given data spaces (one level) with their boxes and decisions.
    With ``read_only`` (the kernel does not write the array), a partition whose box
    grows with the problem size while each of its data spaces' does not is split into
    partitions of bounded boxes (:func:`_bounded_alone`): copies of read-only data may
    overlap (syrk's ``A[i][k]`` and ``A[j][k]`` meet only on the diagonal blocks, and
    their union's box spans the distance between the block's i and j tiles)."""
    out = []
    sample = {p: 100 for p in scop.size_params}
    parts: list[tuple[Partition, Box]] = []        # each box computed once
    for part in partition(spaces):
        box = bounding_box(part.pieces(), scop.context)
        if read_only and len(part.spaces) > 1 and not box.bounded:
            alone = _bounded_alone(scop, part)
            if alone is not None:
                parts += alone
                continue
        parts.append((part, box))
    for part, box in parts:
        if options.shared == "all":
            ok, why = True, "--shared all: every partition is buffered"
        else:
            ok, why = reuse(part, options.delta, sample)
        out.append((part, box, ok, why))
    return out


def _bounded_alone(scop: Scop, part: Partition) -> list[tuple[Partition, Box]] | None:
    """``part`` split into partitions with bounded boxes, when every data space's own
    box is bounded (else None, at the first that is not): each data space joins the
    first group whose box stays bounded with it, so a reference repeated in the code
    (pairwise distances' ``X[i][k]``, read twice) or a neighbour (``X[i][k+1]``)
    shares its buffer, and only references a problem size apart (``X[i][k]`` and
    ``X[j][k]``) get buffers of their own."""
    out: list[tuple[Partition, Box]] = []
    for d in part.spaces:
        for g, (grp, _box) in enumerate(out):
            both = Partition(part.array, grp.spaces + [d])
            box = bounding_box(both.pieces(), scop.context)
            if box.bounded:
                out[g] = (both, box)
                break
        else:
            alone = Partition(part.array, [d])
            box = bounding_box(alone.pieces(), scop.context)
            if not box.bounded:
                return None
            out.append((alone, box))
    return out


def _array_bounds(scop: Scop, array: str) -> isl.Set | None:
    """``{ A[a] : 0 <= a_d < extent_d }`` from the declaration, or None if an extent
    is not affine."""
    from ..expr import CPrinter
    arr = scop.arrays[array]
    dims = [f"a{i}" for i in range(len(arr.shape))]
    cons = [f"0 <= {d} < {CPrinter()(e)}" for d, e in zip(dims, arr.shape)]
    try:
        return isl.Set(f"[{', '.join(scop.size_params)}] -> {{ {array}[{', '.join(dims)}] : "
                       f"{' and '.join(cons) or '1 = 1'} }}")
    except isl.Error:
        return None


# ---- dependence-based copy minimisation (seed 000 §3.1.4) ----------------------------

def _refs_rel(scop: Scop, dom: isl.UnionSet, array: str, keep) -> isl.UnionMap:
    """Union of the access relations of ``array`` (restricted to ``dom``) that
    ``keep(stmt, k, access)`` accepts."""
    out = None
    for s in scop.statements:
        sdom = dom.extract_set(s.domain.get_space())
        if sdom.is_empty():
            continue
        for k, a in enumerate(s.accesses):
            if a.array == array and keep(s.name, k, a):
                rel = isl.UnionMap.from_map(a.relation.intersect_domain(sdom))
                out = rel if out is None else out.union(rel)
    return out


def _as_map(um: isl.UnionMap, like: isl.Map) -> isl.Map | None:
    maps: list[isl.Map] = []
    um.foreach_map(maps.append)
    if not maps:
        return None
    out = maps[0]
    for m in maps[1:]:
        out = out.union(m)
    out = out.align_params(like.get_space()).coalesce()
    return None if out.is_empty() else out


def live_in(scop: Scop, prefix: isl.UnionMap, part: Partition, cache: dict | None = None
            ) -> isl.Map | None:
    """Seed 000 §3.1.4: only the elements a block (one value of ``prefix``) reads
    before it writes them are copied in.  isl's dataflow analysis on accesses keyed
    by ``[block -> element]`` finds, for every read of the partition, the last write
    of the same element in the same block; the reads without one (may_no_source)
    are the copy-in set ``{ [prefix] -> A[a] }`` (None when empty).  ``cache`` (one
    dict per planned kernel, ``prefix`` alive while it is used) keeps what the
    partitions of one array at one level share: the writes and the schedule."""
    full = part.copy_in
    if full is None:
        return None
    shared = _flow_sources(scop, prefix, part.array, {} if cache is None else cache)
    dom = shared["dom"]
    reads = _refs_rel(scop, dom, part.array,
                      lambda st, k, a: not a.is_write and any(
                          d.stmt == st and d.ref == k for d in part.reads))
    if reads is None:
        return None
    if shared["writes"] is None:
        return full
    space = prefix.get_space()
    info = isl.UnionAccessInfo.from_sink(prefix.range_product(reads.align_params(space)))
    info = info.set_must_source(shared["sources"])
    info = info.set_schedule_map(shared["schedule"])
    exposed = info.compute_flow().get_may_no_source()
    return _as_map(exposed.range().unwrap(), full)


def _flow_sources(scop: Scop, prefix: isl.UnionMap, array: str, cache: dict) -> dict:
    """:func:`live_in`'s inputs that do not depend on the partition: the block's
    instances, the writes of ``array`` keyed by block, the schedule (memoised in
    ``cache`` by the prefix's identity and the array)."""
    key = (id(prefix), array)
    if key not in cache:
        dom = prefix.domain()
        writes = _refs_rel(scop, dom, array, lambda st, k, a: a.is_write)
        out = {"prefix": prefix, "dom": dom, "writes": writes}
        if writes is not None:
            space = prefix.get_space()
            out["sources"] = prefix.range_product(writes.align_params(space))
            out["schedule"] = scop.schedule.intersect_domain(dom).align_params(space)
        cache[key] = out
    return cache[key]


def live_out(scop: Scop, prefix: isl.UnionMap, part: Partition) -> isl.Map | None:
    """Seed 000 §3.1.4: the elements written in a block that are copied out.  Every
    written element of a parameter array (the caller sees the arrays after the
    call); of a temporary (a scalar the front end expanded), only those a statement
    instance outside the block reads afterwards (flow dependences leaving the
    block)."""
    full = part.copy_out
    if full is None or scop.arrays[part.array].kind == "param":
        return full
    everything = scop.domain
    reads = _refs_rel(scop, everything, part.array, lambda st, k, a: not a.is_write)
    writes = _refs_rel(scop, everything, part.array, lambda st, k, a: a.is_write)
    if reads is None:
        return None
    info = isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
    info = info.set_schedule_map(scop.schedule.intersect_domain(everything))
    dep = info.compute_flow().get_full_must_dependence()       # w -> [r -> A[a]]
    space = prefix.get_space()
    dep = dep.align_params(space)
    mine = _refs_rel(scop, prefix.domain(), part.array, lambda st, k, a: a.is_write and any(
        d.stmt == st and d.ref == k for d in part.writes))
    if mine is None:
        return None
    by_block = prefix.reverse().apply_range(dep)              # [p] -> [r -> A[a]]
    inside = by_block.uncurry().intersect_domain(prefix.reverse().wrap()).curry()
    leaving = by_block.subtract(inside).range_factor_range()   # [p] -> A[a]
    return _as_map(leaving.intersect(prefix.reverse().apply_range(mine.align_params(space))),
                   full)


#: isl operations the planning of one kernel may take before it gives up (no buffers)
PLAN_OPERATIONS = 4_000_000


def plan_kernel_memory(scop: Scop, outer: isl.ScheduleNode, inner: isl.ScheduleNode,
                       options: CompileOptions, kernel: str, fixed: isl.UnionMap | None = None,
                       mapped: int = 0) -> KernelMemory:
    """:func:`_plan_kernel_memory` under an isl operation budget: a loop nest whose
    data spaces are too intricate gets no buffers instead of a hang."""
    from ..isl_util import OperationBudget
    try:
        with OperationBudget(scop.context.get_ctx(), PLAN_OPERATIONS):
            return _plan_kernel_memory(scop, outer, inner, options, kernel, fixed, mapped)
    except isl.Error:
        return KernelMemory(decisions=(memory_note(
            kernel, None, f"no buffers: planning them took more than {PLAN_OPERATIONS} isl "
            "operations", "fallback"),))


def _plan_kernel_memory(scop: Scop, outer: isl.ScheduleNode, inner: isl.ScheduleNode,
                        options: CompileOptions, kernel: str, fixed: isl.UnionMap | None = None,
                        mapped: int = 0) -> KernelMemory:
    """Choose buffers for a block tile.

    ``outer`` is the node just below the block tile loops (the sub-tile band, or the
    point band when there is none), ``inner`` the point band, whose first ``mapped``
    members are the block's thread members.  An array is buffered at the outer level
    when all its partitions there are bounded (its whole block footprint fits a fixed
    buffer), else at the inner (sub-tile) level, where (``--shared auto``) a partition
    is buffered only when its copies pay (:func:`.staging.staging_verdict`).
    """
    decisions: list[Note] = []
    unstaged: list[tuple[str, str]] = []
    pre_inner = prefix_map(inner)
    writes = pre_inner.domain()            # the kernel's statement instances
    here = [s for s in scop.statements
            if not writes.extract_set(s.domain.get_space()).is_empty()]
    arrays = sorted({a.array for s in here for a in s.accesses}, key=list(scop.arrays).index)
    same_level = outer.is_equal(inner)
    pre_outer = pre_inner if same_level else prefix_map(outer)
    chosen: list[BufferPlan] = []
    found: dict[int, list[DataSpace]] = {}
    flows: dict = {}                       # live_in's shared inputs

    def spaces_at(prefix: isl.UnionMap, array: str) -> list[DataSpace]:
        """The data spaces of ``array`` at one level (those of every array are
        computed once per level: one reversal and domain of the prefix)."""
        if id(prefix) not in found:
            found[id(prefix)] = data_spaces(scop, prefix, set(arrays), fixed)
        return [d for d in found[id(prefix)] if d.array == array]
    for array in arrays:
        # an array the kernel writes: other blocks may write inside this block's box,
        # so only the elements it reads are loaded (a box would race; fuzz finding 10)
        written = any(a.array == array and a.is_write for s in here for a in s.accesses)
        level, prefix = "block", pre_outer
        cands = _candidates(scop, spaces_at(pre_outer, array), options, not written)
        if options.shared == "auto" and (same_level or all(b.bounded for _, b, _, _ in cands)):
            cands = _judge_staging(scop, cands, pre_outer, None, 0, unstaged)
        if not same_level and not all(box.bounded for _, box, _, _ in cands):
            level, prefix = "sub-tile", pre_inner
            cands = _candidates(scop, spaces_at(pre_inner, array), options, not written)
            if options.shared == "auto" and mapped:
                cands = _judge_staging(scop, cands, pre_inner, inner, mapped, unstaged)
        kid = kernel.rsplit("kernel", 1)[-1]          # kernel names: pm_kernel<k>
        bufs, reasons = array_buffers(scop, options, array, cands, prefix, level, written,
                                      buffer_stem(scop, f"sh{kid}"), flows)
        chosen += bufs
        decisions.append(memory_note(kernel, array, "; ".join(reasons)))
    if options.shared_mem > MAX_SHARED:
        decisions.append(memory_note(
            kernel, None, f"--shared-mem {options.shared_mem // 1024} KB capped at "
            f"{MAX_SHARED // 1024} KB (the most a block may opt in to)", "refusal"))
    buffers, dropped = fit_buffers(chosen, options, kernel)
    return KernelMemory(tuple(buffers), tuple(decisions + dropped), unstaged=tuple(unstaged))


def _judge_staging(scop: Scop, cands: list[tuple[Partition, Box, bool, str]],
                   prefix: isl.UnionMap, inner: isl.ScheduleNode | None, mapped: int,
                   unstaged: list[tuple[str, str]]) -> list[tuple[Partition, Box, bool, str]]:
    """The candidates with those whose copies do not pay refused (:mod:`.staging`:
    rule R0 per block, ``inner`` None; every rule per sub-tile), each recorded in
    ``unstaged`` (array, rule)."""
    out = []
    level = "per sub-tile" if inner is not None else "per block"
    for part, box, ok, why in cands:
        if ok and box.bounded:
            # per sub-tile R1 covers R0 (no reuse at all is no reuse across threads)
            verdict = (no_reuse(scop, part, prefix) if inner is None else
                       staging_verdict(scop, part, prefix, inner, mapped))
            if not verdict.pays:
                unstaged.append((part.array, verdict.rule))
                ok, why = False, (f"a copy {level} would not pay ({verdict.rule}: "
                                  f"{verdict.why}), although {why}")
        out.append((part, box, ok, why))
    return out


def array_buffers(scop: Scop, options: CompileOptions, array: str,
                  cands: list[tuple[Partition, Box, bool, str]], prefix: isl.UnionMap,
                  level: str, written: bool, stem: str, flows: dict | None = None
                  ) -> tuple[list[BufferPlan], list[str]]:
    """The buffers of one array's partitions at one level (seed 000 Algorithm 1's
    decision, Algorithm 2's box) with one reason per partition.  ``written``: the
    kernel writes the array, so only the elements it reads before writing them are
    copied in (other blocks may write inside this block's box; fuzz finding 10),
    else the box's hull.  Buffers are named ``<stem>_<array>[_<partition>]``;
    ``flows`` is :func:`live_in`'s cache for this level."""
    chosen: list[BufferPlan] = []
    reasons: list[str] = []
    for part, box, ok, why in cands:
        if array in scop.global_only:
            reasons.append("not buffered (" + GLOBAL_ONLY + ")")
            continue
        if not ok:
            reasons.append(f"not buffered ({why})")
            continue
        if not box.bounded:
            reasons.append("not buffered (footprint grows with the problem size)")
            continue
        name = f"{stem}_{array}" + (f"_{len(reasons)}" if len(cands) > 1 else "")
        buf = vectorise(scop, options, BufferPlan(
            name, array, scop.arrays[array].ctype, tuple(box.extents), box.lower, prefix,
            [(d.stmt, d.ref) for d in part.spaces], level, why,
            live_in(scop, prefix, part, flows) if written else
            copy_in_hull(part, _array_bounds(scop, array)),
            live_out(scop, prefix, part)))
        chosen.append(buf)
        vec = f", {VECTOR_TYPES[buf.ctype]} copies" if buf.vector else ""
        reasons.append(f"{name}[{']['.join(map(str, buf.extents))}] per {level} ({why}{vec})")
    return chosen, reasons


def level_buffers(scop: Scop, prefix: isl.UnionMap, options: CompileOptions, kernel: str, stem: str,
                  level: str, arrays: list[str], fixed: isl.UnionMap | None,
                  defer_unbounded: bool) -> tuple[list[BufferPlan], list[Note], list[str]]:
    """Buffers of ``arrays`` at one level of a kernel whose instances (and block, sub-tile
    or thread tile) ``prefix`` gives: the superposition's kernels (seed 003) plan at the
    block level, then per thread tile for the arrays whose block footprint grows with
    the problem size (``defer_unbounded``: such an array is returned, not decided).
    Returns (buffers, one decision line per array decided, deferred arrays)."""
    chosen: list[BufferPlan] = []
    lines: list[Note] = []
    deferred: list[str] = []
    dom = prefix.domain()
    spaces = data_spaces(scop, prefix, set(arrays), fixed)
    flows: dict = {}
    for array in arrays:
        written = any(a.array == array and a.is_write and not
                      dom.extract_set(s.domain.get_space()).is_empty()
                      for s in scop.statements for a in s.accesses)
        cands = _candidates(scop, [d for d in spaces if d.array == array], options)
        if defer_unbounded and not all(box.bounded for _, box, _, _ in cands):
            deferred.append(array)
            continue
        bufs, reasons = array_buffers(scop, options, array, cands, prefix, level, written, stem,
                                      flows)
        chosen += bufs
        lines.append(memory_note(kernel, array, "; ".join(reasons)))
    return chosen, lines, deferred


def fit_buffers(bufs: list[BufferPlan], options: CompileOptions, kernel: str, used: int = 0
                ) -> tuple[list[BufferPlan], list[Note]]:
    """The buffers that fit ``--shared-mem`` (capped at :data:`MAX_SHARED`) next to
    ``used`` bytes, smallest first, with a line per buffer dropped."""
    limit = min(options.shared_mem, MAX_SHARED)
    kept: list[BufferPlan] = []
    lines: list[Note] = []
    total = used
    for b in sorted(bufs, key=lambda b: b.nbytes):
        if total + b.nbytes > limit:
            lines.append(memory_note(kernel, b.array, f"{b.name} dropped: {total + b.nbytes} "
                                     f"bytes of shared memory would exceed the {limit} a "
                                     f"block may use (--shared-mem)", "fallback"))
            continue
        total += b.nbytes
        kept.append(b)
    return kept, lines


def drop_register_buffers(mem: KernelMemory, kernel: str, options: CompileOptions,
                          points_per_thread: int = 1) -> tuple[KernelMemory, list[str]]:
    """No duplicate storage (seed 004 §4.2 with seed 000 §4.1): an array planned into
    per-thread registers has subscripts that vary only with the thread loops, so its
    data space does not depend on the sequential (sub-tile) loops and its buffers sit
    at the block level.  The register already holds each element across those loops:
    a shared copy would only be read once into the register and written back once, so
    the buffers are dropped and the register loads from and stores to global memory
    directly (once per thread point, which :mod:`.counts` predicts).  Only arrays
    whose references lie in one statement: references of several statements (2mm's
    ``D[i][j] *= beta`` before the k loop and ``D[i][j] += ...`` inside it) may keep
    the register inside the sequential loop, where the buffer still saves global
    traffic.  ``--shared all`` keeps every buffer, and so does a thread owning more
    points of the block tile than it may hold registers (``points_per_thread`` >
    ``MAX_REGISTERS``: the promotion would be skipped), and so do the tile search's
    plans (``keep_register_buffers``: its fitted model needs one buffer set at every
    tile size).  Returns the plan without those buffers and the arrays whose buffers
    were dropped."""
    from .registers import MAX_REGISTERS
    if options.shared == "all" or options.keep_register_buffers or not mem.registers or \
            points_per_thread > MAX_REGISTERS:
        return mem, []
    regs = {r.array for r in mem.registers if len(r.statements) == 1}
    dropped = sorted({b.array for b in mem.buffers if b.array in regs and b.level == "block"}
                     - {b.array for b in mem.buffers if b.array in regs and b.level != "block"})
    if not dropped:
        return mem, []
    return _unbuffer(mem, kernel, dropped, "not buffered (kept in registers across the "
                     "sequential loops: loaded from and stored to global memory once per "
                     "thread point)"), dropped


def _unbuffer(mem: KernelMemory, kernel: str, arrays: list[str], why: str) -> KernelMemory:
    """``mem`` without the buffers of ``arrays`` kept in registers instead, their
    buffer decisions (not the register ones) saying ``why`` instead."""
    return replace(mem, buffers=tuple(b for b in mem.buffers if b.array not in arrays),
                   decisions=tuple(
                       replace(d, stage=Stage.REGISTERS, kind="decision", text=why)
                       if is_decision_about(d, kernel, arrays) and d.stage != Stage.REGISTERS
                       else d for d in mem.decisions))


def keep_private_in_registers(mem: KernelMemory, kernel: str, private: frozenset[str]
                              ) -> KernelMemory:
    """Private local scalars (:func:`polymagic.schedule.private.private_temps`: written
    before read in every instance of their loops, dead after) planned into registers
    live only there (seed 004 §4.2): the register is never loaded nor stored
    (:attr:`.registers.RegisterPlan.private`), so any buffer of theirs is dropped and
    the array is never touched in global memory.  Returns the plan with those
    registers marked private."""
    names = [r.array for r in mem.registers if r.array in private]
    if not names:
        return mem
    mem = replace(mem, registers=tuple(replace(r, private=True) if r.array in private else r
                                       for r in mem.registers))
    return _unbuffer(mem, kernel, names, "not buffered (a private local scalar: kept in a "
                     "register of the thread owning the point, never in memory)")


# ---- copy code in the schedule tree ---------------------------------------------

#: 16-byte vector types of the element types (seed 002 §3.4: float4/double2 accesses).
VECTOR_TYPES = {"float": "float4", "double": "double2"}
VECTOR_BYTES = 16


def vector_width(ctype: str) -> int:
    """Elements per 16-byte vector access (0: no vector type)."""
    return {"float": 4, "double": 2}.get(ctype, 0)


def vectorise(scop: Scop, options: CompileOptions, buf: BufferPlan) -> BufferPlan:
    """Prepare a buffer for 16-byte copies (seed 002 §3.4): its innermost offset
    ``g`` is rounded down to a multiple of the vector width ``w`` and its row pitch
    up to one (padding the row when ``g`` is not provably aligned, e.g. jacobi's
    halo ``32 b - 1``), so that a chunk aligned in the global array (``a ≡ 0 mod w``)
    is aligned in the buffer too.  Arrays passed as strided views (``CompileOptions.layout``),
    rows shorter than two vectors and copy sets with partial chunks
    (:func:`_whole_chunks`) keep scalar copies; so does ``--device-mem`` (its launch
    tiling bounds the kernels' accesses by interval arithmetic, too coarse on the
    chunk loops' thread arithmetic)."""
    w = vector_width(buf.ctype)
    if (not options.vector or options.device_mem is not None or w < 2 or not buf.extents or buf.extents[-1] < 2 * w
            or buf.array in dict(options.layout) or _last_extent(scop, buf.array) is None):
        return buf
    g = buf.lower[-1]
    g_al = g.scale_down_val(isl.Val(w)).floor().scale_val(isl.Val(w))
    ext = list(buf.extents)
    if not g.ne_set(g_al).is_empty():
        ext[-1] += w - 1
    ext[-1] = -(-ext[-1] // w) * w
    out = replace(buf, lower=list(buf.lower[:-1]) + [g_al], extents=tuple(ext), vector=w)
    if any(rel is not None and not _whole_chunks(scop, out, rel)
           for rel in (buf.copy_in, buf.copy_out)):
        return buf
    return out


def _whole_chunks(scop: Scop, buf: BufferPlan, rel: isl.Map) -> bool:
    """Whether every 16-byte chunk the copy set ``rel`` touches lies in it whole when
    the array's innermost extent is a multiple of ``w`` (the tile-aligned rows of
    gemm's buffers; not jacobi's halo, lu's triangles): a copy whose rows start or end
    inside chunks copies those chunks element by element, in branches of their own,
    which issue more requests than the element copies (and cost isl's AST
    generation time for nothing), so such buffers keep element copies."""
    from ..expr import CPrinter
    w = buf.vector
    text = CPrinter()(scop.arrays[buf.array].shape[-1])
    full = _in_chunks(rel, w, 0)
    for j in range(1, w):
        full = full.intersect(_in_chunks(rel, w, j))
    dom = _in_chunks(rel, w, None)
    try:
        cond = isl.Set(f"[{', '.join(scop.size_params)}] -> {{ : ({text}) mod {w} = 0 }}")
        dom = dom.intersect_params(cond.align_params(dom.get_space().params()))
    except isl.Error:
        pass
    return dom.is_subset(full)


def _last_extent(scop: Scop, array: str) -> str | None:
    """The array's innermost extent as isl text ("" for 1-d arrays: no row pitch)."""
    from ..expr import CPrinter
    shape = scop.arrays[array].shape
    if len(shape) < 2:
        return ""
    text = CPrinter()(shape[-1])
    try:
        isl.Set(f"[{', '.join(scop.size_params)}] -> {{ : ({text}) >= 0 }}")
    except isl.Error:
        return None
    return text


def _row_maps(rel: isl.Map, w: int) -> tuple[str, list[str], str]:
    """(params, element names ``x0 ..``, the array's tuple) of a copy set's range."""
    params = ", ".join(rel.get_space().get_var_names(isl.dim_type.param))
    name = rel.get_tuple_name(isl.dim_type.out)
    xs = [f"x{i}" for i in range(rel.dim(isl.dim_type.out))]
    return params, xs, name


def chunk_domain(buf: BufferPlan, rel: isl.Map) -> isl.Map:
    """The 16-byte chunks of the copy set ``rel`` (``{ [p] -> A[a] }``) as
    ``{ [p] -> A[a', k] }``: chunk ``k`` of a buffer row holds the row's elements
    ``g(p) + w k .. g(p) + w k + w - 1`` (``w = buf.vector``, ``g`` the buffer's
    innermost lower bound, a multiple of ``w`` by :func:`vectorise`); every chunk
    holding at least one element of ``rel(p)``.

    One copy statement scans these chunks (seed 002 §3.4), each copying its elements
    in ``rel``: one 16-byte access when they all are and the addresses are aligned
    (:func:`chunk_guards`), else element by element.  A chunk's row range is the
    projection of ``rel``'s, counted from the buffer's row start: no modulo
    constraint reaches isl's AST generator, and the threads' cyclic distribution
    (:func:`_thread_filter`) has no offset depending on the block: the former split
    into aligned chunk starts (``a ≡ 0 mod w``) and an element remainder (``rel``
    minus the chunks) made the copies' AST generation about 4x as slow as the element
    copies'."""
    return _chunk_local(buf, _in_chunks(rel, buf.vector, None))


def _in_chunks(rel: isl.Map, w: int, j: int | None) -> isl.Map:
    """``{ [p] -> A[a', c] }``: the global chunks ``c`` (elements ``w c ..``) holding an
    element of ``rel(p)`` (``j`` None) or whose element ``w c + j`` is in it."""
    params, xs, name = _row_maps(rel, w)
    cond = (f"{w} * c <= {xs[-1]} < {w} * c + {w}" if j is None
            else f"{xs[-1]} = {w} * c + {j}")
    to_chunk = _parsed_map(f"[{params}] -> {{ {name}[{', '.join(xs)}] -> "
                           f"{name}[{', '.join(xs[:-1] + ['c'])}] : {cond} }}")
    return rel.apply_range(to_chunk).coalesce()


def _chunk_local(buf: BufferPlan, chunks: isl.Map) -> isl.Map:
    """Global chunks ``{ [p] -> A[a', c] }`` counted from the buffer's row start:
    ``k = c - g(p) / w``."""
    space = chunks.get_space()
    n = chunks.dim(isl.dim_type.out)
    g = buf.lower[-1]
    if g.n_piece() == 1:          # its domain (the blocks') only slows the pullback
        pieces: list[isl.Aff] = []
        g.foreach_piece(lambda _s, a: pieces.append(a))
        g = isl.PwAff.from_aff(pieces[0])
    g = g.scale_down_val(isl.Val(buf.vector)).floor()
    g = g.align_params(space.params())
    wrapped = chunks.wrap()
    ident = isl.MultiAff.identity(wrapped.get_space().map_from_set())
    to_p = isl.MultiAff.domain_map(chunks.align_params(g.get_space().params()).get_space())
    last = isl.PwAff.from_aff(ident.get_aff(space.dim(isl.dim_type.in_) + n - 1))
    k = last.sub(g.align_params(to_p.get_space().params()).pullback_multi_aff(to_p))
    shift = isl.PwMultiAff.from_multi_aff(ident).set_pw_aff(
        space.dim(isl.dim_type.in_) + n - 1, k)
    return wrapped.apply(isl.Map.from_pw_multi_aff(shift)).unwrap().coalesce()


def chunk_guards(scop: Scop, buf: BufferPlan, rel: isl.Map) -> tuple[isl.Map, list[isl.Map]]:
    """(full, [in_0 .. in_{w-1}]) over the chunks ``{ [p] -> A[a', k] }`` of
    :func:`chunk_domain`: ``in_j`` holds the chunks whose element ``j`` is in
    ``rel(p)``; ``full`` those with all ``w`` elements in ``rel(p)`` and the array's
    rows 16-byte aligned (innermost extent ≡ 0 mod w, a condition on the sizes): a
    full chunk is one 16-byte access when the array's base is aligned too (checked at
    run time, ``pm_aligned16``).  Both are simplified in the context of the chunk
    domain (isl's gist: what is left is the row end's bound, the sizes' alignment),
    so they print as short conditions."""
    w = buf.vector
    ins = [_in_chunks(rel, w, j) for j in range(w)]
    full = ins[0]
    for e in ins[1:]:
        full = full.intersect(e)
    last = _last_extent(scop, buf.array)
    if last:
        pn = ", ".join(scop.size_params)
        cond = isl.Set(f"[{pn}] -> {{ : ({last}) mod {w} = 0 }}")
        full = full.intersect_params(cond.align_params(full.get_space().params()))
    dom = _chunk_local(buf, _in_chunks(rel, w, None))
    return (_chunk_local(buf, full).gist(dom).coalesce(),
            [_chunk_local(buf, e).gist(dom).coalesce() for e in ins])


@functools.lru_cache(maxsize=256)
def _parsed_map(text: str) -> isl.Map:
    """``isl.Map(text)``, parsed once (the chunk maps come back at every regeneration)."""
    return isl.Map(text)


def _prefix_dims(node: isl.ScheduleNode) -> int:
    return node.get_schedule_depth()


#: Lanes a buffer row takes when the rows are split inside ``threadIdx.x``: 8 chunks,
#: 128 bytes, one cache line.  The thread's group ``t div 8`` is then a parameter of
#: isl's AST build (:data:`kir.COPY_GROUP`); one for the whole program, as each
#: parameter slows the generation of every statement's code.
GROUP_LANES = 8


@dataclass(frozen=True)
class ChunkSplit:
    """How a 16-byte chunk statement's chunks ``(.., r, k)`` go to the block's threads
    (linear id ``t``): chunk ``k`` of a buffer row to the lane ``t mod R`` (``lane``:
    isl text congruent to it modulo ``R``), row ``r`` to the group ``t div R``
    (``group``, isl text; None when ``R`` is the whole block) modulo ``T / R``;
    ``params`` the copy split variables it uses, with their (exclusive) bounds."""
    r: int
    lane: str
    group: str | None
    params: tuple[tuple[str, int], ...] = ()


def chunk_split(block: tuple[int, int, int], extents: tuple[int, ...], width: int
                ) -> ChunkSplit:
    """The thread split of a chunk statement of a buffer (``extents`` in elements,
    rows of ``extents[-1] / width`` chunks): ``R`` a product of the leading block
    dims (``threadIdx.x``'s extent, ...: lane and group are linear in the thread ids)
    or :data:`GROUP_LANES` where that takes fewer rounds (two thirds or less: short
    rows would otherwise leave most lanes of ``threadIdx.x`` idle)."""
    threads = math.prod(block)
    rc = extents[-1] // width
    if len(extents) < 2:
        return ChunkSplit(threads, linear_thread_id_text(block, threads), None)
    rows = math.prod(extents[:-1])

    def rounds(r: int) -> int:
        return -(-rc // r) * -(-rows // (threads // r))
    aligned = sorted({math.prod(block[:k]) for k in range(1, 4)} - {1})
    best = min(aligned or [threads], key=lambda r: (rounds(r), r < rc, r))
    g = GROUP_LANES
    if g < block[0] and block[0] % g == 0 and 3 * rounds(g) <= 2 * rounds(best):
        name = f"{kir.COPY_GROUP}{g}"
        return ChunkSplit(g, linear_thread_id_text(block, g), name, ((name, threads // g),))
    if best == threads:
        return ChunkSplit(best, linear_thread_id_text(block, best), None)
    return ChunkSplit(best, linear_thread_id_text(block, best),
                      linear_thread_group_text(block, best))


def copy_split_params(buffers: list[BufferPlan], blocks: list[tuple[int, int, int]]
                      ) -> dict[str, int]:
    """The copy split variables (:data:`kir.COPY_GROUP`) the chunk statements of
    ``buffers`` may use in blocks of the given shapes, with a bound on each
    (exclusive): parameters of the AST build."""
    out: dict[str, int] = {}
    for b in buffers:
        if b.vector:
            for block in blocks:
                for name, n in chunk_split(block, b.extents, b.vector).params:
                    out[name] = max(out.get(name, 1), n)
    return out


def _thread_filter(stmt: str, np_: int, na: int, block: tuple[int, int, int],
                   split: ChunkSplit | None = None) -> str:
    """Cyclic distribution of the copy loops: innermost dim over threadIdx.x, ...;
    for a 16-byte chunk statement (``split``) the innermost dim holds a buffer row's
    chunks (:func:`chunk_domain`): they go to ``R`` consecutive linear thread ids,
    the rows cyclically to the ``T / R`` groups of them (:func:`chunk_split`), so
    consecutive threads take consecutive chunks (coalesced 16-byte accesses) and each
    condition couples one dim with the thread ids only (isl's AST generation stays
    cheap)."""
    conds = []
    axes = thread_axes(block)
    dims = [f"a{i}" for i in range(na)]
    if split is not None:
        conds.append(cyclic_condition(dims[-1], f"({split.lane})", split.r))
        if split.group is not None:
            conds.append(cyclic_condition(dims[-2], f"({split.group})",
                                          math.prod(block) // split.r))
        conds += [f"0 <= {v} < {n}" for v, n in split.params]
    elif na == 1 and len(axes) > 1:           # a 1-d buffer: use all threads of the block
        conds.append(cyclic_condition(dims[0], f"({linear_thread_id_text(block)})",
                                      math.prod(block)))
    else:
        for a, d in zip(axes, reversed(dims)):
            conds.append(cyclic_condition(d, THREAD_IDS[a], block[AXES.index(a)]))
        for a in axes[len(dims):]:
            conds.append(thread_zero(a))
    conds += thread_bounds(block, axes)
    p = ", ".join([f"p{i}" for i in range(np_)] + dims)
    return f"{{ {stmt}[{p}] : {' and '.join(conds)} }}"


def atomic(band: isl.ScheduleNode) -> isl.ScheduleNode:
    """Ask isl's AST generator for one loop per band member (no splitting of the
    domain into separately generated pieces): smaller code, much faster generation."""
    for i in range(band.band_n_member()):
        band = band.band_member_set_ast_loop_type(i, isl.ast_loop_type.atomic)
    return band


def _scan_offsets(na: int, block: tuple[int, int, int], split: ChunkSplit | None = None
                  ) -> list[tuple[str, int]]:
    """The copy band's members, each with its offset in the band of seed 004 §4.2's
    cyclic copy loops ``(round, coordinate)`` (the lowering names the loops by it,
    :data:`SCAN_MARK`): each distributed coordinate ``a_d`` is scanned by the
    thread's round on it only (``floor(a_d / B)``; for 16-byte chunks ``floor(k /
    R)`` and ``floor(r / (T / R))`` of :func:`chunk_split`), the others by themselves.

    With the round given, isl's AST generator prints one loop over it and computes
    the coordinate (the round and the thread filter fix it); scanning the
    coordinates alone made it (islpy 2026.2.2) drop instances when the filter's
    modulo on the thread id has an offset coupled to other dims: one 16-byte chunk a
    thread for gemver's 16x256 buffer (fuzz finding 24), threads copying the same
    element for a localised buffer (finding 27).  The coordinate is no member of
    its own: a band member fixed by the others still costs isl's AST generation a
    dimension (issue 22: the copy statements' AST build 21 % faster without them,
    docs/evidence.md)."""
    dims = [f"(a{i})" for i in range(na)]
    axes = thread_axes(block)
    if split is not None:
        out = list(dims)
        out.insert(na - 1, f"(floor(a{na - 1} / {split.r}))")
        if split.group is not None:
            out.insert(na - 2, f"(floor(a{na - 2} / {math.prod(block) // split.r}))")
    elif len(axes) > 1 and na == 1:
        span = math.prod(block["xyz".index(a)] for a in axes)
        out = [f"(floor(a0 / {span}))"] + dims
    else:
        out = list(dims)
        for a, d in zip(axes, reversed(range(na))):
            if block["xyz".index(a)] > 1:
                out.insert(d, f"(floor(a{d} / {block['xyz'.index(a)]}))")
    return [(m, i) for i, m in enumerate(out) if not (i and "floor" in out[i - 1])]


#: The mark above a copy band whose loops the lowering renames (``pm_scan_<depth>_<offsets>``):
#: isl names a loop after its depth (``pm_c<depth>``); the band's members start at
#: ``depth`` and stand at ``offsets`` of the band that also scanned the coordinates.
SCAN_MARK = "pm_scan_"


def scan_renames(mark: str) -> dict[str, str]:
    """The copy loops' iterators renamed as the scan mark ``mark`` says: ``pm_c<depth +
    k>`` -> ``pm_c<depth + offsets[k]>`` (the names the loops had when the band
    scanned each distributed coordinate too; the code reads as before)."""
    depth, offsets = mark[len(SCAN_MARK):].split("_")
    d = int(depth)
    return {f"pm_c{d + k}": f"pm_c{d + int(o)}"
            for k, o in enumerate(offsets.split("x")) if int(o) != k}


def copy_graft(scop: Scop, node: isl.ScheduleNode, stmt: str, rel: isl.Map,
                block: tuple[int, int, int], split: ChunkSplit | None = None
                ) -> isl.ScheduleNode:
    """An extension subtree adding ``stmt[p, a]`` for every ``a`` in ``rel(p)``,
    scanned by a band over ``a`` whose innermost dims are distributed over threads
    (a 16-byte chunk statement's as ``split`` says; the extension declares its copy
    split variables as parameters, so that the AST build knows them)."""
    np_ = _prefix_dims(node)
    na = rel.dim(isl.dim_type.out)
    p = ", ".join([f"p{i}" for i in range(np_)] + [f"a{i}" for i in range(na)])
    scans = _scan_offsets(na, block, split) if na else []
    members = ", ".join(f"{{ {stmt}[{p}] -> [{s}] }}" for s, _o in scans)
    text = _thread_filter(stmt, np_, na, block, split)
    params = kir.isl_params(scop.size_params, text + members) + \
        "".join(f", {v}" for v, _n in (split.params if split else ()))
    filt = isl.UnionSet(f"[{params}] -> " + text)
    ext = rel.domain_map().reverse().flatten_range().set_tuple_name(isl.dim_type.out, stmt)
    ext = ext.align_params(filt.get_space())
    graft = isl.ScheduleNode.from_extension(isl.UnionMap.from_map(ext))
    leaf = graft.child(0)
    if scans:
        leaf = leaf.insert_partial_schedule(isl.MultiUnionPwAff(kir.mupa_text(params, members)))
        leaf = atomic(leaf)
    leaf = leaf.insert_filter(filt)
    if any(o != k for k, (_s, o) in enumerate(scans)):
        offsets = "x".join(str(o) for _s, o in scans)
        leaf = leaf.insert_mark(isl.Id(f"{SCAN_MARK}{np_}_{offsets}"))
    return leaf.root()


def sync_graft(scop: Scop, node: isl.ScheduleNode, stmt: str) -> isl.ScheduleNode:
    """An extension node that grafts statement ``stmt`` (a barrier) once per value of
    ``node``'s prefix loops (seed 004 §4.3: ``__syncthreads`` around the copies)."""
    np_ = _prefix_dims(node)
    p = ", ".join(f"p{i}" for i in range(np_))
    ext = isl.UnionMap(f"[{', '.join(scop.size_params)}] -> {{ [{p}] -> {stmt}[{p}] }}")
    return isl.ScheduleNode.from_extension(ext)


class CopyNamer:
    """Unique names of grafted copy and barrier statements across a program."""

    def __init__(self):
        self.n_sync = 0
        self.copies: dict[str, tuple[str, BufferPlan]] = {}   # stmt -> (direction, buffer)

    def sync(self) -> str:
        self.n_sync += 1
        return f"pm_sync{self.n_sync}"

    def copy(self, direction: str, buf: BufferPlan) -> str:
        """``pm_in_<buf>``/``pm_out_<buf>`` (element copies), ``pm_vin_<buf>``/
        ``pm_vout_<buf>`` (16-byte chunk copies, see :func:`chunk_domain`)."""
        name = f"pm_{direction}_{buf.name}"
        self.copies[name] = (direction, buf)
        return name


def graft_copies(scop: Scop, node: isl.ScheduleNode, buffers: list[BufferPlan],
                 block: tuple[int, int, int], namer: CopyNamer) -> isl.ScheduleNode:
    """Surround ``node`` with [sync, copy-in..., sync, node, sync, copy-out...].

    The leading barrier keeps the previous sub-tile's compute and copy-out from
    racing with this sub-tile's writes into the same buffers."""
    if not buffers:
        return node
    ins = [b for b in buffers if b.copy_in is not None]
    outs = [b for b in buffers if b.copy_out is not None]
    node = node.graft_before(sync_graft(scop, node, namer.sync()))
    if ins:
        for b in ins:
            for d, rel, split in _copy_parts(scop, b, b.copy_in, "in", block):
                node = node.graft_before(copy_graft(scop, node, namer.copy(d, b), rel,
                                                     block, split))
        node = node.graft_before(sync_graft(scop, node, namer.sync()))
    if outs:
        for b in reversed(outs):
            for d, rel, split in reversed(_copy_parts(scop, b, b.copy_out, "out", block)):
                node = node.graft_after(copy_graft(scop, node, namer.copy(d, b), rel,
                                                    block, split))
        node = node.graft_after(sync_graft(scop, node, namer.sync()))
    return node


def _copy_parts(scop: Scop, buf: BufferPlan, rel: isl.Map, direction: str,
                block: tuple[int, int, int]) -> list[tuple[str, isl.Map, ChunkSplit | None]]:
    """(direction, set, thread split) of the copy statements of one buffer: its
    16-byte chunks (``v`` + direction, :func:`chunk_domain`) or its elements."""
    if not buf.vector:
        return [(direction, rel, None)]
    return [("v" + direction, chunk_domain(buf, rel), chunk_split(block, buf.extents, buf.vector))]
