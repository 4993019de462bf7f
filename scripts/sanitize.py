"""compute-sanitizer over every kernel of the benchmark suite (issue 8 §3), on a GPU.

    python scripts/sanitize.py                      # memcheck + racecheck, small sizes
    python scripts/sanitize.py --tools memcheck,racecheck,synccheck,initcheck \\
        --kernels gemm,jacobi-2d --variants default,shared-all --out sanitize.json

For each kernel of ``benchmarks/suite.py`` (``small`` sizes), each mapping variant
(default options, shared-memory buffers everywhere, none, the tile search) and each
tool, runs ::

    compute-sanitizer --tool TOOL --error-exitcode 99 --print-limit 20 \\
        python -m polymagic run KERNEL.c --target gpu --no-check --quiet VARIANT --size ...

(through a ``python -c`` wrapper that turns CuPy's memory pool off: pooled arrays sit
inside larger allocations, where memcheck cannot see an access past an array's end)
(``memcheck`` finds out-of-bounds and misaligned global/shared accesses, ``racecheck``
shared-memory hazards, ``synccheck`` illegal ``__syncthreads()``, ``initcheck`` reads
of uninitialised global memory), parses the tool's summary line (``ERROR SUMMARY: N
errors`` / ``RACECHECK SUMMARY: N hazards displayed``), and prints a table and a
JSON summary.  Exit status 0 when every run was clean, 1 when a tool reported errors,
2 when nothing could run.

Degrades gracefully: without ``compute-sanitizer`` (``$PATH``, ``$CUDA_HOME/bin``,
``/usr/local/cuda/bin``) or without a GPU visible to CuPy it says so, writes a JSON
with ``"skipped"`` and exits 0 (``--strict``: 2), so CI machines without a GPU can run it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from suite import select, size_args  # noqa: E402

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
VARIANTS = {"default": [], "shared-all": ["--shared", "all"], "no-shared": ["--shared", "none"],
            "tile-auto": ["--tile", "auto"]}
#: ``python -c`` program: the polymagic CLI with CuPy's memory pool off, so that every
#: array is its own allocation and memcheck sees accesses past its end.
NO_POOL = ("import sys, cupy; cupy.cuda.set_allocator(None); "
           "cupy.cuda.set_pinned_memory_allocator(None); "
           "from polymagic.cli import main; sys.exit(main(sys.argv[1:]))")
SUMMARY = re.compile(r"(ERROR|RACECHECK) SUMMARY: (\d+) (errors?|hazards? displayed)"
                     r"(?: \((\d+) errors?, (\d+) warnings?\))?")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tools", default="memcheck,racecheck", help=f"comma list of {', '.join(TOOLS)}")
    p.add_argument("--kernels", default="", help="comma list (default: the whole suite)")
    p.add_argument("--variants", default="default,shared-all",
                   help=f"comma list of {', '.join(VARIANTS)}")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per sanitizer run")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sanitize.json")
    p.add_argument("--strict", action="store_true", help="exit 2 when the tools cannot run")
    return p.parse_args(argv)


def find_sanitizer() -> str | None:
    """compute-sanitizer from $PATH, $CUDA_HOME/bin or /usr/local/cuda/bin."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "compute-sanitizer"), os.X_OK):
            return os.path.join(root, "bin", "compute-sanitizer")
    return None


def why_not(sanitizer: str | None) -> str:
    """Why the sanitizers cannot run here ("" when they can)."""
    if sanitizer is None:
        return "compute-sanitizer not found (install the CUDA toolkit or set $CUDA_HOME)"
    from polymagic.runtime.gpu import gpu_available, unavailable_reason
    if not gpu_available():
        return f"no GPU: {unavailable_reason()}"
    return ""


def parse_summary(tool: str, text: str) -> dict:
    """Errors (and, for racecheck, hazards) from the tool's summary line."""
    m = None
    for m in SUMMARY.finditer(text):
        pass
    if m is None:
        return {"errors": None}
    if m.group(1) == "RACECHECK":
        errors = int(m.group(4)) if m.group(4) else int(m.group(2))
        return {"errors": errors, "hazards": int(m.group(2)),
                "warnings": int(m.group(5)) if m.group(5) else 0}
    return {"errors": int(m.group(2))}


def first_reports(text: str, n: int = 3) -> list[str]:
    """The first few ``=========`` report lines that describe a problem."""
    out = []
    for line in text.splitlines():
        s = line.strip("= ").strip()
        if s and re.search(r"(Invalid|hazard|Race|Barrier|Uninitialized|out of bounds|"
                           r"misaligned|error)", s, re.I) and "SUMMARY" not in s:
            out.append(s[:200])
        if len(out) >= n:
            break
    return out


def run_one(sanitizer: str, tool: str, kernel, variant: list[str], timeout: float) -> dict:
    cmd = [sanitizer, "--tool", tool, "--error-exitcode", "99", "--print-limit", "20",
           sys.executable, "-c", NO_POOL, "run", str(kernel.path), "--target", "gpu",
           "--no-check", "--quiet", *variant, *size_args(kernel.sizes("small"))]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": timeout}
    text = p.stdout + p.stderr
    res = {"exit": p.returncode, "seconds": round(time.monotonic() - t0, 1),
           **parse_summary(tool, text)}
    if res["errors"]:
        res["status"], res["reports"] = "errors", first_reports(text)
    elif p.returncode not in (0, 99) or res["errors"] is None:
        res["status"] = "failed"
        res["tail"] = text.strip().splitlines()[-3:]
    else:
        res["status"] = "clean"
    return res


def table(rows: list[dict]) -> str:
    lines = ["| kernel | variant | tool | status | errors | seconds |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['variant']} | {r['tool']} | {r['status']} | "
                     f"{r.get('errors', '–')} | {r.get('seconds', '–')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    tools = [t for t in args.tools.split(",") if t]
    variants = [v for v in args.variants.split(",") if v]
    bad = [t for t in tools if t not in TOOLS] + [v for v in variants if v not in VARIANTS]
    if bad:
        raise SystemExit(f"unknown tool/variant: {', '.join(bad)}")
    kernels = select([k for k in args.kernels.split(",") if k])
    sanitizer = find_sanitizer()
    reason = why_not(sanitizer)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if reason:
        print(f"sanitize: skipped: {reason}")
        args.out.write_text(json.dumps({"skipped": reason}, indent=1) + "\n")
        return 2 if args.strict else 0
    rows = []
    for kernel in kernels:
        for vname in variants:
            for tool in tools:
                r = run_one(sanitizer, tool, kernel, VARIANTS[vname], args.timeout)
                rows.append({"kernel": kernel.name, "variant": vname, "tool": tool, **r})
                print(f"{kernel.name:14s} {vname:10s} {tool:9s} {r['status']}"
                      + (f" ({r['errors']} errors)" if r.get("errors") else ""), flush=True)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("clean", "errors", "failed",
                                                               "timeout")}
    summary = {"sanitizer": sanitizer, "runs": len(rows), **counts}
    args.out.write_text(json.dumps({"summary": summary, "runs": rows}, indent=1) + "\n")
    print(table(rows))
    print(f"runs {len(rows)}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0 if counts["errors"] == counts["failed"] == counts["timeout"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
