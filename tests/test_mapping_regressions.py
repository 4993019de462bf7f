"""Programs the differential fuzzer found to break the pipeline (docs/fuzz-findings.md),
each run end to end in the emulator against the CPU reference."""
from __future__ import annotations

import pytest

from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

CASES = {
    # 1: two sibling host loops named alike gave a kernel the same parameter twice
    "sibling-host-loops": ("""
void fz(int N, float A[2 * N + 1][N + 2], double D[N + 1][N + 1]) {
  for (int i = 0; i <= N; i++) {
    for (int j = 0; j < N; j++) {
      if (j < i) { A[N][0] = 0.125 * A[i + N][0]; } else { A[i + N][1] = 0.125 * A[j + N][1]; }
    }
    for (int j = 0; j < N; j++) { A[-j + N][j] = 0.375 * D[j][i]; }
  }
}""", [{"N": 1}, {"N": 7}], {}),
    # 2: isl failed to coalesce the dependences of a strided loop
    "strided-coalesce": ("""
void fz(int N, double A[2 * N + 2][N + 1]) {
  for (int i = 0; i < N; i++) {
    A[i][i] = 0.0625 * A[1][0];
    for (int j = 0; j < N; j += 2)
      for (int k = 0; k < N; k++)
        A[i + 1][k] = 0.375 * A[2 * j + 1][k];
  }
}""", [{"N": 1}, {"N": 6}], {}),
    # 5: a ?: loop bound printed without parentheses never ran its loop
    "select-bound": ("""
void fz(int M, int T, double A[M + 1][M + 1][M + 1]) {
  for (int t = 0; t < T; t++) {
    double acc0 = 0.0;
    for (int i = 0; i <= M - 2; i++) { acc0 = 0.0625 * A[i][i][i]; }
  }
}""", [{"M": 1, "T": 1}, {"M": 19, "T": 2}], {}),
    # 6: a guard on thread ids with an else branch above a kernel
    "thread-guard-else": ("""
void fz(int M, int A[M + 1][M + 1][M + 1], double B[M + 4]) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < i; j++)
      A[j][j][i] = A[i][j][j];
  for (int i = 2; i < 5; i++)
    for (int j = 0; j < M; j++)
      B[i + j] = 0.125 * B[j];
}""", [{"M": 1}, {"M": 9}], {"tile": (6, 1)}),
    # 13: a temporary's shared buffer was never copied out (live-out read isl's full
    # dependences as [w -> r] -> A instead of w -> [r -> A]), so a later kernel read 0
    "temporary-live-out": ("""
void fz(int N, float A[N + 1][N + 1], float B[N + 1][N + 1][N + 1]) {
  double acc0 = 0.0;
  for (int i = 0; i <= N; i++) {
    double acc1 = 0.0;
    for (int j = 0; j < i; j++) {
      acc1 += 0.125 * B[j][i][i];
    }
    A[i][i] = 0.0625 * acc1;
  }
}""", [{"N": 1}, {"N": 14}], {}),
    # 14: a register loaded from a shared element that copy minimisation (rightly) never
    # copied in, because the loop overwrites it first: the emulator saw the read
    "register-overwritten-first": ("""
void fz(int M, float A[2 * M + 1], double E[2 * M + 3][2 * M + 2][M + 3]) {
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < M; j++) {
      A[j] = 0.25 * fmin(E[i - j + M][j - i + M][i], E[M + 2][i + M + 2][j + 3]);
    }
  }
}""", [{"M": 1}, {"M": 12}], {"block": (8, 3, 16), "shared_mem": 2048}),
    # 15: the same, with the overwriting reference under a sub-tile loop that may not
    # run: the register moves inside that loop instead of loading an undefined value
    "register-overwritten-in-inner-loop": ("""
void fz(int M, int T, double A[1][M + 1]) {
  for (int t = 0; t < T; t++) {
    for (int i = 0; i < M; i++) {
      A[0][i] = 0.0625;
    }
  }
}""", [{"M": 1, "T": 1}, {"M": 9, "T": 4}], {"tile": (8,)}),
    # 16: a register hoisted over a loop whose inner loop is empty for some points
    # loaded (and stored back) an element no one copied in
    "register-point-without-iterations": ("""
void fz(int M, float D[M + 1]) {
  for (int j = 0; j < M; j++) {
    for (int k = 0; k < j; k++) {
      D[k] *= 0.75;
    }
  }
}""", [{"M": 2}, {"M": 40}], {"tile": (32,), "block": (32, 2)}),
    # 21: a superposed kernel whose statement has no instance at these sizes: its block
    # range was empty without a space (isl_set_from_union_set failed)
    "superposed-empty-range": ("""
void fz(int N, double beta, float A[N + 3][2 * N + 1], double B[N + 1][2 * N + 1], double C[2 * N + 1][2 * N + 1][2 * N + 2], float D[N + 1][N + 1], double E[N + 2][1][2 * N + 1]) {
  for (int i = N - 2; i >= 0; i--) {
    for (int j = 0; j < i; j++) {
      if (j + 1 < N) {
        A[1][2 * j + 1] = 0.25 * B[i][j + i] * beta + 0.125 * C[j + 1][2 * i + 2][2 * i + 3];
      } else {
        A[i + 2][N - j - 1] = 0.375 * D[j][N - i - 1] * beta + 0.0625 * A[2][j] + 0.0625 * A[i + 1][N - j - 1];
      }
    }
    C[i + 1][i + 1][N - i + 1] = 0.25 * fmax(C[i][i + 1][N - i + 1], C[i + 1][i][N - i + 1]) + 0.0625;
    for (int j = 0; j < N; j++) {
      E[i + 2][0][j + i] = 0.125 * E[i][0][j + i] * beta + 0.125 * E[i + 3][0][j + i] + 0.125 * C[2 * j + 1][2 * i + 1][j];
    }
  }
}""", [{"N": 1}, {"N": 4}, {"N": 9}], {"block": (1, 64), "shared_mem": 2048}),
}


