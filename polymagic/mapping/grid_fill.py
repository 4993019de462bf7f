"""Default tiles of a compute-bound band sized so that the grid fills the GPU (the first
H100 run, 2026-11-26).

Register tiles of 128 x 128 points with 8 x 8 per thread (:mod:`.register_tiles`,
seed 004 §4.2, Volkov & Demmel's outer product) are right for a large gemm (N = 4096:
1024 blocks, 30.9 TFLOP/s on the H100) and wrong for a small one: at PolyBench's
medium sizes (gemm ni = 200, nj = 220) they make a 2 x 2 grid, four blocks on 132
multiprocessors, and ran 0.47 ms where 32 x 32 shared tiles ran 0.099 ms (syrk
n = 240: 1.6 ms against 0.121 ms).  Seed 000 §4.1 fixes the number of outer-level
parallel processes (thread blocks) to at least the number of physical processors
(multiprocessors) before anything else; its §4.3 search has the same constraint
(``tiles.model.min_blocks``).  This module applies it to the default tiles.

The model, for a band chosen for register tiles by default
(:func:`.register_tiles.compute_bound`) when the sizes of its parameters are given
(``--size``, the magic's, run_all's): the candidates, largest first,

    128 x 128 tiles, 8 x 8 points per thread   (16 x 16 threads, 64 accumulators)
     64 x  64 tiles, 4 x 4 points per thread   (16 x 16 threads, 16 accumulators)
     32 x  32 tiles, no register tile          (the default single mapping, 32 x 8 threads)
     16 x  32 tiles, no register tile          (32 x 8 threads, 2 points each)
      8 x  32 tiles, no register tile          (32 x 8 threads, 1 point each)

and the first whose grid has at least ``CompileOptions.device_sms`` non-empty blocks
(one per multiprocessor; blocks counted exactly by isl over the band's
instances at the given sizes, so syrk's triangle counts its half) is taken; when none
has, the one with the most blocks (the last).  Without the sizes, or with
``device_sms = 0``, the first (today's choice).  The figures above are measurements;
what this module predicts (blocks) is a count, not a time.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..scop import Scop
from .register_tiles import BLOCK_TILE, POINTS

#: (block tile, points per thread or None for no register tile), largest first; the
#: third is the single mapping's default 2-d tile (``result.DEFAULT_TILES[2]``, which
#: ``tests/test_grid_fill.py`` checks: this module is imported by ``result``'s users
#: and ``result`` imports this module's :class:`GridFill`)
LADDER: tuple[tuple[tuple[int, int], tuple[int, int] | None], ...] = (
    (BLOCK_TILE, POINTS),
    ((64, 64), (4, 4)),
    ((32, 32), None),
    ((16, 32), None),
    ((8, 32), None),
)


@dataclass(frozen=True)
class GridFill:
    """The default tiles of one compute-bound band and why: the chosen block tile and
    points per thread (None: no register tile), the blocks its grid has at the given
    sizes (None: sizes not given), the blocks wanted (``device_sms``) and every
    candidate tried with its block count."""
    tile: tuple[int, int]
    points: tuple[int, int] | None
    blocks: int | None
    wanted: int
    tried: tuple[tuple[tuple[int, int], int], ...] = ()
    #: False when a count is a lower bound (a grid too large to scan: :func:`_blocks`)
    exact: bool = True

    @property
    def shrunk(self) -> bool:
        """Smaller than today's 128 x 128 register tile."""
        return (self.tile, self.points) != LADDER[0]

    def text(self) -> str:
        """The note users read."""
        what = (f"{self.tile[0]}×{self.tile[1]} tiles with {self.points[0]}×{self.points[1]} "
                f"points per thread (register tiles)" if self.points else
                f"{self.tile[0]}×{self.tile[1]} tiles without register tiles")
        if self.blocks is None:
            return (f"{what}: the sizes are not given, so the grid's blocks are not "
                    "known (give --size to fit the tiles to the grid)")
        counts = ", ".join(f"{t[0]}×{t[1]}: {b}" for t, b in self.tried)
        enough = "at least" if self.blocks >= self.wanted else "the most blocks, fewer than"
        many = "" if self.exact else "at least "
        return (f"{what}: {many}{self.blocks} blocks at the given sizes, {enough} one per "
                f"multiprocessor ({self.wanted} SMs, seed 000 §4.1); blocks per tile: "
                f"{counts}")


