"""Tests of the C front end (polymagic.frontend.c.parse_c): the Scop it builds for
affine kernels, and the located errors it raises for everything else."""
from __future__ import annotations

from pathlib import Path

import islpy as isl
import pytest

from polymagic import expr as E
from polymagic.errors import SourceError, UnsupportedError
from polymagic.frontend.c import parse_c

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _set(s: str) -> isl.Set:
    return isl.Set(s)


def _points(s: isl.Set) -> set[tuple[int, ...]]:
    """All integer points of a bounded parameter-free set."""
    out: set[tuple[int, ...]] = set()
    n = s.dim(isl.dim_type.set)
    s.foreach_point(lambda p: out.add(tuple(
        int(p.get_coordinate_val(isl.dim_type.set, k).to_python()) for k in range(n))))
    return out


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a: int, b: int) -> int:
    return a - b * _cdiv(a, b)


GEMM = """\
void gemm(int ni, int nj, int nk, float alpha, float C[ni][nj], float A[ni][nk],
          float B[nk][nj])
{
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nj; j++)
      for (int k = 0; k < nk; k++)
        C[i][j] += alpha * A[i][k] * B[k][j];
}
"""


def test_gemm_params_arrays_statement():
    scop = parse_c(GEMM)
    assert scop.name == "gemm"
    assert [(p.name, p.kind, p.ctype) for p in scop.params] == [
        ("ni", "size", "int"), ("nj", "size", "int"), ("nk", "size", "int"),
        ("alpha", "scalar", "float"), ("C", "array", "float"), ("A", "array", "float"),
        ("B", "array", "float")]
    assert scop.size_params == ["ni", "nj", "nk"]
    assert list(scop.arrays) == ["C", "A", "B"]
    assert scop.arrays["A"].shape == (E.Var("ni"), E.Var("nk"))
    assert scop.arrays["C"].kind == "param"
    assert scop.context.is_equal(_set("[ni, nj, nk] -> { : ni >= 1 and nj >= 1 and nk >= 1 }"))
    (st,) = scop.statements
    assert st.name == "S0" and st.iterators == ("i", "j", "k") and st.line == 7
    assert st.text == "C[i][j] += alpha * A[i][k] * B[k][j];"
    assert st.domain.is_equal(_set(
        "[ni, nj, nk] -> { S0[i, j, k] : 0 <= i < ni and 0 <= j < nj and 0 <= k < nk }"))
    assert [a.array for a in st.reads] == ["C", "A", "B"]
    assert [a.array for a in st.writes] == ["C"]
    assert st.writes[0].relation.is_equal(isl.Map(
        "[ni, nj, nk] -> { S0[i, j, k] -> C[i, j] }"))
    assert st.reads[2].relation.is_equal(isl.Map("[ni, nj, nk] -> { S0[i, j, k] -> B[k, j] }"))
    ij = (E.Var("i"), E.Var("j"))
    assert st.body == E.Assign(E.Access("C", ij), "+=", E.Binary(
        "*", E.Binary("*", E.Var("alpha"), E.Access("A", (E.Var("i"), E.Var("k")))),
        E.Access("B", (E.Var("k"), E.Var("j")))))


def test_jacobi_1d_time_loop_schedule():
    scop = parse_c((EXAMPLES / "jacobi-1d.c").read_text())
    s0, s1 = scop.statements
    assert s0.domain.is_equal(_set(
        "[tsteps, n] -> { S0[t, i] : 0 <= t < tsteps and 1 <= i < n - 1 }"))
    assert [a.array for a in s0.reads] == ["A", "A", "A"] and s0.writes[0].array == "B"
    assert [a.array for a in s1.reads] == ["B", "B", "B"] and s1.writes[0].array == "A"
    expected = isl.UnionMap("[tsteps, n] -> { S0[t, i] -> [0, t, 0, i, 0]; "
                            "S1[t, i] -> [0, t, 1, i, 0] }")
    assert scop.schedule.is_equal(expected.intersect_domain(scop.domain))
    # S0 of step t runs before S1 of step t, which runs before S0 of step t+1
    before = scop.schedule.lex_lt_union_map(scop.schedule)
    pairs = isl.UnionMap("[tsteps, n] -> { S0[t, i] -> S1[t, i2]; S1[t, i] -> S0[t + 1, i2] }")
    assert pairs.intersect_domain(scop.domain).intersect_range(scop.domain).is_subset(before)
    assert isl.UnionMap("[tsteps, n] -> { S1[t, i] -> S0[t, i2] }").intersect(before).is_empty()
    assert scop.reads.is_equal(isl.UnionMap(
        "[tsteps, n] -> { S0[t, i] -> A[a] : 0 <= t < tsteps and 1 <= i < n - 1 "
        "and i - 1 <= a <= i + 1; S1[t, i] -> B[a] : 0 <= t < tsteps and 1 <= i < n - 1 "
        "and i - 1 <= a <= i + 1 }"))


