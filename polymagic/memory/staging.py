"""Whether a per-sub-tile shared-memory copy pays for its barriers (issue from the first
H100 run, 2026-11-26).

Seed 000's Algorithm 1 (§3.1.1, :func:`.scratchpad.reuse`) asks whether a partition is
*reused*; it does not ask *by whom*.  A buffer at the sub-tile level (seed 000 §4.1:
reloaded at every step of the sub-tiled sequential loop, with a barrier before and
after the copy-in, seed 004 §4.3) pays only when it saves global loads that the
hardware would not save anyway.  This module states which reuse does not:

* **R0, no reuse at all** (any level): every element of the partition is used by one
  statement instance of the block: Algorithm 1 counts the read and the write of
  ``ex[i][j] = ex[i][j] - ...`` as two overlapping references ("constant reuse",
  overlap 1x), but each element is loaded once and stored once with or without the
  copy, which only adds its barriers (fdtd-2d's ``sh0_ex``, trmm's ``B = alpha * B``).
* **R1, per-thread data**: no element of the partition is used by two threads of the
  block in one sub-tile (the read and the write of one statement instance, which
  Algorithm 1 counts as "constant reuse", or a thread's own reuse along its
  sequential loop).  Registers (seed 004 §4.2) or the L1 cache serve that reuse; a
  copy loads each element once, as the thread itself would.  lu's ``A[i][j]`` and
  ``A[i][k]`` with ``i`` on the threads: 24.6 ms without the copies, 105 ms with
  them on the H100 (benchmarks/results/h100-2026-11-26, n = 400).
* **R3, overlapping coalesced loads**: every reference involves the ``x`` member
  and the elements two threads of the block share are shared only by threads that
  differ in ``x`` alone (a stencil's ``ex[i][j]`` and ``ex[i][j+1]`` with ``j`` on
  ``threadIdx.x``): the warp's coalesced loads of neighbouring elements overlap in
  the same sectors, so the copy saves no DRAM traffic (fdtd-2d at medium sizes: 11.4
  ms with ``sh1_ex[16][257]`` and kernel 0's buffers, 6.2 ms with no buffer at all).

Any other cross-thread reuse is kept: a broadcast (no reference involves a mapped
member, every thread reads the same element at the same step: lu's ``A[k][j]``,
trmm's ``A[k][i]``: the trmm variants with ``sh0_A[16][16]`` ran in 1.1 ms on the
H100, the one with no buffer at all in 3.0 ms), a reference invariant along one mapped member and varying
along another (gemm's ``A[i][k]`` across ``j``, ``B[k][j]`` across
``i``: the outer-product reuse of register tiles, seed 004 §4.2), or elements shared
by threads of different rows (other warps).  Block-level buffers (hoisted out of the
sub-tile loop, seed 000 §4.2) are not judged here: they save the reloads along the
sequential loop itself.

The thread of an instance is approximated by its point in the block tile (the mapped
members of the point band): two points of one thread (per-thread tiles, cyclic
distribution) count as two threads, so the approximation can only keep a buffer
that the exact rule would drop, never drop one that it would keep.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..scop import Scop
from .scratchpad import Partition, distinct_relations


@dataclass(frozen=True)
class StagingVerdict:
    """Whether a partition is worth its copies: ``rule`` is ``"R0"``, ``"R1"`` or
    ``"R3"`` (see the module docstring) when it is not, ``None`` when it is; ``why``
    says it in words (the memory note)."""
    rule: str | None
    why: str

    @property
    def pays(self) -> bool:
        return self.rule is None


def _keys(prefix: isl.UnionMap, inner: isl.ScheduleNode, mapped: int) -> isl.UnionMap:
    """Statement instance -> ``[sub-tile prefix..., mapped points...]`` in one
    anonymous space (so that the uses of every statement compare)."""
    points = inner.band_get_partial_schedule()
    n = points.dim(isl.dim_type.set)
    if n > mapped:
        points = points.drop_dims(isl.dim_type.set, mapped, n - mapped)
    keyed = prefix.flat_range_product(isl.UnionMap.from_multi_union_pw_aff(points))
    maps: list[isl.Map] = []
    keyed.foreach_map(maps.append)
    out = None
    for mp in maps:
        mp = mp.reset_tuple_id(isl.dim_type.out)
        u = isl.UnionMap.from_map(mp)
        out = u if out is None else out.union(u)
    return out


def staging_verdict(scop: Scop, part: Partition, prefix: isl.UnionMap,
                    inner: isl.ScheduleNode, mapped: int) -> StagingVerdict:
    """The verdict on one partition planned per sub-tile: ``prefix`` maps the kernel's
    instances to the sub-tile's prefix schedule, ``inner`` is the point band whose
    first ``mapped`` members are the block's thread (point) members, ``x`` last."""
    if mapped == 0:
        return StagingVerdict(None, "")
    keys = _keys(prefix, inner, mapped)
    points = inner.band_get_partial_schedule()
    n_pre = None
    uses = None                     # [prefix, points] -> element, all references
    involves: list[set[int]] = []   # per reference: the mapped members it involves
    for d in part.spaces:
        stmt = scop.statement(d.stmt)
        acc = stmt.accesses[d.ref]
        mine = keys.intersect_domain(isl.UnionSet.from_set(
            prefix.domain().extract_set(stmt.domain.get_space())))
        rel = mine.reverse().apply_range(isl.UnionMap.from_map(acc.relation))
        maps: list[isl.Map] = []
        rel.foreach_map(maps.append)
        if not maps:
            continue
        n_pre = maps[0].dim(isl.dim_type.in_) - mapped
        involves.append({j for j in range(mapped)
                         if any(acc.relation.involves_dims(isl.dim_type.in_, it, 1)
                                for it in _iterators(points, j, d.stmt))})
        uses = rel if uses is None else uses.union(rel)
    if uses is None or n_pre is None:
        return StagingVerdict(None, "")
    pairs = uses.apply_range(uses.reverse())
    pmaps: list[isl.Map] = []
    pairs.foreach_map(pmaps.append)
    cross = None
    for pm in pmaps:
        for k in range(n_pre):                # one sub-tile
            pm = pm.equate(isl.dim_type.in_, k, isl.dim_type.out, k)
        same = pm
        for j in range(mapped):
            same = same.equate(isl.dim_type.in_, n_pre + j, isl.dim_type.out, n_pre + j)
        other = pm.subtract(same).intersect_params(scop.context)
        cross = other if cross is None else cross.union(other)
    if cross is None or cross.is_empty():
        return StagingVerdict("R1", "each element is used by one thread of the block, "
                              "whose own reuse registers or the L1 cache serve")
    x = mapped - 1
    if all(x in inv for inv in involves):
        deltas = cross.deltas()
        rows = deltas
        for j in range(mapped - 1):
            rows = rows.intersect(_zero_at(deltas.get_space(), n_pre + j))
        if deltas.is_subset(rows):
            return StagingVerdict("R3", "threads share elements only with their neighbours "
                                  "along x, whose coalesced loads overlap in the same "
                                  "sectors")
    return StagingVerdict(None, "")


