"""Tiling the Schedule stage's isl schedule tree for the cores (issue 21).

The CPU target starts from the same schedule tree as the GPU mapping (the schedule
stage's :class:`~polymagic.schedule.ScheduleResult`, before any GPU mapping) and
transforms it the way Pluto does for multicore CPUs (Bondhugula et al., PLDI 2008,
§5: tile the permutable bands, run the outermost parallel tile loop on the cores,
keep the innermost point loop unit-stride and vectorisable):

* **Loop order.**  In a permutable band every order of its members is legal.  The
  point loops are reordered so that the innermost one is the member along which
  most accesses are unit-stride (their last subscript moves by ±1, no other one
  moves): gemm's ``i, j, k`` becomes ``i, k, j`` (``C[i][j]`` and ``B[k][j]``
  unit-stride, ``A[i][k]`` invariant).  The tile loops keep the band's order,
  parallel (coincident) members first.
* **Tiles.**  Rectangular tiles on permutable bands of at least two members, sized
  by a cache *model* (:func:`tile_sizes`), not by measurement.
* **Parallel and vector loops.**  The outermost tile loop that carries no
  dependence gets ``#pragma omp parallel for``; the innermost point loop gets
  ``#pragma omp simd`` when it carries none either.  Both are checked on the
  transformed tree against the dependences themselves (:func:`carries_nothing`),
  not read off isl's coincidence flags, so a reordering can never make a pragma
  wrong.  Marks (``pm_omp_parallel``, ``pm_omp_simd``) carry the decision to the
  printer (:mod:`.cpu_c`), with the depth of the marked loop.

Bands that are neither permutable with two members nor parallel (a time loop, a
wavefront) stay as they are and the bands below them are treated the same way:
jacobi-2d keeps its sequential ``t`` loop with tiled, parallel ``i, j`` bands below.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import islpy as isl

from ..scop import Scop

PARALLEL_MARK = "pm_omp_parallel"
SIMD_MARK = "pm_omp_simd"

#: tile sizes the model tries for the innermost (unit-stride) point member and for
#: the others; powers of two, as Pluto's defaults
INNER_SIZES = (64, 128, 256, 512)
OUTER_SIZES = (8, 16, 32, 64, 128)
#: the parallel tile loop's tile is at most this many iterations wide, so that a
#: few hundred iterations still make several tiles per core
PARALLEL_MAX = 64


@dataclass(frozen=True)
class CacheModel:
    """Cache sizes the tile model fits the tiles' working sets into (bytes)."""
    l1: int = 32 * 1024
    l2: int = 512 * 1024


@dataclass(frozen=True)
class BandPlan:
    """What was done to one band, for the report (``loops`` in the band's order)."""
    loops: tuple[str, ...]            # one name per member: the main source iterator
    point_order: tuple[str, ...]      # the point loops, outermost first
    tiles: tuple[int, ...]            # tile size per member (band order); () untiled
    parallel: str | None              # the loop under ``omp parallel for``, if any
    simd: str | None                  # the loop under ``omp simd``, if any
    working_set: int = 0              # model bytes of one tile's data
    statements: tuple[str, ...] = ()  # the statements under the band

    def describe(self) -> str:
        tiles = (" x ".join(f"{n} {t}" for n, t in zip(self.loops, self.tiles))
                 if self.tiles else "untiled")
        par = f"parallel {self.parallel}" if self.parallel else "no parallel loop"
        simd = f", simd {self.simd}" if self.simd else ""
        ws = (f" (model working set {self.working_set // 1024} KiB per tile)"
              if self.working_set else "")
        return (f"band ({', '.join(self.loops)}): tiles {tiles}{ws}; point order "
                f"{', '.join(self.point_order)}; {par}{simd}")


# ---- reading affine coefficients --------------------------------------------------

def _aff_coefficients(pa: isl.PwAff) -> dict[int, int]:
    """Input-dimension coefficients of the first piece of ``pa`` (nonzero ones)."""
    out: dict[int, int] = {}

    def piece(_set, aff):
        if out:
            return
        for k in range(aff.dim(isl.dim_type.in_)):
            v = aff.get_coefficient_val(isl.dim_type.in_, k).to_python()
            if v:
                out[k] = int(v)
    pa.foreach_piece(piece)
    return out


