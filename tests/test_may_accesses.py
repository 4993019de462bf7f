"""Issue 19 items 5-7: gathers and data-dependent conditions as may-accesses, scatter
updates as atomics, and the forms still refused.

Each kernel runs end to end (emulator == CPU reference, the CUDA compiles with
NVRTC: tests/pipeline_check.py); the emulator's atomics are checked on hand-made
Kernel IR (atomic updates of one element do not race, an atomic update and a plain
access of one element do)."""
from __future__ import annotations

import islpy as isl
import numpy as np
import pytest

from pipeline_check import check
from polymagic import kir
from polymagic.compiler import compile_source
from polymagic.deps import compute_dependences
from polymagic.errors import BoundsError, EmulatorError, UnsupportedError
from polymagic.expr import Access, Assign, Binary, Call, Int, Var
from polymagic.frontend import parse
from polymagic.options import Options
from polymagic.runtime.emulator import build
from polymagic.runtime.run import run


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("POLYMAGIC_CACHE", str(tmp_path_factory.getbasetemp() / "pmcache"))


GATHER = """
void gather(int n, int m, double y[n], double x[m], int perm[n]) {
  for (int j = 0; j < n; j++)
    y[j] = 2.0 * x[perm[j]] + x[j / 10];
}
"""

RELU = """
void relu(int n, int m, float A[n][m], float B[n][m]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      if (A[i][j] > 0.5f)
        B[i][j] = A[i][j];
      else
        B[i][j] = 0.1f * A[i][j];
}
"""

HIST = """
void hist(int n, int nb, double h[nb], int c[nb], long l[nb], int bin[n], double w[n],
          int k[n]) {
  for (int i = 0; i < n; i++) {
    h[bin[i]] += w[i];
    c[bin[i]] += k[i];
    l[bin[i]] -= k[i];
  }
}
"""

HIST_F = """
void histf(int n, int nb, float h[nb], int bin[n], float w[n]) {
  for (int i = 0; i < n; i++)
    h[bin[i]] += w[i];
}
"""

MAXSCATTER = """
void maxs(int n, int nb, double m[nb], float mf[nb], int mi[nb], int bin[n], double v[n],
          int k[n]) {
  for (int i = 0; i < n; i++) {
    m[bin[i]] = fmax(m[bin[i]], v[i]);
    mf[bin[i]] = fminf(mf[bin[i]], (float)v[i]);
    mi[bin[i]] = max(k[i], mi[bin[i]]);
  }
}
"""


def test_gather_is_a_may_read_and_the_loop_stays_parallel():
    scop = parse(GATHER)
    st = scop.statements[0]
    may = [a for a in st.accesses if a.may]
    assert [(a.array, a.is_write) for a in may] == [("x", False)]
    whole = isl.Set("[n, m] -> { x[o] : 0 <= o < m }")
    assert may[0].relation.range().is_equal(whole)                 # the whole of x
    deps = compute_dependences(scop)
    assert deps.flow.is_empty() and deps.output.is_empty() and deps.anti.is_empty()
    compiled = check(GATHER, {"n": 300, "m": 37})
    assert "x[perm[" in compiled.cuda and "blockIdx.x" in compiled.cuda
    assert "x" in compiled.scop.global_only


def test_relu_if_keeps_its_condition_and_writes_are_may_writes():
    scop = parse(RELU)
    assert [s.guard is not None for s in scop.statements] == [True, True]
    assert all(a.may for s in scop.statements for a in s.writes)
    compiled = check(RELU, {"n": 70, "m": 45})
    assert "> 0.5f)" in compiled.cuda and "if (!(" in compiled.cuda
    for target in ("openmp",):
        opts = Options(sizes={"n": 70, "m": 45}, target=target)
        assert run(compile_source(RELU, opts), opts).ok


@pytest.mark.parametrize("body, sizes", [
    ("    double acc = 0.0;\n    for (int j = 0; j < m; j++)\n      if (A[i][j] > 1.0)\n"
     "        acc += A[i][j];\n    s[i] = acc;\n", {"n": 50, "m": 30}),
    ("    double t = -1.0;\n    for (int j = 0; j < m; j++) {\n      double v = A[i][j];\n"
     "      if (v > 1.2)\n        t = v;\n    }\n    s[i] = t;\n", {"n": 40, "m": 9}),
])
def test_local_scalar_written_under_a_condition_stays_in_a_register(body, sizes):
    """A private scalar updated under a data-dependent condition: one kernel, the
    scalar in a register (the condition's local ``v`` stays in global memory)."""
    src = ("void f(int n, int m, double s[n], double A[n][m]) {\n"
           "  for (int i = 0; i < n; i++) {\n" + body + "  }\n}\n")
    compiled = check(src, sizes)
    assert len(compiled.program.kernels) == 1 and "pm_r0_" in compiled.cuda


