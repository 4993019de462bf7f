"""The benchmark suite in one command (issue 8 §4): every kernel of benchmarks/suite.py
under every mapping variant, on the GPU and on the CPU, with a time budget.

    python benchmarks/run_all.py                          # GPU if CuPy sees one + OpenMP + CPU -O3
    python benchmarks/run_all.py --preset large --time-budget 540 --ncu --ncu-count 3
    python benchmarks/run_all.py --target openmp --preset small   # CPU parts only (no GPU)

Per kernel: the original C at ``-O3 -march=native`` (sequential, the user's code as
written) and, where one exists, cuBLAS through CuPy.  Per kernel and variant: the
pipeline time (parse → CUDA, cold cache), and per target the kernel time (GPU: CUDA
events around the launches, the best of ``--repeat``), the H2D/D2H copy times, and the
check against the outputs of one CPU reference run per kernel.  With ``--ncu``, the same run under
Nsight Compute (``ncu --metrics gpu__time_duration.sum -c N``, default clock control,
the way the reference figures of the other issues were taken) for comparison with the
CUDA-event times.  A variant that does not apply to a kernel (localisation without
a loop to localise along) is listed as such.

Writes JSON (``--out``), a markdown table (stdout and ``--markdown``) and a speedup
plot (``--plot``).  Degrades gracefully: without CuPy/GPU the GPU columns say why,
without ``ncu`` the ncu column does, and a kernel that fails records its error.
Stops starting measurements once ``--time-budget`` seconds have passed.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from suite import PRESETS, Kernel, select, size_args  # noqa: E402

#: Mapping variants: name -> (extra options, or a function of the kernel giving them or
#: None when the variant does not apply to it; description).  Each stage is switched on
#: in turn on top of the foundation's baseline, then everything at its default.
VARIANTS: dict[str, tuple[list[str] | Callable[[Kernel], list[str] | None], str]] = {
    "single": (["--mapping", "single", "--shared", "none", "--no-registers"],
               "one schedule, global memory only (the foundation's baseline)"),
    "superposition": (["--mapping", "superposition", "--shared", "none", "--no-registers"],
                      "block/thread schedules superposed (seed 003), global memory only"),
    "superposition-shared": (["--mapping", "superposition", "--shared", "auto",
                              "--no-registers"],
                             "superposition + shared-memory buffers per block and thread "
                             "tile (seed 003 with seed 000)"),
    "shared": (["--mapping", "single", "--shared", "auto", "--no-registers"],
               "+ shared-memory buffers where data is reused (seed 000)"),
    "shared-all": (["--mapping", "single", "--shared", "all", "--no-registers"],
                   "+ shared-memory buffers for every partition (seed 000 §3)"),
    "registers": (["--mapping", "single", "--shared", "auto"],
                  "+ register promotion and __constant__ memory (seed 004 §4.2)"),
    "tile-auto": (["--tile", "auto"], "+ tile sizes from the tile search (seed 000 §4.3)"),
    "localisation": (lambda k: ["--localise", k.localise] if k.localise else None,
                     "+ localisation along a sequential loop (seed 001)"),
    "time-tiling": (lambda k: ["--time-tiling", "4"] if {"tsteps", "tmax"} & set(k.small)
                    else None,
                    "time-skewed tiles of 4 steps (32 points per spatial loop), their "
                    "footprint in shared memory, one launch per wavefront (issue 5)"),
    "default": ([], "every stage at its default"),
}
DEFAULT_VARIANTS = ("single", "superposition", "shared", "registers", "tile-auto",
                    "localisation", "time-tiling", "default")
CPU_OPT = "-O3 -march=native"


# ---- options and environment -------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="auto",
                   help="comma list of gpu, openmp, emulator; auto = gpu (if any) + openmp")
    p.add_argument("--preset", default="large", choices=PRESETS)
    p.add_argument("--kernels", default="", help="comma list (default: the whole suite)")
    p.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                   help=f"comma list of {', '.join(VARIANTS)}")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per measurement (best)")
    p.add_argument("--time-budget", type=float, default=540.0, metavar="SEC",
                   help="start no measurement after SEC seconds (default 540)")
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="skip the comparison with the CPU reference")
    p.add_argument("--no-cpu", dest="cpu", action="store_false", help="skip CPU -O3 timings")
    p.add_argument("--ncu", action="store_true", help="also time kernels under Nsight Compute")
    p.add_argument("--ncu-count", type=int, default=5, metavar="N",
                   help="launches profiled per run (ncu -c N)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "latest.json")
    p.add_argument("--markdown", type=Path, default=None)
    p.add_argument("--plot", type=Path, default=None)
    return p.parse_args(argv)


def targets(spec: str) -> tuple[list[str], str]:
    """The targets to run and a note on the GPU (why it is missing)."""
    from polymagic.runtime.gpu import gpu_available, unavailable_reason
    gpu_note = "" if gpu_available() else unavailable_reason()
    if spec == "auto":
        return (["gpu"] if gpu_available() else []) + ["openmp"], gpu_note
    wanted = [t.strip() for t in spec.split(",") if t.strip()]
    bad = [t for t in wanted if t not in ("gpu", "openmp", "emulator")]
    if bad:
        raise SystemExit(f"unknown target(s) {', '.join(bad)}")
    return wanted, gpu_note


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def meta(args, tgts: list[str], gpu_note: str) -> dict:
    from polymagic.runtime.gpu import device_name, gpu_available
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": git_commit(),
            "host": platform.node(), "cpu_cores": os.cpu_count(),
            "device": device_name() if gpu_available() else None, "gpu_note": gpu_note,
            "preset": args.preset, "targets": tgts, "repeat": args.repeat,
            "cpu_opt": CPU_OPT, "ncu": shutil.which("ncu") if args.ncu else None}


# ---- measurements -------------------------------------------------------------------

def compile_cold(source: str, options):
    """The pipeline on a cold cache; (compiled, seconds)."""
    from polymagic import compiler
    compiler.clear_caches()
    t0 = time.perf_counter()
    compiled = compiler.compile_source(source, options)
    return compiled, time.perf_counter() - t0


def inputs_for(compiled, options) -> dict:
    """Seeded random inputs for every parameter (the runtime's own rules)."""
    from polymagic.runtime.run import gather_inputs
    return gather_inputs(compiled.scop, options, {}).args


def copies(args: dict) -> dict:
    return {k: (v.copy() if hasattr(v, "copy") and hasattr(v, "dtype") else v)
            for k, v in args.items()}


def reference(compiled, args: dict) -> tuple[float, dict]:
    """One run of the original C at -O3 on copies of ``args``: its time and its
    outputs, which every variant of the kernel is checked against (at the large sizes
    one CPU run takes tens of seconds; it runs once per kernel, not once per variant)."""
    from polymagic.runtime.run import cpu_reference
    out = copies(args)
    return cpu_reference(compiled.scop, CPU_OPT).run(out), out


def time_cpu(compiled, args: dict, repeat: int, first: float) -> float:
    """Best time of the original C at -O3 (sequential); ``first`` is a run already
    timed, and runs stop repeating once they have taken 2 s together."""
    from polymagic.runtime.run import cpu_reference
    ref = cpu_reference(compiled.scop, CPU_OPT)
    runs = [first]
    while len(runs) < max(1, repeat) and sum(runs) < 2.0:
        runs.append(ref.run(copies(args)))
    return min(runs)


def check_against(compiled, fn, args: dict, expected: dict) -> dict:
    """One run of ``fn`` on copies of ``args`` compared with the reference outputs."""
    from polymagic.runtime.run import compare_all
    scop = compiled.scop
    written = [n for n in scop.written_arrays() if scop.arrays[n].kind == "param"]
    out = copies(args)
    rep = fn(**out)
    _, totals = compare_all(written, expected, out)
    return {"ok": rep.ok and totals["mismatches"] == 0,
            "max_rel_err": totals["max_rel_err"], "launches": rep.launches,
            "counters": rep.counters}


def time_target(compiled, options, args: dict, repeat: int, expected: dict | None) -> dict:
    """One checked run (against ``expected``, the reference outputs) and ``repeat``
    device-only runs (best kernel time)."""
    from polymagic.api.function import make_callable
    fn = make_callable(compiled, options)
    out: dict = {}
    if expected is not None:
        got = check_against(compiled, fn, args, expected)
        counters = got.pop("counters")
        out.update(got)
        if counters:                     # emulator: global traffic and coalescing
            from polymagic.report.fmt import transactions
            tx = transactions(counters) or {}
            out.update(global_loads=counters.get("loads"),
                       global_stores=counters.get("stores"),
                       transactions=tx.get("transactions"),
                       transactions_per_request=tx.get("transactions_per_request"))
    best = None
    for _ in range(max(1, repeat)):
        r = fn(**copies(args))
        if best is None or r.device_s < best.device_s:
            best = r
    out.update(kernel_s=best.device_s, h2d_s=best.h2d_s, d2h_s=best.d2h_s,
               launches=best.launches)
    return out


# ---- cuBLAS (CuPy) ---------------------------------------------------------------

def _gemm_square(cp, a, s):
    a["C"] += s["alpha"] * (a["A"] @ a["B"])


def _gemm_polybench(cp, a, s):
    a["C"] *= s["beta"]
    a["C"] += s["alpha"] * (a["A"] @ a["B"])


def _2mm(cp, a, s):
    a["tmp"] = s["alpha"] * (a["A"] @ a["B"])
    a["D"] *= s["beta"]
    a["D"] += a["tmp"] @ a["C"]


def _3mm(cp, a, s):
    a["E"] = a["A"] @ a["B"]
    a["F"] = a["C"] @ a["D"]
    a["G"] = a["E"] @ a["F"]


def _atax(cp, a, s):
    a["tmp"] = a["A"] @ a["x"]
    a["y"] = a["A"].T @ a["tmp"]


CUBLAS = {"gemm_square": _gemm_square, "gemm_polybench": _gemm_polybench, "2mm": _2mm,
          "3mm": _3mm, "atax": _atax}


def time_cublas(kernel: Kernel, args: dict, repeat: int) -> float:
    """Best CUDA-event time of the cuBLAS equivalent (arrays already on the device)."""
    import cupy as cp
    import numpy as np
    fn = CUBLAS[kernel.cublas]
    dev = {k: cp.asarray(v) for k, v in args.items() if isinstance(v, np.ndarray)}
    scal = {k: v for k, v in args.items() if not isinstance(v, np.ndarray)}
    fn(cp, dict(dev), scal)                                   # warm-up (handles, kernels)
    best = float("inf")
    for _ in range(max(1, repeat)):
        a = {k: v.copy() for k, v in dev.items()}
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn(cp, a, scal)
        end.record()
        end.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, end) / 1e3)
    return best


