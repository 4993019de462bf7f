"""The GPU launcher's per-launch work, against a stand-in CuPy (tests/test_runtime.py).

A host loop sends every launch through ``GpuModule._launcher`` (the first H100 run:
jacobi-1d's 200 launches took ~14 us each); what is the same for every launch of a
run is prepared once per kernel, and only the driver's loop counters change."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from polymagic.compiler import compile_source
from polymagic.options import parse_options
from polymagic.runtime import gpu, run as rt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_runtime import fake_cupy  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def recorded(monkeypatch):
    """A stand-in CuPy whose kernels only record (name, grid, block, args, shared)."""
    calls: list = []
    cp = fake_cupy(lambda g, b, a: None, [])

    class Fn:
        def __init__(self, name):
            self.name, self.optins = name, []

        @property
        def max_dynamic_shared_size_bytes(self):
            return self.optins[-1] if self.optins else 0

        @max_dynamic_shared_size_bytes.setter
        def max_dynamic_shared_size_bytes(self, v):
            self.optins.append(v)

        def __call__(self, grid, block, args, shared_mem=0):
            calls.append((self.name, grid, block, args, shared_mem))

    class RawModule(cp.RawModule):
        def get_function(self, name):
            return Fn(name)
    cp.RawModule = RawModule
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(gpu, "_AVAILABLE", None)
    monkeypatch.setattr(gpu, "_RAW_MODULES", {})
    monkeypatch.setattr(gpu, "_OPTIN", {})
    monkeypatch.setattr(rt, "_MODULES", {})
    return calls


def _run(name: str, sizes: dict[str, int], options: str = ""):
    opts = parse_options(" ".join(f"--size {k}={v}" for k, v in sizes.items()) + " " + options)
    c = compile_source((EXAMPLES / f"{name}.c").read_text(), opts)
    m = gpu.GpuModule(c)
    from polymagic.expr import evaluate
    arrays = {p.name: np.zeros(tuple(evaluate(e, sizes) for e in c.scop.arrays[p.name].shape),
                               c.scop.arrays[p.name].dtype) for p in c.scop.array_params}
    return m, m.run(arrays, sizes, {})


def test_a_host_loop_without_counters_reuses_one_argument_tuple(recorded):
    m, res = _run("jacobi-1d", {"tsteps": 5, "n": 40})
    assert res.launches == 10 == len(recorded)
    assert [c[0] for c in recorded] == ["kernel0", "kernel1"] * 5
    for name in ("kernel0", "kernel1"):
        mine = [c for c in recorded if c[0] == name]
        assert all(c[3] is mine[0][3] for c in mine)          # prepared once
        k = m.program.kernels[name]
        assert mine[0][1] == (1, 1, 1) and mine[0][2] == tuple(k.block)
        assert mine[0][3][-len(k.ints):] == tuple(np.int32(40) for _ in k.ints)
        assert all(type(a) is np.int32 for a in mine[0][3][-len(k.ints):])


def test_the_drivers_loop_counters_reach_each_launch(recorded):
    m, res = _run("lu", {"n": 7})
    k = m.program.kernels["kernel0"]
    assert res.launches == 6 == len(recorded)
    at = k.ints.index("pm_c0")
    assert [int(c[3][len(k.arrays) + len(k.scalars) + at]) for c in recorded] == list(range(6))
    assert all(type(a) is np.int32 for c in recorded for a in c[3][-len(k.ints):])
    assert {int(c[3][len(k.arrays) + k.ints.index("n")]) for c in recorded} == {7}


def test_dynamic_shared_memory_is_opted_in_once_per_kernel(recorded, monkeypatch):
    c = compile_source((EXAMPLES / "gemm.c").read_text(),
                       parse_options("--size N=40 --tile 128,64,32 --shared-mem 100KB "
                                     "--no-registers"))
    m = gpu.GpuModule(c)
    k = next(k for k in m.program.kernels.values() if k.dynamic_shared)
    fn = m.functions[k.name]
    launch = m._launcher(m.program, m.functions, {n: np.uint64(0) for n in m.program.arrays},
                         {"N": 40}, {"alpha": 1.0, "beta": 1.0}, [0])
    for _ in range(3):
        launch(k.name, (2, 2, 1), {})
    assert fn.optins == [k.dynamic_shared]
    assert [c[4] for c in recorded] == [k.dynamic_shared] * 3


def test_empty_launches_are_skipped(recorded):
    m = gpu.GpuModule(compile_source((EXAMPLES / "jacobi-1d.c").read_text(),
                                     parse_options("--size tsteps=2 --size n=40")))
    counter = [0]
    launch = m._launcher(m.program, m.functions, {n: np.uint64(0) for n in m.program.arrays},
                         {"tsteps": 2, "n": 40}, {}, counter)
    launch("kernel0", (0, 1, 1), {})
    launch("kernel0", (3,), {})
    assert counter == [1] and recorded[0][1] == (3, 1, 1)


def test_a_missing_loop_counter_is_a_key_error(recorded):
    m = gpu.GpuModule(compile_source((EXAMPLES / "lu.c").read_text(),
                                     parse_options("--size n=7")))
    launch = m._launcher(m.program, m.functions, {n: np.uint64(0) for n in m.program.arrays},
                         {"n": 7}, {}, [0])
    with pytest.raises(KeyError, match="pm_c0"):
        launch("kernel0", (1, 1, 1), {})
    launch("kernel0", (1, 1, 1), {"pm_c0": 3, "unused": 9})
    k = m.program.kernels["kernel0"]
    assert int(recorded[-1][3][len(k.arrays) + len(k.scalars) + k.ints.index("pm_c0")]) == 3
