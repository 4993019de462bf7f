"""The CPU target's printer: tiled, vectorisable OpenMP C from the schedule (issue 21).

A stage of its own after the schedule stage: it reads the Scop, the dependences and
the :class:`~polymagic.schedule.ScheduleResult` (isl's schedule tree, before any GPU
mapping), tiles and marks the tree (:mod:`.cpu_tiles`), and prints C through isl's
AST generator (the loop structure PPCG's ``--target c --openmp`` and Pluto print
too; Bondhugula et al., PLDI 2008 §5), one macro per statement for the statement
bodies, as CLooG/Pluto output does::

    #define S1(pm_i0, pm_i1, pm_i2) acc[pm_i0][pm_i1] += A[pm_i0][pm_i2] * B[pm_i2][pm_i1]
    void pm_cpu_gemm(int N, ..., float *restrict pm_p_C, ...) {
      float (*restrict C)[N] = (float (*)[N]) pm_p_C;
      #pragma omp parallel for
      for (int c0 = 0; c0 <= floord(N - 1, 64); c0 += 1)
        ...
            #pragma omp simd
            for (int c4 = 128 * c2; c4 <= min(N - 1, 128 * c2 + 127); c4 += 1)
              S1(c0 ..., c3, c4);
    }

The function takes the user's function's parameters in the same order (arrays as
``restrict`` pointers to their own element type, cast to pointers to rows, so the
bodies index them as the user did).  Expanded local scalars (scop ``temp`` arrays)
are allocated inside the function, whole: the schedule is legal for them as
arrays, whatever order the tiles run in.

The result is a frozen :class:`CpuCode`; :mod:`polymagic.runtime.openmp` compiles
and runs it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import islpy as isl

from ..deps import Dependences
from ..expr import CPrinter, Expr
from ..isl_util import OperationBudget
from ..notes import Note
from ..schedule import ScheduleResult
from ..scop import Scop, Statement
from .c_like import FUNC_NAMES, PRELUDE_MACROS
from .cpu_legality import MarkCheck, verify_marks
from .cpu_tiles import PARALLEL_MARK, SIMD_MARK, BandPlan, CacheModel, tile_for_cpu


@dataclass(frozen=True)
class CpuCode:
    """The CPU target's C translation unit and what it decided."""
    source: str                        # the whole translation unit
    function: str                      # the entry point (the user's parameters, in order)
    bands: tuple[BandPlan, ...]        # per band: tiles, point order, parallel, simd loops
    tiled: bool                        # False: the fallback without tiles (AST budget)
    notes: tuple[Note, ...] = ()
    #: the final legality check's verdict on every pragma (:mod:`.cpu_legality`)
    checks: tuple[MarkCheck, ...] = ()
    #: the source line of each statement (to say where a parallel loop is)
    lines: tuple[tuple[str, int], ...] = ()

    def summary(self) -> str:
        """One line for the report: each parallel loop named with the source lines of
        the statements it runs (a band moved out of its nest, such as gramschmidt's
        ``R[k][j] = 0`` run for every ``k`` before the main nest, is not mistaken for
        the nest's loop of the same name)."""
        par = [self._where(b) for b in self.bands if b.parallel]
        tiles = [b for b in self.bands if b.tiles]
        dropped = sum(not c.legal for c in self.checks)
        return (f"OpenMP C: {len(par) - dropped} parallel loop(s) ({', '.join(par) or 'none'}"
                + (f"; {dropped} dropped by the legality check" if dropped else "")
                + f"), {len(tiles)} tiled band(s)"
                + ("" if self.tiled else " (untiled fallback)"))

    def _where(self, band: BandPlan) -> str:
        at = dict(self.lines)
        lines = sorted({at[s] for s in band.statements if s in at})
        if not lines:
            return str(band.parallel)
        span = str(lines[0]) if len(lines) == 1 else f"{lines[0]}-{lines[-1]}"
        return f"{band.parallel} at line{'s' if len(lines) > 1 else ''} {span}"

    def describe(self) -> str:
        """The bands' decisions, one line each."""
        return "\n".join(b.describe() for b in self.bands) or "no band"


