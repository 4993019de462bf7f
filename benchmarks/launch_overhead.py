"""Per-launch Python time of the GPU runtime's launcher, without a GPU.

A host loop sends every launch through ``GpuModule._launcher`` (the first H100
run: jacobi-1d tsteps=100 n=400, 200 launches, ~14 us of GPU time each).  This
times the host driver calling the launcher for many launches against the tests'
stand-in CuPy (tests/test_runtime.py, kernels that do nothing), minus the driver
with an empty ``launch``: what polymagic itself adds per launch, before CuPy's
own call.  Usage::

    PYTHONPATH=. python benchmarks/launch_overhead.py [jacobi-1d lu doitgen]
"""
from __future__ import annotations

import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

CASES = {"jacobi-1d": {"tsteps": 20000, "n": 400}, "lu": {"n": 2000},
         "doitgen": {"nr": 100, "nq": 100, "np": 60}}


def main(names: list[str]) -> None:
    from test_runtime import fake_cupy
    from polymagic.compiler import compile_source
    from polymagic.options import parse_options
    from polymagic.runtime import gpu

    cp = fake_cupy(lambda g, b, a: None, [])

    class NullFn:
        max_dynamic_shared_size_bytes = 0

        def __call__(self, grid, block, args, shared_mem=0):
            pass

    class RawModule(cp.RawModule):
        def get_function(self, name):
            return NullFn()
    cp.RawModule = RawModule
    sys.modules["cupy"] = cp
    gpu._AVAILABLE = None
    for name in names:
        sizes = CASES[name]
        opts = parse_options(" ".join(f"--size {k}={v}" for k, v in sizes.items()))
        c = compile_source((ROOT / "examples" / f"{name}.c").read_text(), opts)
        m = gpu.GpuModule(c)
        args = {n: np.uint64(0) for n in m.program.arrays}
        full = bare = float("inf")
        counter = [0]
        for _ in range(5):
            counter = [0]
            launch = m._launcher(m.program, m.functions, args, sizes, {}, counter)
            t0 = time.perf_counter()
            m.host(dict(sizes), launch)
            full = min(full, time.perf_counter() - t0)
            t0 = time.perf_counter()
            m.host(dict(sizes), lambda *a: None)
            bare = min(bare, time.perf_counter() - t0)
        n = max(counter[0], 1)
        print(f"{name:10s} launches={counter[0]:6d}  driver+launcher {full / n * 1e6:6.2f} us/launch"
              f" (driver alone {bare / n * 1e6:5.2f}, launcher {(full - bare) / n * 1e6:5.2f})")


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
