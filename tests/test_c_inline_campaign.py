"""A seeded campaign of random helper functions (issue 19, item 2): value helpers
with nested ``if``/``else``, assignments and early ``return`` s (inlined by symbolic
execution into one expression) and ``void`` helpers with loops, copied scalar
parameters, array-element arguments and local pointer views (inlined as blocks).
Each program runs through the pipeline: emulator result == CPU reference, which
runs the user's own C (the helpers called, not inlined)."""
from __future__ import annotations

import random

import pytest

from polymagic.compiler import compile_source
from polymagic.options import Options
from polymagic.runtime.run import run


def _expr(r: random.Random, names: list[str], depth: int = 0) -> str:
    c = r.random()
    if depth > 2 or c < 0.3:
        return r.choice(names + ["1.5", "2", "-0.25", "3"])
    if c < 0.4:
        return f"fmax({_expr(r, names, depth + 1)}, {_expr(r, names, depth + 1)})"
    return f"({_expr(r, names, depth + 1)} {r.choice('+-*')} {_expr(r, names, depth + 1)})"


def _block(r: random.Random, names: list[str], depth: int, ind: str) -> str:
    out = []
    for _ in range(r.randint(1, 3)):
        c = r.random()
        if c < 0.3 and depth < 3:
            cond = f"{_expr(r, names, 2)} {r.choice(['<', '>', '<=', '!='])} {_expr(r, names, 2)}"
            s = f"{ind}if ({cond}) {{\n{_block(r, names, depth + 1, ind + '  ')}{ind}}}"
            if r.random() < 0.5:
                s += f" else {{\n{_block(r, names, depth + 1, ind + '  ')}{ind}}}"
            out.append(s + "\n")
        elif c < 0.45:
            out.append(f"{ind}return {_expr(r, names)};\n")
            break
        else:
            op = r.choice(["=", "+=", "*=", "-="])
            out.append(f"{ind}{r.choice(['t', 'u', 'x'])} {op} {_expr(r, names)};\n")
    return "".join(out)


def value_helper_program(seed: int) -> str:
    r = random.Random(seed)
    rt, p0, p1, tt = (r.choice(["double", "float", "int"]) for _ in range(4))
    names = ["x", "y", "t", "u"]
    body = (f"  {tt} t = {_expr(r, ['x', 'y'])};\n  double u = 0.5;\n"
            + _block(r, names, 0, "  ") + f"  return {_expr(r, names)};\n")
    return f"""#include <math.h>
static {rt} h({p0} x, {p1} y) {{
{body}}}
void k(int n, const double A[n], const float F[n], double B[n]) {{
  for (int i = 0; i < n - 1; i++)
    B[i] = h(A[i] * 4.0, F[i + 1] * 3.0f) + h(2, A[i]);
}}
"""


def void_helper_program(seed: int) -> str:
    r = random.Random(seed)
    value = lambda: r.choice(["s", "2.0", "b[j]", "a[j]", "s * b[j]", "(s + 1.5)"])  # noqa: E731
    body = []
    if r.random() < 0.5:
        body.append(f"  s = s {r.choice('*+-')} {r.choice(['0.5', '2.0', 'b[0]'])};")
    lo, hi = r.choice(["0", "1"]), r.choice(["m", "i", "m - 1", "i + 1"])
    body.append(f"  for (int j = {lo}; j < {hi}; j++)\n"
                f"    a[j] {r.choice(['=', '+=', '-='])} {value()};")
    if r.random() < 0.5:
        body.append(f"  a[i] {r.choice(['=', '+='])} s;")
    if r.random() < 0.4:
        body.append("  { double t = s * s; b[i] = t; }")
    arg = r.choice(["alpha", "A[i][0]", "B[i]", "alpha * 2.0", "0.25"])
    view = r.random() < 0.5
    a, b = ("row", "C") if view else ("B", "C")
    pre = "    double *row = A[i];\n" if view else ""
    newline = "\n"
    return f"""static inline double sq(double v) {{ return v * v; }}
static void upd(int m, double *a, double *b, int i, double s) {{
{newline.join(body)}
}}
void k(int n, double alpha, double A[n][n], double B[n], double C[n]) {{
  for (int i = 0; i < n; i++) {{
{pre}    upd(n, {a}, {b}, i, {arg});
    C[i] += sq(B[i] * 0.1);
  }}
}}
"""


@pytest.mark.parametrize("kind,seed", [("value", s) for s in range(8)]
                         + [("void", s) for s in (0, 20, 3, 4, 5, 6, 7, 8)])
def test_random_helpers_match_cpu(kind, seed):
    src = (value_helper_program if kind == "value" else void_helper_program)(seed)
    sizes = {"n": 23} if kind == "value" else {"n": 11, "alpha": 0.75}
    opts = Options(sizes=sizes, target="emulator")
    report = run(compile_source(src, opts), opts)
    assert report.ok, f"{report.message}\n{src}"
