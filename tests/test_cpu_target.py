"""The CPU target (issue 21): tiled, vectorisable OpenMP C printed from the schedule.

Every example runs on ``--target openmp`` at small sizes and must match the CPU
reference (no emulator involved), with the default cache model and with a tiny one
whose tiles are a few iterations wide (many partial tiles).  Speed is not asserted
here (benchmarks/cpu.py measures it).
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic.compiler import compile_source
from polymagic.options import Options, parse_options
from polymagic.runtime import ccompile
from polymagic.runtime.openmp import FLAGS, source_with_guard
from polymagic.runtime.run import run

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

#: sizes per example: not multiples of the tile sizes, at least two tiles of the
#: tiny model's tiles
SIZES = {
    "2mm": {"ni": 29, "nj": 27, "nk": 31, "nl": 26},
    "atax": {"m": 41, "n": 35},
    "bicg": {"m": 33, "n": 45},
    "coulomb": {"NY": 19, "NX": 37, "NA": 5},
    "covariance": {"m": 27, "n": 31},
    "doitgen": {"nr": 13, "nq": 11, "np": 17},
    "fdtd-2d": {"tmax": 3, "nx": 27, "ny": 29},
    "gauss-seidel-2d": {"m": 2, "n": 23},
    "gemm": {"N": 37},
    "gemm-polybench": {"ni": 37, "nj": 35, "nk": 29},
    "gemver": {"n": 39},
    "gesummv": {"n": 43},
    "jacobi-1d": {"tsteps": 4, "n": 70},
    "jacobi-2d": {"tsteps": 3, "n": 30},
    "jacobi-2d-alt": {"tsteps": 3, "n": 30},
    "lu": {"n": 29},
    "mvt": {"n": 39},
    "seidel-2d": {"tsteps": 2, "n": 27},
    "sor-1d": {"m": 3, "n": 41},
    "sor-1d-seq": {"m": 3, "n": 41},
    "syrk": {"n": 29, "m": 23},
}

#: a cache model that makes tiles of 8 x 64 at most: many partial tiles
TINY = {"cpu_l1": 1024, "cpu_l2": 4096}


def _names() -> list[str]:
    return sorted(p.stem for p in EXAMPLES.glob("*.c"))


def test_every_example_has_sizes():
    assert set(_names()) <= set(SIZES), sorted(set(_names()) - set(SIZES))


def _run(name: str, **kw):
    opts = Options(sizes=SIZES[name], target="openmp", cpu_code=True, **kw)
    compiled = compile_source((EXAMPLES / f"{name}.c").read_text(), opts)
    report = run(compiled, opts)
    assert report.checked and report.target == "openmp"
    assert report.ok, f"{name}: {report.message} (max rel err {report.max_rel_err})"
    return compiled, report


@pytest.mark.parametrize("name", _names())
def test_example_matches_reference(name):
    compiled, _ = _run(name)
    assert compiled.cpu is not None and compiled.cpu.tiled


@pytest.mark.parametrize("name", _names())
def test_forced_parallel_loops_match_reference(name):
    """``cpu_min_work=0``: every marked loop takes its parallel branch at these small
    sizes (by default the fork cost model runs them serially, issue 32 item 6)."""
    _run(name, cpu_min_work=0)


@pytest.mark.parametrize("name", ["gemm", "2mm", "jacobi-2d", "seidel-2d", "lu", "covariance",
                                  "doitgen", "fdtd-2d"])
def test_tiny_tiles_match_reference(name):
    compiled, _ = _run(name, **TINY)
    if name not in ("jacobi-2d", "fdtd-2d"):     # no reuse in their bands: not tiled
        assert any(b.tiles for b in compiled.cpu.bands)


def test_gemm_tiled_parallel_and_unit_stride_inner():
    """gemm: tiles on the permutable band, i's tile loop parallel, point loops i-k-j
    with j (unit stride in C and B) under omp simd."""
    compiled, _ = _run("gemm")
    (band,) = compiled.cpu.bands
    assert band.loops == ("i", "j", "k") and len(band.tiles) == 3
    assert band.point_order == ("i", "k", "j")
    assert band.parallel == "i" and band.simd == "j"
    src = compiled.cpu.source
    assert src.count("#pragma omp parallel for") == 1 and "#pragma omp simd" in src
    assert "restrict" in src


def test_notes_are_the_cpu_targets():
    """On the OpenMP target the notes say what the CPU code did (one per band) and none
    of the GPU code's mapping, buffers or registers (they did not run)."""
    from polymagic.report.views import all_notes
    from polymagic.report.why import GPU_STAGES
    compiled, report = _run("gemm")
    notes = all_notes(compiled, report)
    assert not [n for n in notes if n.stage in GPU_STAGES]
    (band,) = [n for n in notes if n.stage == "cpu"]
    assert "parallel i, simd j" in band.text
    gpu = all_notes(compiled, None)        # the same compile shown for the GPU keeps them
    assert any(n.stage in ("memory", "registers") for n in gpu)


