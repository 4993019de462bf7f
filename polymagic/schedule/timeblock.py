"""A time loop inside one thread block (for seed 001's localisation along ``t``).

The baseline mapping launches one kernel per iteration of a sequential loop that
encloses parallel work (a time loop), so nothing survives from one step to the
next.  With ``--localise t`` naming such a host loop, the whole loop nest becomes
one kernel of **one block**: ``t`` runs sequentially in every thread, each parallel
band below it is distributed cyclically over the block's threads (``i ≡ tx (mod
B)``, seed 004 Fig. 9), a band without parallelism runs in thread 0, and a barrier
follows each of them (the kernel boundary of the host mapping, seed 004 §4.3).
Seed 001 §5 runs its parallel 1d-SOR the same way ("our experiments use only one
multiprocessor at a time").  Localisation along ``t`` then keeps the cached set
``C(t)`` of the whole block in shared memory (:func:`..memory.localcode.graft_shared`).

Limits: one block, so only problems whose cached set fits one block's shared
memory; the buffer extents are evaluated at the ``--size`` values and the kernel
is specialised to them (its domain is fixed to those sizes).
"""
from __future__ import annotations

import islpy as isl

from ..isl_util import OperationBudget, has_parallelism, leading_coincident
from ..thread_space import bounds_set, cyclic_filter, thread_id_on, thread_zero
from .isl_config import MAX_OPERATIONS, configure


def thread_map(node: isl.ScheduleNode, threads: int, sync, bounds: isl.Set
               ) -> isl.ScheduleNode:
    """Distribute the parallel bands below ``node`` over ``threads`` threads of one
    block (x axis) and put a barrier after each; returns the node at ``node``'s place.
    ``sync(node)`` grafts a barrier after ``node`` and returns it."""
    depth = node.get_tree_depth()
    t = node.get_type()
    if t == isl.schedule_node_type.band and leading_coincident(node) > 0:
        dom = node.get_domain()
        upa = node.band_get_partial_schedule().get_at(0)
        filt = cyclic_filter(upa, thread_id_on(dom, "x"), threads).intersect(dom)
        node = node.insert_filter(filt.intersect_params(bounds))
        node = sync(node)
    elif t == isl.schedule_node_type.leaf or (
            t == isl.schedule_node_type.band and not has_parallelism(node)):
        dom = node.get_domain()
        first = bounds_set([thread_zero("x")])
        node = node.insert_filter(dom.intersect_params(first.align_params(
            dom.get_space().params())).intersect_params(bounds))
        node = sync(node)
    else:
        for i in range(node.n_children()):
            node = thread_map(node.child(i), threads, sync, bounds)
            node = node.ancestor(node.get_tree_depth() - depth)
    return node.ancestor(node.get_tree_depth() - depth)


def _lex_negative(n: int) -> tuple[list[str], str]:
    """Names ``d0 .. d<n-1>`` and the isl condition "the vector is lexicographically
    negative" over them (a dependence distance going backwards)."""
    ds = [f"d{k}" for k in range(n)]
    back = " or ".join(
        "(" + " and ".join([f"d{j} = 0" for j in range(k)] + [f"d{k} < 0"]) + ")"
        for k in range(n))
    return ds, back


def time_tiling_band(scop, deps) -> tuple[isl.MultiUnionPwAff | None, str]:
    """The skewed, fully permutable outer band a time-tiled mapping would tile (issue 5),
    or ``None`` and why not.

    isl's scheduler is asked with outer coincidence off and whole components (the
    Pluto-style objective, seed 004 §4.1's outermost permutable band): for jacobi-1d
    it finds ``(t, 2t + i)`` / ``(t, 1 + 2t + i)``, for seidel-2d ``(t, t + i, 2t + i + j)``.
    Rectangular tiles of such a band are legal (every dependence distance is
    non-negative in every member), and a wavefront over the tile band gives parallel
    tiles (:func:`time_tiled_schedule`, ``--time-tiling``).
    """
    ctx = scop.context.get_ctx()
    configure(ctx)
    outer, whole = ctx.get_schedule_outer_coincidence(), ctx.get_schedule_whole_component()
    ctx.set_schedule_outer_coincidence(0)
    ctx.set_schedule_whole_component(1)
    try:
        sc = isl.ScheduleConstraints.on_domain(scop.domain.intersect_params(scop.context))
        sc = sc.set_context(scop.context).set_validity(deps.validity)
        sc = sc.set_proximity(deps.validity)
        with OperationBudget(ctx, MAX_OPERATIONS):      # never a hang
            node = sc.compute_schedule().get_root().child(0)
    except isl.Error as e:
        return None, f"isl's scheduler found no schedule ({str(e).split(' in isl_')[0]})"
    finally:
        ctx.set_schedule_outer_coincidence(outer)
        ctx.set_schedule_whole_component(whole)
    if node.get_type() != isl.schedule_node_type.band:
        return None, "the outer schedule node is not a band (statements in sequence)"
    if node.band_n_member() < 2 or not node.band_get_permutable():
        return None, "no permutable band of two or more loops holds the time loop"
    return node.band_get_partial_schedule(), "permutable"