# ---- Nsight Compute -----------------------------------------------------------------

_UNITS = {"ns": 1e-9, "nsecond": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3,
          "ms": 1e-3, "second": 1.0, "s": 1.0}


def parse_ncu_csv(text: str) -> list[float]:
    """Seconds of every profiled launch from ``ncu --csv`` output."""
    start = text.find('"ID"')
    if start < 0:
        return []
    out = []
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") == "gpu__time_duration.sum":
            value = float(row["Metric Value"].replace(",", ""))
            out.append(value * _UNITS.get(row.get("Metric Unit", "ns").strip(), 1e-9))
    return out


def time_ncu(kernel: Kernel, variant_args: list[str], sizes: dict, count: int,
             timeout: float) -> dict:
    """The kernel's launches under Nsight Compute (first ``count`` launches)."""
    ncu = shutil.which("ncu") or ("/usr/local/cuda/bin/ncu"
                                  if os.path.exists("/usr/local/cuda/bin/ncu") else None)
    if ncu is None:
        return {"note": "ncu not found"}
    cmd = [ncu, "--metrics", "gpu__time_duration.sum", "--csv", "-c", str(count),
           sys.executable, "-m", "polymagic", "run", str(kernel.path), "--target", "gpu",
           "--no-check", "--quiet", *variant_args, *size_args(sizes)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"note": f"ncu timed out after {timeout:.0f} s"}
    times = parse_ncu_csv(p.stdout)
    if not times:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"note": f"ncu gave no times (exit {p.returncode}: {tail[0][:200]})"}
    return {"launches": len(times), "sum_s": sum(times), "mean_s": sum(times) / len(times)}


