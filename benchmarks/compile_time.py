"""Compile time (parse -> CUDA) per kernel and per pipeline stage.

Usage::

    python benchmarks/compile_time.py [--repeat 3] [--only NAME ...] [--wall]

(A before/after comparison runs the script of each checkout, e.g. a ``git worktree``
of the older commit, in the same session.)

Kernels: the 21 examples (``examples/*.c``) and the extra ones in
``benchmarks/kernels/`` (among them a 3-d heat stencil with a time loop, a 3mm
chain, a correlation and an n-body potential: issue 22's slow cases).  Each kernel
is compiled by the driver (``polymagic.compiler.compile_source``) with the default
options from an empty cache, and the run with the least CPU time of ``--repeat`` is
reported, split into the driver's stages as it logs them (``Compiled.stages``):

    parse        the front end (``frontend.parse``)
    dependences  dependence analysis (``deps.compute_dependences``)
    schedule     isl's scheduler and the superposition plan (``schedule.compute_schedule``)
    lowering     tile choice, mapping, memory planning and Kernel IR
                 (``compiler.lowering.map_and_lower``)
    cuda, host   the printers (``codegen``)

Times are CPU seconds of this process *and* of the child processes it waited for
(the scheduler and the counting run in forked children, see
``isl_util.in_child``), since the machine is shared: wall time is printed with
``--wall`` as well.  The last lines give the median, 90th percentile and maximum of
the per-kernel totals; the target (issue 22) is median <= 0.3 s, max <= 2 s.
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: the driver's stages (``polymagic.compiler.StageLog.name``), as columns
STAGES = ("parse", "dependences", "schedule", "lowering", "cuda", "host")
#: issue 22's targets for the totals, in seconds
TARGET_MEDIAN, TARGET_MAX = 0.3, 2.0


@dataclass
class Timing:
    """One compile's CPU and wall seconds per stage."""
    cpu: dict[str, float] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)

    def total(self, kind: str = "cpu") -> float:
        return sum(getattr(self, kind).values())


def compile_once(source: str) -> Timing:
    """One compile of ``source`` with the default options from an empty cache,
    timed by the driver itself (``Compiled.stages``)."""
    from polymagic import compiler
    compiler.clear_caches()
    stages = compiler.compile_source(source).stages
    return Timing({s.name: s.cpu_seconds for s in stages}, {s.name: s.seconds for s in stages})


def kernel_files(only: list[str]) -> list[pathlib.Path]:
    """The examples, then the extra benchmark kernels; restricted to ``only`` (stems)."""
    files = sorted((ROOT / "examples").glob("*.c")) + \
        sorted((ROOT / "benchmarks" / "kernels").glob("*.c"))
    return [f for f in files if not only or f.stem in only]


def percentile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values``, linearly interpolated."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="compiles per kernel (best kept)")
    ap.add_argument("--only", nargs="*", default=[], help="kernel file stems")
    ap.add_argument("--wall", action="store_true", help="print wall seconds too")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    head = f"{'kernel':18s}" + "".join(f"{s:>12s}" for s in STAGES) + f"{'total':>10s}"
    print(f"{ROOT}: CPU seconds per stage (this process and its children, "
          f"best of {args.repeat})")
    print(head + (f"{'wall':>10s}" if args.wall else ""))
    totals: dict[str, float] = {}
    for path in kernel_files(args.only):
        source = path.read_text()
        best = min((compile_once(source) for _ in range(args.repeat)),
                   key=Timing.total)
        totals[path.stem] = best.total()
        row = f"{path.stem:18s}" + "".join(f"{best.cpu.get(s, 0.0):12.3f}" for s in STAGES)
        row += f"{best.total():10.3f}"
        if args.wall:
            row += f"{best.total('wall'):10.3f}"
        print(row, flush=True)
    values = list(totals.values())
    worst = max(totals, key=totals.get)
    print(f"{len(values)} kernels: median {statistics.median(values):.3f} s, "
          f"p90 {percentile(values, 0.9):.3f} s, max {max(values):.3f} s ({worst}) CPU; "
          f"target median <= {TARGET_MEDIAN} s, max <= {TARGET_MAX} s")
    return 0 if statistics.median(values) <= TARGET_MEDIAN and max(values) <= TARGET_MAX else 1


if __name__ == "__main__":
    raise SystemExit(main())