def test_schedule_pads_to_common_depth():
    scop = parse_c((EXAMPLES / "lu.c").read_text())
    expected = isl.UnionMap("[n] -> { S0[i, j, k] -> [0, i, 0, j, 0, k, 0]; "
                            "S1[i, j] -> [0, i, 0, j, 1, 0, 0]; "
                            "S2[i, j, k] -> [0, i, 1, j, 0, k, 0] }")
    assert scop.schedule.is_equal(expected.intersect_domain(scop.domain))


def test_triangular_bounds_lu():
    scop = parse_c((EXAMPLES / "lu.c").read_text())
    s0, s1, s2 = scop.statements
    assert s0.domain.is_equal(_set("[n] -> { S0[i, j, k] : 0 <= i < n and 0 <= j < i "
                                   "and 0 <= k < j }"))
    assert s1.domain.is_equal(_set("[n] -> { S1[i, j] : 0 <= i < n and 0 <= j < i }"))
    assert s2.domain.is_equal(_set("[n] -> { S2[i, j, k] : 0 <= i < n and i <= j < n "
                                   "and 0 <= k < i }"))
    assert s1.body.op == "/="
    assert s1.reads[1].relation.is_equal(isl.Map("[n] -> { S1[i, j] -> A[j, j] }"))


def test_min_max_bounds_calls_and_macros():
    src = """\
#define min(a, b) ((a) < (b) ? (a) : (b))
void f(int n, int m, double A[n][m]) {
  for (int i = 0; i < n; i++)
    for (int j = max(0, i - 2); j < min(m, i + 3); j++)
      A[i][j] = 0.0;
}
"""
    (st,) = parse_c(src).statements
    assert st.domain.is_equal(_set("[n, m] -> { S0[i, j] : 0 <= i < n and j >= 0 and "
                                   "j >= i - 2 and j < m and j < i + 3 }"))
    assert st.line == 5


def test_conditional_expression_bounds():
    src = """\
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    for (int j = (i > 3 ? i - 3 : 0); j <= (2 * i < n ? 2 * i : n); j++)
      A[j] = i;
}
"""
    (st,) = parse_c(src).statements
    assert st.domain.is_equal(_set(
        "[n] -> { S0[i, j] : 0 <= i < n and ((i > 3 and j >= i - 3) or (i <= 3 and j >= 0)) "
        "and ((2i < n and j <= 2i) or (2i >= n and j <= n)) }"))
    assert st.body.value == E.Var("i")


