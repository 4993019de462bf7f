"""The Python front end (seed 002 §2): same Scop as the equivalent C, the
``@polymagic.gpu`` decorator with its plain-Python fallback, cells and .py files."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import polymagic
from polymagic.errors import UnsupportedError
from polymagic.frontend.c import parse_c
from polymagic.frontend.python import parse_python, translate

# (Python, equivalent C) pairs
PAIRS = {
    "gemm": ('''
def gemm(N: int, alpha: float, C: "double[N][N]", A: "double[N][N]", B: "double[N][N]"):
    for i in polymagic.prange(N):
        for j in range(N):
            for k in range(N):
                C[i, j] += alpha * A[i, k] * B[k][j]
''', '''
void gemm(int N, double alpha, double C[N][N], double A[N][N], double B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += alpha * A[i][k] * B[k][j];
}
'''),
    "jacobi2d": ('''
def jacobi(tsteps: int, n: int, A: "double[n][n]", B: "double[n][n]"):
    for t in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, 1 + j] + A[1 + i, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, 1 + j] + B[1 + i, j] + B[i - 1, j])
''', '''
void jacobi(int tsteps, int n, double A[n][n], double B[n][n]) {
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[i][j] = 0.2 * (A[i][j] + A[i][j-1] + A[i][1+j] + A[1+i][j] + A[i-1][j]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = 0.2 * (B[i][j] + B[i][j-1] + B[i][1+j] + B[1+i][j] + B[i-1][j]);
  }
}
'''),
    "atax": ('''
def atax(m: int, n: int, A: "double[m][n]", x: "double[n]", y: "double[n]", tmp: "double[m]"):
    for i in range(n):
        y[i] = 0
    for i in range(m):
        tmp[i] = 0.0
        for j in range(n):
            tmp[i] = tmp[i] + A[i, j] * x[j]
        for j in range(n):
            y[j] = y[j] + A[i, j] * tmp[i]
''', '''
void atax(int m, int n, double A[m][n], double x[n], double y[n], double tmp[m]) {
  for (int i = 0; i < n; i++)
    y[i] = 0;
  for (int i = 0; i < m; i++) {
    tmp[i] = 0.0;
    for (int j = 0; j < n; j++)
      tmp[i] = tmp[i] + A[i][j] * x[j];
    for (int j = 0; j < n; j++)
      y[j] = y[j] + A[i][j] * tmp[i];
  }
}
'''),
    "lu": ('''
def lu(n: int, A: "double[n][n]"):
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i][j] -= A[i][k] * A[k][j]
            A[i][j] /= A[j][j]
        for j in range(i, n):
            for k in range(i):
                A[i][j] -= A[i][k] * A[k][j]
''', '''
void lu(int n, double A[n][n]) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < j; k++)
        A[i][j] -= A[i][k] * A[k][j];
      A[i][j] /= A[j][j];
    }
    for (int j = i; j < n; j++)
      for (int k = 0; k < i; k++)
        A[i][j] -= A[i][k] * A[k][j];
  }
}
'''),
    "mixed": ('''
import math

def mixed(n: int, s: "float", X: "float[n][2 * n]", Y: "float[n]"):
    m = X.shape[0]
    for i in range(m - 1, -1, -1):
        acc = 0.0
        for j in range(0, 2 * n, 2):
            if j < i or j >= n:
                acc += max(X[i, j], s) * math.sqrt(abs(X[i][j + 1]))
            else:
                acc -= X[i, j] ** 2
        Y[i] = acc / n
''', '''
#include <math.h>
void mixed(int n, float s, float X[n][2 * n], float Y[n]) {
  for (int i = n - 1; i > -1; i -= 1) {
    double acc = 0.0;
    for (int j = 0; j < 2 * n; j += 2) {
      if (j < i || j >= n)
        acc += max(X[i][j], s) * sqrt(fabs(X[i][j + 1]));
      else
        acc -= X[i][j] * X[i][j];
    }
    Y[i] = acc / (double)n;
  }
}
'''),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_same_scop_as_the_equivalent_c(name):
    py, c = PAIRS[name]
    a, b = parse_python(py), parse_c(c)
    assert a.language == "python" and b.language == "c"
    assert [(p.name, p.kind, p.ctype) for p in a.params] == \
           [(p.name, p.kind, p.ctype) for p in b.params]
    assert {n: (x.ctype, x.shape, x.kind) for n, x in a.arrays.items()} == \
           {n: (x.ctype, x.shape, x.kind) for n, x in b.arrays.items()}
    assert len(a.statements) == len(b.statements)
    for sa, sb in zip(a.statements, b.statements):
        assert (sa.name, sa.iterators) == (sb.name, sb.iterators)
        assert sa.domain.is_equal(sb.domain), (sa.name, sa.domain, sb.domain)
        assert len(sa.accesses) == len(sb.accesses)
        for xa, xb in zip(sa.accesses, sb.accesses):
            assert xa.array == xb.array and xa.is_write == xb.is_write
            assert xa.relation.is_equal(xb.relation), (sa.name, xa.relation, xb.relation)
        assert sa.body.op == sb.body.op
    assert a.schedule.is_equal(b.schedule) and a.context.is_equal(b.context)
    assert a.reads.is_equal(b.reads) and a.writes.is_equal(b.writes)


def test_lines_and_statement_texts_are_the_pythons():
    py = PAIRS["gemm"][0]
    s = parse_python(py)
    line = py.splitlines()[s.statements[0].line - 1]
    assert "C[i, j] += alpha * A[i, k] * B[k][j]" in line
    assert s.statements[0].text == "C[i, j] += alpha * A[i, k] * B[k][j]"


@pytest.mark.parametrize("src,match", [
    ("def f(n, A: 'double[n]'):\n    A[0] = 1.0\n", "annotate"),
    ("def f(n: int, A: 'double[n]'):\n    i = 0\n    while i < n:\n        i += 1\n",
     "while"),
    ("def f(n: int, A: 'double[n]'):\n    for i in range(n):\n        A[i] = i % 3\n", "%"),
    ("def f(n: int, A: 'double[n]'):\n    for i in range(n):\n        A[i:] = 0\n", "slice"),
    ("def f(n: int, A: 'double[n]'):\n    return A\n", "return"),
])
def test_unsupported_python_is_reported_with_its_line(src, match):
    with pytest.raises(UnsupportedError, match=match) as e:
        parse_python(src)
    assert "line" in str(e.value) or "annotate" in str(e.value)


def test_translation_keeps_python_semantics():
    t = translate("def f(n: int, A: 'double[n]'):\n"
                  "    for i in range(n):\n"
                  "        A[i] = i / 2 + (1 if i > 0 else 2)\n")
    assert "(double)(i) / (2)" in t.c_source


# ---- @polymagic.gpu -----------------------------------------------------------------

@polymagic.gpu(target="emulator", check=True)
def saxpy2d(a, X, Y):
    for i in polymagic.prange(X.shape[0]):
        for j in range(X.shape[1]):
            Y[i, j] = a * X[i, j] + Y[i, j]


def test_decorator_infers_types_at_the_first_call_and_writes_results():
    rng = np.random.default_rng(0)
    x = rng.random((13, 7))
    y = rng.random((13, 7))
    want = 2.5 * x + y
    assert saxpy2d(2.5, x, y) is None
    assert saxpy2d.fallback_reason is None, saxpy2d.fallback_reason
    np.testing.assert_allclose(y, want)
    r = saxpy2d.last_report
    assert r.ok and r.checked and r.bytes_h2d == x.nbytes + y.nbytes
    # views as they come: a transposed, strided pair; a second dtype recompiles
    big = rng.random((40, 40)).astype(np.float32)
    xv = big[1::3, ::2][:10, :12].T
    yv = rng.random((40, 40)).astype(np.float32)[::-2, 3::2][:12, :10]
    assert xv.shape == yv.shape == (12, 10)
    want = np.float32(0.5) * xv + yv
    saxpy2d(np.float32(0.5), xv, yv)
    assert saxpy2d.fallback_reason is None, saxpy2d.fallback_reason
    np.testing.assert_allclose(yv, want, rtol=1e-6)
    assert len(saxpy2d._compiled) == 2


@polymagic.gpu(target="emulator")
def floor_half(n: int, A: "double[n]"):
    for i in range(n):
        A[i] = i // 2


def test_decorator_falls_back_to_plain_python_with_the_reason():
    a = np.zeros(6)
    with pytest.warns(RuntimeWarning, match="runs as plain Python.*//"):
        floor_half(6, a)
    assert list(a) == [0, 0, 1, 1, 2, 2] and "//" in floor_half.fallback_reason


# ---- cells and files ---------------------------------------------------------------

GEMM_PY = '''
import polymagic

def gemm(N: int, alpha: float, C: "double[N][N]", A: "double[N][N]", B: "double[N][N]"):
    for i in polymagic.prange(N):
        for j in polymagic.prange(N):
            for k in range(N):
                C[i, j] += alpha * A[i, k] * B[k, j]
'''


def test_cli_runs_a_python_file(tmp_path):
    f = tmp_path / "gemm.py"
    f.write_text(GEMM_PY)
    p = subprocess.run([sys.executable, "-m", "polymagic", "run", str(f), "--size", "N=24",
                        "--target", "emulator", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["ok"] and d["function"] == "gemm" and d["bytes_h2d"] == 3 * 24 * 24 * 8
    assert d["bytes_d2h"] == 24 * 24 * 8


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "polymagic")
    yield sh
    for name in ("A", "B", "C", "gemm", "half", "alpha"):
        sh.user_ns.pop(name, None)


def test_python_cell(shell):
    rng = np.random.default_rng(3)
    a, b, c = (rng.random((20, 20)) for _ in range(3))
    shell.user_ns.update(A=a, B=b, C=c.copy(), alpha=1.5)
    shell.run_cell_magic("polycuda", "--python --size N=20 --target emulator --quiet", GEMM_PY)
    np.testing.assert_allclose(shell.user_ns["C"], c + 1.5 * a @ b, rtol=1e-12)
    assert callable(shell.user_ns["gemm"])


def test_python_cell_that_cannot_be_compiled_runs_as_python(shell, capsys):
    a = np.zeros(5)
    shell.user_ns.update(A=a)
    cell = "def half(n: int, A: 'double[n]'):\n    for i in range(n):\n        A[i] = i // 2\n"
    shell.run_cell_magic("polycuda", "--python --size n=5", cell)
    out = capsys.readouterr().out
    assert "could not compile half" in out and "plain Python" in out and "//" in out
    assert list(a) == [0, 0, 1, 1, 2]