PRELUDE = """\
/* polymagic CPU target: tiled OpenMP C from the schedule (issue 21) */
#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif
""" + PRELUDE_MACROS + """\
#define floord(n, d) pm_floord(n, d)
#define min(a, b) pm_min(a, b)
#define max(a, b) pm_max(a, b)

/* the threads a parallel loop runs on (0: compiled without OpenMP, one core) */
int pm_cpu_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 0;
#endif
}
"""


#: OpenMP's dynamic adjustment of the thread count (the calling thread's setting,
#: no environment variable): libgomp gives a parallel loop as many threads as the
#: load average leaves idle cores, one on a busy machine, so a loop that synchronises
#: often (jacobi-2d: two barriers per time step) never waits for a thread that has
#: no core (measured: 988 ms against 134 ms serial at load 9.7 on 2 cores without it)
DYNAMIC = """\
#ifdef _OPENMP
  int pm_dynamic = omp_get_dynamic();
  omp_set_dynamic(1);
#endif
"""
#: the caller's setting back (other OpenMP code in the process keeps its own)
RESTORE = """\
#ifdef _OPENMP
  omp_set_dynamic(pm_dynamic);
#endif
"""


def print_cpu(scop: Scop, deps: Dependences, sched: ScheduleResult,
              cache: CacheModel = CacheModel(), operations: int = 3_000_000) -> CpuCode:
    """The OpenMP C of ``scop`` under ``sched`` (module docstring).  The tiled tree's
    AST is generated within ``operations`` isl operations; past them, the untiled
    tree with its parallel loops marked."""
    ctx = sched.schedule.get_ctx()
    notes: list[Note] = []
    tiled = True
    try:
        with OperationBudget(ctx, operations):
            tree, bands = tile_for_cpu(scop, sched.schedule, deps.validity, cache)
            tree, checks, dropped = verify_marks(tree, deps.validity)
            ast = _ast(scop, tree)
    except isl.Error as e:
        tiled = False
        notes.append(Note("cpu", f"the tiled code's AST was too costly ({str(e)[:80]}): "
                          "untiled loops with their parallel loops marked", kind="fallback"))
        tree, bands = tile_for_cpu(scop, sched.schedule, deps.validity, cache, tile=False)
        tree, checks, dropped = verify_marks(tree, deps.validity)
        ast = _ast(scop, tree)
    body = _pragmas(ast)
    name = f"pm_cpu_{scop.name}"
    source = (PRELUDE + "\n" + _macros(scop) + "\n" + _signature(scop, name) + " {\n"
              + DYNAMIC + _locals(scop) + _indent(body, 1) + _frees(scop) + RESTORE + "}\n")
    notes += [Note("cpu", b.describe(), kind="decision") for b in bands] + list(dropped)
    lines = tuple((s.name, s.line) for s in scop.statements)
    return CpuCode(source, name, bands, tiled, tuple(notes), checks, lines)


def _ast(scop: Scop, tree: isl.Schedule) -> str:
    build = isl.AstBuild.from_context(scop.context)
    return build.node_from_schedule(tree).to_C_str()


_MARK = re.compile(r"^(\s*)// (" + PARALLEL_MARK + "|" + SIMD_MARK + r")_(\d+)\s*$")


def _pragmas(code: str) -> str:
    """isl prints a mark as a ``// name`` line before its subtree: the marked loop
    (``for (int c<depth> = ...``, the depth in the mark's name) gets its pragma; a
    mark whose loop isl printed as a single iteration (no such ``for``) is dropped."""
    lines = code.splitlines()
    out = []
    for k, line in enumerate(lines):
        m = _MARK.match(line)
        if m is None:
            out.append(line)
            continue
        nxt = next((l.strip() for l in lines[k + 1:] if l.strip()), "")
        if nxt.startswith(f"for (int c{m.group(3)} = "):
            pragma = "parallel for" if m.group(2) == PARALLEL_MARK else "simd"
            out.append(f"{m.group(1)}#pragma omp {pragma}")
    return "\n".join(out) + "\n"