def test_division_and_modulo_follow_c_semantics():
    src = """\
void f(double A[40][40]) {
  for (int i = -9; i < 10; i++)
    for (int j = (i - 1) / 3; j < i % 4 + (-i) / -2 + 3; j += 2)
      A[i + 9][j + 9] = 0;
}
"""
    (st,) = parse_c(src).statements
    expected = set()
    for i in range(-9, 10):
        j = _cdiv(i - 1, 3)
        while j < _cmod(i, 4) + _cdiv(-i, -2) + 3:
            expected.add((i, j))
            j += 2
    assert _points(st.domain) == expected
    # floor semantics would give a different set: the test above is meaningful
    floor_pts = {(i, j) for i in range(-9, 10)
                 for j in range((i - 1) // 3, (i % 4) + (-i) // -2 + 3, 2)}
    assert floor_pts != expected


def test_division_by_constant_matches_truncating_set():
    src = """\
void f(int n, double A[n]) {
  for (int i = -5; i < 5; i++)
    for (int j = i / 2; j < 3; j++)
      A[j + 5] = i % 3;
}
"""
    (st,) = parse_c(src).statements
    assert st.domain.is_equal(_set(
        "{ S0[i, j] : -5 <= i < 5 and j < 3 and ((i >= 0 and j >= floor(i/2)) or "
        "(i < 0 and j >= -floor(-i/2))) }"))
    assert st.writes[0].relation.is_equal(isl.Map("[n] -> { S0[i, j] -> A[j + 5] }"))
    assert st.body.value == E.Binary("%", E.Var("i"), E.Int(3))


def test_strided_and_decreasing_loops():
    src = """\
void f(int n, double A[n]) {
  for (int i = 1; i < n; i += 3)
    A[i] = 1;
  for (int i = n - 1; i >= 0; i -= 2)
    A[i] = 2;
  for (int i = n; i > 0; --i)
    A[i - 1] = 3;
}
"""
    s0, s1, s2 = parse_c(src).statements
    assert s0.domain.is_equal(_set("[n] -> { S0[i] : exists k : i = 1 + 3k and 1 <= i < n }"))
    assert s1.domain.is_equal(_set("[n] -> { S1[i] : exists k : i = n - 1 - 2k and "
                                   "0 <= i < n }"))
    assert s2.domain.is_equal(_set("[n] -> { S2[i] : 0 < i <= n }"))


def test_if_else_domains():
    src = """\
void f(int n, double A[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (i == j || (i < 2 && !(j > 5)))
        A[i][j] = 1.0;
      else
        A[i][j] = 0.0;
    }
}
"""
    s0, s1 = parse_c(src).statements
    box = "0 <= i < n and 0 <= j < n"
    assert s0.domain.is_equal(_set(
        f"[n] -> {{ S0[i, j] : {box} and (i = j or (i < 2 and j <= 5)) }}"))
    assert s1.domain.is_equal(_set(
        f"[n] -> {{ S1[i, j] : {box} and i != j and (i >= 2 or j > 5) }}"))
    assert s0.domain.set_tuple_name("X").intersect(
        s1.domain.set_tuple_name("X")).is_empty()


def test_define_constants_and_literals():
    src = """\
#include <math.h>
#define N 64
#define HALF (N / 2)
#define ALPHA 2.0f
#pragma scop
void f(float A[N], float B[N]) {
  for (int i = 0; i < HALF; i++)
    B[i] = ALPHA * sqrtf(A[2 * i]) + 1.5f;
}
#pragma endscop
"""
    scop = parse_c(src)
    assert scop.constants == {"N": 64, "HALF": 32, "ALPHA": 2.0}
    assert scop.size_params == []
    assert scop.arrays["A"].shape == (E.Int(64),)
    (st,) = scop.statements
    assert st.domain.is_equal(_set("{ S0[i] : 0 <= i < 32 }"))
    assert st.body.value == E.Binary("+", E.Binary("*", E.Float("2.0f"), E.Call(
        "sqrtf", (E.Access("A", (E.Binary("*", E.Int(2), E.Var("i")),)),))), E.Float("1.5f"))
    assert st.reads[0].relation.is_equal(isl.Map("{ S0[i] -> A[2i] }"))
    assert st.line == 8


def test_function_like_macro_keeps_line_numbers():
    src = """\
#define SQR(x) ((x) * (x))

void f(int n, double A[n], double B[n]) {
  for (int i = 0; i < n; i++)
    B[i] = SQR(A[i]);
  for (int i = 0; i < n; i++)
    B[i] = undefined_thing;
}
"""
    with pytest.raises(SourceError) as e:
        parse_c(src)
    assert (e.value.line, e.value.col) == (7, 12)
    scop = parse_c(src.replace("undefined_thing", "A[i]"))
    assert scop.statements[0].line == 5
    assert scop.statements[0].body.value == E.Binary(
        "*", E.Access("A", (E.Var("i"),)), E.Access("A", (E.Var("i"),)))


def test_conditional_directives_go_through_cpp():
    src = """\
#define BIG
#ifdef BIG
#define N 1000
#else
#define N 10
#endif
void f(float A[N], const float B[restrict N]) {
  for (int i = 0; i < N; i++)
    A[i] = 2.5f * B[i];
}
"""
    scop = parse_c(src)
    assert scop.constants == {"N": 1000}
    assert scop.arrays["A"].shape == (E.Int(1000),)
    (st,) = scop.statements
    assert st.line == 9
    assert st.domain.is_equal(_set("{ S0[i] : 0 <= i < 1000 }"))
    assert st.body.value == E.Binary("*", E.Float("2.5f"), E.Access("B", (E.Var("i"),)))


def test_local_temporary_is_privatised():
    src = """\
void f(int n, int m, double A[n][m], double B[n]) {
  for (int i = 0; i < n; i++) {
    double t = 0.0;
    for (int j = 0; j < m; j++)
      t += A[i][j];
    B[i] = t;
  }
}
"""
    scop = parse_c(src)
    t = scop.arrays["t"]
    assert t.kind == "temp" and t.ctype == "double"
    assert t.shape == (E.Var("n"),)
    s0, s1, s2 = scop.statements
    assert s0.text == "double t = 0.0;"
    assert s0.body == E.Assign(E.Access("t", (E.Var("i"),)), "=", E.Float("0.0"))
    assert s1.body.target == E.Access("t", (E.Var("i"),))
    assert s1.writes[0].relation.is_equal(isl.Map("[n, m] -> { S1[i, j] -> t[i] }"))
    assert [a.array for a in s1.accesses] == ["t", "A", "t"]
    assert s2.reads[0].relation.is_equal(isl.Map("[n, m] -> { S2[i] -> t[i] }"))


def test_local_temporary_index_is_shifted_by_minimum():
    src = """\
void f(int n, double A[n][n]) {
  int i, j;
  for (i = 2; i < n; i++)
    for (j = i + 1; j < n; j++) {
      double s;
      s = A[i][j];
      A[j][i] = s * s;
    }
}
"""
    scop = parse_c(src)
    s = scop.arrays["s"]
    assert s.kind == "temp"
    env = {"n": 10}
    assert [E.evaluate(x, env) for x in s.shape] == [7, 7]     # i in 2..8, j in 3..9
    s0 = scop.statements[0]
    assert s0.body.target == E.Access("s", (E.Binary("-", E.Var("i"), E.Int(2)),
                                            E.Binary("-", E.Var("j"), E.Int(3))))
    assert s0.writes[0].relation.is_equal(isl.Map("[n] -> { S0[i, j] -> s[i - 2, j - 3] }"))


def test_function_level_accumulator_is_zero_dimensional():
    src = """\
void dot(int n, double x[n], double y[n], double out[1]) {
  double acc = 0;
  for (int i = 0; i < n; i++)
    acc += x[i] * y[i];
  out[0] = acc;
}
"""
    scop = parse_c(src)
    acc = scop.arrays["acc"]
    assert acc.kind == "temp" and acc.shape == ()
    s0, s1, s2 = scop.statements
    assert s0.body.target == E.Access("acc", ())
    assert s1.writes[0].relation.is_equal(isl.Map("[n] -> { S1[i] -> acc[] }"))
    assert s2.reads[0].relation.is_equal(isl.Map("[n] -> { S2[] -> acc[] }"))
    assert scop.schedule.is_equal(isl.UnionMap(
        "[n] -> { S0[] -> [0, 0, 0]; S1[i] -> [1, i, 0] : 0 <= i < n; S2[] -> [2, 0, 0] }"))


def test_same_local_name_in_two_loops_gets_unique_arrays():
    src = """\
void f(int n, double A[n], double B[n]) {
  for (int i = 0; i < n; i++) {
    double t = A[i];
    B[i] = t;
  }
  for (int i = 0; i < n; i++) {
    double t = B[i];
    A[i] = t;
  }
}
"""
    scop = parse_c(src)
    temps = [a.name for a in scop.arrays.values() if a.kind == "temp"]
    assert len(temps) == 2 and len(set(temps)) == 2
    assert scop.statements[2].body.target.array == temps[1]


def test_comments_and_increment_statement():
    src = """\
void f(int n, int A[n]) {  /* counts */
  for (int i = 0; i < n; i++)  // every element
    A[i]++;
}
"""
    (st,) = parse_c(src).statements
    assert st.body == E.Assign(E.Access("A", (E.Var("i"),)), "+=", E.Int(1))
    assert [a.is_write for a in st.accesses] == [False, True]


def test_data_dependent_value_conditions_are_allowed():
    src = """\
void relu(int n, double A[n], double B[n]) {
  for (int i = 0; i < n; i++)
    B[i] = A[i] > 0 ? A[i] : 0.0;
}
"""
    (st,) = parse_c(src).statements
    assert isinstance(st.body.value, E.Cond)
    assert len(st.reads) == 2


KERNELS = {"gemm": 1, "gemm-polybench": 2, "2mm": 4, "atax": 4, "bicg": 4, "mvt": 2, "gesummv": 5, "syrk": 2,
           "doitgen": 3, "covariance": 8, "jacobi-1d": 2, "jacobi-2d": 2, "fdtd-2d": 4,
           "seidel-2d": 1, "lu": 3}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_example_kernels_parse(name):
    scop = parse_c((EXAMPLES / f"{name}.c").read_text())
    assert len(scop.statements) == KERNELS[name]
    assert all(a.kind == "param" for a in scop.arrays.values())
    for st in scop.statements:
        assert st.domain.get_tuple_name() == st.name
        assert not st.domain.is_empty()
        assert st.writes and all(a.relation.get_tuple_name(isl.dim_type.in_) == st.name
                                 for a in st.accesses)
    assert scop.schedule.domain().is_equal(scop.domain)
    assert scop.schedule.is_single_valued() and scop.schedule.is_injective()


H = "void f(int n, double A[n], double B[n][n], double x) {\n"

ERRORS = [
    # (source, keyword in the message, line, column)
    ("void f(int n, double **A) {\n}", "pointer", 1, 23),
    (H + "  while (n) A[0] = 1;\n}", "while", 2, 3),
    (H + "  for (int i = 0; i < n; i++) { break; }\n}", "break", 2, 33),
    (H + "  goto L;\n}", "goto", 2, 3),
    (H + "  switch (n) { case 1: A[0] = 1; }\n}", "switch", 2, 3),
    (H + "  return 1;\n}", "return", 2, 3),
    (H + "  for (int i = 0; i < n; i++)\n    printf(\"%d\", i);\n}", "side effects", 3, 5),
    (H + "  for (int i = 0; i < n; i++)\n    A[i] = foo(i);\n}", "unknown function foo", 3, 12),
    (H + "  for (int i = 0; i < n; i++)\n    A[(int)B[i][0]] = 1;\n}",
     "non-affine subscript", 3, 12),
    (H + "  for (int i = 0; i < n; i++)\n    A[i * i] = 1;\n}", "non-affine subscript", 3, 7),
    (H + "  for (int i = 0; i < n; i++)\n    A[(int)x] = 1;\n}",
     "non-affine subscript: depends on the floating-point parameter 'x'", 3, 12),
    (H + "  for (int i = 0; i < B[0][0]; i++)\n    A[i] = 1;\n}", "non-affine loop bound", 2, 23),
    (H + "  for (int i = 0; i < x; i++)\n    A[i] = 1;\n}", "floating-point parameter", 2, 23),
    (H + "  for (int i = 0; i < n; i += n)\n    A[i] = 1;\n}", "step", 2, 31),
    (H + "  for (int i = 0; i < n; i++) {\n    A[i] = 1;\n    i += 2;\n  }\n}",
     "iterator 'i' is modified", 4, 5),
    (H + "  x = 2.0;\n}", "assignment to function parameter 'x'", 2, 3),
    (H + "  n = 2;\n}", "assignment to function parameter 'n'", 2, 3),
    (H + "  double tmp[10] = {0};\n}", "initialisers of local arrays are not supported", 2, 10),
    ("struct S { int a; };\nvoid f(int n) {\n}", "struct", 1, 8),
    ("int *f(int n) {\n}", "return type", 1, 5),
    ("int f(int n) {\n}", "its last statement must be return", 1, 5),
    ("void f(int n) {\n}\nvoid g(int n) {\n}", "one function", 3, 6),
    (H + "  A[0] = &x;\n}", "address-of", 2, 10),
    (H + "  *B = 1;\n}", "pointer dereference", 2, 3),
    (H + "  for (int i = 0; i < n; i++)\n    if (B[i][i] > 0) { B[i][i] = 0; A[i] = 0; }\n}",
     "the data-dependent condition reads 'B'", 3, 9),
    (H + "  do { A[0] = 1; } while (0);\n}", "do-while", 2, 3),
    (H + "  for (int i = 0; i < n; i++) { continue; }\n}", "continue", 2, 33),
    (H + "  for (int i = 0; i > n; i++)\n    A[i] = 1;\n}", "upper bound", 2, 19),
    (H + "  for (int i = 0; i < n; i++)\n    B[i] = 1;\n}", "2 dimension(s)", 3, 5),
    (H + "  A[0] = malloc(4);\n}", "malloc", 2, 10),
    (H + "  for (int i = 0; i < n; i++)\n    A[i / n] = 1;\n}", "non-affine subscript", 3, 11),
    ("void f(int n, double A[n]) {\n  int i;\n  for (i = 0; i < n; i++)\n    A[i] = 1;\n"
     "  A[i] = 2;\n}", "outside its loop", 5, 5),
    (H + "  for (int i = 0; i < n; i++)\n    for (int i = 0; i < n; i++)\n      A[i] = 1;\n}",
     "hides the enclosing loop iterator", 3, 14),
    ("void f(int n, const double A[n], double B[n]) {\n  for (int i = 0; i < n; i++)\n"
     "    A[i] = B[i];\n}", "const array", 3, 5),
    ("void f(double A[n], int n) {\n}", "earlier int parameter", 1, 17),
    ("typedef struct { int a; } S;\nvoid f(int n) {\n}", "typedef of a struct type ('S')",
     1, 27),
    (H + "  for (int i = 0; i < n; i++)\n    A[i] = (B[i][0] = 2) * x;\n}",
     "assignment inside an expression", 3, 13),
]


@pytest.mark.parametrize("src,keyword,line,col", ERRORS)
def test_unsupported_constructs_are_located(src, keyword, line, col):
    with pytest.raises(UnsupportedError) as e:
        parse_c(src)
    assert keyword in e.value.reason
    assert (e.value.line, e.value.col) == (line, col)
    assert f"line {line}, column {col}" in str(e.value)


@pytest.mark.parametrize("src,line,col", [
    (H + "  A[0] = ;\n}", 2, 10),
    (H + "  A[0] = 1\n}", 3, 1),
    ("/* header */\nvoid f(int n, double A[n]) {  // c\n  A[0] = 1 +* ;\n}", 3, 15),
])
def test_syntax_errors_are_source_errors(src, line, col):
    with pytest.raises(SourceError) as e:
        parse_c(src)
    assert not isinstance(e.value, UnsupportedError)
    assert "syntax error" in e.value.reason
    assert (e.value.line, e.value.col) == (line, col)


def test_missing_function_is_an_error():
    with pytest.raises(SourceError, match="one C function"):
        parse_c("#define N 10\n")


def test_downward_loop_schedules_decreasing_iterations():
    """Fuzzer finding: ``for (i = N - 1; i >= 1; i--)`` was scheduled as i
    increasing, so the dependences (and the device result) were wrong."""
    scop = parse_c("void f(int N, double B[N + 2]) {\n"
                   "  for (int i = N - 1; i >= 1; i--)\n"
                   "    B[i + 1] = 0.5 * B[i];\n}\n")
    before = scop.schedule.lex_lt_union_map(scop.schedule)
    assert isl.UnionMap("[N] -> { S0[3] -> S0[2] : N = 4 }").is_subset(before)
    assert not isl.UnionMap("[N] -> { S0[2] -> S0[3] : N = 4 }").is_subset(before)
