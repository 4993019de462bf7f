"""Preprocessing of a C cell (issue 19, item 1): object- and function-like
``#define``, standard headers and ``#pragma`` lines, through the system C
preprocessor where needed, with errors still at the user's line and column.

Every kernel runs through the whole pipeline: emulator result == CPU reference
(the reference compiles the user's own text, macros and headers included), and
the generated CUDA compiles with NVRTC.
"""
from __future__ import annotations

import pytest

from polymagic import expr as E
from polymagic.errors import SourceError, UnsupportedError
from polymagic.frontend.c import parse_c

from pipeline_check import check

GEMM_IDX = """\
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#define N 24
#define IDX(i, j) ((i)*N + (j))
void gemm(double alpha, double C[N*N], const double A[N*N], const double B[N*N]) {
#pragma omp parallel for
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[IDX(i, j)] += alpha * A[IDX(i, k)] * B[IDX(k, j)];
}
"""

HEADER_MACROS = """\
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#define SCALE(x) (0.5 * (x))
void wave(size_t n, int64_t m, double A[n][m], double B[n][m]) {
  #pragma omp parallel for collapse(2)
  for (size_t i = 0; i < n; i++)
    #pragma GCC ivdep
    for (int64_t j = 0; j < m; j++)
      B[i][j] = SCALE(sin(M_PI * A[i][j])) + (double)INT64_C(2);
}
"""


_check = check


def test_gemm_with_index_macro_and_pragma_matches_cpu():
    compiled = _check(GEMM_IDX, {}, tile=(8, 8, 8), block=(4, 4, 1))
    (st,) = compiled.scop.statements
    assert st.line == 11
    # the printers see the expanded subscripts, as a flat affine access
    assert st.body.target == E.Access("C", (E.Binary("+", E.Binary("*", E.Var("i"), E.Int(24)),
                                                     E.Var("j")),))
    assert "IDX" not in compiled.cuda and "#pragma omp" not in compiled.cuda


def test_header_macros_and_standard_integer_types_match_cpu():
    compiled = _check(HEADER_MACROS, {"n": 13, "m": 11}, tile=(8, 8))
    scop = compiled.scop
    assert [(p.name, p.ctype) for p in scop.params][:2] == [("n", "long"), ("m", "long")]
    (st,) = scop.statements
    assert st.line == 10
    # M_PI is the header's value; SCALE and INT64_C are expanded
    assert "3.14159265358979323846" in E.CPrinter()(st.body.value)
    assert "M_PI" not in compiled.cuda and "SCALE" not in compiled.cuda


def test_standard_header_declarations_do_not_reach_the_front_end():
    scop = parse_c("#include <stdio.h>\n#include <stdlib.h>\n#include <math.h>\n"
                   "void f(int n, double A[n]) {\n  for (int i = 0; i < n; i++)\n"
                   "    A[i] = fabs(A[i]);\n}\n")
    assert scop.name == "f" and [s.line for s in scop.statements] == [6]


@pytest.mark.parametrize("src,line,col,word", [
    # an error after the headers: the user's line and exact column
    ("#include <math.h>\n#include <stdint.h>\nvoid f(int n, double A[n]) {\n"
     "  for (int i = 0; i < n; i++)\n      A[i] =  undefined_thing;\n}\n",
     5, 15, "undeclared variable 'undefined_thing'"),
    # a line without macros keeps its columns even when others use them
    ("#define SQ(x) ((x)*(x))\n#include <math.h>\nvoid f(int n, double A[n], double B[n]) {\n"
     "  for (int i = 0; i < n; i++)\n    B[i] = SQ(A[i]);\n  for (int i = 0; i < n; i++)\n"
     "    B[i]   = A[i * i];\n}\n", 7, 16, "non-affine subscript"),
    # on a line with macros: after the macro, the user's exact column ...
    ("#define SQ(x) ((x)*(x))\nvoid f(int n, double A[n], double B[n]) {\n"
     "  for (int i = 0; i < n; i++)\n    B[i]   =  SQ(A[i])  +   undefined_thing;\n}\n",
     4, 29, "undeclared variable"),
    ("#include <math.h>\nvoid f(int n, double A[n], double B[n]) {\n"
     "  for (int i = 0; i < n; i++)\n    B[i]   =  M_PI * A[i] + nothere;\n}\n",
     4, 29, "undeclared variable 'nothere'"),
    # ... inside the macro's expansion, the macro's name (a flat index that cannot be
    # delinearised: its strides m and n do not divide one another)
    ("#define IDX(i, j) ((i)*m + (j)*n)\nvoid f(int n, int m, double *A, double *B) {\n"
     "  for (int i = 0; i < n; i++)\n    for (int j = 0; j < m; j++)\n"
     "      B[IDX(i, j)] = A[i];\n}\n", 5, 9, "cannot delinearise the subscripts of 'B'"),
    # the line of a missing header
    ("#include <math.h>\n#include \"nothere.h\"\nvoid f(int n, double A[n]) {\n}\n",
     2, 10, "nothere.h"),
    ("#define N 8\nvoid f(double A[N]) {\n#pragma omp parallel for\n"
     "  for (int i = 0; i < N; i++)\n    while (0) A[i] = 1;\n}\n", 5, 5, "while"),
])
def test_errors_stay_at_the_users_line_and_column(src, line, col, word):
    with pytest.raises(SourceError) as e:
        parse_c(src)
    assert word in str(e.value)
    assert (e.value.line, e.value.col) == (line, col)


def test_unsigned_typedefs_are_refused_clearly():
    with pytest.raises(UnsupportedError, match="unsupported element type 'uint32_t'") as e:
        parse_c("#include <stdint.h>\nvoid f(int n, uint32_t A[n]) {\n}\n")
    assert e.value.line == 2
