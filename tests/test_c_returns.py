"""Functions that return a value (``double dot(...) { ...; return s; }``).

The value goes to the one-element output array :data:`polymagic.scop.RETURN`, the
last parameter the front end adds: the device code writes it like any result, the
CPU reference stores the user's function's result there (``runtime/cpu.py``), the
check compares it, and the report and the callable give it back (``returned``).
"""
from __future__ import annotations

import numpy as np
import pytest

from polymagic.compiler import compile_source
from polymagic.errors import UnsupportedError
from polymagic.frontend.c import parse_c
from polymagic.options import Options
from polymagic.runtime.run import run
from polymagic.scop import RETURN

DOT = """\
double dot(int n, const double *x, const double *y) {
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i] * y[i];
  return s;
}
"""

NORM = """\
#include <math.h>
float norm(int n, float x[n]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    s += x[i] * x[i];
  return sqrtf(s);
}
"""

COUNT = """\
int energy(int n, const int *x) {
  int c = 0;
  for (int i = 0; i < n; i++)
    c += x[i] * x[i];
  return c;
}
"""

AFTER_LOOP = """\
double ends(int n, double x[n]) {
  for (int i = 0; i < n; i++)
    x[i] = 2 * x[i];
  return x[0] + x[n - 1];
}
"""


def _run(src, sizes, namespace=None, target="emulator"):
    opts = Options(sizes=sizes, target=target)
    compiled = compile_source(src, opts)
    report = run(compiled, opts, namespace)
    assert report.ok, report.message
    return compiled, report


@pytest.mark.parametrize("src, ctype", [(DOT, "double"), (NORM, "float"), (COUNT, "int"),
                                        (AFTER_LOOP, "double")])
def test_the_returned_value_is_checked_against_the_cpu(src, ctype):
    compiled, report = _run(src, {"n": 300})
    scop = compiled.scop
    assert scop.returns == ctype and scop.params[-1].name == RETURN
    assert RETURN not in [p.name for p in scop.user_params]
    assert report.checked and isinstance(report.returned, float if ctype != "int" else int)
    assert f"{RETURN}[0]" in compiled.cuda


def test_the_value_is_the_function_s():
    x, y = np.arange(6.0), np.full(6, 0.5)
    _, report = _run(DOT, {"n": 6}, {"x": x, "y": y})
    assert report.returned == 7.5
    _, report = _run(DOT, {"n": 6}, {"x": x, "y": y}, target="openmp")
    assert report.returned == 7.5


@pytest.mark.parametrize("src, word, line, col", [
    ("double f(int n, double x[n]) {\n  double s = 0;\n  for (int i = 0; i < n; i++)\n"
     "    s += x[i];\n}\n", "its last statement must be return", 3, 3),
    ("double f(int n, double x[n]) {\n  for (int i = 0; i < n; i++)\n"
     "    if (x[i] > 0) return x[i];\n  return 0;\n}\n", "only allowed as the last", 3, 19),
    ("void f(int n, double x[n]) {\n  return 1.0;\n}\n", "in a void function", 2, 3),
    ("double *f(int n, double x[n]) {\n  return x;\n}\n", "return type", 1, 8),
])
def test_returns_that_are_not_one_final_value_are_located(src, word, line, col):
    with pytest.raises(UnsupportedError) as e:
        parse_c(src)
    assert word in e.value.reason
    assert (e.value.line, e.value.col) == (line, col), str(e.value)


def test_the_callable_gives_the_value_back():
    from polymagic.api.function import make_callable
    opts = Options(sizes={"n": 4}, target="emulator")
    dot = make_callable(compile_source(DOT, opts), opts)
    assert RETURN not in repr(dot)
    report = dot(x=np.arange(4.0), y=np.ones(4), check=True)
    assert report.ok and report.returned == 6.0


PY_DOT = '''\
def dot(n: int, x: "double[n]", y: "double[n]") -> float:
    s = 0.0
    for i in range(n):
        s += x[i] * y[i]
    return s
'''


def test_a_python_function_returns_through_its_c_translation():
    from polymagic.frontend.python import parse_python
    scop = parse_python(PY_DOT)
    assert scop.returns == "double" and "double dot(" in scop.c_source
    x, y = np.arange(5.0), np.full(5, 2.0)
    opts = Options(sizes={"n": 5}, target="emulator")
    compiled = compile_source(PY_DOT, opts, language="python")
    report = run(compiled, opts, {"x": x, "y": y})
    assert report.ok and report.returned == 20.0


@pytest.mark.parametrize("src, word", [
    (PY_DOT.replace(" -> float", ""), "needs its type"),
    (PY_DOT.replace("    return s\n", "    pass\n"), "does not return a value"),
])
def test_python_returns_need_their_type(src, word):
    from polymagic.frontend.python import parse_python
    with pytest.raises(UnsupportedError) as e:
        parse_python(src)
    assert word in e.value.reason
