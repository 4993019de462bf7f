"""Private local scalars (issue 16 item 4; seed 004 §4.1-4.2).

A scalar declared in a loop body is expanded into a temp array by the C front end
(so the dependence analysis sees each instance's copy); the schedule stage fuses
the statements that share it into one band (:mod:`polymagic.schedule.private`) and
the mapping keeps it in a register of the thread owning the point: one kernel for
gemm with a local accumulator, the result stored once, no temp allocated.  Every
case checks the emulator against the CPU and counts kernels and global stores.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic.compiler import compile_source
from polymagic.memory.counts import predict_for
from polymagic.options import Options
from polymagic.runtime.run import run

GEMM = """
void gemm(int NI, int NJ, int NK, float alpha, float beta, float C[NI][NJ],
          float A[NI][NK], float B[NK][NJ]) {
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      float acc = 0;
      for (int k = 0; k < NK; k++)
        acc += A[i][k] * B[k][j];
      C[i][j] = alpha * acc + beta * C[i][j];
    }
}
"""

TWO_MM = """
void twomm(int NI, int NJ, int NK, int NL, double alpha, double beta, double tmp[NI][NJ],
           double A[NI][NK], double B[NK][NJ], double C[NJ][NL], double D[NI][NL]) {
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      double s = 0.0;
      for (int k = 0; k < NK; k++)
        s += alpha * A[i][k] * B[k][j];
      tmp[i][j] = s;
    }
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NL; j++) {
      double acc = D[i][j] * beta;
      for (int k = 0; k < NJ; k++)
        acc += tmp[i][k] * C[k][j];
      D[i][j] = acc;
    }
}
"""

SYRK = """
void syrk(int N, int M, double alpha, double beta, double C[N][N], double A[N][M]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j <= i; j++) {
      double acc = 0.0;
      for (int k = 0; k < M; k++)
        acc += A[i][k] * A[j][k];
      C[i][j] = beta * C[i][j] + alpha * acc;
    }
}
"""

TEMP = """
void twice(int N, int M, double A[N][M], double B[N][M]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {
      double t = A[i][j] * 2;
      B[i][j] = t + t;
    }
}
"""

IFS = """
void ifs(int N, int M, double A[N][M], double B[N][M], double x[M]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {
      double t = 0.0;
      if (i > j) t = A[i][j] * 2; else t = x[j];
      double u = t * 3;
      if (j % 2 == 0) B[i][j] = t + u; else B[i][j] = u;
    }
}
"""

TWO_LOCALS = """
void two(int N, int M, double A[N][M], double B[N][M], double C[N][M], double D[N][M]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {
      double lo = 0.0, hi = 0.0;
      for (int k = 0; k < M; k++) { lo += A[i][k] * B[k][j]; hi += A[i][k] - B[k][j]; }
      C[i][j] = lo;
      D[i][j] = hi * lo;
    }
}
"""

INNER = """
void inner(int N, float C[N][N], float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0;
      for (int k = 0; k < N; k++) { float p = A[i][k] * B[k][j]; acc += p; }
      C[i][j] = acc;
    }
}
"""

AFTER = """
void after(int N, int M, double A[N][M], double y[N], double z[N]) {
  for (int i = 0; i < N; i++) {
    double s = 0.0;
    for (int j = 0; j < M; j++)
      s += A[i][j];
    y[i] = s * 2;
    z[i] = s + y[i];
  }
}
"""

DEPTHS = """
void depths(int N, int M, int K, double A[N][M], double B[N][M][K], double y[N]) {
  for (int i = 0; i < N; i++) {
    double s = 0.0;
    for (int j = 0; j < M; j++) {
      double r = 0.0;
      for (int k = 0; k < K; k++)
        r += B[i][j][k];
      A[i][j] = r;
      s += r * 0.5;
    }
    y[i] = s;
  }
}
"""


def _run(src: str, sizes: dict, **kw):
    opts = Options(sizes=sizes, target="emulator", **kw)
    c = compile_source(src, opts)
    r = run(c, opts)
    assert r.ok, r.message
    return c, r


def _no_temps(c) -> None:
    """No temp is allocated, passed to a kernel or transferred."""
    assert [n for n, d in c.program.arrays.items() if d.kind == "temp"] == []
    temps = {n for n, a in c.scop.arrays.items() if a.kind == "temp"}
    assert not any(temps & set(k.arrays) for k in c.program.kernels.values())


@pytest.mark.parametrize("sizes", [dict(NI=70, NJ=66, NK=50), dict(NI=300, NJ=260, NK=200),
                                   dict(NI=1, NJ=1, NK=1), dict(NI=5, NJ=5, NK=5),
                                   dict(NI=5, NJ=3, NK=1)])
def test_gemm_with_a_local_accumulator_is_one_kernel_storing_c_once(sizes):
    c, r = _run(GEMM, sizes)
    assert len(c.program.kernels) == 1
    assert r.counters["stores"] == sizes["NI"] * sizes["NJ"]
    _no_temps(c)
    k = c.program.kernels["kernel0"]
    assert any(d.name.startswith("pm_r") and d.name.endswith("_acc") for d in k.registers)
    # the k loop keeps its sub-tiles and the shared buffers of A and B (seed 000 §4.1)
    assert {s.name for s in k.shared} >= {"sh0_A", "sh0_B"}
    assert sum(predict_for(c, sizes)["kernel0"].stores for _ in [0]) == r.counters["stores"]


def test_gemm_model_counts_equal_the_emulator():
    sizes = dict(NI=70, NJ=66, NK=50)
    c, r = _run(GEMM, sizes)
    pred = predict_for(c, sizes)
    assert sum(p.loads for p in pred.values()) == r.counters["loads"]
    assert sum(p.stores for p in pred.values()) == r.counters["stores"]


def test_gemm_without_registers_keeps_the_temp_in_memory():
    """--no-registers: the scalar stays an array (still one kernel, still right)."""
    c, r = _run(GEMM, dict(NI=37, NJ=33, NK=20), registers=False)
    assert len(c.program.kernels) == 1


def test_gemm_with_shared_all_buffers_the_scalar_without_copies():
    """--shared all buffers every partition, the private scalar's too: a block-local
    buffer never loaded nor stored (seed 000 §3.1.4), still one kernel."""
    sizes = dict(NI=37, NJ=33, NK=20)
    c, r = _run(GEMM, sizes, shared="all")
    assert len(c.program.kernels) == 1
    assert r.counters["stores"] == sizes["NI"] * sizes["NJ"]
    _no_temps(c)


@pytest.mark.parametrize("sizes", [dict(NI=70, NJ=66, NK=50, NL=40),
                                   dict(NI=37, NJ=41, NK=33, NL=35),
                                   dict(NI=1, NJ=1, NK=1, NL=1), dict(NI=5, NJ=5, NK=5, NL=5)])
def test_2mm_with_local_accumulators_is_one_kernel_per_product(sizes):
    c, r = _run(TWO_MM, sizes)
    assert len(c.program.kernels) == 2
    assert r.counters["stores"] == sizes["NI"] * sizes["NJ"] + sizes["NI"] * sizes["NL"]
    _no_temps(c)


@pytest.mark.parametrize("sizes", [dict(N=70, M=66), dict(N=45, M=37), dict(N=1, M=1),
                                   dict(N=5, M=5)])
def test_syrk_with_a_local_accumulator_is_one_kernel(sizes):
    c, r = _run(SYRK, sizes)
    assert len(c.program.kernels) == 1
    n = sizes["N"]
    assert r.counters["stores"] == n * (n + 1) // 2
    _no_temps(c)


@pytest.mark.parametrize("src,sizes,stores", [
    (TEMP, dict(N=70, M=66), 1), (TEMP, dict(N=1, M=1), 1), (TEMP, dict(N=5, M=3), 1),
    (IFS, dict(N=70, M=66), 1), (IFS, dict(N=1, M=1), 1), (IFS, dict(N=5, M=3), 1),
    (TWO_LOCALS, dict(N=70, M=66), 2), (TWO_LOCALS, dict(N=5, M=5), 2),
    (TWO_LOCALS, dict(N=1, M=1), 2),
])
def test_temporaries_ifs_and_two_locals_stay_in_registers(src, sizes, stores):
    """A temporary (``double t = A*2; B = t + t``), locals set in ``if`` branches,
    two locals of one declaration: one kernel, each output stored once."""
    c, r = _run(src, sizes)
    assert len(c.program.kernels) == 1
    assert r.counters["stores"] == stores * sizes["N"] * sizes["M"]
    _no_temps(c)


@pytest.mark.parametrize("n", [70, 5, 1])
def test_a_scalar_declared_inside_the_k_loop(n):
    """``float p = A*B; acc += p;`` inside k: p has one element per k at a point, each
    read right after its write, so one register per point holds it."""
    c, r = _run(INNER, dict(N=n))
    assert len(c.program.kernels) == 1
    assert r.counters["stores"] == n * n
    _no_temps(c)


@pytest.mark.parametrize("sizes", [dict(N=70, M=66), dict(N=5, M=5), dict(N=1, M=1)])
def test_a_local_used_after_an_inner_loop(sizes):
    c, r = _run(AFTER, sizes)
    assert len(c.program.kernels) == 1
    c, r = _run(AFTER, sizes, mapping="single")
    assert len(c.program.kernels) == 1
    assert r.counters["stores"] == 2 * sizes["N"]
    _no_temps(c)


@pytest.mark.parametrize("sizes", [dict(N=40, M=36, K=7), dict(N=5, M=5, K=5),
                                   dict(N=1, M=1, K=1)])
def test_locals_at_different_depths(sizes):
    """``s`` per i, ``r`` per (i, j), ``s`` carried across j: isl's schedule spreads
    them over five bands, the nest as written keeps them in one kernel (i on
    threads), both scalars in registers, ``A`` and ``y`` stored once."""
    for mapping in ("superposition", "single"):
        c, r = _run(DEPTHS, sizes, mapping=mapping)
        assert len(c.program.kernels) == 1
        assert r.counters["stores"] == sizes["N"] * sizes["M"] + sizes["N"]
        _no_temps(c)


D3 = """
void d3(int N, int M, int K, double A[N][M][K], double B[N][M][K]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      for (int k = 0; k < K; k++) {
        double t = A[i][j][k] * 2;
        B[i][j][k] = t * t;
      }
}
"""


@pytest.mark.parametrize("sizes", [dict(N=40, M=36, K=7), dict(N=1, M=1, K=1)])
def test_a_temporary_three_loops_deep(sizes):
    c, r = _run(D3, sizes)
    assert len(c.program.kernels) == 1
    assert r.counters["stores"] == sizes["N"] * sizes["M"] * sizes["K"]
    _no_temps(c)


def test_a_scalar_shared_across_iterations_is_not_private():
    """A scalar declared outside the loops carries values between iterations: it
    stays an array in global memory (and the result stays right)."""
    src = """
