"""Seed 000 (Baskaran et al., PPoPP'08) §3 on its own worked example, Figure 1.

The whole program is one block (no tiling), as in the figure.  Copy-in and copy-out
sets and the per-partition buffer extents of Algorithm 2 are asserted exactly, and
so are the figure's merged buffers LA[19][10] and LB[19][24].
"""
from __future__ import annotations

import islpy as isl
import pytest

from polymagic.frontend import parse
from polymagic.memory.scratchpad import (bounding_box, data_spaces, figure1_example,
                                         partition, reuse)


@pytest.fixture(scope="module")
def fig1():
    scop = parse(figure1_example())
    prefix = isl.UnionMap.empty(scop.context.get_space())
    for s in scop.statements:      # one block: every instance maps to the empty prefix
        prefix = prefix.union(isl.UnionMap.from_map(
            isl.Map.from_domain_and_range(s.domain, isl.Set("{ [] }"))))
    return scop, partition(data_spaces(scop, prefix))


def _parts(parts, array):
    return sorted((p for p in parts if p.array == array), key=lambda p: len(p.spaces))


def _set(text):
    return isl.Set(text)


def test_copy_in_and_copy_out_sets_of_figure1(fig1):
    scop, parts = fig1
    a_in = a_out = b_in = b_out = None
    for p in parts:
        for name, rel in (("in", p.copy_in), ("out", p.copy_out)):
            if rel is None:
                continue
            r = rel.range()
            if p.array == "A":
                a_in = r if name == "in" and a_in is None else (a_in.union(r) if name == "in" else a_in)
                a_out = r if name == "out" and a_out is None else (a_out.union(r) if name == "out" else a_out)
            else:
                b_in = r if name == "in" and b_in is None else (b_in.union(r) if name == "in" else b_in)
                b_out = r if name == "out" and b_out is None else (b_out.union(r) if name == "out" else b_out)
    # Figure 1, "Data Move in code" for A: two loop nests
    assert a_in.is_equal(_set("{ A[i, j] : 10 <= i <= 14 and 11 <= j <= 20 }").union(
        _set("{ A[i, j] : 20 <= i <= 28 and max(i - 13, 11) <= j <= min(15, i - 9) }")))
    assert a_out.is_equal(_set("{ A[i, j] : 10 <= i <= 14 and 11 <= j <= 15 }"))
    assert b_in.is_equal(_set("{ B[i, j] : 20 <= i <= 28 and 11 <= j <= 20 }"))
    assert b_out.is_equal(_set("{ B[i, j] : 10 <= i <= 14 and 21 <= j <= 34 }"))


def test_partitions_and_their_buffers(fig1):
    scop, parts = fig1
    a = _parts(parts, "A")
    b = _parts(parts, "B")
    assert [len(p.spaces) for p in a] == [1, 2]     # {A[i+j][j+1]} and {A[i][j+1], A[i][k]}
    assert [len(p.spaces) for p in b] == [1, 1]     # read B[i+j][k], write B[i][j+k]
    assert bounding_box(a[0].union(), scop.context).extents == [9, 5]
    assert bounding_box(a[1].union(), scop.context).extents == [5, 10]
    assert sorted(bounding_box(p.union(), scop.context).extents for p in b) == [[5, 14], [9, 10]]


def test_merged_buffers_are_LA_19_10_and_LB_19_24(fig1):
    scop, parts = fig1
    for array, want, lower in (("A", [19, 10], [10, 11]), ("B", [19, 24], [10, 11])):
        union = None
        for p in parts:
            if p.array == array:
                union = p.union() if union is None else union.union(p.union())
        box = bounding_box(union, scop.context)
        assert box.extents == want
        assert [int(lb.max_val().to_python()) for lb in box.lower] == lower   # offsets g


def test_algorithm1_reuse_decisions(fig1):
    scop, parts = fig1
    decisions = {(p.array, len(p.spaces), bool(p.copy_out)): reuse(p)[0] for p in parts}
    # the S1 references (rank 2 in a 3-deep nest) have non-constant reuse
    assert decisions[("A", 2, True)] is True
    assert decisions[("B", 1, False)] is True
    # A[i+j][j+1] alone: one full-rank reference, no reuse
    assert decisions[("A", 1, False)] is False


#: (kernel, block prefix) of a 3-d and a 2-d stencil with a time loop
STENCIL_BLOCKS = [
    ("benchmarks/kernels/heat-3d.c",
     "[tsteps, n] -> { S0[t, i, j, k] -> [t, floor(i/4), floor(j/8), floor(k/32)];"
     " S1[t, i, j, k] -> [t, floor(i/4), floor(j/8), floor(k/32)] }"),
    ("examples/jacobi-2d.c",
     "[tsteps, n] -> { S0[t, i, j] -> [t, floor(i/32), floor(j/32)];"
     " S1[t, i, j] -> [t, floor(i/32), floor(j/32)] }"),
]