@pytest.mark.parametrize("shared", ["auto", "none"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fuzzer_findings_stay_fixed(name, shared):
    src, sizes_list, kw = CASES[name]
    for sizes in sizes_list:
        opts = Options(sizes=sizes, target="emulator", shared=shared, **kw)
        report = run(compile_source(src, opts), opts)
        assert report.ok, report.message


# 20: isl treats block/thread ids as parameters of one thread, for which kernels with
# disjoint id guards commute: it launched S3's one-thread kernel before S1's (which
# reads what S3 overwrites); the host AST is now generated with the kernels cut out
KERNEL_ORDER = """
void fz(int N, int M, double alpha, double A[9][N + 12], double B[6][M + 1], float C[M + N + 6]) {
  for (int i = 0; i < 4; i++) {
    A[i + 2][5] = 0.25 * A[2 * i + 2][2 * i + 5] * alpha + 0.0625 * A[i][N - i + 3] + 0.0625;
  }
  for (int i = 0; i <= M - 2; i++) {
    for (int j = 2; j < 5; j++) {
      B[j + 1][i + 1] = 0.375 * B[j + 1][i] + 0.0625 * C[i + 3];
    }
    C[i + 5] = 0.0625 * C[i + 6] + 0.0625 * C[i + 7] * alpha;
  }
  for (int i = 0; i <= N - 1; i++) {
    C[i + 2] = 0.125 * C[i + 5] + 0.25 * C[i] + 0.0625 * fmax(C[i + 3], C[i + 4]);
  }
}"""


def _launches(body):
    from polymagic import kir
    for s in body:
        if isinstance(s, kir.Launch):
            yield s.kernel
        elif isinstance(s, kir.Loop):
            yield from _launches(s.body)
        elif isinstance(s, kir.If):
            yield from _launches(s.then)
            yield from _launches(s.orelse)


@pytest.mark.parametrize("sizes", [{"N": 22, "M": 2}, {"N": 5, "M": 9}])
def test_kernels_with_disjoint_thread_guards_keep_their_order(sizes):
    opts = Options(sizes=sizes, target="emulator", require_gain=False)
    compiled = compile_source(KERNEL_ORDER, opts)
    order = [s for k in _launches(compiled.program.host)
             for s in compiled.program.kernels[k].summary.split("[")[1].split("]")[0].split(",")]
    assert order == ["S0", "S2", "S1", "S3"]
    report = run(compiled, opts)
    assert report.ok, report.message


def test_every_kernel_generated_alone_matches_the_cpu():
    """The per-kernel AST path (host tree with kernels grouped and cut, one tree per
    kernel; ``Options.per_kernel``) on programs that do not need it: same results."""
    for name in ("sibling-host-loops", "thread-guard-else", "temporary-live-out"):
        src, sizes_list, kw = CASES[name]
        for sizes in sizes_list:
            opts = Options(sizes=sizes, target="emulator", per_kernel=True, **kw)
            report = run(compile_source(src + "\n", opts), opts)
            assert report.ok, (name, report.message)


# 36: tiles 33,34 over 3x32 threads (seed 9494000156): the sequential members of the
# three-statement band (per-statement parametric values, ``M``, ``N + T``) were
# sub-tiled with no buffer to stage in them; isl's AST generator spent more than
# 40M operations on the sub-tile band (a CompileError after 60-150 s).  A band whose
# sub-tiles stage nothing is now mapped without them: about 1 s.
UNSTAGED_SUB_TILES = """
void fz(int N, int M, int T, double beta, double A[N + T + 6][2 * M + T + 2], float B[M + N + 1][N + 1][M + 1], double C[M + 1][N + 1]) {
  for (int t = 0; t < T; t++) {
    for (int i = 8 - 1; i >= 2; i--) {
      for (int j = i + 1; j < N; j++) {
        for (int k = 0; k < M; k++) {
          A[i - 2][2 * k + 2] *= 0.75;
        }
      }
    }
    for (int i = 1; i < T; i++) {
      A[i + 2][T - i] = 0.125 * A[i + 2][T - i - 1] + 0.0625 * A[i + 2][T - i + 2] * beta + 0.0625;
    }
    for (int i = 1; i <= N - 2; i++) {
      for (int j = 1; j < M; j++) {
        A[i][j] = 0.25 * A[i + 1][j + 1] + 0.0625 * B[j - i + N][i][j] + 0.0625 * C[j - 1][i + 1] + 0.0625;
      }
    }
  }
}"""


def test_sub_tiles_without_buffers_are_not_generated():
    from polymagic.options import make_parser, options_from_namespace
    ns = make_parser().parse_args("--tile 33,34 --block 3,32 --shared-mem 512B --delta 0.0 "
                                  "--no-vector --target emulator --size N=19,M=24,T=4".split())
    opts = options_from_namespace(ns)
    from cpu_clock import cpu_seconds       # CPU time: a loaded machine slows the wall clock
    t0 = cpu_seconds()
    compiled = compile_source(UNSTAGED_SUB_TILES, opts)
    assert cpu_seconds() - t0 < 20
    assert any("not sub-tiled: no buffer to stage" in n for n in compiled.note_lines)
    report = run(compiled, opts)
    assert report.ok, report.message
