"""Explorer regeneration time per example kernel (issue 7: <= 0.5 s per change).

Usage: python benchmarks/explorer.py [--kernels gemm,jacobi-2d]
For every example: an :class:`polymagic.report.widgets.Explorer` (no debouncing,
Pictures tab hidden), then a tile-size change (a new configuration: the pipeline
compiles), the change undone (compile cached by source + options), and the same
for ``shared none`` and the mapping toggle.  Prints one line per kernel with the
new-configuration and cached regeneration times; exits 1 when a cached
regeneration takes more than 0.5 s.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from polymagic.options import Options  # noqa: E402
from polymagic.report.widgets import Explorer  # noqa: E402

TARGET_S = 0.5


def measure(path: pathlib.Path) -> tuple[float, float]:
    """(slowest regeneration of a new configuration, slowest cached one)."""
    ex = Explorer(path.read_text(), Options(), debounce_s=0)
    fresh, cached = [], []
    changes = []
    if "tile0" in ex.controls:
        t0 = ex.controls["tile0"].value
        changes.append(("tile0", max(1, t0 // 2), t0))
    changes.append(("shared", "none", ex.controls["shared"].value))
    if not ex.controls["mapping"].disabled:
        m = ex.controls["mapping"].value
        changes.append(("mapping", [v for v in ex.controls["mapping"].options if v != m][0], m))
    for name, new, old in changes:
        e = ex.set(**{name: new})
        (cached if e.get("compile_cached") else fresh).append(e.get("seconds", 0.0))
        e = ex.set(**{name: old})
        (cached if e.get("compile_cached") else fresh).append(e.get("seconds", 0.0))
    return max(fresh, default=0.0), max(cached, default=0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernels", default="", help="comma-separated example names")
    args = ap.parse_args()
    wanted = {k for k in args.kernels.split(",") if k}
    worst = 0.0
    for path in sorted((ROOT / "examples").glob("*.c")):
        if wanted and path.stem not in wanted:
            continue
        fresh, cached = measure(path)
        worst = max(worst, cached)
        print(f"{path.stem:16s} new configuration {fresh * 1e3:8.1f} ms   cached "
              f"{cached * 1e3:7.1f} ms")
    print(f"max cached regeneration {worst * 1e3:.1f} ms (target <= {TARGET_S * 1e3:.0f} ms)")
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
