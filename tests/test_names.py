"""Hygienic names (issue 18, polymagic.names): the user's identifiers named like
every kind of generated identifier give the right result (emulator and OpenMP ==
CPU reference, the CUDA compiles with NVRTC) or a clear refusal at the declaration.
"""
from __future__ import annotations

import re

import pytest

from polymagic.codegen.host import print_host_python
from polymagic.codegen.nvrtc import compile_cuda
from polymagic.compiler import compile_source
from polymagic.errors import UnsupportedError
from polymagic.options import parse_options
from polymagic.runtime.run import run

#: gemm with its scalar renamed: kernels read sh0_A, sh0_B, pm_r0_C, pm_c3, pm_qg8...
GEMM = """void gemm(int N, float {s}, float C[N][N], float A[N][N], float B[N][N]) {{
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += {s} * A[i][k] * B[k][j];
}}"""
#: gemm with its arrays renamed
GEMM_ARRAYS = """void gemm(int N, float alpha, float {c}[N][N], float {a}[N][N], float {b}[N][N]) {{
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        {c}[i][j] += alpha * {a}[i][k] * {b}[k][j];
}}"""
#: a 1-d Jacobi: a host time loop, size parameter {n}, localisable along t
JACOBI = """void jac(int T, int {n}, double {a}[{n}], double {b}[{n}]) {{
  for (int t = 0; t < T; t++) {{
    for (int i = 1; i < {n} - 1; i++)
      {b}[i] = 0.33333 * ({a}[i - 1] + {a}[i] + {a}[i + 1]);
    for (int i = 1; i < {n} - 1; i++)
      {a}[i] = {b}[i];
  }}
}}"""


def _run(src: str, options: str):
    for target in ("emulator", "openmp"):
        opts = parse_options(f"{options} --target {target}")
        report = run(compile_source(src, opts), opts)
        assert report.ok, (target, report)
    return compile_source(src, parse_options(options))


# generated names of every kind a kernel prints that the front end lets through
@pytest.mark.parametrize("name", ["sh0_A", "sh0_B", "sh0", "sh0t0_A", "lc0_A", "kernel0",
                                  "kernel1", "kernel_gemm", "ints", "launch", "host"])
def test_scalar_named_like_generated_code(name):
    compiled = _run(GEMM.format(s=name), f"--size N=37,{name}=1.5")
    if name.startswith("sh0"):      # the generated side is renamed, the user's kept
        assert re.search(r"\bpm_sh0_A\b", compiled.cuda) and f"float {name}" in compiled.cuda
    compile_cuda(compiled.cuda, "sm_80")


def test_no_clash_keeps_the_short_names():
    compiled = compile_source(GEMM.format(s="alpha"), parse_options(""))
    assert "sh0_A" in compiled.cuda and "pm_sh0" not in compiled.cuda


@pytest.mark.parametrize("names", [("sh0_A", "sh0_B", "A"), ("sh0_B", "A", "B"),
                                   ("kernel0", "sh0t0_A", "lc0_B"), ("S0", "S1", "B")])
def test_arrays_named_like_shared_buffers(names):
    c, a, b = names
    compiled = _run(GEMM_ARRAYS.format(c=c, a=a, b=b), "--size N=33")
    compile_cuda(compiled.cuda, "sm_80")


@pytest.mark.parametrize("n,a,b,opts", [
    ("lambda", "A", "B", ""), ("launch", "A", "B", ""), ("ints", "A", "B", ""),
    ("range", "lc0_A", "lc0_B", "--localise t"), ("N", "sh0_A", "sh1_A", "--shared all"),
    ("_tdiv", "A", "B", "--device-mem 4KB")])
def test_host_code_names(n, a, b, opts):
    """Size parameters named like Python keywords or the host function's own names:
    the host driver (the GPU's and the tiled path's) renames them."""
    src = JACOBI.format(n=n, a=a, b=b)
    compiled = _run(src, f"--size T=5,{n}=70 {opts}")
    calls: list = []
    ns: dict = {}
    exec(print_host_python(compiled.program), ns)      # noqa: S102 — generated here
    ns["host"]({"T": 5, n: 70}, lambda *a: calls.append(a))
    assert calls and all(c[0] in compiled.program.kernels for c in calls)


