"""PolyBench's C as written (issue 32): typedefs (``typedef char base;`` in nussinov,
``typedef double vec[N];``), ``char`` arrays, chained assignments (deriche's
``a1 = a5 = k;``) and encoding noise (a byte-order mark, no-break spaces).

Every accepted form runs on the emulator and on ``--target openmp`` and must match
the CPU reference, which compiles the cell as written (cleaned of encoding noise);
the refused forms are located at the user's line and column and named.
"""
from __future__ import annotations

import pytest

from polymagic import expr as E
from polymagic.compiler import compile_source
from polymagic.errors import UnsupportedError
from polymagic.frontend.c import parse_c
from polymagic.options import Options
from polymagic.runtime.run import run

NUSSINOV = """\
#define N 60
#define _PB_N n
#define DATA_TYPE int
#define POLYBENCH_1D(var, dim1, ddim1) var[dim1]
#define POLYBENCH_2D(var, dim1, dim2, ddim1, ddim2) var[dim1][dim2]
typedef char base;
#define match(b1, b2) (((b1)+(b2)) == 3 ? 1 : 0)
#define max_score(s1, s2) ((s1 >= s2) ? s1 : s2)
static void kernel_nussinov(int n, base POLYBENCH_1D(seq,N,n), DATA_TYPE POLYBENCH_2D(table,N,N,n,n))
{
  int i, j, k;
#pragma scop
  for (i = _PB_N-1; i >= 0; i--) {
    for (j=i+1; j<_PB_N; j++) {
      if (j-1>=0)
        table[i][j] = max_score(table[i][j], table[i][j-1]);
      if (i+1<_PB_N)
        table[i][j] = max_score(table[i][j], table[i+1][j]);
      if (j-1>=0 && i+1<_PB_N) {
        if (i<j-1)
          table[i][j] = max_score(table[i][j], table[i+1][j-1]+match(seq[i], seq[j]));
        else
          table[i][j] = max_score(table[i][j], table[i+1][j-1]);
      }
      for (k=i+1; k<j; k++) {
        table[i][j] = max_score(table[i][j], table[i][k] + table[k+1][j]);
      }
    }
  }
#pragma endscop
}
"""

#: scalar and array typedefs, one naming another, one in a block, a cast to one
TYPEDEFS = """\
#define N 24
typedef double DATA_TYPE;
typedef float real;
typedef real row[N];
typedef DATA_TYPE vec[N];
void kernel(int n, vec x, const vec y, row R[N], real s) {
  for (int i = 0; i < N; i++) {
    typedef long wide;
    wide w = i * 3;
    real t = R[i][i] * s;
    x[i] = y[i] * t + (DATA_TYPE) w;
    R[i][0] = (real) x[i];
  }
}
"""

#: deriche's chains on scalars, array chains, a compound chain through an int array
#: (the double value truncated on the way, as in C)
CHAINS = """\
void kernel(int n, double alpha, double A[n], double B[n], int C[n], double D[n]) {
  double k, a1, a5, a2, a6;
  int c1, c2;
  k = alpha * 1.5;
  a1 = a5 = k;
  a2 = a6 = k * (alpha - 1.0);
  c1 = c2 = 1;
  for (int i = 0; i < n; i++) {
    A[i] = B[i] = a1 * D[i] + a2 + c1;
    D[i] += C[i] = B[i] * 2.7 + a5 + a6 * c2;
    B[i] = A[i] -= D[i] / 3;
  }
}
"""

NOISE = "\ufeff" + """\
void kernel(int n, double A[n]) {
\u00a0\u00a0for (int i = 0; i < n; i++)\u200b
    A[i] = 2 * A[i] + 1;\r
}
\x00"""


def _check(src: str, sizes: dict, target: str):
    opts = Options(sizes=sizes, target=target, cpu_code=target == "openmp")
    compiled = compile_source(src, opts)
    report = run(compiled, opts)
    assert report.checked and report.target == target
    assert report.ok, f"{report.message} (max rel err {report.max_rel_err})"
    return compiled


@pytest.mark.parametrize("target", ["emulator", "openmp"])
@pytest.mark.parametrize("src,sizes", [
    (NUSSINOV, {"n": 30}), (TYPEDEFS, {"n": 5, "s": 0.75}),
    (CHAINS, {"n": 37, "alpha": 0.25}), (NOISE, {"n": 19})],
    ids=["nussinov", "typedefs", "chains", "noise"])
