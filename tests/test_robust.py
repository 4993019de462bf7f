"""Issue 18: nothing a user writes kills the process; limits refused fast; a GPU
set-up that fails with one line, not a traceback.

* integer division by zero / ``INT_MIN / -1`` in the user's C: caught (the guard
  around every compiled entry point, or the static check of a size-only divisor),
  one paragraph, arrays untouched, through ``run()`` and the CLI (subprocess);
* the C front end's resource limits: refused in well under 2 s with line and
  column; an ``int`` iterator overflowing at the given sizes refused before running;
* the GPU runtime against the stand-in CuPy of tests/test_runtime.py: missing CUDA
  headers, a sticky CUDA error, the shared-memory opt-in read from the device, the
  tiled path's temps and constants finished before the tiles' streams.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cpu_clock import cpu_seconds     # caps in CPU time: a loaded machine slows the wall clock
from polymagic.errors import DeviceError, InputError, SourceError, UserCodeError
from polymagic.frontend.c import parse_c
from polymagic.options import parse_options
from polymagic.compiler import compile_source
from polymagic.runtime import gpu, run as rt
from polymagic.runtime.cpu import CpuReference
from polymagic.runtime.run import run

ROOT = Path(__file__).resolve().parent.parent

DIV_BY_SIZE = """\
void f(int N, int M, int A[N], int B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = A[i] / M;
}
"""

DIV_BY_DATA = """\
void f(int N, int A[N], int B[N], int C[N]) {
  for (int i = 0; i < N; i++)
    C[i] = A[i] / B[i];
}
"""


# ---- arithmetic faults ---------------------------------------------------------

@pytest.mark.parametrize("target", ["emulator", "openmp"])
def test_division_by_a_size_given_as_zero_is_refused_before_running(target):
    o = parse_options(f"--size N=8,M=0 --target {target}")
    b = np.full(8, 7, np.int32)
    with pytest.raises(InputError) as e:
        run(compile_source(DIV_BY_SIZE, o), o, {"A": np.ones(8, np.int32), "B": b})
    msg = str(e.value)
    assert "division by zero in S0, line 3" in msg and "M=0" in msg and "\n" not in msg
    assert (b == 7).all()


@pytest.mark.parametrize("target,check", [("emulator", True), ("emulator", False),
                                          ("openmp", True), ("openmp", False)])
def test_division_by_zero_data_is_an_error_not_a_crash(target, check):
    """Zeros in the divisor array: SIGFPE in the CPU reference (checked runs: it runs
    first) or in the target itself, caught; nothing written back."""
    o = parse_options(f"--size N=8 --target {target}" + ("" if check else " --no-check"))
    c = np.full(8, 5, np.int32)
    ns = {"A": np.arange(8, dtype=np.int32), "B": np.zeros(8, np.int32), "C": c}
    with pytest.raises(UserCodeError) as e:
        run(compile_source(DIV_BY_DATA, o), o, ns)
    msg = str(e.value)
    assert "division" in msg and "S0, line 3" in msg and "\n" not in msg
    assert (c == 5).all()


def test_int_min_divided_by_minus_one_is_caught():
    src = DIV_BY_SIZE.replace("A[i] / M", "(A[i] - A[i] - 2147483647 - 1) / (M - 2)")
    o = parse_options("--size N=4,M=1 --target emulator")
    with pytest.raises(UserCodeError, match="INT_MIN"):
        run(compile_source(src, o), o, {"A": np.ones(4, np.int32), "B": np.zeros(4, np.int32)})


@pytest.mark.parametrize("flag,value", [("--max-emulator-instances", "100"),
                                        ("--max-cpu-instances", "100"),
                                        ("--max-memory", "1KB")])
def test_run_limits_are_run_options_named_in_the_refusal(flag, value):
    """The run limits are options (no environment variables): a run past one is
    refused before anything runs, the error naming the option that raises it; the
    same run within the defaults passes."""
    src = "void f(int N, float A[N][N]) { for (int i = 0; i < N; i++) " \
          "for (int j = 0; j < N; j++) A[i][j] = A[i][j] + 1.0f; }"
    options = parse_options(["--size", "N=16", "--target", "emulator"])
    compiled = compile_source(src, options)
    assert run(compiled, options).ok
    with pytest.raises(InputError, match=flag):
        run(compiled, parse_options(["--size", "N=16", "--target", "emulator", flag, value]))


def test_the_process_survives_and_runs_again():
    """After a caught fault the same compiled code runs fine on good data."""
    o = parse_options("--size N=8 --target emulator")
    compiled = compile_source(DIV_BY_DATA, o)
    with pytest.raises(UserCodeError):
        run(compiled, o, {"A": np.ones(8, np.int32), "B": np.zeros(8, np.int32),
                          "C": np.zeros(8, np.int32)})
    c = np.zeros(8, np.int32)
    r = run(compiled, o, {"A": np.full(8, 6, np.int32), "B": np.full(8, 3, np.int32), "C": c})
    assert r.ok and (c == 2).all()


def test_cpu_reference_alone_names_the_statement():
    scop = parse_c(DIV_BY_DATA)
    ref = CpuReference(scop)
    args = {"N": 4, "A": np.ones(4, np.int32), "B": np.zeros(4, np.int32),
            "C": np.zeros(4, np.int32)}
    with pytest.raises(UserCodeError, match=r"CPU reference .* S0, line 3"):
        ref.run(args)
    args["B"][...] = 1
    assert ref.run(args) >= 0 and (args["C"] == 1).all()


def test_cli_division_by_zero_exits_with_one_paragraph(tmp_path):
    f = tmp_path / "div.c"
    f.write_text(DIV_BY_DATA)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    size_file = tmp_path / "size.c"
    size_file.write_text(DIV_BY_SIZE)
    for src, extra in ((size_file, ["--size", "N=8,M=0"]),
                       (f, ["--size", "N=8", "--target", "openmp", "--no-check"])):
        p = subprocess.run([sys.executable, "-m", "polymagic", "run", str(src), *extra],
                           capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode in (1, 2), (p.returncode, p.stderr)
        assert "division" in p.stderr and "Traceback" not in p.stderr, p.stderr


# ---- resource limits -------------------------------------------------------------

HEAD = "void f(int N, double A[N]) {\n  for (int i = 0; i < N; i++)\n"


@pytest.mark.parametrize("body,where,what", [
    ("    A[i] = " + "(" * 5000 + "A[i]" + ")" * 5000 + ";", (3, 76), "expression depth"),
    ("    A[i] = " + "sqrt(" * 500 + "A[i]" + ")" * 500 + ";", None, "expression depth"),
    ("{" * 2000 + "A[i] = 1.0;" + "}" * 2000, (3, 32), "nesting depth"),
    ("    " + "if (i > 0) " * 3000 + "A[i] = 1.0;", None, "nesting depth"),
    ("{" + "A[i] = 1.0;\n" * 5000 + "}", (67, 11), "statement count"),
    ("    A[i] = " + " + ".join(["A[i]"] * 5000) + ";", None, "expression size"),
    ("    A[i] = " + "-" * 3000 + "A[i];", None, "nesting depth"),
    ("    A[i] = 1.0; /* " + "x" * 300000 + " */", None, "resource limit"),
])
def test_resource_limits_are_refused_fast_with_a_location(body, where, what):
    t0 = cpu_seconds()
    with pytest.raises(SourceError) as e:
        parse_c(HEAD + body + "\n}\n")
    assert cpu_seconds() - t0 < 2.0
    assert what in str(e.value)
    if where is not None:
        assert (e.value.line, e.value.col) == where


def test_a_thousand_statement_function_is_refused_within_two_seconds():
    """The issue's case: a function of 1,000 statements (each its own loop nest) ran
    for minutes and 3.6 GB before refusing; compile_source refuses it at once, naming
    the statement past the limit."""
    body = "".join(f"  for (int i{k} = 0; i{k} < N; i{k}++)\n    A[i{k}] = {k}.0;\n"
                   for k in range(1000))
    t0 = cpu_seconds()
    with pytest.raises(SourceError) as e:
        compile_source("void f(int N, double A[N]) {\n" + body + "}\n",
                       parse_options("--size N=8"))
    assert cpu_seconds() - t0 < 2.0
    assert "statement count" in str(e.value) and e.value.line is not None


def test_sources_within_the_limits_parse():
    parse_c(HEAD + "    A[i] = " + "(" * 60 + "A[i]" + ")" * 60 + ";\n}\n")


@pytest.mark.parametrize("src,sizes", [
    ("void f(int N, double A[4]) {\n  for (int i = 0; i <= N; i++)\n    A[0] += 1.0;\n}\n",
     "N=2147483647"),
    ("void f(int N, double A[4]) {\n  for (int i = 0; i < 2 * N; i++)\n    A[0] += 1.0;\n}\n",
     "N=1500000000"),
])
def test_int_iterator_overflowing_its_type_is_refused_before_running(src, sizes):
    o = parse_options(f"--size {sizes} --target openmp --no-check")
    t0 = cpu_seconds()
    with pytest.raises(InputError, match="overflow"):
        run(compile_source(src, o), o)
    assert cpu_seconds() - t0 < 60


def test_long_iterator_may_go_past_int_max():
    from polymagic.runtime.faults import check_iterators
    src = "void f(long N, double A[4]) {\n  for (long i = 0; i <= N; i++)\n    A[0] += 1.0;\n}\n"
    try:
        scop = parse_c(src)
    except SourceError:
        pytest.skip("long size parameters are not supported")
    check_iterators(scop, {"N": 2**31 + 5})


# ---- the GPU runtime against the stand-in CuPy ------------------------------------

@pytest.fixture
def stand_in(monkeypatch):
    from test_runtime import fake_cupy, stand_in_compiled
    state = SimpleNamespace(kernel=lambda grid, block, args: None, synced=[], compiled=None)
    cp = fake_cupy(lambda g, b, a: state.kernel(g, b, a), [])
    cp.cuda.Device.synchronize = lambda self: state.synced.append(True)
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(gpu, "_AVAILABLE", None)
    monkeypatch.setattr(gpu, "_RAW_MODULES", {})
    monkeypatch.setattr(gpu, "_OPTIN", {})
    monkeypatch.setattr(rt, "_MODULES", {})
    state.cp = cp
    state.compiled = stand_in_compiled()
    return state


def test_missing_cuda_headers_is_one_line_naming_the_package(stand_in):
    class Boom:
        def __init__(self, code, options=(), **kw):
            pass

        def get_function(self, name):
            raise RuntimeError("Failed to find CUDA headers")
    stand_in.cp.RawModule = Boom
    with pytest.raises(DeviceError) as e:
        gpu.GpuModule(stand_in.compiled)
    assert gpu.HEADERS_PACKAGE in str(e.value) and "\n" not in str(e.value)
    assert not gpu._RAW_MODULES


def test_the_gpu_extra_brings_the_headers_package():
    """``pip install polymagic[gpu]`` brings the CUDA runtime headers CuPy compiles
    against (the package the missing-headers error names), beside CuPy itself."""
    import tomllib
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["gpu"]
    names = {d.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip()
             for d in extra}
    assert gpu.HEADERS_PACKAGE in names and any(n.startswith("cupy") for n in names), extra


def test_sticky_cuda_error_drops_the_cached_modules(stand_in):
    class CUDARuntimeError(Exception):
        pass
    CUDARuntimeError.__module__ = "cupy_backends.cuda.api.runtime"

    def boom(grid, block, args):
        raise CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access was "
                               "encountered (CUDA_ERROR_ILLEGAL_ADDRESS)")
    m = gpu.GpuModule(stand_in.compiled)
    assert gpu._RAW_MODULES
    stand_in.kernel = boom
    b = np.full((2, 2), 9.0, np.float32)
    with pytest.raises(DeviceError, match="restart"):
        m.run({"A": np.ones((2, 2), np.float32), "B": b}, {"N": 2}, {"alpha": 1.0})
    assert not gpu._RAW_MODULES and not m._fns and (b == 9.0).all()


def test_shared_memory_opt_in_is_read_from_the_device(stand_in):
    stand_in.cp.cuda.Device.attributes = {"MaxSharedMemoryPerBlockOptin": 101376}
    assert gpu.shared_optin_limit(stand_in.cp) == 101376
    k = SimpleNamespace(name="kernel0", dynamic_shared=150 * 1024, block=(32, 1, 1))
    with pytest.raises(DeviceError, match="101376"):
        gpu._call(lambda *a, **kw: None, (1, 1, 1), k, (), gpu.shared_optin_limit(stand_in.cp))
    called = []
    k.dynamic_shared = 64 * 1024
    gpu._call(lambda *a, **kw: called.append(kw), (1, 1, 1), k, (), 101376)
    assert called == [{"shared_mem": 64 * 1024}]


def test_tiled_run_finishes_temps_and_constants_before_the_tiles(stand_in):
    """The temps' zeroing and the constants' upload (legacy stream) are finished
    before any tile starts on the non-blocking streams."""
    events: list = []
    m = gpu.GpuModule(stand_in.compiled)
    dev = gpu._GpuTiles(m, stand_in.cp, {}, {"alpha": 1.0})
    stand_in.cp.cuda.Device.synchronize = lambda self: events.append("sync")
    dev.prepare(m.program, {"N": 4})
    assert events == ["sync"]


# ---- a notebook's kernel ------------------------------------------------------------

def test_notebook_kernel_survives_a_division_by_zero(tmp_path, monkeypatch):
    """A real Jupyter kernel: the cell that divides by zero shows one paragraph, and
    the next cell runs in the same kernel (its variables intact)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[
        v4.new_code_cell("%load_ext polymagic\nimport numpy as np\n"
                         "A = np.arange(8, dtype=np.int32)\nB = np.zeros(8, np.int32)\n"
                         "C = np.full(8, 5, np.int32)"),
        v4.new_code_cell("%%polycuda --size N=8 --target emulator\n" + DIV_BY_DATA),
        v4.new_code_cell("print('alive', int(C.sum()))"),
    ])
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    client = nbclient.NotebookClient(nb, timeout=600, startup_timeout=600, kernel_name="python3",
                                     allow_errors=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    fault = "".join(o.get("text", "") + o.get("evalue", "") for o in nb.cells[1].outputs)
    assert "division" in fault and "Traceback" not in fault, fault
    after = "".join(o.get("text", "") for o in nb.cells[2].outputs)
    assert "alive 40" in after, after
