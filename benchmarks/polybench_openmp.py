"""The 30 PolyBench/C 4.2 kernels on ``--target openmp`` against the serial reference (issue 32).

Usage::

    python benchmarks/polybench_openmp.py [--repeat 5] [--dataset MEDIUM_DATASET]
                                          [--only NAME ...] [--markdown]

Each kernel of ``tests/polybench/`` (the suite's C as written, its dataset picked
with ``#define MEDIUM_DATASET`` as a user would) is compiled once with the CPU
target's code, then called ``--repeat`` times on fresh copies of the same inputs
(the suite's ``init_array`` values where random ones make no sense,
``tests/polybench/inputs.py``; polymagic's seeded random inputs otherwise):

* **serial**: the CPU reference every check compares with (the user's C compiled
  ``-O2`` by :mod:`polymagic.runtime.cpu`), the time a report's
  ``CPU reference`` line gives;
* **openmp**: the tiled OpenMP C of :mod:`polymagic.codegen.cpu_c`, the time a
  report's ``OpenMP C`` line gives.

The two alternate within each repeat (a shared machine's load hits both alike);
each time is the median of the repeats.  ``ratio`` is openmp / serial (< 1: faster),
``check`` compares every written array of every repeat with the reference's, with
the runtime's tolerances.  The table ends with the geometric mean of the ratios,
the kernels above 1.1x, and issue 32's figures (no kernel above 1.1x, geomean at
most 0.45x on 2 cores).  Exit status 1 when any check found a mismatch, 2 when a
kernel could not be compiled or run (and none mismatched), else 0.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import pathlib
import statistics
import sys
import time
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import tables  # noqa: E402

#: issue 32's bounds: no kernel slower than this times the serial time ...
WORST = 1.1
#: ... and the geometric mean of the ratios at most this
GEOMEAN = 0.45


def load_collection():
    """``tests/polybench/inputs.py``: kernel names, sources, sizes and inputs."""
    spec = importlib.util.spec_from_file_location(
        "polybench_inputs", ROOT / "tests" / "polybench" / "inputs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass
class Row:
    name: str
    sizes: dict
    serial: float = 0.0
    openmp: float = 0.0
    check: str = ""
    loops: str = ""
    compile_s: float = 0.0

    @property
    def ratio(self) -> float | None:
        return self.openmp / self.serial if self.serial and self.openmp else None

    def cells(self) -> list[str]:
        ms = lambda s: f"{s * 1e3:.2f}" if s else "–"  # noqa: E731
        r = self.ratio
        return [self.name, ",".join(f"{k}={v}" for k, v in self.sizes.items()),
                ms(self.serial), ms(self.openmp), f"{r:.3f}" if r else "–", self.check]


HEADER = ["kernel", "sizes", "serial ms", "openmp ms", "ratio", "check"]


def measure(pb, name: str, dataset: str, repeat: int) -> Row:
    """Compile ``name`` at ``dataset``, time the reference and the OpenMP C."""
    import numpy as np
    from polymagic.compiler import compile_source
    from polymagic.options import Options
    from polymagic.runtime.openmp import module
    from polymagic.runtime.run import compare_all, cpu_reference, gather_inputs
    sizes = pb.sizes(name, dataset)
    row = Row(name, sizes)
    opts = Options(sizes=sizes, target="openmp", cpu_code=True)
    t0 = time.perf_counter()
    compiled = compile_source(pb.source(name, dataset), opts)
    scop = compiled.scop
    ref, mod = cpu_reference(scop), module(scop, compiled.cpu)
    row.compile_s = time.perf_counter() - t0
    row.loops = compiled.cpu.summary()
    inputs = gather_inputs(scop, opts, pb.inputs(name, sizes))
    written = [n for n in scop.written_arrays() if scop.arrays[n].kind == "param"]
    serial, par, bad, nonfinite = [], [], 0, False
    for _ in range(repeat):
        a = {n: np.array(v, order="C", copy=True) for n, v in inputs.arrays().items()}
        b = {n: np.array(v, order="C", copy=True) for n, v in inputs.arrays().items()}
        serial.append(ref.run({**inputs.args, **a}))
        par.append(mod.run({**inputs.args, **b}))
        _, totals = compare_all(written, a, b)
        bad = max(bad, totals["mismatches"])
        nonfinite = nonfinite or any(not np.all(np.isfinite(a[n])) for n in written
                                     if a[n].dtype.kind == "f")
    row.serial, row.openmp = statistics.median(serial), statistics.median(par)
    row.check = f"MISMATCH ({bad} elements)" if bad else "OK"
    if nonfinite:
        row.check += " (reference has inf/NaN)"
    return row


def table(rows: list[Row], markdown: bool) -> str:
    return tables.table(HEADER, [r.cells() for r in rows], markdown)


def verdict(rows: list[Row], total: int) -> tuple[str, float | None]:
    """The summary lines and the geometric mean of the measured ratios."""
    ratios = [r.ratio for r in rows if r.ratio]
    if not ratios:
        return "no kernel measured", None
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    slow = [f"{r.name} {r.ratio:.2f}x" for r in rows if r.ratio and r.ratio > WORST]
    lines = [f"geomean openmp/serial over {len(ratios)} of {total} kernels: {geo:.3f}x "
             f"(issue 32: at most {GEOMEAN}x)",
             f"above {WORST}x the serial time: {', '.join(slow) or 'none'}"]
    ok = not slow and geo <= GEOMEAN and len(ratios) == total
    lines.append(f"issue 32's figures {'met' if ok else 'NOT met'}"
                 + ("" if len(ratios) == total else f" ({total - len(ratios)} kernel(s) not run)"))
    return "\n".join(lines), geo


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dataset", default="MEDIUM_DATASET",
                    choices=("MINI_DATASET", "SMALL_DATASET", "MEDIUM_DATASET"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    pb = load_collection()
    names = [n for n in pb.KERNELS if not args.only or n in args.only]
    rows: list[Row] = []
    errors: list[str] = []
    threads = 0
    for name in names:
        try:
            row = measure(pb, name, args.dataset, args.repeat)
        except Exception as e:    # noqa: BLE001 - one kernel's failure is a table row
            msg = " ".join(str(e).split())
            errors.append(f"{name}: {type(e).__name__}: {msg[:200]}")
            rows.append(Row(name, pb.sizes(name, args.dataset), check="ERROR"))
            print(f"{name}: ERROR {type(e).__name__}: {msg[:200]}", file=sys.stderr, flush=True)
            continue
        rows.append(row)
        print(f"{name}: compile {row.compile_s:.1f} s | " + " | ".join(row.cells()[2:])
              + f" | {row.loops}", file=sys.stderr, flush=True)
    from polymagic.runtime.openmp import _MODULES
    threads = max((m.threads for m in _MODULES.values()), default=0)
    print(f"{args.dataset}, median of {args.repeat}; load {os.getloadavg()[0]:.2f} (1 min), "
          f"{os.cpu_count()} cores, OpenMP threads {threads}")
    print(table(rows, args.markdown))
    summary, _ = verdict(rows, len(names))
    print(summary)
    for e in errors:
        print(f"not run: {e}")
    if any(r.check.startswith("MISMATCH") for r in rows):
        return 1
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
