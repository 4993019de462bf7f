"""Helper functions and math calls in a C cell (issue 19, items 2 and 7).

Loop-free functions of the cell called from the kernel are inlined (the kernel is
the void function no other calls); C math functions run as the same functions
on the GPU, the emulator and the CPU.  Every accepted kernel runs through the
pipeline: emulator result == CPU reference (the user's own C, helpers and all).
Recursion, function pointers, while loops and data-dependent loop bounds are
refused with a located error that says why.
"""
from __future__ import annotations

import pytest

from polymagic import expr as E
from polymagic.errors import UnsupportedError
from polymagic.frontend.c import parse_c

from pipeline_check import check

ROWNORM = """\
static inline double sq(double x) { return x * x; }

void rownorm(int n, int m, const double A[n][m], double r[n]) {
  for (int i = 0; i < n; i++) {
    r[i] = 0.0;
    for (int j = 0; j < m; j++)
      r[i] += sq(A[i][j]);
  }
}
"""

MATH = """\
#include <math.h>
void f(int n, const double A[n], const float X[n], double B[n], float Y[n]) {
  for (int i = 0; i < n; i++) {
    B[i] = sqrt(fabs(A[i])) + exp(-A[i] * A[i]) + log(1.0 + fabs(A[i])) + pow(A[i], 2.0)
           + fmin(A[i], 0.5) * fmax(A[i], -0.5) + sin(A[i]) * cos(A[i])
           + floor(A[i] * 3.0) + ceil(A[i] * 3.0);
    Y[i] = sqrtf(fabsf(X[i])) + expf(X[i]) + fminf(X[i], 0.25f) + floorf(X[i] * 2.0f)
           + atan2f(X[i], 2.0f) + hypotf(X[i], 1.5f) + roundf(X[i] * 4.0f);
    B[i] += atan2(A[i], 0.5) + fmod(A[i] * 7.0, 0.75) + log10(2.0 + A[i]) + cbrt(A[i])
            + trunc(A[i] * 5.0) + fma(A[i], 3.0, 1.0) + copysign(1.0, A[i]) + tanh(A[i]);
  }
}
"""

BRANCHY = """\
#include <math.h>
static float relu(float x) { if (x < 0) return 0; return x; }
static double clamp(double x, double lo, double hi) {
  double y = x;
  if (y < lo)
    y = lo;
  else if (y > hi) {
    y = hi;
  }
  return y;
}
static inline int idx(int i, int j) { return i * 4 + j; }
static double get(const double *a, int k) { return a[k]; }
static double norm2(double x, double y) { double s = x * x; s += y * y; return sqrt(s); }
int half(double v) { return v / 2; }              /* converts to int, as C does */

void g(int n, const double A[n], const float X[n], double B[4 * n], float Y[n], double Z[n]) {
  for (int i = 0; i < n; i++) {
    Y[i] = relu(X[i]);
    Z[i] = half(A[i] * 7.0) + norm2(get(A, i), clamp(A[i], -0.25, 0.25));
    for (int j = 0; j < 4; j++)
      B[idx(i, j)] = clamp(A[i] * j, -1.0, 1.0);
  }
}
"""


_check = check


def test_row_norm_with_static_inline_helper_matches_cpu():
    compiled = _check(ROWNORM, {"n": 19, "m": 23})
    scop = compiled.scop
    assert scop.name == "rownorm" and len(scop.statements) == 2
    aij = E.Access("A", (E.Var("i"), E.Var("j")))
    assert scop.statements[1].body.value == E.Binary("*", aij, aij)
    assert "sq(" not in compiled.cuda


def test_math_functions_match_cpu():
    compiled = _check(MATH, {"n": 37})
    for f in ("sqrt(", "exp(", "fabs(", "pow(", "fmin(", "fmax(", "floor(", "ceil(",
              "sqrtf(", "expf(", "fminf(", "floorf(", "atan2f(", "hypotf(", "roundf(",
              "atan2(", "fmod(", "log10(", "cbrt(", "trunc(", "fma(", "copysign("):
        assert f in compiled.cuda, f


def test_branching_helpers_array_arguments_and_conversions_match_cpu():
    compiled = _check(BRANCHY, {"n": 29})
    by_target = {st.body.target.array: st for st in compiled.scop.statements}
    # idx() inlines into an affine subscript: a flat access with a known relation
    assert str(by_target["B"].writes[0].relation).replace(" ", "").endswith(
        "->B[4i+j]}")
    # half() returns int: the conversion is kept
    assert any(isinstance(x, E.Cast) and x.ctype == "int"
               for x in E.walk(by_target["Z"].body.value))


def test_the_kernel_is_the_void_function_no_other_calls():
    src = ("double unused(double x) { return x; }\n" + ROWNORM.replace(
        "static inline double sq", "double sq"))
    assert parse_c(src).name == "rownorm"
    with pytest.raises(UnsupportedError, match="only one function per cell") as e:
        parse_c("void f(int n) {\n}\nvoid g(int n) {\n}\n")
    assert (e.value.line, e.value.col) == (3, 6)