# ---- one kernel ---------------------------------------------------------------------

class Budget:
    def __init__(self, seconds: float):
        self.t0, self.seconds = time.monotonic(), seconds

    def left(self) -> bool:
        return time.monotonic() - self.t0 < self.seconds


def bench_kernel(kernel: Kernel, args, tgts: list[str], gpu_note: str, budget: Budget) -> dict:
    from polymagic.errors import PolymagicError
    from polymagic.options import parse_options
    sizes = kernel.sizes(args.preset)
    res: dict = {"kernel": kernel.name, "category": kernel.category, "sizes": sizes,
                 "variants": {}}
    source = kernel.path.read_text()
    base = parse_options(size_args(sizes))
    try:
        compiled, _ = compile_cold(source, base)
        inputs = inputs_for(compiled, base)
        expected = None
        if args.cpu or args.check:
            first, expected = reference(compiled, inputs)
        if args.cpu:
            res["cpu_o3_s"] = time_cpu(compiled, inputs, args.repeat, first)
        if kernel.cublas and "gpu" in tgts:
            res["cublas_s"] = time_cublas(kernel, inputs, args.repeat)
    except PolymagicError as e:
        res["error"] = str(e)
        return res
    for name in args.variant_list:
        if not budget.left():
            res["variants"][name] = {"skipped": "time budget"}
            continue
        res["variants"][name] = bench_variant(kernel, name, source, sizes, inputs, args,
                                              tgts, gpu_note,
                                              expected if args.check else None)
    return res


