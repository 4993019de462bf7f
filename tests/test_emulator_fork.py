"""Forked children (the fuzzer's worker pool) can run the emulator's OpenMP builds
after their parent did: the OpenMP runtime is not fork-safe, so they run them on
one thread instead of waiting forever for the parent's worker threads."""
from __future__ import annotations

import multiprocessing
import pathlib
import sys

import pytest

from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

GEMM = (pathlib.Path(__file__).resolve().parent.parent / "examples" / "gemm.c").read_text()


def _child(q):
    o = Options(target="openmp", sizes={"N": 23})
    q.put(run(compile_source(GEMM, o), o).ok)


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_openmp_run_in_a_forked_child_after_the_parent():
    o = Options(target="openmp", sizes={"N": 21})
    assert run(compile_source(GEMM, o), o).ok
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    p.join(600)     # a deadlock, not slowness: generous on a loaded machine
    alive = p.is_alive()
    if alive:
        p.kill()
    assert not alive, "the forked child hung in its OpenMP run"
    assert q.get(timeout=5) is True
