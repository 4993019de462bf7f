"""Explorer regeneration time per kernel (issue 7: <= 0.5 s per cached change;
issue 22: first visit <= 2 s, a tile change <= 0.5 s).

Usage: python benchmarks/explorer.py [--kernels gemm,heat-3d]
For every example and extra benchmark kernel (``benchmarks/kernels``, the 3-d heat
stencil among them): an :class:`polymagic.report.widgets.Explorer` from an empty
compile cache (the first visit: a compile and the views; no debouncing, Pictures
tab hidden), then a tile-size change (a new configuration: the pipeline compiles),
the change undone (compile cached by source + options), and the same for ``shared
none`` and the mapping toggle.  Prints one line per kernel with the first visit's
wall time, the slowest tile change, the slowest other new configuration and the
slowest cached regeneration; exits 1 when a cached regeneration takes more than
0.5 s.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from polymagic.compiler import clear_caches  # noqa: E402
from polymagic.options import Options  # noqa: E402
from polymagic.report.widgets import Explorer  # noqa: E402

TARGET_S = 0.5


def measure(path: pathlib.Path) -> tuple[float, float, float, float]:
    """(first visit, slowest tile change, slowest other new configuration, slowest
    cached regeneration), in seconds."""
    clear_caches()
    t0 = time.perf_counter()
    ex = Explorer(path.read_text(), Options(), debounce_s=0)
    first = time.perf_counter() - t0
    fresh, cached, tiles = [], [], []
    changes = []
    if "tile0" in ex.controls:
        t0 = ex.controls["tile0"].value
        changes.append(("tile0", max(1, t0 // 2), t0))
    changes.append(("shared", "none", ex.controls["shared"].value))
    if not ex.controls["mapping"].disabled:
        m = ex.controls["mapping"].value
        changes.append(("mapping", [v for v in ex.controls["mapping"].options if v != m][0], m))
    for name, new, old in changes:
        for value in (new, old):
            e = ex.set(**{name: value})
            kind = cached if e.get("compile_cached") else tiles if name == "tile0" else fresh
            kind.append(e.get("seconds", 0.0))
    return first, max(tiles, default=0.0), max(fresh, default=0.0), max(cached, default=0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernels", default="", help="comma-separated example names")
    args = ap.parse_args()
    wanted = {k for k in args.kernels.split(",") if k}
    worst = 0.0
    paths = sorted((ROOT / "examples").glob("*.c")) + \
        sorted((ROOT / "benchmarks" / "kernels").glob("*.c"))
    print(f"{'kernel':16s} {'first visit':>12s} {'tile change':>12s} {'other new':>10s} "
          f"{'cached':>8s}   (ms, wall)")
    for path in paths:
        if wanted and path.stem not in wanted:
            continue
        first, tile, fresh, cached = measure(path)
        worst = max(worst, cached)
        print(f"{path.stem:16s} {first * 1e3:12.0f} {tile * 1e3:12.0f} {fresh * 1e3:10.0f} "
              f"{cached * 1e3:8.1f}", flush=True)
    print(f"max cached regeneration {worst * 1e3:.1f} ms (target <= {TARGET_S * 1e3:.0f} ms)")
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