def bench_variant(kernel: Kernel, name: str, source: str, sizes: dict, inputs: dict, args,
                  tgts: list[str], gpu_note: str, expected: dict | None) -> dict:
    from polymagic.options import parse_options
    extra, what = VARIANTS[name]
    if callable(extra):
        extra = extra(kernel)
    if extra is None:
        return {"skipped": f"not applicable to {kernel.name}: {what}"}
    out: dict = {"targets": {}, "options": " ".join(extra)}
    try:
        opts = parse_options(extra + size_args(sizes))
        compiled, out["pipeline_s"] = compile_cold(source, opts)
        out["summary"] = compiled.summary
        for t in tgts:
            out["targets"][t] = time_target(compiled, opts.with_(target=t), inputs,
                                            args.repeat, expected)
        if args.ncu and "gpu" in tgts:
            out["ncu"] = time_ncu(kernel, extra, sizes, args.ncu_count, timeout=300)
    except Exception as e:      # noqa: BLE001 — one failing kernel must not end the suite
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    if "gpu" not in tgts and gpu_note:
        out["targets"]["gpu"] = {"note": gpu_note}
    return out


# ---- reports ------------------------------------------------------------------------

def _ms(v) -> str:
    """Milliseconds, readable at every scale."""
    if v is None:
        return "–"
    ms = v * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 1 else f"{ms:.3g}"


def markdown(results: list[dict], m: dict) -> str:
    head = ("| kernel | variant | pipeline ms | GPU kernel ms | H2D ms | D2H ms | ncu ms | "
            "OpenMP ms | CPU -O3 ms | cuBLAS ms | speedup vs CPU | emulator loads, sectors/request "
            "| check |")
    lines = [f"Preset `{m['preset']}`, commit {m['commit']}, device: "
             f"{m['device'] or 'none (' + (m['gpu_note'] or 'not requested') + ')'}, "
             f"{m['cpu_cores']} CPU cores.", "", head, "|" + " --- |" * 13]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['kernel']} | – | error: {r['error'][:80]} |" + " |" * 10)
            continue
        for name, v in r["variants"].items():
            lines.append(_row(r, name, v))
    return "\n".join(lines) + "\n"