void carry(int N, double A[N], double B[N]) {
  double s = 0.0;
  for (int i = 0; i < N; i++) { s = s + A[i]; B[i] = s; }
}
"""
    c, r = _run(src, dict(N=50))
    assert "s" in c.program.arrays


def test_fusion_note_and_no_fusion_without_private_scalars():
    c, _ = _run(GEMM, dict(NI=5, NJ=5, NK=5))
    assert any("fused into one band" in line for line in c.note_lines)
    plain = GEMM.replace("float acc = 0;", "C[i][j] *= beta;").replace(
        "acc += A[i][k] * B[k][j];", "C[i][j] += alpha * A[i][k] * B[k][j];").replace(
        "C[i][j] = alpha * acc + beta * C[i][j];", "")
    c, _ = _run(plain, dict(NI=5, NJ=5, NK=5))
    assert not any("fused into one band" in line for line in c.note_lines)


@pytest.mark.parametrize("src", [GEMM, SYRK, DEPTHS, INNER], ids=["gemm", "syrk", "depths",
                                                                   "inner"])
def test_the_cuda_compiles_with_nvrtc(src):
    """The registers (one per point a thread owns, unrolled constant-trip point loops)
    are valid CUDA for sm_90."""
    from polymagic.codegen.nvrtc import compile_cuda
    c = compile_source(src, Options(target="emulator"))
    ptx = compile_cuda(c.cuda, "sm_90").decode(errors="replace")
    for k in c.program.kernels:
        assert f".entry {k}" in ptx
    _no_temps(c)


@pytest.mark.parametrize("source,sizes", [
    ("gemm-scalar", {"N": 300}), ("gemm-scalar", {"N": 5}), ("gemm-scalar", {"N": 130}),
    ("2mm-scalar", {"ni": 140, "nj": 131, "nk": 20, "nl": 129}),
    ("syrk-scalar", {"n": 150, "m": 21}), ("syrk-scalar", {"n": 3, "m": 2})])
def test_issue16_target_kernels_match_the_cpu(source, sizes):
    """The done-when kernels of issue 16 (scalar accumulators, alpha, beta) under the
    default 8 x 8 register tiles: full and partial tiles on every axis, and below one
    tile, emulator == CPU with every output stored once."""
    src = (pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "kernels"
           / f"{source}.c").read_text()
    c, r = _run(src, sizes)
    _no_temps(c)
    n = sizes.get("N") or sizes.get("n")
    outputs = {"gemm-scalar": n * n if n else 0, "syrk-scalar": n * (n + 1) // 2 if n else 0,
               "2mm-scalar": sizes.get("ni", 0) * (sizes.get("nj", 0) + sizes.get("nl", 0))}
    assert r.counters["stores"] == outputs[source]
