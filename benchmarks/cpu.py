"""The CPU target against the serial C and the OpenMP a user would write (issue 21).

Usage::

    python benchmarks/cpu.py [--repeat 3] [--only NAME ...] [--done-when] [--markdown]

For each kernel of the suite (``benchmarks/suite.py``) at CPU sizes (PolyBench
MEDIUM, with gemm and jacobi-2d at issue 21's sizes), and for issue 21's two
done-when cases first (gemm with a scalar accumulator at 500³, jacobi-2d T=20 at
800²), on the same seeded inputs in one process:

* **serial -O2**: the CPU reference, the user's C as written (``-O2``, what every
  check compares with);
* **serial -O3**: the same C with ``-O3 -march=native`` (how much the flags alone give);
* **naive OpenMP**: the user's C with ``#pragma omp parallel for`` on the outermost
  loop of each nest that carries no dependence (found on the source's own loop tree,
  :func:`polymagic.schedule.private.source_tree`), compiled like polymagic's
  (``-O3 -march=native -fopenmp``);
* **naive+dyn**: the same with OpenMP's dynamic thread count turned on in the
  function (``omp_set_dynamic(1)``), as polymagic's code does: on a loaded machine
  this alone decides much of the time of loops that synchronise often;
* **polymagic**: ``--target openmp``, the tiled OpenMP C of :mod:`polymagic.codegen.cpu_c`.

Each time is the best of ``--repeat`` calls (the machine may be shared; the load
from ``uptime`` is printed).  Every output is checked against the reference with
the runtime's tolerances.  ``poly/naive`` < 1 means polymagic is faster.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import sys
from dataclasses import dataclass, replace

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.suite import SUITE, Kernel  # noqa: E402
from benchmarks import tables  # noqa: E402

#: CPU sizes: MEDIUM, except where issue 21 names its own
CPU_SIZES = {"gemm": {"N": 500}, "jacobi-2d": {"tsteps": 20, "n": 800}}

#: issue 21's done-when cases (name, file, sizes)
DONE_WHEN = (("gemm-scalar 500^3", ROOT / "benchmarks" / "kernels" / "gemm-scalar.c",
              {"N": 500}),
             ("jacobi-2d T=20 800^2", ROOT / "examples" / "jacobi-2d.c",
              {"tsteps": 20, "n": 800}))

NATIVE = "-O3 -march=native"


@dataclass
class Row:
    name: str
    sizes: dict
    serial: float = 0.0
    serial_o3: float = 0.0
    naive: float | None = None
    naive_dyn: float | None = None
    poly: float = 0.0
    threads: int = 0
    naive_loops: str = ""
    ok: str = ""

    def cells(self) -> list[str]:
        ms = lambda s: f"{s * 1e3:.1f}" if s else "–"  # noqa: E731
        ratio = f"{self.poly / self.naive:.2f}" if self.naive else "–"
        return [self.name, ",".join(f"{k}={v}" for k, v in self.sizes.items()),
                ms(self.serial), ms(self.serial_o3), ms(self.naive), ms(self.naive_dyn),
                ms(self.poly), f"{self.poly / self.serial:.2f}", ratio,
                f"{self.poly / self.naive_dyn:.2f}" if self.naive_dyn else "–",
                self.naive_loops or "none", self.ok]


HEADER = ["kernel", "sizes", "serial -O2 ms", "serial -O3 ms", "naive OpenMP ms",
          "naive+dyn ms", "polymagic ms", "poly/serial", "poly/naive", "poly/naive+dyn",
          "naive pragma on", "check"]


def naive_source(scop, deps, dynamic: bool = False) -> tuple[str, list[str]] | None:
    """The source with ``#pragma omp parallel for`` before the outermost parallel loop
    of each nest; None when the source's ``for`` keywords cannot be matched with the
    loop tree (a helper function's loops, say).  ``dynamic``: the function also turns
    on OpenMP's dynamic thread count first, as polymagic's code does
    (:data:`polymagic.codegen.cpu_c.DYNAMIC`)."""
    import islpy as isl
    from polymagic.codegen.cpu_tiles import _member_iterators, _names
    from polymagic.schedule.private import source_tree
    tree = source_tree(scop, scop.domain.intersect_params(scop.context), deps.validity)
    loops: list[tuple[str, bool, bool]] = []     # (iterator, parallel, under a pragma)

    def visit(node, covered: bool) -> None:
        if node.get_type() == isl.schedule_node_type.band:
            name = _names(_member_iterators(node, 1), scop, 1)[0]
            par = bool(node.band_member_get_coincident(0)) and not covered
            loops.append((name, par, covered))
            covered = covered or par
        for i in range(node.n_children()):
            visit(node.child(i), covered)
    visit(tree.get_root(), False)
    src = scop.source
    blank = re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: " " * len(m.group(0)), src, flags=re.S)
    fors = list(re.finditer(r"\bfor\s*\(\s*(?:int|long)?\s*(\w+)", blank))
    if len(fors) != len(loops) or any(m.group(1) != it for m, (it, _, _) in zip(fors, loops)):
        return None
    out, last, marked = [], 0, []
    for m, (it, par, _) in zip(fors, loops):
        if par:
            out.append(src[last:m.start()] + "\n#pragma omp parallel for\n")
            last = m.start()
            marked.append(it)
    out.append(src[last:])
    text = "".join(out)
    if dynamic and marked:
        head = re.search(r"\b" + scop.name + r"\s*\([^)]*\)\s*\{", text)
        if head is None:
            return None
        text = _before_returns(text, head.end())
        text = ("#include <omp.h>\n" + text[:head.end()]
                + " int pm_dyn = omp_get_dynamic(); omp_set_dynamic(1);"
                + text[head.end():])
    return text, marked


def _before_returns(text: str, start: int) -> str:
    """Restore the dynamic setting at the end of the function body opened at
    ``start`` (the suite's kernels have no ``return`` inside)."""
    depth, k = 1, start
    while depth and k < len(text):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        k += 1
    return text[:k - 1] + " omp_set_dynamic(pm_dyn);\n" + text[k - 1:]


def measure(name: str, source: str, sizes: dict, repeat: int) -> Row:
    from polymagic.compiler import compile_source
    from polymagic.options import Options
    from polymagic.runtime.cpu import CpuReference
    from polymagic.runtime.openmp import module
    from polymagic.runtime.run import compare_all, cpu_reference, gather_inputs
    opts = Options(sizes=sizes, target="openmp", cpu_code=True)
    compiled = compile_source(source, opts)
    scop = compiled.scop
    inputs = gather_inputs(scop, opts)
    written = [n for n in scop.written_arrays() if scop.arrays[n].kind == "param"]
    row = Row(name, {k: v for k, v in sizes.items() if k in scop.size_params})
    ref_out = None
    ok = []

    def best(run, label):
        nonlocal ref_out
        t = float("inf")
        for _ in range(repeat):
            arrays = {n: a.copy() for n, a in inputs.arrays().items()}
            t = min(t, run({**inputs.args, **arrays}))
        if ref_out is None:
            ref_out = arrays
        else:
            _, totals = compare_all(written, ref_out, arrays)
            if totals["mismatches"]:
                ok.append(f"{label} WRONG")
        return t
    row.serial = best(cpu_reference(scop).run, "serial")
    row.serial_o3 = best(CpuReference(scop, NATIVE).run, "-O3")
    naive = naive_source(scop, compiled.deps)
    if naive is not None:
        text, row.naive_loops = naive[0], ",".join(naive[1])
        if naive[1]:
            row.naive = best(CpuReference(replace(scop, source=text),
                                          NATIVE + " -fopenmp").run, "naive")
            dyn = naive_source(scop, compiled.deps, dynamic=True)
            if dyn is not None:
                row.naive_dyn = best(CpuReference(replace(scop, source=dyn[0]),
                                                  NATIVE + " -fopenmp").run, "naive+dyn")
        else:
            row.naive = row.naive_dyn = row.serial_o3   # nothing parallel: serial -O3
    mod = module(scop, compiled.cpu)
    row.poly = best(mod.run, "polymagic")
    row.threads = mod.threads
    row.ok = "; ".join(ok) or "OK"
    return row


def table(rows: list[Row], markdown: bool) -> str:
    return tables.table(HEADER, [r.cells() for r in rows], markdown)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-done-when", action="store_true",
                    help="leave out issue 21's two done-when cases")
    ap.add_argument("--done-when", action="store_true",
                    help="only issue 21's two done-when cases")
    args = ap.parse_args(argv)
    rows: list[Row] = []
    cases: list[tuple[str, pathlib.Path, dict]] = []
    if not args.no_done_when and not args.only:
        cases += list(DONE_WHEN)
    kernels: list[Kernel] = [k for k in SUITE if not args.only or k.name in args.only]
    if args.done_when:
        kernels = []
    cases += [(k.name, k.path, {**k.sizes("medium"), **CPU_SIZES.get(k.name, {})})
              for k in kernels]
    for name, path, sizes in cases:
        row = measure(name, path.read_text(), sizes, args.repeat)
        rows.append(row)
        print(f"{name}: " + " | ".join(row.cells()[2:]), file=sys.stderr, flush=True)
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), cores {os.cpu_count()}, "
          f"polymagic threads {rows[-1].threads if rows else 0}, best of {args.repeat}")
    print(table(rows, args.markdown))
    suite = [r for r in rows if r.name in {k.name for k in SUITE}]
    wins = sum(1 for r in suite if r.naive is not None and r.poly <= r.naive)
    dyn = sum(1 for r in suite if r.naive_dyn is not None and r.poly <= r.naive_dyn)
    print(f"polymagic at least as fast as the naive OpenMP on {wins} of {len(suite)} suite "
          f"kernels ({dyn} against the naive OpenMP with dynamic threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