@dataclass(frozen=True)
class _Access:
    """One access of one statement: per subscript, the iterator coefficients."""
    array: str
    subscripts: tuple[dict[int, int], ...]
    is_write: bool
    itemsize: int


def _statement_accesses(scop: Scop) -> dict[str, list[_Access]]:
    import numpy as np
    out: dict[str, list[_Access]] = {}
    for s in scop.statements:
        accs = []
        for a in s.accesses:
            try:
                pma = isl.PwMultiAff.from_map(a.relation)
            except isl.Error:
                continue
            subs = tuple(_aff_coefficients(pma.get_pw_aff(k))
                         for k in range(pma.dim(isl.dim_type.out)))
            size = np.dtype(scop.arrays[a.array].dtype).itemsize
            accs.append(_Access(a.array, subs, a.is_write, size))
        out[s.name] = accs
    return out


def _member_iterators(band: isl.ScheduleNode, n: int) -> dict[str, list[dict[int, int]]]:
    """Per statement under the band: the iterator coefficients of each member."""
    partial = band.band_get_partial_schedule()
    out: dict[str, list[dict[int, int]]] = {}
    maps: list[isl.Map] = []
    isl.UnionMap.from_multi_union_pw_aff(partial).foreach_map(maps.append)
    for m in maps:
        name = m.get_tuple_name(isl.dim_type.in_)
        try:
            pma = isl.PwMultiAff.from_map(m)
        except isl.Error:
            continue
        out[name] = [_aff_coefficients(pma.get_pw_aff(d)) for d in range(n)]
    return out


def _main_iterator(coefs: dict[int, int]) -> int | None:
    """The innermost source iterator a member moves (None: constant member)."""
    return max(coefs) if coefs else None


# ---- the cache model ----------------------------------------------------------------

def _footprint(acc: _Access, members: list[dict[int, int]], tiles: tuple[int, ...]) -> int:
    """Elements of ``acc`` one tile touches: per subscript 1 + Σ |coef|·(T_d − 1) over
    the members whose main iterator it reads (a rectangular hull)."""
    n = 1
    for sub in acc.subscripts:
        extent = 1
        for d, coefs in enumerate(members):
            it = _main_iterator(coefs)
            if it is not None and it in sub:
                extent += abs(sub[it]) * (tiles[d] - 1)
        n *= extent
    return n


def working_set(accesses: dict[str, list[_Access]], members: dict[str, list[dict[int, int]]],
                tiles: tuple[int, ...]) -> int:
    """Model bytes of one tile's data: per array the largest footprint of its accesses."""
    per_array: dict[str, int] = {}
    for stmt, mem in members.items():
        for acc in accesses.get(stmt, ()):
            b = _footprint(acc, mem, tiles) * acc.itemsize
            per_array[acc.array] = max(per_array.get(acc.array, 0), b)
    return sum(per_array.values())


def tile_sizes(accesses: dict[str, list[_Access]], members: dict[str, list[dict[int, int]]],
               n: int, inner: int, parallel: int | None, cache: CacheModel
               ) -> tuple[tuple[int, ...], int]:
    """Tile sizes (band order) and their model working set.

    The model (documented as a model, never a measurement): a tile's working set
    (:func:`working_set`) must fit in half of L2, and the innermost point loop's
    rows (its members' footprint with the other members at one point) in half of
    L1; among those, the largest tile volume, then the widest innermost member.
    The parallel member's tile is at most :data:`PARALLEL_MAX` wide."""
    choices = [INNER_SIZES if d == inner else
               tuple(t for t in OUTER_SIZES if d != parallel or t <= PARALLEL_MAX)
               for d in range(n)]
    best: tuple[tuple[int, int], tuple[int, ...], int] | None = None
    for tiles in product(*choices):
        ws = working_set(accesses, members, tiles)
        if ws > cache.l2 // 2:
            continue
        rows = tuple(t if d == inner else 1 for d, t in enumerate(tiles))
        if working_set(accesses, members, rows) > cache.l1 // 2:
            continue
        vol = 1
        for t in tiles:
            vol *= t
        key = (vol, tiles[inner])
        if best is None or key > best[0]:
            best = (key, tiles, ws)
    if best is None:
        tiles = tuple(min(c) for c in choices)
        return tiles, working_set(accesses, members, tiles)
    return best[1], best[2]


