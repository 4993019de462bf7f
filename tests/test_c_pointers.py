"""Pointers (issue 19, item 3): parameters ``T *p`` and ``const T *restrict p`` are
1-d arrays whose extent is inferred from the accesses; local pointers into arrays
(``const double *xs = x + 1``, ``double *row = A[i]``) are views whose accesses
are the array's.  Emulator == CPU; arrays that share memory and unsupported
pointer forms are refused clearly."""
from __future__ import annotations

import numpy as np
import pytest

from polymagic import expr as E
from polymagic.compiler import compile_source
from polymagic.errors import InputError, UnsupportedError
from polymagic.frontend.c import parse_c
from polymagic.options import Options
from polymagic.runtime.run import run

CONV = """\
void conv(int n, const double *restrict x, double *y) {
  for (int i = 0; i < n; i++)
    y[i] = 0.25 * x[i] + 0.5 * x[i + 1] + 0.25 * x[i + 2];
}
"""

GEMM_FLAT = """\
#define N 20
#define IDX(i, j) ((i)*N + (j))
void gemm(float *C, const float *A, const float *B) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[IDX(i, j)] += A[IDX(i, k)] * B[IDX(k, j)];
}
"""

DIAGONALS = """\
void diagonals(int n, int m, double *y, const double A[n][m]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      y[i + j] += A[i][j];
}
"""


CONV_VIEW = """\
void conv(int n, const double *restrict x, double *restrict y) {
  const double *xs = x + 1;
  for (int i = 0; i < n; i++)
    y[i] = 0.25 * xs[i - 1] + 0.5 * *(xs + i) + 0.25 * xs[i + 1];
}
"""

ROWS = """\
void rows(int n, int m, const double A[n][m], double B[n][m], const double s[n]) {
  for (int i = 0; i < n; i++) {
    const double *a = A[i];
    double *b = &B[i][0];
    double *bb = b + 1;
    for (int j = 0; j < m - 1; j++)
      bb[j] = a[j] * 2 + s[i];
  }
}
"""


def _run(src: str, sizes: dict, namespace=None):
    opts = Options(sizes=sizes, target="emulator")
    compiled = compile_source(src, opts)
    report = run(compiled, opts, namespace)
    assert report.ok, report.message
    return compiled


@pytest.mark.parametrize("src,sizes,shapes", [
    (CONV, {"n": 45}, {"x": (E.Binary("+", E.Var("n"), E.Int(2)),), "y": (E.Var("n"),)}),
    (GEMM_FLAT, {}, {"C": (E.Int(400),), "A": (E.Int(400),), "B": (E.Int(400),)}),
    (DIAGONALS, {"n": 17, "m": 9},
     {"y": (E.Binary("-", E.Binary("+", E.Var("n"), E.Var("m")), E.Int(1)),)}),
])
def test_pointer_extents_are_inferred_and_match_cpu(src, sizes, shapes):
    compiled = _run(src, sizes)
    for name, shape in shapes.items():
        assert compiled.scop.arrays[name].shape == shape
        assert compiled.scop.arrays[name].kind == "param"


def test_local_pointer_views_are_the_arrays_accesses_and_match_cpu():
    compiled = _run(CONV_VIEW, {"n": 41})
    (st,) = compiled.scop.statements
    reads = sorted(str(a.relation).replace(" ", "") for a in st.reads)
    assert reads == ["[n]->{S0[i]->x[1+i]}", "[n]->{S0[i]->x[2+i]}", "[n]->{S0[i]->x[i]}"]
    assert compiled.scop.arrays["x"].shape == (E.Binary("+", E.Var("n"), E.Int(2)),)
    compiled = _run(ROWS, {"n": 13, "m": 11})
    (st,) = compiled.scop.statements
    assert str(st.writes[0].relation).replace(" ", "") == "[n,m]->{S0[i,j]->B[i,1+j]}"
    assert st.text == "bb[j] = a[j] * 2 + s[i];"


def test_results_reach_the_callers_arrays_and_aliasing_is_refused():
    x = np.linspace(0.0, 1.0, 12)
    y = np.zeros(10)
    _run(CONV, {"n": 10}, {"x": x, "y": y})
    assert np.allclose(y, 0.25 * x[:10] + 0.5 * x[1:11] + 0.25 * x[2:12])
    buf = np.zeros(12)
    with pytest.raises(InputError, match="share memory"):
        _run(CONV, {"n": 10}, {"x": buf, "y": buf[:10]})


HIST_FLAT = """\
void hist(int n, int nbins, const int *bin, const float *w, float *h) {
  for (int b = 0; b < nbins; b++)
    h[b] = 0.0f;
  for (int i = 0; i < n; i++)
    h[bin[i]] += w[i];
}
"""

