"""Dependence analysis: the memory-based relations built from the access relations
equal isl's dataflow answer for may-sources, and a value-based query that exceeds
its operation budget falls back to the memory-based over-approximation (fuzz
finding 11) with a note, still giving the CPU's results."""
from __future__ import annotations

import pathlib

import pytest

from polymagic import deps
from polymagic.frontend import parse
from polymagic.options import DependenceOptions, Options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.c"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_memory_based_relations_equal_isl_dataflow(path):
    scop = parse(path.read_text(), "c")
    sched = scop.schedule.intersect_domain(scop.domain)
    got = deps.compute_dependences(scop)
    assert got.anti.is_equal(deps._flow(scop.writes, None, scop.reads, sched, None))
    assert got.input.is_equal(deps._flow(scop.reads, None, scop.reads, sched, None))
    assert got.notes == []


def test_finding_11_modulo_guard_is_analysed_exactly():
    """The program isl's dataflow engine spent minutes on (may-sources under an
    ``i % 2`` guard) is analysed without approximation."""
    src = (ROOT / "tests/fuzz/regressions/timeout-6ee8b4d20d.c").read_text()
    got = deps.compute_dependences(parse(src, "c"))
    assert got.notes == [] and not got.anti.is_empty()


def test_spent_budget_over_approximates_and_says_so():
    src = (ROOT / "examples/jacobi-1d.c").read_text()
    scop = parse(src, "c")
    exact = deps.compute_dependences(scop)
    approx = deps.compute_dependences(scop, DependenceOptions(value_based_operations=1))
    assert [str(n).split(":")[0] for n in approx.notes] == ["flow dependences", "output dependences"]
    assert exact.flow.is_subset(approx.flow) and not exact.flow.is_equal(approx.flow)
    assert exact.output.is_subset(approx.output)

    options = Options(sizes={"tsteps": 3, "n": 40}, target="emulator",
                      value_based_operations=1)
    compiled = compile_source(src, options)
    assert any("every earlier write" in n for n in compiled.note_lines)
    report = run(compiled, options)
    assert report.ok, report.message


EXTRA = sorted((ROOT / "benchmarks" / "kernels").glob("*.c"))


def _full_dependences(scop) -> "deps.isl.UnionMap":
    """Every pair of instances touching one element, at least one of them a write,
    in source order: the memory-based dependences, no kill, no simplification."""
    sched = scop.schedule.intersect_domain(scop.domain)
    before = sched.lex_lt_union_map(sched)
    w, r = scop.writes, scop.reads
    pairs = w.apply_range(w.reverse()).union(w.apply_range(r.reverse())).union(
        r.apply_range(w.reverse()))
    return pairs.intersect(before)


@pytest.mark.parametrize("path", EXAMPLES + EXTRA, ids=lambda p: p.stem)
def test_kept_pieces_are_the_same_relations_and_the_schedule_is_legal(path):
    """``coalesce_within_hulls`` (issue 22) changes how the dependences are written,
    not what they are: the validity relation equals the plain coalesced union, and
    the schedule isl finds from it respects every memory-based dependence."""
    from polymagic.isl_util import coalesce
    from polymagic.schedule import compute_schedule
    scop = parse(path.read_text(), "c")
    got = deps.compute_dependences(scop)
    plain = coalesce(got.flow.union(got.anti).union(got.output))
    assert got.validity.is_equal(plain)
    smap = compute_schedule(scop, got).schedule.get_map().intersect_domain(scop.domain)
    ordered = smap.lex_lt_union_map(smap)
    full = _full_dependences(scop).intersect_params(scop.context)
    assert full.is_subset(ordered)


def test_stencil_pieces_are_not_merged():
    """The seven neighbour reads of a 3-d 7-point stencil give seven constant-distance
    pieces per statement pair; plain ``coalesce`` merges them into one octahedron
    (no equalities left) that isl's scheduler works through for seconds."""
    import islpy as isl
    from polymagic.isl_util import coalesce
    scop = parse((ROOT / "benchmarks/kernels/heat-3d.c").read_text(), "c")
    got = deps.compute_dependences(scop)
    maps: list[isl.Map] = []
    got.flow.foreach_map(maps.append)
    cross = [m for m in maps if m.get_tuple_name(isl.dim_type.in_)
             != m.get_tuple_name(isl.dim_type.out)]
    assert cross and all(m.n_basic_map() == 7 for m in cross)
    assert all(coalesce(m).n_basic_map() == 1 for m in cross)
    # every kept piece is one distance vector: four equalities (t, i, j, k)
    for m in cross:
        for b in m.get_basic_maps():
            assert sum(1 for c in b.get_constraints() if c.is_equality()) == 4
