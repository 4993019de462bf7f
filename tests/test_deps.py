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
    assert got.anti.is_equal(deps._flow(scop.writes, None, scop.reads, sched))
    assert got.input.is_equal(deps._flow(scop.reads, None, scop.reads, sched))
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
