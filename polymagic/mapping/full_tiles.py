"""Full tiles apart from partial ones (issue 16, item 1): isl's ``isolate`` option.

A thread's register tile runs guard-free, with constant trip counts, only where its
block tile and its current k sub-tile lie wholly inside the iteration domain.  As in
PPCG (Verdoolaege et al., TACO 2013, §4.6 "full/partial tile separation") and Polly,
the set of *full* tiles is computed with isl, and the kernel's instances in them
(:func:`full_tile_instances`) are generated apart: the lowering asks isl's AST
generator for their code on its own (:mod:`polymagic.lower.full_tile_pieces`), where
isl, knowing that every tile coordinate is full, simplifies the point loops' bounds
to constants and drops their guards, and runs it when the block's tile is full, the
kernel's code for every tile otherwise.  Nothing here reasons about guards by hand:
the set only says *where* to split; the full-tile one makes the split pay.

(isl's own ``isolate`` AST option gives the same code, but generates the rest, the
partial tiles, over the complement of the full ones, a union isl's AST generator
takes 3-4 times longer on than on all tiles: 0.50 against 0.14 s for gemm, issue 22.)

Full tiles, per statement ``s`` of the band: with ``F_s`` the band's (untiled)
schedule prefixed by the host loops and ``U_s = F_s(dom s)``, a tile ``T`` is full
for ``s`` when its box ``{x : size_d T_d <= x_d < size_d (T_d + 1)}`` (over the tiled
members along which ``s`` varies: a member constant for ``s``, the ``k`` of ``C =
0`` before a ``k`` loop, has no box) holds no point outside ``U_s``; full tiles are
those full for every statement.
"""
from __future__ import annotations

import islpy as isl

from ..isl_util import OperationBudget

#: isl operations the full-tile set of one band may take (then: no isolation)
FULL_TILE_OPERATIONS = 2_000_000


def _statement_full(sched: isl.Map, dom: isl.Set, n_host: int, sizes: tuple[int, ...]
                    ) -> isl.Set:
    """The full tiles of one statement (see the module docstring), a set over the
    host dims and the tile coordinates of the tiled members."""
    n_tiled = len(sizes)
    image = sched.intersect_domain(dom).range()            # [h, x_0 .. x_{n-1}]
    n_all = image.dim(isl.dim_type.set)
    image = image.project_out(isl.dim_type.set, n_host + n_tiled, n_all - n_host - n_tiled)
    varying = [not _constant(sched, dom, n_host + d) for d in range(n_tiled)]
    space = image.get_space()
    ctx = space.get_ctx()
    # the box relation { [h, T] -> [h, x] : size T <= x < size (T + 1) } (varying dims)
    box = isl.BasicMap.universe(isl.Space.map_from_set(space))
    for d in range(n_host):
        box = box.add_constraint(isl.Constraint.equality_alloc(box.get_local_space())
                                 .set_coefficient_val(isl.dim_type.in_, d, isl.Val(1, ctx))
                                 .set_coefficient_val(isl.dim_type.out, d, isl.Val(-1, ctx)))
    for d, size in enumerate(sizes):
        if not varying[d]:
            continue
        i = n_host + d
        ls = box.get_local_space()
        lo = (isl.Constraint.inequality_alloc(ls)          # x - size T >= 0
              .set_coefficient_val(isl.dim_type.out, i, isl.Val(1, ctx))
              .set_coefficient_val(isl.dim_type.in_, i, isl.Val(-size, ctx)))
        hi = (isl.Constraint.inequality_alloc(ls)          # size T + size - 1 - x >= 0
              .set_coefficient_val(isl.dim_type.out, i, isl.Val(-1, ctx))
              .set_coefficient_val(isl.dim_type.in_, i, isl.Val(size, ctx))
              .set_constant_val(isl.Val(size - 1, ctx)))
        box = box.add_constraint(lo).add_constraint(hi)
    box = isl.Map.from_basic_map(box)
    # a member constant for s: project it out of the image, leave the tile free
    for d in reversed(range(n_tiled)):
        if not varying[d]:
            box = box.project_out(isl.dim_type.out, n_host + d, 1)
            image = image.project_out(isl.dim_type.set, n_host + d, 1)
    outside = image.complement()
    bad = box.intersect_range(outside).domain()
    return isl.Set.universe(bad.get_space()).subtract(bad)


def _constant(sched: isl.Map, dom: isl.Set, dim: int) -> bool:
    """Whether output ``dim`` of ``sched`` takes one value on ``dom`` (parameters
    aside): it does not vary with the statement's iterators."""
    pma = isl.PwMultiAff.from_map(sched.intersect_domain(dom))
    pa = pma.get_pw_aff(dim)
    return not pa.involves_dims(isl.dim_type.in_, 0, pa.dim(isl.dim_type.in_))


def full_tiles(band: isl.MultiUnionPwAff, host_prefix: isl.UnionMap, domain: isl.UnionSet,
               sizes: tuple[int, ...]) -> isl.Set | None:
    """The full tiles of ``band`` (the untiled band; its first ``len(sizes)`` members
    tiled by ``sizes``) over ``domain``: a set over the host loops and the tile
    coordinates, or None when isl's budget runs out or a statement's schedule is not
    a function."""
    ctx = domain.get_ctx()
    n_host = None
    result: isl.Set | None = None
    try:
        with OperationBudget(ctx, FULL_TILE_OPERATIONS):
            umap = host_prefix.flat_range_product(isl.UnionMap.from_multi_union_pw_aff(band))
            umap = umap.intersect_domain(domain)
            maps: list[isl.Map] = []
            umap.foreach_map(maps.append)
            for m in maps:
                dom = domain.extract_set(m.get_space().domain())
                if n_host is None:
                    n_host = m.dim(isl.dim_type.out) - band.dim(isl.dim_type.set)
                full = _statement_full(m, dom, n_host, sizes)
                result = full if result is None else result.intersect(full)
            return result.coalesce() if result is not None else None
    except isl.Error:
        return None


def full_tile_instances(tile_band: isl.MultiUnionPwAff, host_prefix: isl.UnionMap,
                        domain: isl.UnionSet, full: isl.Set) -> isl.UnionSet:
    """The statement instances of ``domain`` whose block tile is full: those whose host
    prefix and tile coordinates (``tile_band``, the block-tile members ``floor(x /
    size)``) lie in ``full`` (:func:`full_tiles`)."""
    coords = host_prefix.flat_range_product(isl.UnionMap.from_multi_union_pw_aff(tile_band))
    coords = coords.intersect_domain(domain)
    full = full.align_params(coords.get_space())
    return coords.intersect_range(isl.UnionSet.from_set(full)).domain().coalesce()