def band_legal_for_tiling(band: isl.MultiUnionPwAff, validity: isl.UnionMap) -> bool:
    """Every dependence's distance is >= 0 in every member of ``band`` (the condition
    for rectangular tiling of a permutable band), checked with isl."""
    for k in range(band.dim(isl.dim_type.out)):
        f = isl.UnionMap.from_union_pw_aff(band.get_at(k))
        # pairs (source value, sink value) of member k over the dependences
        pairs = f.reverse().apply_range(validity).apply_range(f)
        delta = pairs.deltas()
        if not delta.is_empty():
            neg = delta.intersect(isl.UnionSet(
                isl.Set("{ [d] : d < 0 }").align_params(delta.get_space())))
            if not neg.is_empty():
                return False
    return True


def wavefront_tile_map(band: isl.MultiUnionPwAff, tiles: tuple[int, ...],
                       order: list[str] | None = None,
                       domain: isl.UnionSet | None = None) -> isl.UnionMap:
    """The schedule of a time-tiled, wavefront-launched mapping of ``band`` (issue 5):
    ``S[x] -> [w, c_1, ..., c_{m-1}, b_0, ..., b_{m-1}]`` with tile coordinates
    ``c_k = floor(b_k / T_k)``, the wavefront ``w = c_0 + ... + c_{m-1}`` (a host loop of
    launches), ``c_1..c_{m-1}`` over blocks, then the points (``b_0`` = the skewed time
    loop, sequential inside a block), then the position of the statement in ``order``
    (source order: instances the band does not separate, e.g. jacobi-1d's S0(t, i) and
    S1(t, i - 1), run in that order); restricted to ``domain`` when given."""
    m = band.dim(isl.dim_type.out)
    if len(tiles) != m or any(t < 1 for t in tiles):
        raise ValueError(f"need {m} positive tile sizes, got {tiles}")
    bs = [f"b{k}" for k in range(m)]
    cs = [f"floor(b{k}/{tiles[k]})" for k in range(m)]
    out = [" + ".join(cs)] + cs[1:] + bs
    tmap = isl.Map(f"{{ [{', '.join(bs)}] -> [{', '.join(out)}] }}")
    sched = isl.UnionMap.from_multi_union_pw_aff(band)
    if domain is not None:
        sched = sched.intersect_domain(domain)
    sched = sched.apply_range(isl.UnionMap(tmap.align_params(sched.get_space())))
    dom = band.domain()
    pos = isl.UnionMap.empty(sched.get_space())
    sets: list[isl.Set] = []
    dom.foreach_set(sets.append)
    names = order or sorted((s.get_tuple_name() for s in sets),
                            key=lambda x: (len(x), x))      # S2 before S10
    for s in sets:
        k = names.index(s.get_tuple_name())
        one = isl.Map.from_domain_and_range(
            s, isl.Set(f"{{ [{k}] }}").align_params(s.get_space()))
        pos = pos.union(isl.UnionMap(one))
    return _flat(sched, pos)


def _flat(a: isl.UnionMap, b: isl.UnionMap) -> isl.UnionMap:
    """``S[x] -> [a(x), b(x)]`` from ``S[x] -> [a(x)]`` and ``S[x] -> [b(x)]``."""
    return a.flat_range_product(b)


