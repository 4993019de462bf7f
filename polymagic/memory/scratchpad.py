"""Scratchpad (shared-memory) buffers per tile: seed 000 §3 (Baskaran et al., PPoPP'08).

For one *program block* (a thread-block tile, or a sub-tile inside it) the
analysis works on **data spaces**: the image of the block's statement instances
under each array reference (§3.1), parametric in the block's position — the
*prefix* schedule values (tile indices, host loops) that identify the block.
A data space is therefore an isl map ``{ [prefix] -> A[a] }``.

* :func:`partition` splits an array's data spaces into maximal non-overlapping
  groups: connected components of the overlap graph (§3.1, "partitioning").
* :func:`reuse` is Algorithm 1: a partition is worth a buffer if one of its
  references has non-constant reuse (rank of the access matrix < dimension of the
  iteration space, condition (1)), or else if the summed pairwise overlap exceeds
  δ (30 % by default) of the partition's volume (constant reuse).
* :func:`make_buffer` is Algorithm 2: one local array per partition, with the
  bounds of each dimension of the convex union (here: per-dimension parametric
  min/max, the bounding box) as affine functions of the prefix; its size is the
  largest extent over every block.  Accesses are rewritten to ``F'(y) - g``
  (§3.1.2) with ``g`` the lower bounds.
* Copy-in scans the union of the read data spaces, copy-out the union of the
  written ones, so each element moves once even when references overlap (§3.1.3).
  Copying in an element the block overwrites before reading it is wasted work but
  harmless; copying out only written elements keeps the result exact.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl
import numpy as np

from ..scop import Scop


@dataclass(frozen=True)
class DataSpace:
    """One reference's data space for a block: ``{ [prefix] -> A[a] }``."""
    array: str
    stmt: str
    ref: int                  # index into Statement.accesses
    is_write: bool
    relation: isl.Map         # prefix -> array elements
    rank: int                 # rank of the access matrix F
    depth: int                # dimension of the statement's iteration space

    @property
    def nonconstant_reuse(self) -> bool:
        """Condition (1) of seed 000 §3.1.1: rank(F) < dim(i_s)."""
        return self.rank < self.depth


@dataclass(frozen=True)
class Partition:
    """A maximal group of overlapping data spaces of one array (§3.1)."""
    array: str
    spaces: list[DataSpace]
    beneficial: bool = False
    reason: str = ""

    @property
    def reads(self) -> list[DataSpace]:
        return [d for d in self.spaces if not d.is_write]

    @property
    def writes(self) -> list[DataSpace]:
        return [d for d in self.spaces if d.is_write]

    #: unions already computed, by the ids of the data spaces united (the planner asks
    #: for the same union up to four times: box, reuse, copy-in hull, dataflow)
    _unions: dict = field(default_factory=dict, repr=False, compare=False)

    def union(self, spaces: list[DataSpace] | None = None) -> isl.Map | None:
        """The coalesced union of the data spaces (all, or ``spaces``); memoised,
        isl objects being immutable."""
        spaces = self.spaces if spaces is None else spaces
        key = tuple(id(d) for d in spaces)
        if key not in self._unions:
            out = None
            for d in spaces:
                out = d.relation if out is None else out.union(d.relation)
            self._unions[key] = out.coalesce() if out is not None else None
        return self._unions[key]

    def pieces(self, spaces: list[DataSpace] | None = None) -> isl.Map | None:
        """The union of the data spaces (all, or ``spaces``) as it is, not coalesced,
        for the boxes (Algorithm 2, :func:`copy_in_hull`): isl merges a 3-d stencil's
        shifted boxes into two pieces with diagonal faces (41 and 29 constraints),
        whose hull, minima and maxima cost 0.15 s per array, where the simple hull of
        the pieces is their box at once (issue 22).  Same extents and copy-in sets on
        every example and snapshot case; the lower bounds are the same functions,
        defined on a few more (empty) border blocks."""
        spaces = self.spaces if spaces is None else spaces
        out = None
        for d in spaces:
            out = d.relation if out is None else out.union(d.relation)
        return out

    @property
    def copy_in(self) -> isl.Map | None:
        """Elements to load: the union of the read data spaces (§3.1.3)."""
        return self.union(self.reads)

    @property
    def copy_out(self) -> isl.Map | None:
        """Elements to store back: the union of the written data spaces (§3.1.3)."""
        return self.union(self.writes)