def no_reuse(scop: Scop, part: Partition, prefix: isl.UnionMap) -> StagingVerdict:
    """Rule R0 on a partition at any level (``prefix``: the kernel's instances to the
    block's or sub-tile's prefix schedule): no element used by two statement
    instances of one block or sub-tile.  The references are taken pair by pair, the
    first pair of instances found ending the search (a stencil's neighbours share
    elements: the union of every pair at once cost heat-3d a twentieth of a tile
    change, issue 22)."""
    maps = []
    for d in part.spaces:
        stmt = scop.statement(d.stmt)
        dom = prefix.domain().extract_set(stmt.domain.get_space())
        maps.append(stmt.accesses[d.ref].relation.intersect_domain(dom))
    uses = [isl.UnionMap.from_map(m) for m in distinct_relations(maps)[0]]
    if not uses:
        return StagingVerdict(None, "")
    same_block = prefix.apply_range(prefix.reverse())
    itself = prefix.domain().identity()
    for i, a in enumerate(uses):
        for b in uses[i:]:      # (b, a)'s pairs are (a, b)'s reversed
            pairs = a.apply_range(b.reverse()).intersect(same_block)
            if not pairs.subtract(itself).intersect_params(scop.context).is_empty():
                return StagingVerdict(None, "")
    return StagingVerdict("R0", "each element is used by one statement instance: "
                          "loaded and stored once with or without a copy")


def _iterators(mupa: isl.MultiUnionPwAff, member: int, stmt: str) -> set[int]:
    """The positions of the statement iterators that ``member`` involves for
    statement ``stmt`` (the subscripts that follow the member's threads)."""
    out: set[int] = set()

    def piece(_s: isl.Set, aff: isl.Aff) -> None:
        out.update(i for i in range(aff.dim(isl.dim_type.in_))
                   if aff.get_coefficient_val(isl.dim_type.in_, i).to_python() != 0)

    def each(pa: isl.PwAff) -> None:
        if pa.get_domain_space().get_tuple_name(isl.dim_type.set) == stmt:
            pa.foreach_piece(piece)
    mupa.get_at(member).foreach_pw_aff(each)
    return out


def _zero_at(space: isl.Space, pos: int) -> isl.Set:
    """``{ [d] : d_pos = 0 }`` in ``space``."""
    c = isl.Constraint.equality_alloc(isl.LocalSpace.from_space(space))
    c = c.set_coefficient_val(isl.dim_type.set, pos, isl.Val.one(space.get_ctx()))
    return isl.Set.universe(space).add_constraint(c)
