"""Compile time (parse -> CUDA) per kernel and per pipeline stage.

Usage::

    python benchmarks/compile_time.py [--repeat 3] [--only NAME ...] [--wall]
    python benchmarks/compile_time.py --fuzz 200 [--fuzz-seed 1]
    python benchmarks/compile_time.py --dir FOLDER   # the .c files of FOLDER

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
                 (``compiler.lowering.map_and_lower``), split into
      mapping    the mapping (``mapping.map_schedule``) less its memory planning
      memory     the memory planner (``memory.plan.plan_kernel_memory``,
                 ``memory.registers.plan_registers``, the superposition's
                 ``SuperMemory.plan_block``/``plan_group``)
      ast        isl's AST generation and the Kernel IR (``lower.lower``)
      other      the rest: the recurrence model, the tile search, the notes
    cuda, host   the printers (``codegen``)

Times are CPU seconds of this process *and* of the child processes it waited for
(the scheduler and the counting run in forked children, see
``isl_util.in_child``), since the machine is shared: wall time is printed with
``--wall`` as well.  The last lines give the median, 90th percentile and maximum of
the per-kernel totals; the target (issue 22) is median <= 0.3 s, max <= 2 s.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: the driver's stages (``polymagic.compiler.StageLog.name``), as columns
STAGES = ("parse", "dependences", "schedule", "lowering", "cuda", "host")
#: the lowering stage's parts (module docstring), as columns after it
PARTS = ("mapping", "memory", "ast", "other")
#: issue 22's targets for the totals, in seconds
TARGET_MEDIAN, TARGET_MAX = 0.3, 2.0


@dataclass
class Timing:
    """One compile's CPU and wall seconds per stage."""
    cpu: dict[str, float] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)
    #: the lowering stage's CPU seconds by part (:data:`PARTS`, within ``cpu``)
    parts: dict[str, float] = field(default_factory=dict)

    def total(self, kind: str = "cpu") -> float:
        return sum(getattr(self, kind).values())


class PartClock:
    """CPU seconds spent in the lowering's parts (:data:`PARTS`), measured by
    wrapping the functions of the module docstring (outermost call only: the
    memory planner runs inside the mapping, the mapping again inside a fallback)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self._depth: dict[str, int] = {}

    def wrap(self, owner, attr: str, part: str) -> None:
        fn = getattr(owner, attr)

        def timed(*args, **kwargs):
            from polymagic.compiler.driver import cpu_seconds
            outer = self._depth.get(part, 0) == 0
            self._depth[part] = self._depth.get(part, 0) + 1
            c0 = cpu_seconds()
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth[part] -= 1
                if outer:
                    self.cpu[part] = self.cpu.get(part, 0.0) + cpu_seconds() - c0
        setattr(owner, attr, timed)

    def install(self) -> None:
        from polymagic.compiler import lowering
        from polymagic.mapping import single, super_memory
        from polymagic.memory import registers
        self.wrap(lowering, "map_schedule", "mapping")
        self.wrap(lowering, "lower", "ast")
        self.wrap(single, "plan_kernel_memory", "memory")
        self.wrap(registers, "plan_registers", "memory")
        self.wrap(super_memory.SuperMemory, "plan_block", "memory")
        self.wrap(super_memory.SuperMemory, "plan_group", "memory")

    def parts(self, lowering_cpu: float) -> dict[str, float]:
        """The parts of one compile's lowering stage (``lowering_cpu`` seconds)."""
        memory = self.cpu.get("memory", 0.0)
        mapping = max(0.0, self.cpu.get("mapping", 0.0) - memory)
        ast = self.cpu.get("ast", 0.0)
        return {"mapping": mapping, "memory": memory, "ast": ast,
                "other": max(0.0, lowering_cpu - mapping - memory - ast)}


CLOCK = PartClock()


def compile_once(source: str) -> Timing:
    """One compile of ``source`` with the default options from an empty cache,
    timed by the driver itself (``Compiled.stages``) and by :data:`CLOCK`."""
    from polymagic import compiler
    compiler.clear_caches()
    CLOCK.cpu.clear()
    stages = compiler.compile_source(source).stages
    cpu = {s.name: s.cpu_seconds for s in stages}
    return Timing(cpu, {s.name: s.seconds for s in stages},
                  CLOCK.parts(cpu.get("lowering", 0.0)))