def test_may_write_kills_no_earlier_write():
    """B[i] = 1 then, under a data-dependent condition, B[i] = 2, then C[i] = B[i]:
    both writes are sources of the read (the second may not happen)."""
    src = """
void f(int n, double A[n], double B[n], double C[n]) {
  for (int i = 0; i < n; i++) {
    B[i] = 1.0;
    if (A[i] > 1.0)
      B[i] = 2.0;
    C[i] = B[i];
  }
}
"""
    deps = compute_dependences(parse(src))
    srcs = set()
    deps.flow.foreach_map(lambda m: srcs.add(m.get_tuple_name(isl.dim_type.in_)
                                             + m.get_tuple_name(isl.dim_type.out)))
    assert {"S0S2", "S1S2"} <= srcs
    check(src, {"n": 100})


@pytest.mark.parametrize("src", [HIST, HIST_F])
def test_histogram_atomics(src):
    scop = parse(src)
    assert {s.atomic for s in scop.statements} == {"+"}
    deps = compute_dependences(scop)
    assert deps.validity.is_empty()                  # the updates commute
    compiled = check(src, {"n": 2000, "nb": 7})
    assert compiled.cuda.count("atomicAdd(") == len(scop.statements)
    assert "unsigned long long" in compiled.cuda or src is HIST_F
    from polymagic.report.kirtext import format_program     # --show kir says so too
    assert format_program(compiled.program).count("/* atomic + */") == len(scop.statements)


def test_max_scatter_atomics():
    scop = parse(MAXSCATTER)
    assert [s.atomic for s in scop.statements] == ["max", "min", "max"]
    compiled = check(MAXSCATTER, {"n": 1500, "nb": 5})
    assert "pm_atomic_max_double(" in compiled.cuda and "pm_atomic_min_float(" in compiled.cuda
    assert "atomicMax(&mi[" in compiled.cuda
    opts = Options(sizes={"n": 1500, "nb": 5}, target="openmp")
    assert run(compile_source(MAXSCATTER, opts), opts).ok


def test_if_max_scatter_is_an_atomic_max():
    """``if (v > m[b]) m[b] = v`` is ``m[b] = max(m[b], v)``: an atomic update."""
    src = """
void ifmax(int n, int nb, double m[nb], float w[nb], int bin[n], double v[n]) {
  for (int i = 0; i < n; i++) {
    if (v[i] > m[bin[i]]) m[bin[i]] = v[i];
    if (w[bin[i]] > v[i] * 2) w[bin[i]] = v[i] * 2;
  }
}
"""
    scop = parse(src)
    assert [(s.atomic, s.guard) for s in scop.statements] == [("max", None), ("min", None)]
    compiled = check(src, {"n": 1200, "nb": 6})
    assert "pm_atomic_max_double(" in compiled.cuda and "pm_atomic_min_float(" in compiled.cuda


def test_non_atomic_scatter_runs_in_order():
    """A scatter that is not an update (``x[perm[i]] = y[i]``) may write any element:
    its loop keeps its order (no race, the CPU's result)."""
    src = """
void scat(int n, double x[n], double y[n], int perm[n]) {
  for (int i = 0; i < n; i++)
    x[perm[i]] = y[i];
}
"""
    assert not compute_dependences(parse(src)).output.is_empty()
    check(src, {"n": 64})


def test_out_of_range_index_is_refused_before_anything_runs():
    opts = Options(sizes={"n": 50, "nb": 4}, target="emulator")
    compiled = compile_source(HIST_F, opts)
    bins = np.zeros(50, np.int32)
    bins[17] = 4
    h = np.zeros(4, np.float32)
    with pytest.raises(BoundsError) as e:
        run(compiled, opts, {"bin": bins, "h": h})
    msg = str(e.value)
    assert "bin[i] = 4 at i = 17" in msg and "0..3" in msg and "line 4" in msg, msg
    assert not h.any()


