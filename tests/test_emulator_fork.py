"""Forked children (the fuzzer's worker pool) can run the emulator's OpenMP builds
and the OpenMP target after their parent ran either: the OpenMP runtime is not
fork-safe, so they run them on one thread instead of waiting forever for the
parent's worker threads (the OpenMP target once hung a fuzz-regression worker so)."""
from __future__ import annotations

import multiprocessing
import pathlib
import sys

import pytest

from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

GEMM = (pathlib.Path(__file__).resolve().parent.parent / "examples" / "gemm.c").read_text()


def _child(q, cpu_code):
    o = Options(target="openmp", sizes={"N": 65}, cpu_code=cpu_code)
    q.put(run(compile_source(GEMM, o), o).ok)


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
@pytest.mark.parametrize("cpu_code", [False, True], ids=["emulator-openmp", "openmp-target"])
def test_openmp_run_in_a_forked_child_after_the_parent(cpu_code):
    # N = 64: gemm's parallel loop has 262,144 instances per fork, enough to fork
    # (codegen/cpu_cost.MIN_WORK), so the parent's OpenMP threads exist
    o = Options(target="openmp", sizes={"N": 64}, cpu_code=cpu_code)
    assert run(compile_source(GEMM, o), o).ok
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q, cpu_code))
    p.start()
    p.join(600)     # a deadlock, not slowness: generous on a loaded machine
    alive = p.is_alive()
    if alive:
        p.kill()
    assert not alive, "the forked child hung in its OpenMP run"
    assert q.get(timeout=5) is True