@dataclass(frozen=True)
class Box:
    """Algorithm 2's local storage: per-dimension bounds of the convex union."""
    lower: list[isl.PwAff]     # g: lower bounds as functions of the prefix
    extents: list[int | None]  # largest extent over all blocks (None: unbounded)

    @property
    def bounded(self) -> bool:
        return all(e is not None for e in self.extents)

    @property
    def size(self) -> int | None:
        if not self.bounded:
            return None
        n = 1
        for e in self.extents:
            n *= e
        return n


@dataclass(frozen=True)
class Buffer:
    name: str
    partition: Partition
    box: Box
    ctype: str
    refs: list[tuple[str, int]] = field(default_factory=list)   # (stmt, access index)

    @property
    def bytes(self) -> int:
        from ..dtypes import DTYPES
        return (self.box.size or 0) * np.dtype(DTYPES[self.ctype]).itemsize


def _linear_rows(relation: isl.Map) -> list[list[int]]:
    """Rows of the linear part of an affine map ``S[i] -> [F i + f]`` (a subscript
    with floor/mod counts as depending on every iterator)."""
    n_in = relation.dim(isl.dim_type.in_)
    n_out = relation.dim(isl.dim_type.out)
    if n_in == 0 or n_out == 0:
        return []
    try:
        pma = isl.PwMultiAff.from_map(relation)
    except isl.Error:
        return [[1] * n_in for _ in range(n_out)]
    pieces: list[isl.MultiAff] = []
    pma.foreach_piece(lambda _s, ma: pieces.append(ma))
    if not pieces:
        return []
    rows = []
    for o in range(n_out):
        aff = pieces[0].get_at(o)
        if aff.dim(isl.dim_type.div) > 0:
            rows.append([1] * n_in)
            continue
        rows.append([int(aff.get_coefficient_val(isl.dim_type.in_, i).to_python())
                     for i in range(n_in)])
    return rows


#: access_rank's results by the printed relations (they do not depend on tile sizes:
#: the explorer's regenerations ask for the same ones again)
_RANKS: dict[tuple[str, str], tuple[int, int]] = {}


def access_rank(relation: isl.Map, fixed: isl.Map | None = None) -> tuple[int, int]:
    """:func:`_access_rank`, memoised by the printed relations."""
    key = (str(relation), str(fixed) if fixed is not None else "")
    if key not in _RANKS:
        if len(_RANKS) > 4096:
            _RANKS.clear()
        _RANKS[key] = _access_rank(relation, fixed)
    return _RANKS[key]


def _access_rank(relation: isl.Map, fixed: isl.Map | None = None) -> tuple[int, int]:
    """(rank, dimension) of an access for condition (1) of seed 000 §3.1.1.

    ``fixed`` maps the statement to the outer loops that are constant within the
    block (host loops such as a time loop launched once per iteration): those
    dimensions do not vary inside the block, so they count neither in the rank nor
    in the iteration-space dimension.
    """
    n_in = relation.dim(isl.dim_type.in_)
    h = _linear_rows(fixed) if fixed is not None else []
    f = _linear_rows(relation)
    rank_h = int(np.linalg.matrix_rank(np.array(h, dtype=float))) if h else 0
    rank_hf = int(np.linalg.matrix_rank(np.array(h + f, dtype=float))) if h + f else 0
    return rank_hf - rank_h, n_in - rank_h


def data_spaces(scop: Scop, prefix: isl.UnionMap, arrays: set[str] | None = None,
                fixed: isl.UnionMap | None = None) -> list[DataSpace]:
    """Data space of every reference, parametric in the block's prefix schedule.

    ``prefix`` maps each statement instance of the block to the prefix schedule
    values (tile indices ...) that identify the block; its domain restricts the
    statement instances considered.
    """
    out: list[DataSpace] = []
    inv = prefix.reverse()
    instances = prefix.domain()
    for s in scop.statements:
        dom = instances.extract_set(s.domain.get_space())
        if dom.is_empty():
            continue
        for k, acc in enumerate(s.accesses):
            if arrays is not None and acc.array not in arrays:
                continue
            rel = isl.UnionMap.from_map(acc.relation.intersect_domain(dom))
            ds = inv.apply_range(rel)
            maps: list[isl.Map] = []
            ds.foreach_map(maps.append)
            if not maps:
                continue
            rank, depth = access_rank(acc.relation, _stmt_map(fixed, s.name))
            out.append(DataSpace(acc.array, s.name, k, acc.is_write, maps[0].coalesce(),
                                 rank, depth))
    return out