def kernel_files(only: list[str], folder: str | None = None) -> list[pathlib.Path]:
    """The examples, then the extra benchmark kernels (or the ``.c`` files of
    ``folder``, an independent set); restricted to ``only`` (stems)."""
    if folder:
        files = sorted(pathlib.Path(folder).glob("*.c"))
    else:
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


def fuzz_programs(count: int, seed: int) -> int:
    """``--fuzz N``: an independent set, the differential fuzzer's generated C
    functions (``tests/fuzz``, program seeds ``seed .. seed + N - 1``, parametric
    sizes, default options), each compiled once from an empty cache; prints the
    median, 90th percentile and maximum CPU seconds, the slowest programs (their
    seeds regenerate them: ``tests.fuzz.generator.generate(seed, 0)``) and how many
    the compiler refused."""
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
    from fuzz import generator
    from fuzz.program import render
    from polymagic import compiler
    from polymagic.errors import PolymagicError
    times: dict[int, float] = {}
    refused = 0
    for s in range(seed, seed + count):
        source = render(generator.generate(s, 0))
        compiler.clear_caches()
        try:
            stages = compiler.compile_source(source).stages
        except PolymagicError:
            refused += 1
            continue
        times[s] = sum(st.cpu_seconds for st in stages)
    values = list(times.values())
    slowest = sorted(times, key=times.get, reverse=True)[:5]
    print(f"{len(values)} fuzz programs (seeds {seed}..{seed + count - 1}, {refused} refused): "
          f"median {statistics.median(values):.3f} s, p90 {percentile(values, 0.9):.3f} s, "
          f"max {max(values):.3f} s CPU; slowest: "
          + ", ".join(f"{k} {times[k]:.2f} s" for k in slowest))
    return 0 if statistics.median(values) <= TARGET_MEDIAN and max(values) <= TARGET_MAX else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="compiles per kernel (best kept)")
    ap.add_argument("--only", nargs="*", default=[], help="kernel file stems")
    ap.add_argument("--wall", action="store_true", help="print wall seconds too")
    ap.add_argument("--dir", default=None, metavar="FOLDER",
                    help="time the .c files of FOLDER instead (an independent set)")
    ap.add_argument("--fuzz", type=int, default=0, metavar="N",
                    help="time N generated fuzz programs instead (an independent set)")
    ap.add_argument("--fuzz-seed", type=int, default=1, help="the first program seed")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.fuzz:
        return fuzz_programs(args.fuzz, args.fuzz_seed)
    CLOCK.install()
    columns = STAGES[:4] + tuple(f"({p})" for p in PARTS) + STAGES[4:]
    widths = [max(10, len(c) + 1) for c in columns]
    head = f"{'kernel':18s}" + "".join(f"{c:>{w}s}" for c, w in zip(columns, widths)) + \
        f"{'total':>9s}"
    print(f"{ROOT}: CPU seconds per stage (this process and its children, "
          f"best of {args.repeat}; load average {os.getloadavg()[0]:.1f})")
    print(head + (f"{'wall':>9s}" if args.wall else ""))
    totals: dict[str, float] = {}
    sums: dict[str, float] = {}
    for path in kernel_files(args.only, args.dir):
        source = path.read_text()
        best = min((compile_once(source) for _ in range(args.repeat)),
                   key=Timing.total)
        totals[path.stem] = best.total()
        values = [best.cpu.get(s, 0.0) for s in STAGES[:4]] + \
            [best.parts.get(p, 0.0) for p in PARTS] + [best.cpu.get(s, 0.0) for s in STAGES[4:]]
        for c, v in zip(columns, values):
            sums[c] = sums.get(c, 0.0) + v
        row = f"{path.stem:18s}" + "".join(f"{v:{w}.3f}" for v, w in zip(values, widths))
        row += f"{best.total():9.3f}"
        if args.wall:
            row += f"{best.total('wall'):10.3f}"
        print(row, flush=True)
    values = list(totals.values())
    worst = max(totals, key=totals.get)
    print(f"{'sum':18s}" + "".join(f"{sums.get(c, 0.0):{w}.3f}" for c, w in zip(columns, widths))
          + f"{sum(values):9.3f}")
    print(f"{len(values)} kernels: median {statistics.median(values):.3f} s, "
          f"p90 {percentile(values, 0.9):.3f} s, max {max(values):.3f} s ({worst}) CPU; "
          f"target median <= {TARGET_MEDIAN} s, max <= {TARGET_MAX} s")
    return 0 if statistics.median(values) <= TARGET_MEDIAN and max(values) <= TARGET_MAX else 1


if __name__ == "__main__":
    raise SystemExit(main())