VOID_HELPERS = """\
static void axpy(int n, double a, const double *x, double *y) {
  for (int i = 0; i < n; i++)
    y[i] += a * x[i];
}
static void scale_row(int m, double A[][m], int i, double s) {
  for (int j = 0; j < m; j++) {
    double t = A[i][j] * s;
    A[i][j] = t;
  }
}
static void bump(double *y, int i, double v) { v = v * 2; y[i] += v; return; }
static inline double sq(double v) { return v * v; }

void k(int n, int m, double alpha, double A[n][m], double x[m], double y[m], double z[n]) {
  axpy(m, alpha, x, y);
  for (int i = 0; i < n; i++) {
    double t = sq(z[i]);
    scale_row(m, A, i, 0.5 + A[i][0]);
    bump(z, i, t + A[i][1]);
  }
}
"""


def test_void_helpers_are_inlined_as_blocks_and_match_cpu():
    compiled = _check(VOID_HELPERS, {"n": 13, "m": 7, "alpha": 1.5})
    scop = compiled.scop
    # the helpers' loops became loops of the nest; their names do not clash
    assert [st.iterators for st in scop.statements] == [
        ("i_1",), ("i",), ("i",), ("i", "j"), ("i", "j"), ("i",), ("i",), ("i",)]
    assert [st.line for st in scop.statements] == [3, 17, 5, 7, 8, 11, 11, 11]
    # a parameter the body assigns, or whose argument reads an array, is a local copy
    assert scop.statements[5].text == "double v;"


BY_VALUE = """\
static void shift(int m, double *a, double *b, int i, double s) {
  for (int j = 0; j < m - 1; j++)
    a[j] -= s + 1.5;
  b[i] = s * s;
}
void k(int n, double B[n], double C[n]) {
  for (int i = 0; i < n; i++)
    shift(n, B, C, i, B[i]);
}
"""


def test_an_argument_is_read_before_the_helper_writes_its_array():
    """C passes B[i] by value: the helper's writes to B must not change s (a bare
    array element argument is copied to a local, found by the inline fuzz)."""
    compiled = _check(BY_VALUE, {"n": 11})
    first = compiled.scop.statements[0]
    assert first.text == "double s;" and first.body.value == E.Access("B", (E.Var("i"),))


H = "void f(int n, double A[n], int L[n]) {\n"

REFUSED = [
    # (source, words of the message, line, column)
    ("double fact(double x) { return x <= 1 ? 1 : x * fact(x - 1); }\n" + H +
     "  for (int i = 0; i < n; i++)\n    A[i] = fact(A[i]);\n}\n",
     ["recursion", "'fact' calls itself"], 1, 49),
    ("double g(double x);\ndouble h(double x) { return g(x) + 1; }\n"
     "double g(double x) { return h(x); }\n" + H +
     "  for (int i = 0; i < n; i++)\n    A[i] = g(A[i]);\n}\n",
     ["recursion", "recursive through"], 3, 29),
    ("void f(int n, double A[n], double (*op)(double)) {\n"
     "  for (int i = 0; i < n; i++)\n    A[i] = op(A[i]);\n}\n",
     ["function pointer 'op'"], 1, 36),
    (H + "  int i = 0;\n  while (i < n) {\n    A[i] = 0;\n    i++;\n  }\n}\n",
     ["while loops are not supported"], 3, 3),
    (H + "  for (int i = 0; i < n; i++)\n    for (int j = 0; j < L[i]; j++)\n"
     "      A[j] = 0;\n}\n", ["data-dependent loop bounds", "'L'"], 3, 25),
    ("double s(int n, double x) {\n  double t = 0;\n  for (int k = 0; k < n; k++) t += x;\n"
     "  return t;\n}\n" + H + "  for (int i = 0; i < n; i++)\n    A[i] = s(n, A[i]);\n}\n",
     ["helper 's'", "loop-free"], 3, 3),
    ("double w(double *a, double x) { a[0] = x; return x; }\n" + H +
     "  for (int i = 0; i < n; i++)\n    A[i] = w(A, 1.0);\n}\n",
     ["helper 'w'", "writes to arrays belong in the kernel"], 1, 33),
    ("double g(double x) { return x * n; }\n" + H +
     "  for (int i = 0; i < n; i++)\n    A[i] = g(A[i]);\n}\n",
     ["helper 'g'", "uses 'n'"], 1, 33),
    ("double g(double x) { return x; }\n" + H +
     "  for (int i = 0; i < n; i++)\n    g(A[i]);\n}\n", ["value of helper 'g' is unused"], 4, 5),
    ("void g(double *a, int i) { a[i] = 0; }\n" + H +
     "  for (int i = 0; i < n; i++)\n    A[i] = g(A, i);\n}\n", ["returns void"], 4, 12),
    ("void g(double *a, int i) {\n  if (i > 2) return;\n  a[i] = 0;\n}\n" + H +
     "  for (int i = 0; i < n; i++)\n    g(A, i);\n}\n", ["return is only allowed"], 2, 14),
    ("double g(double x) { if (x > 0) return x; }\n" + H +
     "  for (int i = 0; i < n; i++)\n    A[i] = g(A[i]);\n}\n", ["without returning"], 1, 20),
]


@pytest.mark.parametrize("src,words,line,col", REFUSED)
def test_refused_constructs_are_located_and_say_why(src, words, line, col):
    with pytest.raises(UnsupportedError) as e:
        parse_c(src)
    for w in words:
        assert w in e.value.reason, e.value.reason
    assert (e.value.line, e.value.col) == (line, col), str(e.value)
    assert f"line {line}, column {col}" in str(e.value)
