"""Arrays declared in the function body (issue 32 item 2; ``frontend/c/local_arrays``).

``double z[N];`` in the body is scratch storage: a ``temp`` array (a copy per
iteration of the loops enclosing the declaration, then the declared shape), never
a parameter, never transferred.  Every case runs on the emulator and on
``--target openmp`` against the CPU reference (the source compiled as written),
and its CUDA compiles with NVRTC; a read before any write, an initialiser, a
data-dependent subscript and an access past the declared extent are refused at
the user's line and column.
"""
from __future__ import annotations

import pytest

from polymagic import expr as E
from polymagic.codegen.nvrtc import compile_cuda
from polymagic.compiler import compile_source
from polymagic.errors import BoundsError, UnsupportedError
from polymagic.frontend import parse
from polymagic.options import Options
from polymagic.runtime.run import run

HEADER = """#define N 40
#define _PB_N n
#define DATA_TYPE double
#define SCALAR_VAL(x) x
#define POLYBENCH_1D(var, dim1, ddim1) var[dim1]
"""

DURBIN = HEADER + """
static void kernel_durbin(int n, DATA_TYPE POLYBENCH_1D(r,N,n), DATA_TYPE POLYBENCH_1D(y,N,n))
{
 DATA_TYPE z[N];
 DATA_TYPE alpha;
 DATA_TYPE beta;
 DATA_TYPE sum;
 int i,k;
#pragma scop
 y[0] = -r[0];
 beta = SCALAR_VAL(1.0);
 alpha = -r[0];
 for (k = 1; k < _PB_N; k++) {
   beta = (1-alpha*alpha)*beta;
   sum = SCALAR_VAL(0.0);
   for (i=0; i<k; i++) {
      sum += r[k-i-1]*y[i];
   }
   alpha = - (r[k] + sum)/beta;
   for (i=0; i<k; i++) {
      z[i] = y[i] + alpha*y[k-i-1];
   }
   for (i=0; i<k; i++) {
     y[i] = z[i];
   }
   y[k] = alpha;
 }
#pragma endscop
}
"""

#: a fresh array per iteration of i (privatisation by the declaration)
IN_LOOP = """#define M 16
void rows(int n, int m, double A[n][m], double B[n][m]) {
  for (int i = 0; i < n; i++) {
    double t[M];
    for (int j = 0; j < m; j++)
      t[j] = A[i][j] * 2.0;
    for (int j = 0; j < m; j++)
      B[i][j] = t[j] + t[m - 1 - j];
  }
}
"""

#: a 2-d local sized by the int parameters declared before it
SIZED = """void sized(int n, int m, double A[n][m], double B[n][m]) {
  double T[n][m];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      T[i][j] = A[i][j] * A[i][j];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      B[i][j] = T[i][j] + T[n - 1 - i][j];
}
"""

#: declared in a triangular nest (copies indexed iterator - min), 2-d and int locals
TRIANGLE = """void tri(int n, double A[n][n], double B[n][n]) {
  for (int i = 1; i < n; i++)
    for (int j = i; j < n; j++) {
      double t[3][2];
      int c[2];
      for (int k = 0; k < 3; k++) { t[k][0] = A[i][j] * k; t[k][1] = A[j][i] + k; }
      c[0] = i; c[1] = j;
      B[i][j] = t[2][0] - t[1][1] + t[0][0] * c[0] + c[1];
    }
}
"""

#: PolyBench doitgen's sum[P] as a local declared at the top: written before read
#: in every (r, q) iteration, so expand_scratch expands it along r and q
DOITGEN = """#define P 12
void doitgen(int nr, int nq, int np, double A[nr][nq][np], double C4[np][np]) {
  double sum[P];
  for (int r = 0; r < nr; r++)
    for (int q = 0; q < nq; q++) {
      for (int p = 0; p < np; p++) {
        sum[p] = 0.0;
        for (int s = 0; s < np; s++)
          sum[p] += A[r][q][s] * C4[s][p];
      }
      for (int p = 0; p < np; p++)
        A[r][q][p] = sum[p];
    }
}
"""

CASES = {"durbin": (DURBIN, {"n": 20}, "z", (40,)),
         "in_loop": (IN_LOOP, {"n": 20, "m": 12}, "t", None),
         "sized": (SIZED, {"n": 9, "m": 7}, "T", None),
         "triangle": (TRIANGLE, {"n": 13}, "t", None),
         "doitgen": (DOITGEN, {"nr": 5, "nq": 6, "np": 12}, "sum", (12,))}


def _run(src: str, sizes: dict[str, int], target: str):
    opts = Options(sizes=sizes, target=target, cpu_code=target == "openmp")
    compiled = compile_source(src, opts)
    report = run(compiled, opts)
    assert report.checked, report.message
    assert report.ok, f"{report.message} (max rel err {report.max_rel_err})"
    return compiled


