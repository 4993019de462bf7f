"""Bytes moved and end-to-end time of packed transfers vs whole-array transfers
(seed 002 §4; issue 6 "Speed").

Two cases, each one run: a gemm whose arrays are strided views into larger
buffers, and a jacobi-2d stencil on a sub-grid (views with an offset into a larger
grid).  For each: the planned bytes (``bytes_h2d``/``bytes_d2h``) against what
whole-array transfers of the memory the views span move, and on a GPU the
end-to-end time (packing + H2D + kernels + D2H + unpacking) against pageable
whole-array copies (``cupy.asarray`` of the spanned memory up, ``.get()`` of the
written spans down) plus the same kernels — PPCG's host-code behaviour.

    python benchmarks/transfers.py                 # GPU when CuPy sees one
    python benchmarks/transfers.py --target emulator --small
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from polymagic.options import Options  # noqa: E402
from polymagic.compiler import compile_source  # noqa: E402
from polymagic.runtime.run import run  # noqa: E402
from polymagic.transfers.plan import HostArray  # noqa: E402


def base_of(a: np.ndarray) -> np.ndarray:
    """The memory a view spans, as a flat uint8 array (what a whole-array copy moves)."""
    h = HostArray.of("", a)
    lo = h.ptr + sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
    raw = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * h.span_bytes()).from_address(lo))
    return raw


def pageable_baseline(views: dict, written: list[str]) -> dict:
    import cupy as cp
    spans = {n: base_of(v) for n, v in views.items()}
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    dev = {n: cp.asarray(s) for n, s in spans.items()}        # pageable H2D of the spans
    cp.cuda.Device().synchronize()
    t1 = time.perf_counter()
    for n in written:
        dev[n].get()                                          # pageable D2H
    cp.cuda.Device().synchronize()
    t2 = time.perf_counter()
    return {"h2d_s": t1 - t0, "d2h_s": t2 - t1,
            "bytes_h2d": sum(s.nbytes for s in spans.values()),
            "bytes_d2h": sum(spans[n].nbytes for n in written)}


def case_gemm(n: int, rng):
    big = [rng.random((2 * n, 2 * n), dtype=np.float32) for _ in range(3)]
    views = {"C": big[0][::2, ::2], "A": big[1][1::2, ::2], "B": big[2][::2, 1::2].T}
    return "gemm.c", views, {"N": n}, ["C"]


def case_stencil(n: int, rng):
    grid = [rng.random((n + 64, n + 64)) for _ in range(2)]
    views = {"A": grid[0][32:32 + n, 32:32 + n], "B": grid[1][32:32 + n, 32:32 + n]}
    return "jacobi-2d.c", views, {"tsteps": 4, "n": n}, ["A", "B"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--target", default="auto")
    p.add_argument("--small", action="store_true", help="small sizes (emulator smoke test)")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    sizes = {"gemm": 64 if args.small else 4096, "stencil": 64 if args.small else 8192}
    out = []
    for name, make in (("gemm", case_gemm), ("stencil", case_stencil)):
        src, views, ints, written = make(sizes[name], rng)
        o = Options(target=args.target, sizes=ints, check=False)
        c = compile_source((ROOT / "examples" / src).read_text(), o)
        t0 = time.perf_counter()
        r = run(c, o, dict(views))
        wall = time.perf_counter() - t0
        t = r.transfers
        row = {"case": name, "target": r.target, "bytes_h2d": r.bytes_h2d,
               "bytes_d2h": r.bytes_d2h, "whole_h2d": t["whole_h2d"],
               "whole_d2h": t["whole_d2h"], "kernel_s": r.device_s, "h2d_s": r.h2d_s,
               "d2h_s": r.d2h_s, "pack_s": t.get("pack_s", 0.0),
               "unpack_s": t.get("unpack_s", 0.0), "wall_s": wall}
        row["end_to_end_s"] = row["h2d_s"] + row["kernel_s"] + row["d2h_s"] + row["pack_s"] \
            + row["unpack_s"]
        if r.target == "gpu":
            base = pageable_baseline(views, written)
            row["whole_pageable_s"] = base["h2d_s"] + r.device_s + base["d2h_s"]
            row["speedup_vs_whole_pageable"] = row["whole_pageable_s"] / row["end_to_end_s"]
        out.append(row)
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