# ---- parallelism, checked on the tree ---------------------------------------------------

def carries_nothing(node: isl.ScheduleNode, validity: isl.UnionMap) -> bool:
    """Whether the one-member band ``node`` carries no dependence: every dependence
    between instances under it with equal outer band values has distance 0 there."""
    prefix = node.get_prefix_schedule_union_map()
    partial = isl.UnionMap.from_multi_union_pw_aff(node.band_get_partial_schedule())
    dom = node.get_domain()
    deps = validity.intersect_domain(dom).intersect_range(dom)
    if deps.is_empty():
        return True
    sched = prefix.flat_range_product(partial)
    scheduled = deps.apply_domain(sched).apply_range(sched)
    one = isl.Val.one(node.get_ctx())
    # a Python loop, not foreach_map: islpy ignores an exception raised in its
    # callback (an isl error would have left the band "parallel")
    maps = scheduled.get_map_list()
    for m in (maps.get_at(i) for i in range(maps.n_map())):
        n = m.dim(isl.dim_type.out)
        d = m.deltas()
        for k in range(n - 1):
            d = d.fix_dim_si(k, 0)
        # distance > 0 or < 0 at the last member: two emptiness tests, not the
        # subtraction of the zero-distance set, which cost isl minutes on relations
        # over many size parameters (fuzz finding 41)
        if not (d.lower_bound_val(isl.dim_type.set, n - 1, one).is_empty()
                and d.upper_bound_val(isl.dim_type.set, n - 1, one.neg()).is_empty()):
            return False
    return True


def _skewed(band: isl.ScheduleNode) -> bool:
    """Whether a member of ``band`` combines two or more iterators of a statement."""
    n = band.band_n_member()
    return any(len(c) > 1 for mem in _member_iterators(band, n).values() for c in mem)


def _mark(band: isl.ScheduleNode, kind: str) -> isl.Id:
    """The mark above one-member ``band``: its kind and its schedule depth, which is
    the number in the name of the loop isl prints for it (``c<depth>``; a band whose
    loop runs once is printed without a loop, and the mark must not move to the
    next loop down)."""
    return isl.Id(f"{kind}_{band.get_schedule_depth()}", context=band.get_ctx())


def _mark_parallel(node: isl.ScheduleNode, n: int, validity: isl.UnionMap
                   ) -> tuple[isl.ScheduleNode, int | None]:
    """Split the first ``n`` members of band ``node`` one by one down to the first
    that carries no dependence, and mark it :data:`PARALLEL_MARK`; returns a node
    inside the band's chain and the member marked (None: none)."""
    cur = node
    for d in range(n):
        if cur.band_n_member() > 1:
            cur = cur.band_split(1)
        if carries_nothing(cur, validity):
            return cur.insert_mark(_mark(cur, PARALLEL_MARK)), d
        if d < n - 1:
            cur = cur.child(0)
    return cur, None


# ---- the transformation --------------------------------------------------------------

def _permute(node: isl.ScheduleNode, order: list[int]) -> isl.ScheduleNode:
    """The band ``node`` with its members in ``order`` (legal: it is permutable)."""
    if order == list(range(len(order))):
        return node
    partial = node.band_get_partial_schedule()
    coincident = [node.band_member_get_coincident(d) for d in range(len(order))]
    upas = isl.UnionPwAffList.alloc(node.get_ctx(), len(order))
    for d in order:
        upas = upas.add(partial.get_union_pw_aff(d))
    new = isl.MultiUnionPwAff.from_union_pw_aff_list(partial.get_space(), upas)
    node = node.delete().insert_partial_schedule(new)
    node = node.band_set_permutable(1)
    for k, d in enumerate(order):
        node = node.band_member_set_coincident(k, coincident[d])
    return node