def _row(r: dict, name: str, v: dict) -> str:
    if "skipped" in v or "error" in v:
        why = v.get("skipped") or "error: " + v["error"][:80]
        return f"| {r['kernel']} | {name} | {why} |" + " |" * 10
    gpu, omp = v["targets"].get("gpu", {}), v["targets"].get("openmp", {})
    emu = v["targets"].get("emulator", {})
    best = min((t["kernel_s"] for t in (gpu, omp) if "kernel_s" in t), default=None)
    cpu = r.get("cpu_o3_s")
    speed = f"{cpu / best:.2f}x" if cpu and best else "–"
    oks = [t.get("ok") for t in (gpu, omp, emu) if "ok" in t]
    check = "–" if not oks else ("ok" if all(oks) else "FAIL")
    ncu = v.get("ncu", {}).get("sum_s")
    return (f"| {r['kernel']} | {name} | {_ms(v.get('pipeline_s'))} | {_ms(gpu.get('kernel_s'))} "
            f"| {_ms(gpu.get('h2d_s'))} | {_ms(gpu.get('d2h_s'))} | {_ms(ncu)} "
            f"| {_ms(omp.get('kernel_s'))} | {_ms(cpu)} | {_ms(r.get('cublas_s'))} "
            f"| {speed} | {_traffic(emu)} | {check} |")


def _traffic(t: dict) -> str:
    """The emulator's global loads and 32-byte sectors per warp request (seed 003 §6.3)."""
    if t.get("global_loads") is None:
        return "–"
    tpr = t.get("transactions_per_request")
    return f"{t['global_loads']:,}, {tpr:.2f}" if tpr is not None else f"{t['global_loads']:,}"


def plot(results: list[dict], path: Path) -> None:
    """Speedup over CPU -O3 per kernel and variant (best device target)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [r["kernel"] for r in results if "error" not in r]
    variants = sorted({v for r in results for v, d in r.get("variants", {}).items()
                       if "targets" in d})
    fig, ax = plt.subplots(figsize=(max(6, len(names) * 0.6), 4))
    width = 0.8 / max(1, len(variants))
    for k, var in enumerate(variants):
        ys = []
        for r in results:
            if "error" in r:
                continue
            d = r["variants"].get(var, {}).get("targets", {})
            best = min((t["kernel_s"] for t in d.values() if "kernel_s" in t), default=None)
            ys.append(r.get("cpu_o3_s", 0) / best if best and r.get("cpu_o3_s") else 0)
        ax.bar([i + k * width for i in range(len(ys))], ys, width, label=var)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names, rotation=60,
                  ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("speedup over CPU -O3")
    ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


# ---- main ---------------------------------------------------------------------------

def main(argv=None) -> int:
    args = parse_args(argv)
    args.variant_list = [v for v in args.variants.split(",") if v]
    unknown = [v for v in args.variant_list if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}")
    tgts, gpu_note = targets(args.target)
    budget = Budget(args.time_budget)
    m = meta(args, tgts, gpu_note)
    results = []
    for kernel in select([k for k in args.kernels.split(",") if k]):
        if not budget.left():
            results.append({"kernel": kernel.name, "category": kernel.category,
                            "variants": {}, "skipped": "time budget"})
            continue
        t0 = time.monotonic()
        results.append(bench_kernel(kernel, args, tgts, gpu_note, budget))
        print(f"{kernel.name}: {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)
    m["seconds"] = time.monotonic() - budget.t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": m, "results": results}, indent=1) + "\n")
    table = markdown([r for r in results if "skipped" not in r], m)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    if args.plot:
        plot(results, args.plot)
    failed = [r["kernel"] for r in results for v in r.get("variants", {}).values()
              if any(t.get("ok") is False for t in v.get("targets", {}).values())]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