def wavefront_legal(sched: isl.UnionMap, validity: isl.UnionMap, m: int) -> tuple[bool, bool]:
    """(legal, tiles_parallel) of :func:`wavefront_tile_map`'s schedule, with isl: every
    dependence goes lexicographically forward, and two dependent instances in the
    same wavefront ``w`` lie in the same tile (the tiles of one launch are parallel)."""
    pairs = sched.reverse().apply_range(validity).apply_range(sched)
    delta = pairs.deltas()
    n = 2 * m + 1
    ds, back = _lex_negative(n)
    zero = " and ".join(f"d{k} = 0" for k in range(n))
    bad = isl.Set(f"{{ [{', '.join(ds)}] : {back} or ({zero}) }}")
    legal = delta.intersect(isl.UnionSet(bad.align_params(delta.get_space()))).is_empty()
    cross = " or ".join(f"d{k} != 0" for k in range(1, m)) or "false"
    same_w = isl.Set(f"{{ [{', '.join(ds)}] : d0 = 0 and ({cross}) }}")
    parallel = delta.intersect(isl.UnionSet(same_w.align_params(delta.get_space()))).is_empty()
    return legal, parallel


#: Tile size of the members ``--time-tiling`` leaves out.
DEFAULT_TIME_TILE = 32


def time_tiles(sizes: tuple[int, ...], m: int) -> tuple[int, ...]:
    """The tile sizes of an ``m``-member time band from ``--time-tiling``'s values
    (the first is the time loop's; missing ones :data:`DEFAULT_TIME_TILE`)."""
    return (tuple(sizes) + (DEFAULT_TIME_TILE,) * m)[:m]


#: The mark above the tile band of a time-tiled schedule whose tiles run on the
#: threads of a block (the mapper makes it one kernel, :meth:`.mapping.time_kernels.TimeKernels.time_tile_kernel`).
TIME_TILES_MARK = "pm_time_tiles"


def _reorder(full: isl.UnionMap, m: int, outs: list[str]) -> isl.UnionMap:
    """``full`` (``[w, c_1.., b_0.., pos]``, :func:`wavefront_tile_map`) with its range
    rewritten to ``[w, c_1.., outs...]`` (affine in ``b0..``, ``pos``)."""
    ins = ["w"] + [f"c{k}" for k in range(1, m)] + [f"b{k}" for k in range(m)] + ["pos"]
    head = ins[:m]
    pm = isl.Map(f"{{ [{', '.join(ins)}] -> [{', '.join(head + outs)}] }}")
    return full.apply_range(isl.UnionMap(pm.align_params(full.get_space())))


def _dependence_deltas(sched: isl.UnionMap, validity: isl.UnionMap) -> isl.UnionSet:
    """Schedule distances of the dependences under ``sched`` (with isl)."""
    return sched.reverse().apply_range(validity).apply_range(sched).deltas()


def _lex_forward_and_parallel(sched: isl.UnionMap, validity: isl.UnionMap, n: int,
                              nfix: int) -> bool:
    """Every dependence goes lexicographically forward in the ``n``-dimensional
    ``sched`` and none joins two instances equal in the first ``nfix`` dimensions:
    the dimensions after them are parallel (may run on different threads) once the
    first ``nfix`` are fixed, a barrier after each such point ordering the rest."""
    delta = _dependence_deltas(sched, validity)
    if delta.is_empty():
        return True
    ds, back = _lex_negative(n)
    same = " and ".join(f"d{k} = 0" for k in range(nfix))
    bad = isl.Set(f"{{ [{', '.join(ds)}] : {back} or ({same}) }}")
    return delta.intersect(isl.UnionSet(bad.align_params(delta.get_space()))).is_empty()


def intra_tile_order(full: isl.UnionMap, validity: isl.UnionMap, m: int
                     ) -> tuple[isl.UnionMap, int, str] | None:
    """How the points of one time tile run on the threads of its block (issue 5), or
    ``None`` when no order tried leaves a parallel level: returns the reordered
    schedule ``[w, c_1.., seq..., par...]``, the number of sequential point
    dimensions (each followed by a barrier) and a description.

    Tried in turn, each checked with isl (:func:`_lex_forward_and_parallel`: no
    dependence between two instances of one tile with the same sequential values):

    * ``statements``: ``[b0, pos | b1..]``, the skewed time loop, then the statements
      in order, the spatial members parallel (Jacobi-like stencils: within a time
      step only one statement's results feed the next);
    * ``wavefront``: ``[b0, b1 + .. + b_{m-1}, pos | b1..]``, a wavefront of the
      spatial members inside the time step (Gauss-Seidel-like in-place stencils:
      every member's distance is >= 0 in the permutable band, so their sum is > 0
      for every dependence that is not between equal points).
    """
    bs = [f"b{k}" for k in range(m)]
    par = bs[1:]
    tries = [("statements", [bs[0], "pos"] + par,
              "the skewed time loop and the statements in sequence, the spatial points "
              "of each step over the block's threads")]
    if m >= 3:
        tries.append(("wavefront", [bs[0], " + ".join(par), "pos"] + par,
                      "the skewed time loop and a wavefront of the spatial points in "
                      "sequence, the points of each wavefront over the block's threads"))
    for _name, outs, text in tries:
        nseq = len(outs) - len(par)
        sched = _reorder(full, m, outs)
        if _lex_forward_and_parallel(sched, validity, m + len(outs), m + nseq):
            return sched, nseq, text
    return None


