"""Register tiles by default where a kernel is compute bound (issue 16, item 2).

A thread that owns a ``p x q`` tile of points and steps through a reduction loop
``k`` loads, per ``k`` step, ``p`` values of one operand and ``q`` of the other and
does ``p q`` multiply-adds (the outer product of Volkov & Demmel, SC 2008, §4, and of
every fast GEMM since); with one point per thread it does one FMA per two loads.
Seed 000 §4.1's third tiling level (points per thread, ``--tile T:t``) gives that
structure; this module decides it *by default* for the bands where it pays.

The criterion (:func:`compute_bound`), on the band before tiling:

* exactly two leading coincident members (the mapped loops, ``i`` and ``j``) and at
  least one further permutable member (the reduction ``k``, sub-tiled inside the
  block), the band rectangular (each member one source iterator);
* neither mapped member's extent is a constant below its block tile (n-body's
  ``d < 3`` beside ``i``: a 128-wide tile of 3 points wastes 125 of every 128
  threads' registers);
* for each of the two mapped members, some statement of the band reads a value whose
  subscripts do not involve that member's iterator but do involve a reduction
  member's: the value is reused across the other parallel loop at every ``k`` step
  (gemm's ``A[i][k]`` across ``j``, ``B[k][j]`` across ``i``; syrk's ``A[i][k]``,
  ``A[j][k]``).  Without such reads there is nothing to reuse and a bigger tile per
  thread only costs registers.

Statements of the band fixed along the reduction (an initialisation ``C *= beta``
before gemm's ``k`` loop, a final update after it) are split off the jammed ``k``
steps (:func:`split_fixed_statements`) so that they do not sit under a ``k == 0``
guard inside every step of the register tile.

The chosen tile: :data:`BLOCK_TILE` points per block, :data:`POINTS` per thread
(16 x 16 threads), the reduction sub-tiled by ``DEFAULT_SUB_TILE`` (16): 64
accumulators per thread, 8 + 8 fragment values per ``k`` step, 4 FMAs per shared
load; in double precision 128 + 32 registers, still under 255.
"""
from __future__ import annotations

import islpy as isl

from ..scop import Scop

#: points per block along the two mapped members (outermost first)
BLOCK_TILE = (128, 128)
#: points per thread along them: 8 x 8 accumulators per thread
POINTS = (8, 8)


def _iterator_of(mupa: isl.MultiUnionPwAff, member: int, stmt: str) -> int | None:
    """The position of the statement iterator that ``member`` of a rectangular band
    follows in statement ``stmt`` (None when the member is constant for it)."""
    out: list[int] = []

    def piece(_s: isl.Set, aff: isl.Aff) -> None:
        for i in range(aff.dim(isl.dim_type.in_)):
            if aff.get_coefficient_val(isl.dim_type.in_, i).to_python() != 0:
                out.append(i)

    def each(pa: isl.PwAff) -> None:
        if pa.get_domain_space().get_tuple_name(isl.dim_type.set) == stmt:
            pa.foreach_piece(piece)
    mupa.get_at(member).foreach_pw_aff(each)
    return out[0] if len(set(out)) == 1 else None


def _small_extent(band: isl.MultiUnionPwAff, member: int, domain: isl.UnionSet,
                  tile: int) -> bool:
    """Whether ``member`` takes fewer than ``tile`` values for every size (its range
    over ``domain`` has a constant width below ``tile``)."""
    values = isl.UnionMap.from_union_pw_aff(band.get_at(member).intersect_domain(domain))
    sets: list[isl.Set] = []
    values.range().foreach_set(sets.append)
    if len(sets) != 1:
        return False
    width = sets[0].dim_max(0).sub(sets[0].dim_min(0))
    if not width.is_cst():
        return False
    small = [True]

    def piece(_s: isl.Set, aff: isl.Aff) -> None:
        small[0] = small[0] and aff.get_constant_val().to_python() < tile - 1
    width.foreach_piece(piece)
    return small[0]


def compute_bound(scop: Scop, band: isl.MultiUnionPwAff, domain: isl.UnionSet,
                  n_coincident: int, n_members: int, permutable: bool) -> bool:
    """Whether the band is compute bound by the criterion of the module docstring."""
    if n_coincident != 2 or n_members <= 2 or not permutable:
        return False
    if any(_small_extent(band, d, domain, BLOCK_TILE[d]) for d in range(2)):
        return False
    reused = [False, False]
    sets: list[isl.Set] = []
    domain.foreach_set(sets.append)
    for dset in sets:
        stmt = scop.statement(dset.get_tuple_name())
        its = [_iterator_of(band, d, stmt.name) for d in range(n_members)]
        red = {it for it in its[2:] if it is not None}
        if not red:
            continue
        for a in stmt.reads:
            rel = a.relation
            varies = lambda it: rel.involves_dims(isl.dim_type.in_, it, 1)  # noqa: E731
            if not any(varies(it) for it in red):
                continue
            for d in range(2):
                if its[d] is not None and not varies(its[d]):
                    reused[d] = True
    return all(reused)


def split_fixed_statements(band: isl.ScheduleNode, m: int) -> isl.ScheduleNode:
    """The jammed point band ``[q_1..q_s, p_1..p_m]`` with the statements that do not
    vary along the sequential members ``q`` (an initialisation ``C *= beta`` before
    gemm's ``k`` loop, a final update after it) split off: a sequence of the band over
    those before the reduction, over the reduction statements, over those after it.
    isl then generates them in point loops of their own, outside the ``k`` steps,
    instead of under a ``k == 0`` guard inside every step of the register tile.

    Legal because the band's ``m`` mapped members are coincident (dependences link
    only instances at one point ``p``) and, at one point, the statements ran in
    source order: a fixed statement written before every reduction statement goes
    before them, one written after every one of them after.  Any other band (none
    fixed, or a fixed statement between reduction statements) is returned as is.
    Returns the node at the band's place (the sequence, or the band)."""
    n = band.band_n_member()
    s = n - m
    if s <= 0:
        return band
    mupa = band.band_get_partial_schedule()
    sets: list[isl.Set] = []
    band.get_domain().foreach_set(sets.append)
    order = lambda name: int(name[1:]) if name[1:].isdigit() else -1  # noqa: E731
    fixed, varying = [], []
    for dset in sets:
        name = dset.get_tuple_name()
        its = [_iterator_of(mupa, d, name) for d in range(s)]
        (varying if any(it is not None for it in its) else fixed).append(dset)
    if not fixed or not varying or any(order(d.get_tuple_name()) < 0 for d in sets):
        return band
    first = min(order(d.get_tuple_name()) for d in varying)
    last = max(order(d.get_tuple_name()) for d in varying)
    before = [d for d in fixed if order(d.get_tuple_name()) < first]
    after = [d for d in fixed if order(d.get_tuple_name()) > last]
    if len(before) + len(after) != len(fixed):
        return band
    ctx = band.get_ctx()
    filters = isl.UnionSetList.alloc(ctx, 3)
    for group in (before, varying, after):
        if group:
            u = isl.UnionSet.from_set(group[0])
            for d in group[1:]:
                u = u.union(isl.UnionSet.from_set(d))
            filters = filters.add(u)
    return band.insert_sequence(filters)
