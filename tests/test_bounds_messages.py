"""Out-of-bounds references named in the user's terms (issue 18): ``A[i - 2]`` at
its line and column with the iteration, the element, the shape and its element
count, refused before anything runs (arrays untouched); constant-size functions
say so instead of printing an empty size list."""
from __future__ import annotations

import numpy as np
import pytest

from polymagic.compiler import compile_source
from polymagic.errors import BoundsError, InputError
from polymagic.options import parse_options
from polymagic.runtime.run import run

CASES = {
    "negative": ("void f(int N, double A[N], double B[N]) {\n"
                 "  for (int i = 0; i < N; i++)\n"
                 "    B[i] = A[i] + A[i - 2];\n}",
                 (3, 19), ["out-of-bounds read in S0", "A[i - 2] reads A[-2] at i = 0",
                           "A[64] (64 elements; index 0 must lie in 0..63)", "N=64"]),
    "past-the-end": ("void f(int N, double A[N], double B[N]) {\n"
                     "  for (int i = 0; i < N; i++)\n"
                     "    B[i] = A[i + 3];\n}",
                     (3, 12), ["A[i + 3] reads A[64] at i = 61"]),
    "two-d": ("void f(int N, float A[N][N], float B[N][N]) {\n"
              "  for (int i = 0; i < N; i++)\n    for (int j = 0; j < N; j++)\n"
              "      B[i][j] = A[i][j + 1];\n}",
              (4, 17), ["A[i][j + 1] reads A[0][64] at i = 0, j = 63",
                        "A[64][64] (4096 elements; index 1 must lie in 0..63)"]),
    "write": ("void f(int N, double A[N]) {\n"
              "  for (int i = 0; i < N; i++)\n    A[i + 1] = 2.0;\n}",
              (3, 5), ["out-of-bounds write in S0", "A[i + 1] writes A[64] at i = 63"]),
    "constant-sizes": ("void f(double A[10], double B[10]) {\n"
                       "  for (int i = 0; i < 10; i++)\n    B[i] = A[i + 1];\n}",
                       (3, 12), ["A[10] (10 elements", "at its constant sizes"]),
    "guarded-ok": ("void f(int N, double A[N], double B[N]) {\n"
                   "  for (int i = 0; i < N; i++)\n    if (i >= 2)\n"
                   "      B[i] = A[i - 2];\n}", None, []),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("target", ["emulator", "openmp"])
def test_out_of_bounds_in_the_users_terms(name, target):
    src, where, words = CASES[name]
    sizes = "" if "int N" not in src else "--size N=64"
    o = parse_options(f"{sizes} --target {target}")
    c = compile_source(src, o)
    ns = {p.name: np.arange(float(np.prod(s)), dtype=np.float64 if "double" in src
                            else np.float32).reshape(s)
          for p, s in ((p, tuple(64 if "int N" in src else 10 for _ in c.scop.arrays[p.name].shape))
                       for p in c.scop.params if p.kind == "array")}
    before = {k: v.copy() for k, v in ns.items()}
    if where is None:
        assert run(c, o, namespace=ns).ok
        return
    with pytest.raises(BoundsError) as e:
        run(c, o, namespace=ns)
    msg = str(e.value)
    assert (e.value.line, e.value.col) == where, msg
    assert f"line {where[0]}, column {where[1]}" in msg
    for w in words:
        assert w in msg, msg
    assert "sh0_" not in msg and "kernel" not in msg
    assert all(np.array_equal(ns[k], before[k]) for k in ns)


def test_python_out_of_bounds_points_at_the_python():
    src = ("def f(N: int, A: 'double[N]', B: 'double[N]'):\n"
           "    for i in range(N):\n        B[i] = A[i - 2]\n")
    o = parse_options("--size N=16 --target emulator")
    with pytest.raises(BoundsError) as e:
        run(compile_source(src, o, language="python"), o)
    assert (e.value.line, e.value.col) == (3, 16) and "A[i - 2]" in str(e.value)


def test_constant_size_refusals_name_their_sizes():
    src = ("void f(double A[100000][100000]) {\n"
           "  for (int i = 0; i < 100000; i++)\n    for (int j = 0; j < 100000; j++)\n"
           "      A[i][j] = 1.0;\n}")
    o = parse_options("--target emulator")
    with pytest.raises(InputError) as e:
        run(compile_source(src, o), o)
    assert "at its constant sizes" in str(e.value) and "at  " not in str(e.value)


def test_constant_size_shape_mismatch_names_the_constant_sizes():
    src = "void f(double A[10], double B[10]) {\n  for (int i = 0; i < 10; i++)\n    B[i] = A[i];\n}"
    o = parse_options("--target emulator")
    with pytest.raises(InputError) as e:
        run(compile_source(src, o), o, namespace={"A": np.zeros(12), "B": np.zeros(10)})
    assert str(e.value).endswith("which gives (10,) at its constant sizes"), str(e.value)