def _names(scop: Scop) -> dict[str, str]:
    """#define constants become their values."""
    return {k: repr(v) if isinstance(v, float) else str(v) for k, v in scop.constants.items()}


def _printer(scop: Scop, extra: dict[str, str] | None = None) -> CPrinter:
    return CPrinter(names={**_names(scop), **(extra or {})}, funcs=FUNC_NAMES)


def _macros(scop: Scop) -> str:
    """One ``#define S<k>(iterators) body`` per statement."""
    out = []
    for s in scop.statements:
        params = [f"pm_i{k}" for k in range(len(s.iterators))]
        p = _printer(scop, {it: f"({q})" for it, q in zip(s.iterators, params)})
        out.append(f"#define {s.name}({', '.join(params)}) {_body(s, p)}")
    return "\n".join(out) + "\n"


def _body(s: Statement, p: CPrinter) -> str:
    """A statement's C: under its data-dependent condition (``if (A[i][j] > 0)``),
    an atomic update as ``omp atomic`` (``+``) or one critical section (max, min),
    as the emulator's OpenMP form prints them (issue 19 items 5-6)."""
    a = s.body
    if s.atomic == "+":
        text = f'_Pragma("omp atomic") {p(a.target)} {a.op} {p(a.value)};'
    elif s.atomic:
        text = f'_Pragma("omp critical(pm_atomic)") {{ {p(a.target)} {a.op} {p(a.value)}; }}'
    else:
        text = f"{p(a.target)} {a.op} {p(a.value)};"
    if s.guard is not None:
        text = f"if ({p(s.guard)}) {{ {text} }}"
    return f"do {{ {text} }} while (0)"


def _shape(scop: Scop, shape: tuple[Expr, ...]) -> list[str]:
    p = _printer(scop)
    return [p(e) for e in shape]


def _row_type(ctype: str, name: str, dims: list[str]) -> str:
    """``ctype (*restrict name)[d1][d2]`` (``ctype *restrict name`` for 1-d)."""
    tail = "".join(f"[{d}]" for d in dims[1:])
    return f"{ctype} (*restrict {name}){tail}" if tail else f"{ctype} *restrict {name}"


def _signature(scop: Scop, name: str) -> str:
    args = []
    for prm in scop.params:
        if prm.kind == "array":
            args.append(f"{prm.ctype} *restrict pm_p_{prm.name}")
        else:
            args.append(f"{prm.ctype} {prm.name}")
    return f"void {name}({', '.join(args) or 'void'})"


def _locals(scop: Scop) -> str:
    """Parameter arrays as pointers to rows; temps allocated (0-d ones as locals)."""
    lines = []
    for prm in scop.array_params:
        arr = scop.arrays[prm.name]
        dims = _shape(scop, arr.shape)
        tail = "".join(f"[{d}]" for d in dims[1:])
        cast = f"({arr.ctype} (*){tail})" if tail else ""
        lines.append(f"{_row_type(arr.ctype, arr.name, dims)} = {cast} pm_p_{arr.name};")
    for arr in scop.arrays.values():
        if arr.kind != "temp":
            continue
        if not arr.shape:
            lines.append(f"{arr.ctype} {arr.name} = 0;")
            continue
        dims = _shape(scop, arr.shape)
        n = " * ".join(f"(size_t) pm_max({d}, 1)" for d in dims)
        tail = "".join(f"[{d}]" for d in dims[1:])
        cast = f"({arr.ctype} (*){tail})" if tail else ""
        lines.append(f"{_row_type(arr.ctype, arr.name, dims)} = {cast} "
                     f"calloc({n}, sizeof({arr.ctype}));")
    return "".join(f"  {l}\n" for l in lines)


def _frees(scop: Scop) -> str:
    return "".join(f"  free({a.name});\n" for a in scop.arrays.values()
                   if a.kind == "temp" and a.shape)


def _indent(code: str, level: int) -> str:
    pad = "  " * level
    return "".join(f"{pad}{l}\n" if l.strip() else "\n" for l in code.splitlines())


__all__ = ["CpuCode", "print_cpu", "CacheModel"]