def time_tiled_schedule(scop, deps, sizes: tuple[int, ...]
                        ) -> tuple[isl.Schedule | None, str]:
    """The schedule tree of a time-tiled mapping (``--time-tiling T[,S1,...]``, issue 5),
    or ``None`` and why not: a band ``[w]`` (the wavefront, not coincident: a host loop
    of launches), a band of the other tile coordinates (coincident: one block per
    tile), marked :data:`TIME_TILES_MARK`, then the points of the tile in the order
    :func:`intra_tile_order` found (sequential members, each point followed by a
    barrier, then coincident members distributed over the block's threads).  When no
    order leaves parallel points, the old mapping: each thread runs a whole tile, the
    tile band coincident (blocks and threads) and the points sequential inside the
    thread.  Legality and the independence of one wavefront's tiles are checked with
    isl (:func:`wavefront_legal`) before the tree is returned."""
    band, why = time_tiling_band(scop, deps)
    if band is None:
        return None, why
    m = band.dim(isl.dim_type.out)
    tiles = time_tiles(sizes, m)
    if len(sizes) > m:
        return None, f"{len(sizes)} tile sizes for a {m}-loop time band"
    full = wavefront_tile_map(band, tiles, domain=scop.domain)
    legal, parallel = wavefront_legal(full, deps.validity, m)
    if not (legal and parallel):
        return None, "the wavefront of time tiles would break a dependence"
    inside = intra_tile_order(full, deps.validity, m) if m <= 4 else None
    n = 2 * m + 1

    def part(sched: isl.UnionMap, lo: int, hi: int) -> isl.MultiUnionPwAff:
        width = _out_dims(sched)
        pm = isl.Map("{ [%s] -> [%s] }" % (", ".join(f"d{k}" for k in range(width)),
                                            ", ".join(f"d{k}" for k in range(lo, hi))))
        return isl.MultiUnionPwAff.from_union_map(
            sched.apply_range(isl.UnionMap(pm.align_params(sched.get_space()))))
    configure(scop.context.get_ctx())
    node = isl.Schedule.from_domain(scop.domain.intersect_params(scop.context)).get_root()
    text = ", ".join(str(t) for t in tiles)
    if inside is not None:
        sched, nseq, how = inside
        width = _out_dims(sched)
        node = node.child(0).insert_partial_schedule(part(sched, m + nseq, width))
        for k in range(width - m - nseq):
            node = node.band_member_set_coincident(k, True)
        node = node.insert_partial_schedule(part(sched, m, m + nseq))
        if m > 1:
            node = node.insert_partial_schedule(part(sched, 1, m))
            for k in range(m - 1):
                node = node.band_member_set_coincident(k, True)
        node = node.insert_mark(isl.Id(TIME_TILES_MARK))
        node = node.insert_partial_schedule(part(sched, 0, 1))
        return node.get_schedule(), (
            f"time tiling: tiles {text} of isl's skewed band, one launch per wavefront, "
            f"one block per tile: {how} (checked legal and parallel with isl)")
    node = node.child(0).insert_partial_schedule(part(full, m, n))
    if m > 1:
        node = node.insert_partial_schedule(part(full, 1, m))
        for k in range(m - 1):
            node = node.band_member_set_coincident(k, True)
    node = node.insert_partial_schedule(part(full, 0, 1))
    return node.get_schedule(), (f"time tiling: tiles {text} of isl's skewed band, one "
                                 "launch per wavefront, each thread runs one tile with "
                                 "the time loop sequential (checked legal with isl); "
                                 "no parallel level inside a tile at fixed t (isl), so "
                                 "not one block per tile")


def _out_dims(umap: isl.UnionMap) -> int:
    """Number of output dimensions of a union map whose ranges share one space."""
    maps: list[isl.Map] = []
    umap.foreach_map(maps.append)
    return maps[0].dim(isl.dim_type.out) if maps else 0
