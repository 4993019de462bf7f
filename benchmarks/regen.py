"""Explorer regeneration time on first visits (issue 7 item 1: <= 0.5 s per change).

Usage: python benchmarks/regen.py [--kernels gemm,atax] [--changes 4] [--profile FILE] [--extra]

For every foundation kernel (``examples/*.c``) an
:class:`polymagic.report.widgets.Explorer` is built (``debounce_s=0``, the CUDA tab
shown, as when a person drags a slider), then the first tile-size control is set
to ``--changes`` fresh values, one after the other, through the explorer's own
code path (:meth:`Explorer.set`, which sets the slider and regenerates): every
change is a configuration not seen before, so nothing comes from the compile
cache.  Prints per kernel the median and max regeneration time, then the overall
max; exits 1 when it is above 0.5 s.  ``--profile FILE`` writes cProfile stats of
the regenerations (not the explorer's construction).  The CPU time of the process
during the regenerations is printed too (``cpu``): on a machine shared with other
work the wall time grows with the load, the CPU time much less, so before/after
comparisons taken at different loads should compare it.  ``--extra`` adds the
extra benchmark kernels (``benchmarks/kernels/``, e.g. the 3-d heat stencil of
issue 22; naming one in ``--kernels`` adds it too); the explorer's construction (the
first visit: parse, dependences, schedule and the first compiles) is timed in wall
and CPU seconds as well.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from polymagic.compiler.driver import cpu_seconds  # noqa: E402
from polymagic.options import Options  # noqa: E402
from polymagic.report.widgets import Explorer  # noqa: E402

TARGET_S = 0.5


def fresh_values(start: int, n: int) -> list[int]:
    """``n`` tile sizes different from ``start`` and from each other."""
    out: list[int] = []
    for cand in (8, 12, 16, 24, 20, 40, 48, 28, 36, 56, 44, 52):
        if cand != start and cand not in out:
            out.append(cand)
        if len(out) == n:
            break
    return out


def measure(path: pathlib.Path, changes: int, prof=None
            ) -> tuple[list[float], tuple[float, float], list[float]]:
    """(wall times of the regenerations, explorer construction wall and CPU time,
    the regenerations' CPU times)."""
    t0, c0 = time.perf_counter(), cpu_seconds()     # (with the forked scheduler's)
    ex = Explorer(path.read_text(), Options(), debounce_s=0)
    build = (time.perf_counter() - t0, cpu_seconds() - c0)
    if "tile0" not in ex.controls:
        return [], build, []
    times, cpu = [], []
    for v in fresh_values(ex.controls["tile0"].value, changes):
        if prof:
            prof.enable()
        t, c = time.perf_counter(), time.process_time()
        entry = ex.set(tile0=v)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        if prof:
            prof.disable()
        if ex.error:
            raise SystemExit(f"{path.stem}: tile0={v}: {ex.error}")
        assert not entry.get("compile_cached"), "a fresh value came from the cache"
        times.append(dt)
        cpu.append(dc)
    return times, build, cpu


def _load() -> str:
    """The 1-minute load average (how busy the machine was), or '?'."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kernels", default="", help="comma-separated example names")
    ap.add_argument("--changes", type=int, default=4)
    ap.add_argument("--profile", default="")
    ap.add_argument("--extra", action="store_true", help="also benchmarks/kernels/*.c")
    args = ap.parse_args()
    wanted = {k for k in args.kernels.split(",") if k}
    extra = sorted((ROOT / "benchmarks" / "kernels").glob("*.c"))
    files = sorted((ROOT / "examples").glob("*.c")) + \
        [p for p in extra if args.extra or p.stem in wanted]
    prof = cProfile.Profile() if args.profile else None
    worst = worst_cpu = 0.0
    for path in files:
        if wanted and path.stem not in wanted:
            continue
        times, (build, build_cpu), cpu = measure(path, args.changes, prof)
        built = f"explorer built in {build * 1e3:.0f} ms, cpu {build_cpu * 1e3:.0f} ms"
        if not times:
            print(f"{path.stem:16s} (no tile control)   {built}")
            continue
        worst = max(worst, max(times))
        worst_cpu = max(worst_cpu, max(cpu))
        print(f"{path.stem:16s} median {statistics.median(times) * 1e3:7.1f} ms   max "
              f"{max(times) * 1e3:7.1f} ms   cpu max {max(cpu) * 1e3:7.1f} ms   "
              f"({built})", flush=True)
    print(f"overall max regeneration {worst * 1e3:.1f} ms, cpu {worst_cpu * 1e3:.1f} ms "
          f"(target <= {TARGET_S * 1e3:.0f} ms); load average {_load()}")
    if prof:
        prof.dump_stats(args.profile)
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