SMOOTH_FLAT = """\
void smooth(int n, const int *nbr, double *x, double *y) {
  for (int j = 0; j < n; j++)
    x[j] = x[j] * 0.5;
  for (int j = 0; j < n; j++)
    y[j] = x[j] + x[nbr[j]];
}
"""


@pytest.mark.parametrize("src,sizes,name,extent", [
    (HIST_FLAT, {"n": 3000, "nbins": 7}, "h", E.Var("nbins")),
    (SMOOTH_FLAT, {"n": 300}, "x", E.Var("n")),
])
def test_pointers_behind_data_dependent_subscripts_are_sized_by_their_affine_accesses(
        src, sizes, name, extent):
    """A scatter-add or gather through a pointer: the affine accesses size it, the
    data-dependent one is a may-access of every element (pet, IMPACT 2012, section 3)."""
    compiled = _run(src, sizes)
    assert compiled.scop.arrays[name].shape == (extent,)
    may = [a for st in compiled.scop.statements for a in st.accesses
           if a.array == name and a.may]
    assert may and all(a.relation.range().is_bounded() for a in may)
    if name == "h":
        assert "atomicAdd(&h[bin[" in compiled.cuda


DEREF = """\
void f(int n, const double *x, double *y, double *s) {
  for (int i = 0; i < n; i++) {
    *(y + i) = 2.0 * *(x + i);
    *s += x[i];
  }
}
"""


def test_dereferenced_pointer_parameters_are_their_elements():
    """``*s`` is ``s[0]`` and ``*(x + i)`` is ``x[i]`` (pet's reading of pointer
    arithmetic, IMPACT 2012, section 3): a sum into ``*s`` is a reduction."""
    compiled = _run(DEREF, {"n": 300})
    assert compiled.scop.arrays["s"].shape == (E.Int(1),)
    writes = sorted(str(a.relation).replace(" ", "") for st in compiled.scop.statements
                    for a in st.writes)
    assert writes == ["[n]->{S0[i]->y[i]}", "[n]->{S1[i]->s[0]}"]
    x, y, s = np.arange(5.0), np.zeros(5), np.array([1.0])
    _run(DEREF, {"n": 5}, {"x": x, "y": y, "s": s})
    assert y.tolist() == [0, 2, 4, 6, 8] and s.tolist() == [11.0]


def test_results_of_a_flat_histogram_reach_the_callers_array():
    bins = np.array([0, 3, 3, 1, 0, 3], dtype=np.int32)
    w = np.arange(6, dtype=np.float32)
    h = np.full(4, -1.0, dtype=np.float32)
    _run(HIST_FLAT, {"n": 6, "nbins": 4}, {"bin": bins, "w": w, "h": h})
    assert h.tolist() == [4.0, 3.0, 0.0, 8.0]


@pytest.mark.parametrize("src,word,line,col", [
    ("void f(int n, double *x) {\n  for (int i = 0; i < n; i++)\n    x[i - 1] = 0;\n}\n",
     "below index 0", 1, 22),
    ("void f(int n, const int *p, const double *x, double *y) {\n"
     "  for (int j = 0; j < n; j++)\n    y[j] = x[p[j]];\n}\n",
     "only through data-dependent subscripts", 3, 12),
    ("void f(int n, double **x) {\n}\n", "points to a pointer", 1, 23),
    ("void f(int n, const double *x) {\n  for (int i = 0; i < n; i++)\n    x[i] = 0;\n}\n",
     "const array 'x'", 3, 5),
    ("void f(int n, unsigned *x) {\n}\n", "unsupported element type", 1, 24),
    ("void f(int n, double x[n]) {\n  double *p = x;\n  p = x + 1;\n}\n", "reassigned", 3, 3),
    ("void f(int n, double x[n]) {\n  double *p = x;\n  for (int i = 0; i < n; i++)\n"
     "    p++;\n}\n", "incremented", 4, 5),
    ("void f(int n, double x[n]) {\n  double *p;\n}\n", "must be set where it is declared",
     2, 10),
    ("void f(int n, double A[n][n]) {\n  double *p = A + 1;\n}\n", "whole 2-d array", 2, 15),
    ("void f(int n, double A[n][n]) {\n  for (int i = 0; i < n; i++)\n    *A[i] = 0;\n}\n",
     "dereference", 3, 5),
    ("void f(int n, double x[n], double y[n]) {\n  double *p = x;\n  y[0] = p;\n}\n",
     "used as a value", 3, 10),
])
def test_unsupported_pointer_forms_are_located(src, word, line, col):
    with pytest.raises(UnsupportedError) as e:
        parse_c(src)
    assert word in e.value.reason
    assert (e.value.line, e.value.col) == (line, col), str(e.value)
