"""The OpenMP target's pragmas against the dependences of the printed tree (issue 32).

``cpu_legality.verify_marks`` is the last check before isl prints the CPU code: a
mark on a loop that carries a dependence is dropped.  These tests hand it a wrong
mark (the tiler never makes one on these kernels), check that the examples' every
pragma passes it, and run the two issue-32 kernels that failed their check through
FMA rounding alone (a Gram-Schmidt on more columns than rows, an LU solve), which
now match the reference exactly.
"""
from __future__ import annotations

import pathlib

import islpy as isl
import numpy as np
import pytest

from polymagic.codegen.cpu_legality import verify_marks
from polymagic.codegen.cpu_tiles import PARALLEL_MARK
from polymagic.compiler import compile_source
from polymagic.options import Options
from polymagic.runtime.run import run

ROOT = pathlib.Path(__file__).resolve().parent.parent

REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"
#: the issue's kernels, kept where the fuzzer's regressions run them too
GRAMSCHMIDT = (REGRESSIONS / "mismatch-openmp-gramschmidt.c").read_text()
LUDCMP = (REGRESSIONS / "mismatch-openmp-ludcmp.c").read_text()


def _openmp(source: str, sizes: dict, inputs: dict | None = None):
    opts = Options(sizes=sizes, target="openmp", cpu_code=True)
    compiled = compile_source(source, opts)
    return compiled, run(compiled, opts, inputs or {})


def _marks(tree: isl.Schedule) -> list[str]:
    out: list[str] = []

    def visit(node):
        if node.get_type() == isl.schedule_node_type.mark:
            out.append(node.mark_get_id().get_name())
        return True
    tree.get_root().foreach_descendant_top_down(visit)
    return out


def test_a_mark_on_the_dependence_carrying_loop_is_dropped():
    """gramschmidt's ``k`` loop carries every dependence of the nest: a parallel mark
    put on it by hand is removed, with a note; the same mark on the hoisted
    ``R[k][j] = 0`` band (parallel in both loops) stays."""
    opts = Options(sizes={"m": 20, "n": 30}, target="openmp", cpu_code=True)
    compiled = compile_source(GRAMSCHMIDT, opts)
    tree = compiled.schedule.schedule
    seq = tree.get_root().child(0)
    assert seq.get_type() == isl.schedule_node_type.sequence
    ctx = tree.get_ctx()
    for k in range(seq.n_children()):
        band = seq.child(k).child(0)
        assert band.get_type() == isl.schedule_node_type.band
        if band.band_n_member() > 1:
            band = band.band_split(1)
        mark = isl.Id(f"{PARALLEL_MARK}_{band.get_schedule_depth()}", context=ctx)
        tree = band.insert_mark(mark).get_schedule()
        seq = tree.get_root().child(0)
    checked, checks, notes = verify_marks(tree, compiled.deps.validity)
    verdicts = {c.statements: c.legal for c in checks}
    assert verdicts[("S4",)] is True
    assert verdicts[("S0", "S1", "S2", "S3", "S5", "S6")] is False
    assert len(_marks(checked)) == 1 and len(notes) == 1
    assert "carries a dependence" in str(notes[0]) and "S0" in str(notes[0])


@pytest.mark.parametrize("name", ["gemm", "lu", "seidel-2d", "jacobi-2d", "covariance",
                                  "gauss-seidel-2d", "sor-1d-seq", "fdtd-2d", "doitgen"])
def test_the_tilers_pragmas_all_pass_the_final_check(name):
    from test_cpu_target import SIZES
    opts = Options(sizes=SIZES[name], target="openmp", cpu_code=True)
    compiled = compile_source((ROOT / "examples" / f"{name}.c").read_text(), opts)
    assert all(c.legal for c in compiled.cpu.checks)
    assert len(compiled.cpu.checks) == sum(bool(b.parallel) + bool(b.simd)
                                           for b in compiled.cpu.bands)
    assert "dropped" not in compiled.cpu.summary()


def test_gramschmidt_more_columns_than_rows_matches_exactly():
    """The issue's failing case (m = 20, n = 30): columns 20-29 are rounding noise
    divided by rounding noise, so an FMA anywhere changed them completely.  Built
    with the reference's rounding, the OpenMP C matches bit for bit; the summary
    names the parallel ``k`` loop by its line (the hoisted ``R[k][j] = 0``)."""
    compiled, report = _openmp(GRAMSCHMIDT, {"m": 20, "n": 30})
    assert report.ok and report.max_abs_err == 0, report.message
    assert "k at line 12" in compiled.cpu.summary()


def test_ludcmp_matches_exactly():
    """The issue's false alarm: at n = 400 on random inputs, FMAs in the OpenMP C
    alone moved x by 2e-5 (relative 3e-7, against rtol 1e-9)."""
    n = 400
    _, report = _openmp(LUDCMP, {"n": n})
    assert report.ok and report.max_abs_err == 0, report.message


def test_a_real_error_still_fails():
    """The check keeps its tolerance: the OpenMP C of the same kernel with one
    coefficient off by 1e-7 (what a wrong order of a reduction would not come near,
    what a wrong value does) fails against the original's result."""
    from polymagic.runtime import openmp
    from polymagic.runtime.run import compare
    sizes = {"m": 30, "n": 20}
    wrong_src = GRAMSCHMIDT.replace("A[i][k] / R[k][k]", "A[i][k] / (R[k][k] * 1.0000001)")
    results = []
    for src in (GRAMSCHMIDT, wrong_src):
        compiled, _ = _openmp(src, sizes)
        args = {"A": np.random.default_rng(0).random((30, 20)), "R": np.zeros((20, 20)),
                "Q": np.zeros((30, 20))}
        openmp.module(compiled.scop, compiled.cpu).run({**args, **sizes})
        results.append(args["Q"])
    assert compare(results[0], results[1]).mismatches > 0


def test_openmp_runs_where_the_gpu_code_cannot_be_made():
    """Fuzz finding 50: isl fails on this nest's GPU mapping (its own internal error);
    the OpenMP C, printed from the schedule, does not need it: it runs and matches,
    and a note says there is no GPU code."""
    src = (REGRESSIONS / "compile-error-isl-dimensionality-32003000356.c").read_text()
    compiled, report = _openmp(src, {"N": 10, "K": 16})
    assert report.ok, report.message
    assert compiled.program.kernels == {} and compiled.cuda == ""
    assert any("no GPU code" in str(n) for n in compiled.notes)