@pytest.mark.parametrize("target", ["emulator", "openmp"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_reference(case, target):
    src, sizes, name, shape = CASES[case]
    _run(src, sizes, target)


@pytest.mark.parametrize("case", sorted(CASES))
def test_local_is_a_temp_never_a_parameter(case):
    """The local is a temp (no parameter of the bound callable, never transferred)
    with its declared shape as the trailing dimensions."""
    src, _, name, shape = CASES[case]
    scop = parse(src, "c")
    assert name not in {p.name for p in scop.params}
    arr = scop.arrays[name]
    assert arr.kind == "temp" and arr.local is not None and arr.local.name == name
    if shape is not None:
        assert arr.shape == tuple(E.Int(d) for d in shape)


def test_in_loop_local_has_a_copy_per_iteration():
    """Declared in the i loop: one row per iteration of i (C's fresh array), then M."""
    arr = parse(IN_LOOP, "c").arrays["t"]
    assert len(arr.shape) == 2 and arr.shape[1] == E.Int(16) and arr.local.rank == 1


def test_doitgen_local_is_expanded_along_the_parallel_loops():
    """Declared at the top, written before read in every (r, q) iteration:
    expand_scratch gives each iteration its own copy, no copy-out (a local)."""
    scop = parse(DOITGEN, "c")
    (exp,) = scop.expansions
    assert exp.array == "sum" and exp.loops == ("r", "q") and exp.copy_out is None
    assert scop.arrays[exp.expanded].local == scop.arrays["sum"].local


def test_openmp_allocates_the_declared_shape():
    compiled = _run(DURBIN, {"n": 20}, "openmp")
    assert "calloc((size_t) pm_max(40, 1), sizeof(double))" in compiled.cpu.source
    assert "free(z);" in compiled.cpu.source


def test_local_is_not_transferred():
    """The emulator's transfer plan moves r and y, never z."""
    opts = Options(sizes={"n": 20}, target="emulator")
    report = run(compile_source(DURBIN, opts), opts)
    assert set(report.transfers["per_array"]) == {"r", "y"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cuda_compiles_with_nvrtc(case):
    src = CASES[case][0]
    compiled = compile_source(src, Options())
    ptx = compile_cuda(compiled.cuda, "sm_90").decode(errors="replace")
    for k in compiled.program.kernels:
        assert f".entry {k}" in ptx


# -- refusals --------------------------------------------------------------------

REFUSED = {
    "read_first": ("#define N 8\nvoid f(int n, double B[n]) {\n  double t[N];\n"
                   "  for (int i = 0; i < n; i++)\n    B[i] = t[i] + 1.0;\n}",
                   (5, 12), ["local array 't' is read before it is written", "t[0]"]),
    "fresh_per_iteration": (
        "#define M 8\nvoid f(int n, int m, double A[n][m], double B[n][m]) {\n"
        "  for (int i = 0; i < n; i++) {\n    double t[M];\n"
        "    for (int j = 0; j < m; j++)\n      B[i][j] = 2.0 * t[j];\n"
        "    for (int j = 0; j < m; j++)\n      t[j] = A[i][j];\n  }\n}",
        (6, 23), ["local array 't' is read before it is written"]),
    "partly_written": ("void f(int n, double A[n], double B[n]) {\n  double t[n];\n"
                       "  for (int i = 0; i < n - 1; i++)\n    t[i] = A[i];\n"
                       "  for (int i = 0; i < n; i++)\n    B[i] = t[i];\n}",
                       (6, 12), ["local array 't' is read before it is written"]),
    "compound_first": ("void f(int n, double A[n], double B[n]) {\n  double t[n];\n"
                       "  for (int i = 0; i < n; i++) {\n    t[i] += A[i];\n"
                       "    B[i] = t[i];\n  }\n}",
                       (4, 5), ["local array 't' is read before it is written"]),
    "initialiser": ("void f(int n, double B[n]) {\n  double z[3] = {0};\n"
                    "  for (int i = 0; i < n; i++) B[i] = 1.0;\n}",
                    (2, 10), ["initialisers of local arrays are not supported ('z')"]),
    "unsized": ("void f(int n, double B[n]) {\n  double z[];\n"
                "  for (int i = 0; i < n; i++) B[i] = 1.0;\n}",
                (2, 10), ["local array 'z' needs an extent"]),
    "gather": ("void f(int n, int idx[n], double B[n]) {\n  double z[n];\n"
               "  for (int i = 0; i < n; i++) z[i] = 1.0;\n"
               "  for (int i = 0; i < n; i++) B[i] = z[idx[i]];\n}",
               (4, 40), ["non-affine subscript of local array 'z'", "idx"]),
    "static": ("void f(int n, double B[n]) {\n  static double z[4];\n"
               "  for (int i = 0; i < n; i++) B[i] = 1.0;\n}",
               (2, 17), ["static local arrays are not supported ('z')"]),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refusals_name_the_construct(case):
    src, (line, col), parts = REFUSED[case]
    with pytest.raises(UnsupportedError) as e:
        parse(src, "c")
    assert (e.value.line, e.value.col) == (line, col), str(e.value)
    for p in parts:
        assert p in str(e.value)


def test_out_of_bounds_local_refused_before_running():
    """m > M: the C would write past t; refused with the reference as written."""
    opts = Options(sizes={"n": 4, "m": 20}, target="emulator")
    with pytest.raises(BoundsError) as e:
        run(compile_source(IN_LOOP, opts), opts)
    msg = str(e.value)
    assert (e.value.line, e.value.col) == (6, 7), msg
    assert "t[j] writes t[16]" in msg and "outside t[16]" in msg


def test_no_local_arrays_no_change():
    """A function without local arrays parses as before (no isl work added)."""
    src = "void f(int n, double A[n]) {\n  for (int i = 0; i < n; i++) A[i] = 1.0;\n}"
    assert not [a for a in parse(src, "c").arrays.values() if a.local is not None]


def test_shadowing_local_array_in_a_block():
    src = ("void f(int n, double A[n], double B[n]) {\n  double t[4];\n"
           "  for (int k = 0; k < 4; k++) t[k] = 1.0;\n"
           "  for (int i = 0; i < n; i++) {\n    double t[2];\n"
           "    t[0] = A[i]; t[1] = A[i] * 2;\n    B[i] = t[0] + t[1];\n  }\n}")
    scop = parse(src, "c")
    assert sum(1 for a in scop.arrays.values() if a.local is not None) == 2
    _run(src, {"n": 10}, "emulator")