def test_jacobi_2d_time_loop_stays_sequential():
    """The t loop carries the dependences: each sweep's i loop is the parallel one;
    every access moves with i and j (no reuse a tile could keep): no tiles."""
    compiled, _ = _run("jacobi-2d")
    assert [b.parallel for b in compiled.cpu.bands] == ["i", "i"]
    assert [b.tiles for b in compiled.cpu.bands] == [(), ()]
    assert [b.simd for b in compiled.cpu.bands] == ["j", "j"]
    first_pragma = compiled.cpu.source.index("#pragma omp parallel for")
    assert compiled.cpu.source.index("for (int pm_c0 = 0; pm_c0 < tsteps") < first_pragma


def test_scalar_accumulator_gemm():
    src = (ROOT / "benchmarks" / "kernels" / "gemm-scalar.c").read_text()
    opts = Options(sizes={"N": 45}, target="openmp", cpu_code=True)
    report = run(compile_source(src, opts), opts)
    assert report.ok, report.message


def test_command_line_target_prints_c_and_threads():
    """``--target openmp`` selects the CPU printer (CompileOptions.cpu_code); the
    report names the threads and shows the C with ``--show c``."""
    from polymagic.report.text import to_text
    opts = parse_options(["--target", "openmp", "--size", "N=20", "--show", "c"])
    assert opts.compile.cpu_code
    compiled = compile_source((EXAMPLES / "gemm.c").read_text(), opts)
    report = run(compiled, opts)
    text = to_text(report, compiled, opts.show)
    assert report.ok and "OpenMP thread" in report.target_note
    assert "==== OpenMP C (CPU target) ====" in text and "pm_cpu_gemm" in text


def test_without_openmp_the_code_still_compiles_and_reports_no_threads():
    """A compiler without OpenMP (the fallback): the pragmas are ignored and
    ``pm_cpu_threads`` says 0."""
    import ctypes
    opts = Options(sizes={"N": 20}, cpu_code=True)
    compiled = compile_source((EXAMPLES / "gemm.c").read_text(), opts)
    flags = [f for f in FLAGS if f != "-fopenmp"]
    path = ccompile.shared_library(source_with_guard(compiled.scop, compiled.cpu), flags,
                                   "cpu", "omp-test", "the OpenMP target")
    lib = ctypes.CDLL(str(path))
    assert lib.pm_cpu_threads() == 0


def test_python_function_on_the_cpu_target():
    """A Python function (the Python front end's Scop) prints and runs the same way."""
    src = '''
import polymagic

def gemm(N: int, alpha: float, C: "double[N][N]", A: "double[N][N]", B: "double[N][N]"):
    for i in polymagic.prange(N):
        for j in polymagic.prange(N):
            for k in range(N):
                C[i, j] += alpha * A[i, k] * B[k, j]
'''
    opts = Options(sizes={"N": 23}, target="openmp", python=True)
    compiled = compile_source(src, opts, language="python")
    report = run(compiled, opts)          # compiled without cpu_code: the run adds it
    assert report.ok and report.target == "openmp", report.message