def test_cli_histogram_with_inputs(tmp_path):
    import subprocess
    import sys
    c = tmp_path / "hist.c"
    c.write_text(HIST_F)
    rng = np.random.default_rng(1)
    npz = tmp_path / "in.npz"
    np.savez(npz, bin=rng.integers(0, 9, 3000).astype(np.int32))
    out = subprocess.run([sys.executable, "-m", "polymagic", "run", str(c), "--size",
                          "n=3000,nb=9", "--inputs", str(npz), "--target", "emulator"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "check: OK" in out.stdout, out.stdout + out.stderr
    bad = tmp_path / "bad.npz"
    np.savez(bad, bin=np.full(3000, 9, np.int32))
    out = subprocess.run([sys.executable, "-m", "polymagic", "run", str(c), "--size",
                          "n=3000,nb=9", "--inputs", str(bad)], capture_output=True, text=True)
    assert out.returncode == 2 and "out-of-range index" in out.stderr + out.stdout
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("src, what", [
    ("void f(int n, double A[n], int len[n]) {\n  for (int i = 0; i < n; i++)\n"
     "    for (int j = 0; j < len[i]; j++)\n      A[i] += 1.0;\n}", "data-dependent loop bounds"),
    ("void f(int n, double A[n]) {\n  int i = 0;\n  while (i < n) {\n    A[i] = 0;\n"
     "    i++;\n  }\n}", "while loops"),
    ("void f(int n, double A[n]) {\n  for (int i = 0; i < n; i++)\n"
     "    if (A[i] > 0) {\n      A[i] = 0;\n      A[i] += 1;\n    }\n}",
     "the data-dependent condition reads 'A'"),
    ("void f(int n, double A[n], double *x) {\n  for (int i = 0; i < n; i++)\n"
     "    A[i] = x[(int)A[i]];\n}", "reads the double array 'A'"),
    ("static double g(double x) { return x > 1 ? g(x - 1) : x; }\nvoid f(int n, double A[n]) {"
     "\n  for (int i = 0; i < n; i++)\n    A[i] = g(A[i]);\n}", "recursion"),
    ("void f(int n, double A[n], double (*fp)(double)) {\n  for (int i = 0; i < n; i++)\n"
     "    A[i] = fp(A[i]);\n}", "function pointer"),
])
def test_still_refused(src, what):
    with pytest.raises(UnsupportedError) as e:
        parse(src)
    assert what in str(e.value) and "line" in str(e.value), str(e.value)


# ---- the emulator's atomics, on hand-made Kernel IR --------------------------------

def _program(body, grid=(4, 1, 1), block=(8, 1, 1)):
    n = Var("N")
    arrays = {"G": kir.ArrayDecl("G", "float", (n,)), "T": kir.ArrayDecl("T", "float", (n,))}
    k = kir.Kernel("k", body, block, ["G", "T"], [], [])
    return kir.Program("k", arrays, ["N"], {}, [kir.Launch("k", tuple(Int(g) for g in grid))],
                       {"k": k})


def _tid():
    return Binary("+", Binary("*", Var("pm_bx"), Int(8)), Var("pm_tx"))


def _atomic_add():
    return kir.Compute("S0", Assign(Access("G", (Int(0),)), "+=", Access("T", (_tid(),))),
                       atomic="+")


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffle"])
def test_emulator_atomic_updates_do_not_race(order):
    g, t = np.zeros(64, np.float32), np.ones(64, np.float32)
    build(_program([_atomic_add()]), "emulate").run({"G": g, "T": t}, {"N": 64}, order=order)
    assert g[0] == 32.0


def test_emulator_openmp_atomics():
    g, t = np.zeros(64, np.float32), np.ones(64, np.float32)
    build(_program([_atomic_add()], grid=(8, 1, 1)), "openmp").run({"G": g, "T": t}, {"N": 64})
    assert g[0] == 64.0


@pytest.mark.parametrize("plain", [
    kir.Compute("S1", Assign(Access("G", (Int(0),)), "+=", Int(1))),          # a plain update
    kir.Compute("S1", Assign(Access("T", (_tid(),)), "=", Access("G", (Int(0),)))),  # a read
])
def test_emulator_atomic_and_plain_access_race(plain):
    body = [_atomic_add(), kir.If(Binary("==", Var("pm_tx"), Int(3)), [plain])]
    g, t = np.zeros(64, np.float32), np.ones(64, np.float32)
    with pytest.raises(EmulatorError, match="data race on global array G, element 0"):
        build(_program(body), "emulate").run({"G": g, "T": t}, {"N": 64})


def test_emulator_atomic_max():
    body = [kir.Compute("S0", Assign(Access("G", (Int(0),)), "=",
                                     Call("fmaxf", (Access("G", (Int(0),)),
                                                    Access("T", (_tid(),))))), atomic="max")]
    g = np.zeros(64, np.float32)
    t = np.arange(64, dtype=np.float32)
    build(_program(body), "emulate").run({"G": g, "T": t}, {"N": 64}, order="shuffle")
    assert g[0] == 31.0