def _unit_stride_score(d: int, accesses: dict[str, list[_Access]],
                       members: dict[str, list[dict[int, int]]]) -> int:
    """How much better member ``d`` is as the innermost loop: +2 per access it moves
    along the last subscript only with coefficient ±1, +1 per access it leaves
    invariant, −3 per access it moves along an outer subscript."""
    score = 0
    for stmt, mem in members.items():
        it = _main_iterator(mem[d]) if d < len(mem) else None
        if it is None:
            continue
        for acc in accesses.get(stmt, ()):
            moves = [k for k, sub in enumerate(acc.subscripts) if it in sub]
            w = 2 if acc.is_write else 1
            if not moves:
                score += w
            elif moves == [len(acc.subscripts) - 1] and abs(acc.subscripts[-1][it]) == 1:
                score += 2 * w
            else:
                score -= 3 * w
    return score


def _reuse(accesses: dict[str, list[_Access]], members: dict[str, list[dict[int, int]]]
           ) -> bool:
    """Whether some access stays put along some member of the band (its data is
    reused across that member's iterations: what a tile keeps in cache)."""
    for stmt, mem in members.items():
        for coefs in mem:
            it = _main_iterator(coefs)
            if it is None:
                continue
            if any(all(it not in sub for sub in acc.subscripts)
                   for acc in accesses.get(stmt, ())):
                return True
    return False


def _names(members: dict[str, list[dict[int, int]]], scop: Scop, n: int) -> list[str]:
    names = []
    for d in range(n):
        name = f"c{d}"
        for stmt, mem in members.items():
            it = _main_iterator(mem[d])
            if it is not None:
                name = scop.statement(stmt).iterators[it]
                break
        names.append(name)
    return names


