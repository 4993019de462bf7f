"""isl's scheduler under a CPU-time limit (fuzz finding 32): its integer programs
ignore isl's operation budget, so each attempt runs in a helper process first; past
``schedule_seconds`` (a hidden schedule option) Feautrier's scheduler is asked, and
past that too the source order is used.  Every fallback schedule must still map, run
and match the CPU."""
from __future__ import annotations

import pytest

from polymagic import schedule as S
from polymagic.frontend import parse
from polymagic.deps import compute_dependences
from polymagic.options import Options, ScheduleOptions
from polymagic.compiler import clear_caches, compile_source
from polymagic.runtime.run import run
from test_end_to_end import EXAMPLES, KERNELS, _source

EXTRA = EXAMPLES.parent / "benchmarks" / "kernels"


def _slow_isl(monkeypatch, also_feautrier: bool = False) -> None:
    """Make the 'isl' algorithm (and, optionally, Feautrier's) time out."""
    real = S._bounded_schedule

    def bounded(scop, deps, context, algorithm, options):
        if algorithm == "isl" or also_feautrier:
            raise S.TimedOut("forced by the test")
        return real(scop, deps, context, algorithm, options)
    monkeypatch.setattr(S, "_bounded_schedule", bounded)
    clear_caches()


#: the examples and the extra benchmark kernels (the 3-d heat stencil included: its
#: dependences keep their stencil pieces, deps.coalesce_within_hulls)
ROUND_TRIP = sorted((*EXAMPLES.glob("*.c"), *EXTRA.glob("*.c")))


@pytest.mark.parametrize("path", ROUND_TRIP, ids=lambda p: p.stem)
def test_the_helpers_schedule_is_isl_own(path):
    """The scheduler runs once, in the helper process, on the schedule constraints'
    text; the tree rebuilt here from its text is equal to isl's own schedule of those
    constraints (issue 22), over the very domain object this process built (a parsed
    domain loses its redundant constraints, which the AST generator would see)."""
    import islpy as isl
    scop = parse(path.read_text(), "c")
    deps = compute_dependences(scop)
    got = S._isl_schedule(scop, deps)
    dom = scop.domain.intersect_params(scop.context)
    sc = isl.ScheduleConstraints.on_domain(dom).set_context(scop.context)
    sc = sc.set_validity(deps.validity).set_coincidence(deps.validity)
    sc = sc.set_proximity(deps.validity)
    own = isl.ScheduleConstraints.read_from_str(sc.get_ctx(), sc.to_str()).compute_schedule()
    assert got.plain_is_equal(own) and got.get_map().is_equal(own.get_map())
    assert str(got.get_domain()) == str(dom)


def test_the_scheduler_runs_once(monkeypatch):
    """Not a second time in the parent after the child's run."""
    import islpy as isl
    calls = []
    real = isl.ScheduleConstraints.compute_schedule
    monkeypatch.setattr(isl.ScheduleConstraints, "compute_schedule",
                        lambda sc: calls.append(1) or real(sc))
    scop = parse(_source("jacobi-2d"), "c")
    S._isl_schedule(scop, compute_dependences(scop))
    assert calls == []          # the child's call is not counted here


def test_a_slow_attempt_is_abandoned():
    """A limit below what the scheduler needs ends in the source order, with a note."""
    scop = parse(_source("gemm"), "c")
    notes: list = []
    sched = S._isl_schedule(scop, compute_dependences(scop), notes,
                            ScheduleOptions(schedule_seconds=1e-4))
    assert notes and "source order" in str(notes[0]) and "took more than" in str(notes[0])
    assert str(sched) == str(S.source_order(scop))


@pytest.mark.parametrize("name", ["gemm", "jacobi-2d", "fdtd-2d", "lu", "atax", "seidel-2d"])
def test_feautrier_schedule_runs(monkeypatch, name):
    _slow_isl(monkeypatch)
    opts = Options(sizes=KERNELS[name][0], target="emulator")
    compiled = compile_source(_source(name), opts)
    assert any("Feautrier" in n for n in compiled.note_lines), compiled.note_lines
    report = run(compiled, opts)
    assert report.ok, report.message
    clear_caches()


def test_source_order_runs(monkeypatch):
    _slow_isl(monkeypatch, also_feautrier=True)
    opts = Options(sizes=KERNELS["jacobi-2d"][0], target="emulator")
    compiled = compile_source(_source("jacobi-2d"), opts)
    assert any("source order" in n for n in compiled.note_lines)
    assert run(compiled, opts).ok
    clear_caches()


#: fuzz campaign 9898 (superposition forced): statements whose guard is never true
NEVER_RUNS = """
void fz(int N, double A[N + 5][N + 3], double B[N + 1][N + 2]) {
  for (int i = 0; i <= N - 1; i++) {
    if ((i) % 2 == 0 && (i) % 2 == 1) {
      A[i][i + 2] = 0.375 * A[i + 2][i + 2] + 0.0625 * A[4][2];
      B[i][i + 2] = 0.25 * A[i + 2][i];
    }
  }
}
"""


def test_empty_domains_keep_the_single_mapping():
    """No statement instance runs: the superposition is not planned (its tree had
    nothing to scan and isl's AST build failed, reported as a spent budget)."""
    opts = Options(sizes={"N": 16}, target="emulator", tile=(10,), registers=False,
                   require_gain=False)
    c = compile_source(NEVER_RUNS, opts)
    assert not c.schedule.use_superposition
    assert any("empty iteration domains" in n for n in c.note_lines), c.note_lines
    assert run(c, opts).ok


def test_only_the_operation_limit_counts_as_a_spent_budget():
    import islpy as isl
    from polymagic.isl_util import OperationBudget, budget_spent
    s = isl.Set("[n] -> { [i, j] : 0 <= i < n and 0 <= j < i and i mod 3 = 1 }")
    m = isl.Map("[n] -> { [i, j] -> [i + j, j] }")
    with pytest.raises(isl.Error) as spent:
        with OperationBudget(s.get_ctx(), 5):
            s.apply(m).lexmin()
    assert budget_spent(spent.value)
    with pytest.raises(isl.Error) as other:
        isl.Set("{ [i] : i < }")
    assert not budget_spent(other.value)