def _stmt_map(umap: isl.UnionMap | None, stmt: str) -> isl.Map | None:
    if umap is None:
        return None
    found: list[isl.Map] = []
    umap.foreach_map(lambda m: found.append(m) if m.get_tuple_name(isl.dim_type.in_) == stmt else None)
    return found[0] if found else None


def partition(spaces: list[DataSpace]) -> list[Partition]:
    """Connected components of the overlap graph, per array (seed 000 §3.1).

    Two data spaces overlap when some block's images intersect, i.e. when the
    intersection of the two prefix->element relations is non-empty.
    """
    parts: list[Partition] = []
    for array in dict.fromkeys(d.array for d in spaces):
        group = [d for d in spaces if d.array == array]
        parent = list(range(len(group)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                if find(i) != find(j) and \
                        not group[i].relation.intersect(group[j].relation).is_empty():
                    parent[find(i)] = find(j)
        comps: dict[int, list[DataSpace]] = {}
        for i, d in enumerate(group):
            comps.setdefault(find(i), []).append(d)
        parts += [Partition(array, c) for c in comps.values()]
    return parts


def _fixed(rel: isl.Map, sample: dict[str, int]) -> isl.Map:
    """``rel`` at the sample values of its parameters (0 for those not in it), the
    parameters then dropped (fixed, they only slow down the counts' set operations)."""
    n = rel.dim(isl.dim_type.param)
    for pos in range(n):
        name = rel.get_dim_name(isl.dim_type.param, pos)
        rel = rel.fix_val(isl.dim_type.param, pos, isl.Val(sample.get(name, 0)))
    return rel.project_out(isl.dim_type.param, 0, n)


def _volume(rel: isl.Map, sample: dict[str, int] | None, fixed: bool = False) -> int | None:
    """Number of elements of a data space for one block (the first block), or None;
    ``fixed``: ``rel`` is already :func:`_fixed` at ``sample``."""
    if sample and not fixed:
        rel = _fixed(rel, sample)
    return _first_block_volume([rel], sample)


def _first_block_volume(rels: list[isl.Map], sample: dict[str, int] | None) -> int | None:
    """:func:`_volume` of the union of ``rels`` (in one space): the first block of
    their domains' union, each relation's elements there, united.  The same count as
    that of the relations' coalesced union, without forming it (a 3-d stencil's
    seven shifted footprints: half of Algorithm 1's time on heat-3d, issue 22)."""
    if rels[0].dim(isl.dim_type.in_) == 0:
        parts = [r.range() for r in rels]
    else:
        blocks = rels[0].domain()
        for r in rels[1:]:
            blocks = blocks.union(r.domain())
        first = blocks.lexmin()
        parts = [r.intersect_domain(first).range() for r in rels]
    s = parts[0]
    for p in parts[1:]:
        s = s.union(p)
    if len(parts) > 1:
        s = s.coalesce()
    if not sample:                   # (with a sample every parameter is fixed already)
        for pos in range(s.dim(isl.dim_type.param)):  # every parameter fixed: a count
            s = s.fix_val(isl.dim_type.param, pos, isl.Val(0))
    try:
        box = _box_count(s)
        if box is not None:
            return box
        c = s.count_val()
        return int(c.to_python()) if c.is_int() else None
    except (isl.Error, TypeError, ValueError):     # out of isl's operation budget
        return None


def _box_count(s: isl.Set) -> int | None:
    """The number of points of ``s`` when it is a box (every parameter fixed): the
    product of its extents, the count isl's point-by-point ``count_val`` gives, without
    the scan (a block's footprint and the pairwise overlaps of Algorithm 1 are boxes,
    thousands of points each: a third of a tile change's CPU time on heat-3d)."""
    if not s.is_box():
        return None
    n = 1
    for d in range(s.dim(isl.dim_type.set)):
        lo, hi = s.dim_min_val(d), s.dim_max_val(d)
        if not (lo.is_int() and hi.is_int()):
            return None
        n *= max(0, hi.to_python() - lo.to_python() + 1)
    return n


def reuse(part: Partition, delta: float = 0.3, sample: dict[str, int] | None = None
          ) -> tuple[bool, str]:
    """Algorithm 1 of seed 000: is the partition worth a scratchpad buffer?"""
    for d in part.spaces:
        if d.nonconstant_reuse:
            return True, (f"non-constant reuse: {d.stmt} reference has rank {d.rank} "
                          f"< {d.depth} loops")
    if len(part.spaces) < 2:
        return False, "one reference, full-rank access: no reuse"
    # the footprint and the pairwise overlaps at the sample: each space fixed once,
    # then united (the same set as the parametric union fixed, far cheaper to form)
    rels = [_fixed(d.relation, sample) if sample else d.relation for d in part.spaces]
    if sample:
        total = _first_block_volume(rels, sample)
    else:
        total = _volume(part.union(), sample)
    if not total:
        return False, "volume unknown"
    # a repeated reference (a stencil's centre) overlaps as its first copy does:
    # each distinct pair counted once, times the pairs of copies it stands for
    distinct, copies = distinct_relations(rels)
    overlap = 0
    for i, a in enumerate(distinct):
        if copies[i] > 1:
            overlap += copies[i] * (copies[i] - 1) // 2 * (_volume(a, sample, fixed=True) or 0)
        for j in range(i + 1, len(distinct)):
            overlap += copies[i] * copies[j] * (
                _volume(a.intersect(distinct[j]), sample, fixed=True) or 0)
    frac = overlap / total
    # in words (issue 20): the pairwise overlaps of the references' footprints as a
    # multiple of the elements the block reads, against --delta
    if frac > delta:
        return True, (f"constant reuse: its {len(part.spaces)} references read overlapping "
                      f"elements (overlaps {frac:.3g}× the elements read, above --delta "
                      f"{delta:g})")
    return False, (f"too little reuse: its {len(part.spaces)} references overlap by "
                   f"{frac:.3g}× the elements read, at most --delta {delta:g}")


def distinct_relations(rels: list[isl.Map]) -> tuple[list[isl.Map], list[int]]:
    """The relations without repeats (plainly equal ones), and how often each came."""
    distinct: list[isl.Map] = []
    copies: list[int] = []
    for r in rels:
        k = next((k for k, u in enumerate(distinct) if r.plain_is_equal(u)), None)
        if k is None:
            distinct.append(r)
            copies.append(1)
        else:
            copies[k] += 1
    return distinct, copies


def bounding_box(rel: isl.Map, context: isl.Set) -> Box:
    """Algorithm 2: per-dimension lower bounds of the union as functions of the prefix
    (the offsets ``g``), and the largest extent over every block and parameter value.

    The extent comes from the differences of two elements of one block's data space
    (``rel^-1 . rel`` then deltas) with the parameters projected out: a
    non-parametric integer maximum, far cheaper than maximising ``max - min``.
    Where the parametric minimum has several pieces (blocks at the array's border
    clamp it), one affine piece is used for every block when it stays below the
    minimum everywhere and the extent is re-measured for it: a buffer a little
    larger at the border, much simpler index code.
    """
    # a single convex piece whose constraints are those of the union: every bound
    # is taken on it, so copying the hull (see copy_in_hull) stays inside the buffer
    rel = isl.Map.from_basic_map(rel.intersect_params(context).simple_hull())
    deltas = None
    lower, extents = [], []
    w = _wrapped(rel)
    for d in range(rel.dim(isl.dim_type.out)):
        lo = rel.dim_min(d).coalesce()
        simple = _single_piece_lower(lo, rel, d, w)
        if simple is not None:
            lo, ext = simple
        else:
            if deltas is None:
                deltas = rel.reverse().apply_range(rel).deltas()
                deltas = deltas.project_out(isl.dim_type.param, 0,
                                            deltas.dim(isl.dim_type.param))
            v = deltas.dim_max_val(d)
            ext = int(v.to_python()) + 1 if v.is_int() else None
        lower.append(lo)
        extents.append(ext)
    return Box(lower, extents)


def _wrapped(rel: isl.Map) -> isl.Set:
    """``{ [p, a, params] }``: the relation wrapped, parameters turned into variables."""
    w = rel.wrap()
    return w.move_dims(isl.dim_type.set, w.dim(isl.dim_type.set), isl.dim_type.param, 0,
                       w.dim(isl.dim_type.param))


def _single_piece_lower(lo: isl.PwAff, rel: isl.Map, d: int, w: isl.Set | None = None
                        ) -> tuple[isl.PwAff, int] | None:
    """An affine lower bound g' <= lo valid for every block, with its extent
    max(a_d - g'(p)) + 1, or None.  ``lo`` itself when it has one piece; else the
    piece of the interior blocks when it stays below ``lo`` at the borders.  ``w``
    is :func:`_wrapped` of ``rel`` (computed once per box)."""
    pieces: list[tuple[isl.Set, isl.Aff]] = []
    lo.foreach_piece(lambda st, aff: pieces.append((st, aff)))
    dom = lo.domain()
    nin = rel.dim(isl.dim_type.in_)
    w = _wrapped(rel) if w is None else w
    for _, aff in pieces:
        if aff.involves_dims(isl.dim_type.param, 0, aff.dim(isl.dim_type.param)):
            continue
        g = isl.PwAff.from_aff(aff).intersect_domain(dom)
        if len(pieces) > 1 and not dom.is_subset(g.le_set(lo)):   # (one piece: g is lo)
            continue
        h = isl.Aff.zero_on_domain(isl.LocalSpace.from_space(w.get_space()))
        h = h.set_coefficient_val(isl.dim_type.in_, nin + d, isl.Val(1))
        for i in range(nin):
            h = h.set_coefficient_val(isl.dim_type.in_, i,
                                      aff.get_coefficient_val(isl.dim_type.in_, i).neg())
        h = h.set_constant_val(aff.get_constant_val().neg())
        try:
            mx, mn = w.max_val(h), w.min_val(h)
        except isl.Error:
            continue
        if mx.is_int() and mn.is_int() and mn.to_python() >= 0:
            return g, int(mx.to_python()) + 1
    return None


def copy_in_hull(part: Partition, bounds: isl.Set | None) -> isl.Map | None:
    """The set to load, as one convex piece: the hull of the reads, inside the
    partition's hull (so inside its buffer) and inside the array.  Loading the few
    extra elements of a stencil's corners costs less than the intricate loops that
    scan the exact union (PPCG makes the same trade)."""
    if bounds is None:
        return part.copy_in
    reads = part.pieces(part.reads)
    if reads is None:
        return None
    # the blocks that read: the domain of the pieces, not of their coalesced union
    # (isl's coalescing of a 3-d stencil's seven shifted boxes: a tenth of a tile
    # change on heat-3d, issue 22)
    box = _box(reads).intersect(_box(part.pieces())).intersect_domain(
        reads.domain().coalesce())
    return box.intersect_range(bounds.align_params(box.get_space())).coalesce()


def _box(rel: isl.Map) -> isl.Map:
    """The per-block bounding box of a relation ``{ [p] -> A[a] }``: the product of
    its projections on each array dimension."""
    n = rel.dim(isl.dim_type.out)
    name = rel.get_tuple_name(isl.dim_type.out)
    hull = isl.Map.from_basic_map(rel.simple_hull())
    box = None
    for d in range(n):
        proj = hull.project_out(isl.dim_type.out, d + 1, n - d - 1).project_out(
            isl.dim_type.out, 0, d)
        box = proj if box is None else box.flat_range_product(proj)
    if box is None:
        return rel
    return box.set_tuple_name(isl.dim_type.out, name)


def figure1_example() -> str:
    """The program of seed 000 Figure 1 (used by tests and the tutorial notebook)."""
    return """\
void fig1(double A[200][200], double B[200][200]) {
  for (int i = 10; i <= 14; i++)
    for (int j = 10; j <= 14; j++) {
      A[i][j+1] = A[i+j][j+1] * 3;
      for (int k = 11; k <= 20; k++)
        B[i][j+k] = A[i][k] + B[i+j][k];
    }
}
"""
