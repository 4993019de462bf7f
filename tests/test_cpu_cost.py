"""The CPU target's fork cost model (issue 32 item 6): a parallel loop whose work per
fork is below ``cpu_cost.MIN_WORK`` statement instances runs serially (and an untiled
schedule then in the source's own loop order); one above keeps its parallel loop; the
report says which at the sizes of the run.  Every run is checked against the CPU
reference; the parallel branches themselves are checked with ``cpu_min_work=0``."""
from __future__ import annotations

import pathlib

from polymagic.codegen.cpu_cost import MIN_WORK
from polymagic.compiler import compile_source
from polymagic.options import CompileOptions, Options
from polymagic.runtime.openmp import module
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

FLOYD = """
void kernel_floyd_warshall(int n, int path[n][n])
{
  for (int k = 0; k < n; k++)
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        path[i][j] = path[i][j] < path[i][k] + path[k][j] ? path[i][j]
                                                          : path[i][k] + path[k][j];
}
"""

TRISOLV = """
void kernel_trisolv(int n, double L[n][n], double x[n], double b[n])
{
  for (int i = 0; i < n; i++) {
    x[i] = b[i];
    for (int j = 0; j < i; j++)
      x[i] -= L[i][j] * x[j];
    x[i] = x[i] / L[i][i];
  }
}
"""


def _run(source: str, sizes: dict, **kw):
    opts = Options(sizes=sizes, target="openmp", cpu_code=True, **kw)
    compiled = compile_source(source, opts)
    report = run(compiled, opts)
    assert report.checked and report.ok, report.message
    return compiled, report


def test_default_threshold_is_the_models():
    assert CompileOptions().cpu_min_work == MIN_WORK == 100_000


def test_jacobi_1d_sweeps_run_serially_at_medium_size():
    """398 points per sweep: both sweeps serial, the source's order; the counts the
    function computes are barvinok's (n - 2 instances per fork)."""
    compiled, report = _run((EXAMPLES / "jacobi-1d.c").read_text(),
                            {"tsteps": 100, "n": 400})
    cpu = compiled.cpu
    assert [b.parallel for b in cpu.bands] == ["i", "i"]
    assert "if (pm_par[0])" in cpu.source and "if (pm_par[1])" in cpu.source
    assert module(compiled.scop, cpu).fork_work({"tsteps": 100, "n": 400}) == [398, 398]
    assert "i serial (398 instances per fork, below the 100000" in report.target_note
    assert "the source's loop order" in report.target_note
    assert "each parallel only from 100000 statement instances per fork" in cpu.summary()


def test_gemm_keeps_its_parallel_loop():
    compiled, report = _run((EXAMPLES / "gemm-polybench.c").read_text(),
                            {"ni": 200, "nj": 220, "nk": 240})
    assert not compiled.cpu.source_order          # tiled: the schedule's code serially too
    assert "i parallel (10604000 instances per fork)" in report.target_note


def test_no_parallel_loop_prints_the_source_order():
    """floyd-warshall: isl's schedule is a wavefront with no parallel loop; the
    source's k, i, j order runs instead (the wavefront's stride-n inner loop ran 2x
    slower than the serial C)."""
    compiled, report = _run(FLOYD, {"n": 37})
    cpu = compiled.cpu
    assert cpu.fork_work == () and cpu.source_order
    assert "#pragma omp parallel" not in cpu.source
    assert "serial in the source's loop order" in cpu.summary()


def test_trisolv_both_branches_match_the_reference():
    """trisolv's columns are parallel in the schedule: serial row order at n=60 by the
    model, the parallel columns when forced (cpu_min_work=0); both match the C."""
    compiled, report = _run(TRISOLV, {"n": 60})
    assert "the source's loop order" in report.target_note
    compiled, report = _run(TRISOLV, {"n": 60}, cpu_min_work=0)
    assert "at these sizes: i parallel (60 instances per fork), i parallel (30" \
        in report.target_note