class _Tiler:
    def __init__(self, scop: Scop, validity: isl.UnionMap, cache: CacheModel):
        self.scop = scop
        self.validity = validity
        self.cache = cache
        self.accesses = _statement_accesses(scop)
        #: statements whose updates are atomic (no ``omp simd`` around them)
        self.atomic = {st.name for st in scop.statements if st.atomic}
        self.plans: list[BandPlan] = []
        #: sequential skewed loops (wavefronts of points, seidel-2d's 4t + 2i + j)
        #: around the band being visited: their fronts are too small to be worth a
        #: parallel loop each (one barrier per front), so none is marked
        self.fronts = 0

    def visit(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        front = False
        if node.get_type() == isl.schedule_node_type.band:
            handled = self.band(node)
            if handled is not None:
                return handled
            front = _skewed(node)
        self.fronts += front
        for i in range(node.n_children()):
            node = self.visit(node.child(i)).parent()
        self.fronts -= front
        return node

    def _parallel_members(self, node: isl.ScheduleNode, n: int) -> list[int]:
        return [d for d in range(n) if node.band_member_get_coincident(d)]

    def band(self, node: isl.ScheduleNode) -> isl.ScheduleNode | None:
        """Tile, order and mark one band; None when it is left to its children."""
        n = node.band_n_member()
        permutable = bool(node.band_get_permutable())
        coincident = self._parallel_members(node, n)
        if not coincident and not (permutable and n >= 2):
            return None
        depth = node.get_tree_depth()
        members = _member_iterators(node, n)
        names = _names(members, self.scop, n)
        inner = max(range(n), key=lambda d: (_unit_stride_score(d, self.accesses, members), d))
        if not permutable:
            inner = n - 1
        tiles: tuple[int, ...] = ()
        ws = 0
        if permutable and n >= 2 and not _reuse(self.accesses, members):
            # no tile: every access moves with every member (a stencil sweep), so a
            # tile would only cut the unit-stride rows short; the order alone
            order = [d for d in coincident if d != inner] + \
                [d for d in range(n) if d not in coincident and d != inner] + [inner]
            node = _permute(node, order)
            names = [names[d] for d in order]
            point_names = list(names)
        elif permutable and n >= 2:
            # tile loops: the band's order, coincident members first
            order = coincident + [d for d in range(n) if d not in coincident]
            node = _permute(node, order)
            members = {s: [m[d] for d in order] for s, m in members.items()}
            names = [names[d] for d in order]
            inner = order.index(inner)
            par = 0 if coincident else None
            tiles, ws = tile_sizes(self.accesses, members, n, inner, par, self.cache)
            mv = isl.MultiVal.zero(node.band_get_space())
            for d, t in enumerate(tiles):
                mv = mv.set_val(d, isl.Val.int_from_si(node.get_ctx(), t))
            node = node.band_tile(mv)
            tile_band = node
            # point loops: the unit-stride member innermost
            point = tile_band.child(0)
            porder = [d for d in range(n) if d != inner] + [inner]
            point = _permute(point, porder)
            point_names = [names[d] for d in porder]
            node = point.parent()
        else:
            point_names = list(names)
        node, d = _mark_parallel(node, n if not self.fronts else 0, self.validity)
        parallel = names[d] if d is not None else None
        node = self._up(node, depth)
        # the innermost point loop: simd when it carries nothing (and is not the
        # parallel loop itself)
        simd = None
        innermost = self._innermost_band(node, depth, bool(tiles))
        if innermost is not None:
            k = innermost.band_n_member()
            cand = innermost.band_split(k - 1).child(0) if k > 1 else innermost
            is_parallel_loop = (cand.get_parent_type() == isl.schedule_node_type.mark)
            atomic = bool(self.atomic & set(members))
            if not is_parallel_loop and not atomic and carries_nothing(cand, self.validity):
                node = cand.insert_mark(_mark(cand, SIMD_MARK))
                simd = point_names[-1]
            else:
                node = cand
        node = self._up(node, depth)
        self.plans.append(BandPlan(tuple(names), tuple(point_names), tiles, parallel, simd, ws,
                                   tuple(sorted(members))))
        return node

    @staticmethod
    def _up(node: isl.ScheduleNode, depth: int) -> isl.ScheduleNode:
        while node.get_tree_depth() > depth:
            node = node.parent()
        return node

    @staticmethod
    def _innermost_band(node: isl.ScheduleNode, depth: int, tiled: bool
                        ) -> isl.ScheduleNode | None:
        """The last band of the chain of bands and marks starting at ``node`` (the
        point band when tiled), None when there is none."""
        last = None
        cur = node
        while True:
            t = cur.get_type()
            if t == isl.schedule_node_type.band:
                last = cur
            elif t != isl.schedule_node_type.mark:
                break
            if cur.n_children() != 1:
                break
            cur = cur.child(0)
        return last


def tile_for_cpu(scop: Scop, schedule: isl.Schedule, validity: isl.UnionMap,
                 cache: CacheModel, tile: bool = True
                 ) -> tuple[isl.Schedule, tuple[BandPlan, ...]]:
    """The schedule with its bands tiled, reordered and marked (module docstring);
    ``tile=False`` only marks the parallel and simd loops (the fallback when the
    tiled code's AST would be too costly)."""
    tiler = _Tiler(scop, validity, cache)
    if not tile:
        tiler.band = _untiled(tiler)          # type: ignore[method-assign]
    root = tiler.visit(schedule.get_root())
    return root.get_schedule(), tuple(tiler.plans)


def _untiled(tiler: _Tiler):
    """A band handler that marks without tiling or reordering."""
    def band(node: isl.ScheduleNode) -> isl.ScheduleNode | None:
        n = node.band_n_member()
        depth = node.get_tree_depth()
        members = _member_iterators(node, n)
        names = _names(members, tiler.scop, n)
        node, d = _mark_parallel(node, n, tiler.validity)
        node = _Tiler._up(node, depth)
        if d is None:
            return None
        tiler.plans.append(BandPlan(tuple(names), tuple(names), (), names[d], None,
                                    statements=tuple(sorted(members))))
        return node
    return band