@pytest.mark.parametrize("decl,name,col", [
    ("float pm_c3", "pm_c3", 24), ("float PM_HELPER_MACROS", "PM_HELPER_MACROS", 24),
    ("float __x", "__x", 24), ("float threadIdx", "threadIdx", 24),
    ("float NULL", "NULL", 24), ("float INFINITY", "INFINITY", 24),
    ("float pm_min", "pm_min", 24)])
def test_reserved_names_are_refused_at_the_declaration(decl, name, col):
    src = GEMM.format(s="alpha").replace("float alpha", decl).replace("alpha *", f"{name} *")
    with pytest.raises(UnsupportedError) as e:
        compile_source(src, parse_options("--size N=8"))
    assert (e.value.line, e.value.col) == (1, col)
    assert repr(name) in str(e.value) and "rename it" in str(e.value)


@pytest.mark.parametrize("name", ["min", "mod", "exists"])
def test_isl_keywords_may_not_name_sizes_or_iterators(name):
    src = JACOBI.format(n=name, a="A", b="B")
    with pytest.raises(UnsupportedError, match="keyword of the polyhedral library") as e:
        compile_source(src, parse_options(f"--size T=2,{name}=8"))
    assert (e.value.line, e.value.col) == (1, 21)
    src = (f"void f(int N, double A[N]) {{\n  for (int {name} = 0; {name} < N; {name}++)\n"
           f"    A[{name}] = 1.0;\n}}")
    with pytest.raises(UnsupportedError, match="keyword of the polyhedral library") as e:
        compile_source(src, parse_options("--size N=8"))
    assert e.value.line == 2


def test_isl_keywords_may_name_arrays_and_scalars():
    src = ("void f(int N, double max, double min[N], double B[N]) {\n"
           "  for (int i = 0; i < N; i++) {\n    double mod = min[i];\n"
           "    B[i] = max * mod;\n  }\n}")
    _run(src, "--size N=20,max=2")


def test_reserved_local_and_iterator():
    src = ("void f(int N, double A[N]) {\n"
           "  for (int pm_i = 0; pm_i < N; pm_i++)\n"
           "    A[pm_i] = 1.0;\n}")
    with pytest.raises(UnsupportedError, match="'pm_i' is reserved") as e:
        compile_source(src, parse_options("--size N=8"))
    assert e.value.line == 2


@pytest.mark.parametrize("fn", ["abort", "free", "exp", "signal", "memcpy", "main"])
def test_function_named_like_the_c_library(fn):
    """The CPU reference compiles the user's function under a generated name: named
    ``abort`` or ``free`` it no longer interposes the C library (``abort`` killed the
    process), named ``exp`` it no longer clashes with <math.h>."""
    src = (f"void {fn}(int N, double A[N], double B[N]) {{\n"
           "  for (int i = 0; i < N; i++)\n    B[i] = 2.0 * A[i];\n}")
    _run(src, "--size N=40")


def test_generated_name_helpers_are_inverse():
    """One helper for the generated namespace (issue 33): kernel marks, buffers in the
    reserved namespace and the reports' kernel names go through it."""
    from polymagic.mapping import MARK_PREFIX
    from polymagic.names import GENERATED_PREFIX, generated, is_generated, strip_generated
    assert generated("kernel0") == "pm_kernel0" and strip_generated("pm_kernel0") == "kernel0"
    assert strip_generated("kernel0") == "kernel0"            # no prefix: as it is
    assert is_generated(generated("c3")) and not is_generated("alpha")
    assert MARK_PREFIX == generated("kernel") and GENERATED_PREFIX == "pm_"
    c = compile_source(GEMM.format(s="alpha"), parse_options("--size N=64").compile)
    assert [strip_generated(m) for m in c.mapping.plans] == list(c.program.kernels)


def test_no_module_strips_the_generated_prefix_by_hand():
    """``name[3:]``, ``name[len("pm_"):]`` and friends: :func:`strip_generated` instead."""
    import pathlib
    pkg = pathlib.Path(__file__).resolve().parent.parent / "polymagic"
    by_hand = re.compile(r'name\[3:\]|\[len\("pm_"\):\]|(startswith|removeprefix)\("pm_"\)'
                         r'|replace\("pm_"')
    found = [f"{p.relative_to(pkg)}:{i}" for p in sorted(pkg.rglob("*.py"))
             if p.name != "names.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if by_hand.search(line)]
    assert found == []
