"""Compile time (parse -> CUDA) per kernel and per pipeline stage.

Usage::

    python benchmarks/compile_time.py [--repeat 3] [--only NAME ...] [--wall] [--code DIR]

Kernels: the 21 examples (``examples/*.c``) and the extra ones in
``benchmarks/kernels/`` (among them a 3-d heat stencil with a time loop, a 3mm
chain, a correlation and an n-body potential: issue 22's slow cases).  Each kernel
runs the pipeline's stages one after the other with the default options, each run
from a fresh parse (no cache), and the run with the least CPU time of ``--repeat``
is reported, split into

    parse      the C front end (``frontend.parse``)
    deps       dependence analysis (``deps.compute_dependences``)
    schedule   isl's scheduler and the superposition plan (``schedule.compute_schedule``)
    map+lower  mapping, memory planning and lowering to kernel IR (``mapping.map_and_lower``)
    print      the CUDA and host printers (``codegen``)

Times are CPU seconds of this process *and* of the child processes it waited for
(the scheduler and the counting run in forked children, see
``isl_util.in_child``), since the machine is shared: wall time is printed with
``--wall`` as well.  The last lines give the median, 90th percentile and maximum of
the per-kernel totals; the target (issue 22) is median <= 0.3 s, max <= 2 s.
"""
from __future__ import annotations

import argparse
import pathlib
import resource
import statistics
import sys
import time
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent

STAGES = ("parse", "deps", "schedule", "map+lower", "print")
#: issue 22's targets for the totals, in seconds
TARGET_MEDIAN, TARGET_MAX = 0.3, 2.0


def cpu_seconds() -> float:
    """CPU time of this process and of its children that have been waited for
    (``time.process_time`` misses the forked scheduler and counting children)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@dataclass
class Timing:
    """One compile's CPU and wall seconds per stage."""
    cpu: dict[str, float] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)

    def total(self, kind: str = "cpu") -> float:
        return sum(getattr(self, kind).values())


class _Clock:
    """Times consecutive stages of one compile into a :class:`Timing`."""

    def __init__(self) -> None:
        self.timing = Timing()

    def stage(self, name: str, fn, *args):
        c0, w0 = cpu_seconds(), time.perf_counter()
        out = fn(*args)
        self.timing.cpu[name] = cpu_seconds() - c0
        self.timing.wall[name] = time.perf_counter() - w0
        return out


def compile_once(source: str) -> Timing:
    """The pipeline's stages on ``source`` with the default options (as
    ``pipeline.compile_source`` runs them, without its cache), timed."""
    from polymagic.codegen.cuda import print_cuda
    from polymagic.codegen.host import print_host_python
    from polymagic.deps import compute_dependences
    from polymagic.frontend import parse
    from polymagic.mapping import map_and_lower
    from polymagic.options import Options
    from polymagic.schedule import compute_schedule
    options = Options()
    clock = _Clock()
    scop = clock.stage("parse", parse, source, "c")
    deps = clock.stage("deps", compute_dependences, scop)
    sched = clock.stage("schedule", compute_schedule, scop, deps, options)
    program = clock.stage("map+lower", map_and_lower, scop, sched, options)[0]
    clock.stage("print", lambda: (print_cuda(program), print_host_python(program)))
    return clock.timing


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
    ap.add_argument("--code", type=pathlib.Path, default=ROOT,
                    help="the checkout whose polymagic is timed (a before/after "
                         "comparison on the same kernels); default: this one")
    args = ap.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    head = f"{'kernel':18s}" + "".join(f"{s:>10s}" for s in STAGES) + f"{'total':>10s}"
    print(f"{args.code.resolve()}: CPU seconds per stage (this process and its children, "
          f"best of {args.repeat})")
    print(head + (f"{'wall':>10s}" if args.wall else ""))
    totals: dict[str, float] = {}
    for path in kernel_files(args.only):
        source = path.read_text()
        best = min((compile_once(source) for _ in range(args.repeat)),
                   key=Timing.total)
        totals[path.stem] = best.total()
        row = f"{path.stem:18s}" + "".join(f"{best.cpu[s]:10.3f}" for s in STAGES)
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