def test_matches_reference(src, sizes, target):
    _check(src, sizes, target)


def test_nussinov_seq_is_a_char_array():
    scop = parse_c(NUSSINOV)
    assert scop.arrays["seq"].ctype == "char" and scop.arrays["table"].ctype == "int"
    assert [p.name for p in scop.params] == ["n", "seq", "table"]


def test_char_array_cuda_compiles_with_nvrtc():
    """NVRTC needs no GPU: the char array's CUDA (a __shared__ char copy) compiles."""
    from polymagic.codegen.nvrtc import compile_cuda
    compiled = compile_source(NUSSINOV, Options())
    assert "char *__restrict__ seq" in compiled.cuda
    ptx = compile_cuda(compiled.cuda, "sm_90").decode(errors="replace")
    assert all(f".entry {k}" in ptx for k in compiled.program.kernels)


def test_typedefs_resolve_to_c_types():
    scop = parse_c(TYPEDEFS)
    assert scop.arrays["x"].ctype == "double" and scop.arrays["x"].shape == (E.Int(24),)
    assert scop.arrays["R"].ctype == "float" and len(scop.arrays["R"].shape) == 2
    assert {p.name: p.ctype for p in scop.params}["s"] == "float"
    with pytest.raises(UnsupportedError, match="const array 'y'") as e:
        parse_c(TYPEDEFS.replace("x[i] = y[i]", "y[i] = x[i]"))
    assert e.value.line == 11


def test_chains_are_sequential_statements():
    """``a1 = a5 = k`` is ``a5 = k`` then ``a1 = a5`` (the inner target's new value)."""
    scop = parse_c(CHAINS)
    bodies = [(s.body.target.array, s.body.op, s.body.value) for s in scop.statements]
    assert bodies[1] == ("a5", "=", E.Access("k", ()))
    assert bodies[2] == ("a1", "=", E.Access("a5", ()))
    i = E.Var("i")
    assert ("D", "+=", E.Access("C", (i,))) in bodies          # D[i] += C[i] = ...
    k = bodies.index(("D", "+=", E.Access("C", (i,))))
    assert bodies[k - 1][0] == "C"


def test_noise_is_cleaned_for_the_reference():
    scop = parse_c(NOISE)
    assert "\ufeff" not in scop.source and "\u00a0" not in scop.source
    assert "\r" not in scop.source and "\x00" not in scop.source


H = "void f(int n, double A[n], int C[n]) {\n"

ERRORS = [
    # (source, words in the message, line, column)
    ("typedef struct { double re, im; } cplx;\n" + H + "}",
     ["typedef of a struct", "'cplx'"], 1, 35),
    ("typedef union { double d; long l; } U;\n" + H + "}",
     ["typedef of a union", "'U'"], 1, 37),
    ("typedef int (*op)(int, int);\n" + H + "}",
     ["function pointer", "'op'"], 1, 14),
    ("typedef enum { RED, GREEN } colour;\n" + H + "}",
     ["typedef of an enum", "'colour'"], 1, 29),
    (H + "  typedef struct { int a; } S;\n}", ["typedef of a struct", "'S'"], 2, 29),
    ("typedef unsigned char byte;\nvoid f(int n, byte A[n]) {\n}",
     ["unsupported element type 'unsigned char'"], 2, 20),
    (H + "  double y;\n  for (int i = 0; i < n; i++)\n    A[i] = (y = 3) + 1;\n}",
     ["assignment inside an expression"], 4, 13),
    (H + "  int k;\n  for (int i = 0; i < n; i++)\n    A[k = 2] = 1;\n}",
     ["assignment inside a subscript"], 4, 7),
    (H + "  int k;\n  for (int i = 0; i < n; i++)\n    C[k] = k = 2;\n}",
     ["unsequenced", "'k'"], 4, 5),
]


@pytest.mark.parametrize("src,words,line,col", ERRORS)
def test_refusals_are_located_and_named(src, words, line, col):
    with pytest.raises(UnsupportedError) as e:
        parse_c(src)
    msg = str(e.value)
    assert all(w in msg for w in words), msg
    assert (e.value.line, e.value.col) == (line, col), msg
    assert f"line {line}, column {col}" in msg and "Traceback" not in msg
