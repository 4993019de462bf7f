"""gemm fp32 TFLOP/s of the generated kernel next to cuBLAS, in one run (issue 3 "Speed").

    python benchmarks/gemm_tflops.py                      # N=4096 on the GPU
    python benchmarks/gemm_tflops.py --n 2048 --configs "default;--tile 64,64,16"

Each configuration is a string of polymagic options for ``examples/gemm.c``
(``C += alpha * A * B``); ``default`` means none.  Per configuration: the pipeline
summary, one run checked against ``cupy.matmul`` (max relative error; the CPU
reference would take minutes at N=4096), then the best of ``--repeat`` device runs
(CUDA events around the launches, :mod:`polymagic.runtime.gpu`) as TFLOP/s
(``2 N³ / t``) and as a fraction of ``cupy.matmul`` timed the same way in the same
process.  Prints one JSON object per line and a markdown table at the end; exits 2
without a GPU (nothing to measure), 1 when a configuration's result is wrong.

Reference figures on the project's H100 (issue 3): cuBLAS 49 TFLOP/s; a hand-written
64×64 shared + 4×4 register-tiled kernel 21 (44 %); PPCG 0.09's best about 4.3.
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

DEFAULT_CONFIGS = ("--mapping single --shared none --no-registers;--mapping single --shared auto"
                   " --no-registers;default;--tile 64,64,16;--tile 64,64,16:4,4;"
                   "--tile 128,64,8:8,4")


def cublas_seconds(cp, a, b, repeat: int) -> float:
    """Best time of ``cupy.matmul`` (cuBLAS SGEMM) between two CUDA events."""
    best = float("inf")
    for _ in range(repeat + 1):                    # the first call warms up
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        cp.matmul(a, b)
        end.record()
        end.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, end) / 1e3)
    return best


def bench_config(cfg: str, n: int, alpha: float, host: dict, expected, repeat: int) -> dict:
    from polymagic.errors import PolymagicError
    from polymagic.options import parse_options
    from polymagic.compiler import compile_source
    from polymagic.api.function import make_callable
    source = (ROOT / "examples" / "gemm.c").read_text()
    out: dict = {"config": cfg}
    try:
        opts = parse_options([] if cfg == "default" else cfg.split())
        opts = opts.with_(sizes={"N": n, "alpha": alpha}, target="gpu", check=False)
        t0 = time.perf_counter()
        compiled = compile_source(source, opts)
        out["pipeline_s"] = time.perf_counter() - t0
        out["summary"] = compiled.summary
        fn = make_callable(compiled, opts)
        c = host["C"].copy()
        fn(N=n, alpha=alpha, C=c, A=host["A"], B=host["B"])
        out["max_rel_err"] = float(np.max(np.abs(c - expected)) / np.max(np.abs(expected)))
        out["ok"] = out["max_rel_err"] < 1e-3
        best = min(fn(N=n, alpha=alpha, C=host["C"].copy(), A=host["A"], B=host["B"]).device_s
                   for _ in range(repeat))
        out["kernel_s"] = best
        out["tflops"] = 2.0 * n ** 3 / best / 1e12
    except PolymagicError as e:
        out["error"] = str(e)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--configs", default=DEFAULT_CONFIGS,
                   help="';'-separated option strings ('default': none)")
    args = p.parse_args(argv)
    from polymagic.runtime.gpu import gpu_available, unavailable_reason
    if not gpu_available():
        print(f"gemm_tflops: no GPU ({unavailable_reason()}): nothing to measure",
              file=sys.stderr)
        return 2
    import cupy as cp
    n, alpha = args.n, 1.0
    rng = np.random.default_rng(0)
    host = {k: rng.random((n, n), dtype=np.float32) - 0.5 for k in ("A", "B", "C")}
    da, db = cp.asarray(host["A"]), cp.asarray(host["B"])
    expected = (cp.asarray(host["C"]) + alpha * cp.matmul(da, db)).get()
    t_cublas = cublas_seconds(cp, da, db, args.repeat)
    cublas = 2.0 * n ** 3 / t_cublas / 1e12
    print(json.dumps({"config": "cupy.matmul", "kernel_s": t_cublas, "tflops": cublas}),
          flush=True)
    rows, bad = [], False
    for cfg in (c.strip() for c in args.configs.split(";") if c.strip()):
        r = bench_config(cfg, n, alpha, host, expected, args.repeat)
        print(json.dumps(r), flush=True)
        rows.append(r)
        bad |= r.get("ok") is False
    print(f"\n| gemm fp32 N={n} | ms | TFLOP/s | of cuBLAS | max rel err |\n| --- | --- | --- | --- | --- |")
    print(f"| cupy.matmul (cuBLAS) | {t_cublas * 1e3:.2f} | {cublas:.1f} | 100 % | – |")
    for r in rows:
        if "error" in r:
            print(f"| `{r['config']}` | error: {r['error'][:60]} | | | |")
            continue
        print(f"| `{r['config']}` | {r['kernel_s'] * 1e3:.2f} | {r['tflops']:.1f} | "
              f"{100 * r['tflops'] / cublas:.0f} % | {r['max_rel_err']:.1e} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