@pytest.mark.parametrize("name, prefix", [
    *STENCIL_BLOCKS,
    ("examples/gemm.c", "[N] -> { S0[i, j, k] -> [floor(i/32), floor(j/32)] }"),
])
def test_boxes_from_the_pieces_equal_those_of_the_coalesced_union(name, prefix):
    """Algorithm 2's box and the copy-in hull are taken from the data spaces' pieces
    (issue 22: the coalesced union of a 3-d stencil's shifted boxes costs 0.5 s);
    they are the same as from the coalesced union: same extents and copy-in set, the
    same lower bounds on every block with data (the pieces' box hull also covers a
    few empty border blocks, where nothing reads the bound)."""
    import pathlib
    from polymagic.memory import scratchpad as sp
    root = pathlib.Path(__file__).resolve().parent.parent
    scop = parse((root / name).read_text())
    pre = isl.UnionMap(prefix).intersect_domain(scop.domain)
    bounds = isl.Set(f"[{', '.join(scop.size_params)}] -> {{ : }}")
    parts = partition(data_spaces(scop, pre))
    assert parts                      # the prefix names the kernel's statements
    for part in parts:
        old, new = bounding_box(part.union(), scop.context), \
            bounding_box(part.pieces(), scop.context)
        assert old.extents == new.extents
        assert all(b.intersect_domain(a.domain()).is_equal(a) and a.domain().is_subset(b.domain())
                   for a, b in zip(old.lower, new.lower))
        if part.copy_in is None:
            continue
        arr = scop.arrays[part.array]
        space = isl.Set(f"{{ {part.array}[{', '.join(f'a{d}' for d in range(len(arr.shape)))}] }}")
        full = space.align_params(bounds.get_space())
        hull = sp.copy_in_hull(part, full)
        plain = sp._box(part.copy_in).intersect(sp._box(part.union())).intersect_domain(
            part.copy_in.domain()).intersect_range(full.align_params(part.copy_in.get_space()))
        assert hull.is_equal(plain)


@pytest.mark.parametrize("name, prefix", [
    *STENCIL_BLOCKS,
    ("examples/syrk.c", "[n, m] -> { S0[i, j] -> [floor(i/32), floor(j/32)];"
     " S1[i, j, k] -> [floor(i/32), floor(j/32)] }"),
])
def test_algorithm1_counts_equal_isls_scan(name, prefix):
    """Algorithm 1 counts a block's footprint and the pairwise overlaps at the sample
    with the parameters fixed and dropped, boxes as the product of their extents
    (issue 22: isl's point-by-point count was a third of a heat-3d tile change):
    the same footprint, overlaps and decision as isl's count of the parametric
    union and intersections fixed at the sample."""
    import pathlib
    from polymagic.memory import scratchpad as sp
    root = pathlib.Path(__file__).resolve().parent.parent
    scop = parse((root / name).read_text())
    sample = {p: 100 for p in scop.size_params}

    def scan(rel: isl.Map) -> int:        # isl's own count, on the parametric relation
        for pos in range(rel.dim(isl.dim_type.param)):
            rel = rel.fix_val(isl.dim_type.param, pos, isl.Val(
                sample.get(rel.get_dim_name(isl.dim_type.param, pos), 0)))
        s = rel.intersect_domain(rel.domain().lexmin()).range()
        return int(s.count_val().to_python())
    pre = isl.UnionMap(prefix).intersect_domain(scop.domain)
    boxes = 0
    for part in partition(data_spaces(scop, pre)):
        total = scan(part.union())
        assert sp._volume(part.union(), sample) == total > 0
        overlap = 0
        for i, a in enumerate(part.spaces):
            for b in part.spaces[i + 1:]:
                n = scan(a.relation.intersect(b.relation))
                fixed = sp._fixed(a.relation, sample).intersect(sp._fixed(b.relation, sample))
                assert sp._volume(fixed, sample, fixed=True) == n
                boxes += sp._box_count(fixed.intersect_domain(
                    fixed.domain().lexmin()).range()) is not None
                overlap += n
        if len(part.spaces) > 1 and not any(d.nonconstant_reuse for d in part.spaces):
            assert f"{overlap / total:.3g}×" in reuse(part, 0.3, sample)[1]
    assert boxes > 0          # the product of extents was taken