def _fixed(s: isl.Set, scop: Scop, sizes) -> isl.Set | None:
    """``s`` with every parameter fixed to its size, or None when one is not given."""
    s = s.intersect_params(scop.context.align_params(s.get_space()))
    unused = []
    for k in range(s.dim(isl.dim_type.param)):
        value = sizes.get(s.get_dim_name(isl.dim_type.param, k))
        if isinstance(value, int) and not isinstance(value, bool):
            s = s.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(s.get_ctx(), value))
        elif s.involves_dims(isl.dim_type.param, k, 1):
            return None
        else:
            unused.append(k)
    for k in reversed(unused):       # the thread and block ids the mapped tree declares
        s = s.project_out(isl.dim_type.param, k, 1)
    return s


#: tile grids with more candidate tiles than this in their bounding box are not
#: scanned point by point (isl's ``count_val`` enumerates): their count is bounded below
SCAN_LIMIT = 1 << 16


def _blocks(points: isl.Set, tile: tuple[int, int]) -> tuple[int, bool]:
    """The non-empty tiles of ``tile`` over the (parameter-free) set of band points,
    and whether that count is exact.  A box is counted as the product of its extents;
    a grid larger than :data:`SCAN_LIMIT` gets a lower bound instead of a scan (one
    tile per row or column of each convex piece: every row between a convex set's
    first and last has one), which is all the choice needs: it only asks whether
    the count reaches the SM count."""
    sp = points.get_space()
    tiles = isl.Map(f"{{ [a0, a1] -> [t0, t1] : {tile[0]} t0 <= a0 < {tile[0]} t0 + {tile[0]}"
                    f" and {tile[1]} t1 <= a1 < {tile[1]} t1 + {tile[1]} }}",
                    context=sp.get_ctx())
    pts = points.reset_tuple_id() if points.has_tuple_id() else points
    image = pts.apply(tiles.align_params(pts.get_space()))
    if image.is_empty():
        return 0, True
    extents = [_extent(image, d) for d in range(2)]
    if image.is_box():
        return extents[0] * extents[1], True
    if extents[0] * extents[1] > SCAN_LIMIT:
        pieces = [isl.Set.from_basic_set(b) for b in image.get_basic_sets()]
        return max(max(_extent(b, 0), _extent(b, 1)) for b in pieces), False
    n = image.count_val()
    return (int(n.to_python()) if n.is_int() else 0), True


def _extent(s: isl.Set, d: int) -> int:
    """The number of values dimension ``d`` of a bounded parameter-free set spans."""
    return int(s.dim_max_val(d).to_python()) - int(s.dim_min_val(d).to_python()) + 1


def grid_fill(scop: Scop, band: isl.MultiUnionPwAff, domain: isl.UnionSet, sizes,
              wanted: int) -> GridFill:
    """The default tiles of a compute-bound 2-d band (see the module docstring):
    ``band``'s first two members are the mapped ones, ``domain`` its instances."""
    first = LADDER[0]
    if wanted <= 0:
        return GridFill(first[0], first[1], None, wanted)
    two = band.drop_dims(isl.dim_type.set, 2, band.dim(isl.dim_type.set) - 2)
    rng = isl.UnionMap.from_multi_union_pw_aff(two).intersect_domain(domain).range()
    sets: list[isl.Set] = []
    rng.foreach_set(sets.append)
    pts = _fixed(sets[0], scop, sizes) if len(sets) == 1 else None
    if pts is None:
        return GridFill(first[0], first[1], None, wanted)
    tried: list[tuple[tuple[int, int], int]] = []
    exact = True
    for tile, points in LADDER:
        n, known = _blocks(pts, tile)
        exact = exact and known
        tried.append((tile, n))
        if n >= wanted:
            return GridFill(tile, points, n, wanted, tuple(tried), exact)
    tile, points = LADDER[-1]
    return GridFill(tile, points, tried[-1][1], wanted, tuple(tried), exact)
