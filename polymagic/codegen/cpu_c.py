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
      for (int pm_c0 = 0; pm_c0 <= floord(N - 1, 64); pm_c0 += 1)
        ...
            #pragma omp simd
            for (int pm_c4 = 128 * pm_c2; pm_c4 <= min(N - 1, 128 * pm_c2 + 127); pm_c4 += 1)
              S1(pm_c0 ..., pm_c3, pm_c4);
    }

The function takes the user's function's parameters in the same order (arrays as
``restrict`` pointers to their own element type, cast to pointers to rows, so the
bodies index them as the user did).  Expanded local scalars (scop ``temp`` arrays)
are allocated inside the function, whole: the schedule is legal for them as
arrays, whatever order the tiles run in.

Each parallel loop runs parallel only where its work per fork pays the fork/join
(:mod:`.cpu_cost`, issue 32 item 6): the function first computes every loop's
statement instances per fork (``pm_cpu_fork_work``, barvinok's counts as C) and the
marked loop is printed twice, ``if (pm_par[k])`` parallel, else serial; an untiled
schedule runs the source's own loop order when no loop pays (or none is parallel).

The result is a frozen :class:`CpuCode`; :mod:`polymagic.runtime.openmp` compiles
and runs it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import islpy as isl

from ..deps import Dependences
from ..expr import CPrinter, Expr
from ..isl_util import OperationBudget, ast_build
from ..notes import Note, Stage
from ..schedule import ScheduleResult
from ..scop import Scop, Statement
from ..schedule.private import source_tree
from .c_like import FUNC_NAMES, PRELUDE_MACROS
from .cpu_cost import FORK_COST_US, MIN_WORK, ForkWork, fork_work
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
    #: per parallel loop, in the order of ``pm_cpu_work``: its counts (None: not
    #: counted, every marked loop always parallel); see :mod:`.cpu_cost`
    fork_work: tuple[ForkWork, ...] | None = None
    #: whether the function runs the source's loop order when no loop pays
    source_order: bool = False
    #: instances per fork from which a loop runs parallel (``cpu_cost.MIN_WORK``)
    min_work: int = MIN_WORK

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
                + ("" if self.tiled else " (untiled fallback)") + self._when())

    def _when(self) -> str:
        if self.fork_work is None:
            return ""
        if not self.fork_work:
            return "; serial in the source's loop order" if self.source_order else ""
        if self.min_work <= 0:
            return "; every parallel loop forks (--cpu-min-work 0)"
        return (f"; each parallel only from {self.min_work} statement instances per fork "
                f"(a fork/join costs ~{FORK_COST_US:.0f} µs), else serial"
                + (", in the source's loop order when none is" if self.source_order else ""))

    def decisions(self, work: list[float], threads: int) -> str:
        """What ran parallel at the sizes of one call, from its ``pm_cpu_work``."""
        if self.fork_work is None or not work:
            return ""
        names = [b.parallel for b in self.bands if b.parallel]
        parts = []
        for k, w in enumerate(work):
            name = names[k] if k < len(names) else f"loop {k}"
            parts.append(f"{name} parallel ({w:.0f} instances per fork)"
                         if w >= self.min_work
                         else f"{name} serial ({w:.0f} instances per fork, below the "
                         f"{self.min_work} that pay a ~{FORK_COST_US:.0f} µs fork)")
        if self.source_order and all(w < self.min_work for w in work):
            parts.append("the source's loop order")
        return "at these sizes: " + ", ".join(parts)

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
              cache: CacheModel = CacheModel(), operations: int = 3_000_000,
              min_work: int = MIN_WORK) -> CpuCode:
    """The OpenMP C of ``scop`` under ``sched`` (module docstring).  The tiled tree's
    AST is generated within ``operations`` isl operations; past them, the untiled
    tree with its parallel loops marked.  A marked loop runs parallel from
    ``min_work`` statement instances per fork (:mod:`.cpu_cost`)."""
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
        notes.append(Note(Stage.CPU, f"the tiled code's AST was too costly ({str(e)[:80]}): "
                          "untiled loops with their parallel loops marked", kind="fallback"))
        tree, bands = tile_for_cpu(scop, sched.schedule, deps.validity, cache, tile=False)
        tree, checks, dropped = verify_marks(tree, deps.validity)
        ast = _ast(scop, tree)
    sizes = [p for p in scop.size_params if p in scop.context.get_space().get_var_dict()]
    works = fork_work(tree, PARALLEL_MARK, scop.context, sizes)
    body = _pragmas(ast, works, scop)
    # no tile: the schedule's only gain is its parallel loops; when none pays (or
    # there is none), the source's own order serially (cpu_cost's docstring)
    domain = scop.domain.intersect_params(scop.context)
    # (no instance at all: nothing to order, and no tree of the source to build)
    source_order = works is not None and not any(b.tiles for b in bands) \
        and not domain.is_empty()
    if source_order:
        serial = _ast(scop, source_tree(scop, domain, deps.validity))
        body = (serial if not works else
                f"if ({' || '.join(f'pm_par[{k}]' for k in range(len(works)))}) {{\n"
                + _indent(body, 1) + "} else {\n" + _indent(serial, 1) + "}\n")
    name = f"pm_cpu_{scop.name}"
    source = (PRELUDE + "\n" + _macros(scop) + "\n" + _work_function(scop, works) + "\n"
              + _signature(scop, name) + " {\n" + DYNAMIC + _locals(scop)
              + _work_flags(scop, works, min_work) + _indent(body, 1) + _frees(scop) + RESTORE
              + "}\n")
    notes += [Note(Stage.CPU, b.describe(), kind="decision") for b in bands] + list(dropped)
    if works is None:
        notes.append(Note(Stage.CPU, "the parallel loops' work was not counted in time: "
                          "every one runs parallel", kind="fallback"))
    lines = tuple((s.name, s.line) for s in scop.statements)
    return CpuCode(source, name, bands, tiled, tuple(notes), checks, lines, works, source_order,
                   min_work)


#: the function that computes each parallel loop's instances per fork
WORK_FUNCTION = "pm_cpu_fork_work"


def _scalars(scop: Scop) -> list[str]:
    return [f"{p.ctype} {p.name}" for p in scop.params if p.kind != "array"]


def _work_function(scop: Scop, works: tuple[ForkWork, ...] | None) -> str:
    """``pm_cpu_fork_work(scalars..., double *out)``: per parallel loop, its
    statement instances per fork at these sizes (:mod:`.cpu_cost`)."""
    lines = "".join(f"  out[{k}] = {w.work()};\n" for k, w in enumerate(works or ()))
    return (f"int pm_cpu_n_work = {len(works or ())};\n"
            f"void {WORK_FUNCTION}({', '.join(_scalars(scop) + ['double *out'])}) {{\n"
            + lines + "}\n")


def _work_flags(scop: Scop, works: tuple[ForkWork, ...] | None, min_work: int) -> str:
    """``pm_par[k]``: whether parallel loop ``k`` pays at these sizes."""
    if not works:
        return ""
    args = ", ".join([p.name for p in scop.params if p.kind != "array"] + ["pm_work"])
    return (f"  double pm_work[{len(works)}];\n  {WORK_FUNCTION}({args});\n"
            f"  int pm_par[{len(works)}];\n"
            f"  for (int k = 0; k < {len(works)}; k++) pm_par[k] = pm_work[k] >= {min_work};\n")


def _ast(scop: Scop, tree: isl.Schedule) -> str:
    return ast_build(scop.context).node_from_schedule(tree).to_C_str()


_MARK = re.compile(r"^(\s*)// (" + PARALLEL_MARK + "|" + SIMD_MARK + r")_(\d+)\s*$")


def _pragmas(code: str, works: tuple[ForkWork, ...] | None = None,
             scop: Scop | None = None) -> str:
    """isl prints a mark as a ``// name`` line before its subtree: the marked loop
    (``for (int pm_c<depth> = ...``, the depth in the mark's name) gets its pragma; a
    mark whose loop isl printed as a single iteration (no such ``for``) is dropped.
    A parallel loop whose counts are known (``works``) is printed twice, parallel
    when ``pm_par[k]`` says it pays, else serial (:func:`_split`)."""
    lines = code.splitlines()
    out = []
    split: list[tuple[int, int]] = []          # (line in out, loop k)
    for k, line in enumerate(lines):
        m = _MARK.match(line)
        if m is None:
            out.append(line)
            continue
        nxt = next((l.strip() for l in lines[k + 1:] if l.strip()), "")
        if nxt.startswith(f"for (int pm_c{m.group(3)} = "):
            pragma = "parallel for" if m.group(2) == PARALLEL_MARK else "simd"
            which = (_which(lines, k + 1, int(m.group(3)), works, scop)
                     if pragma == "parallel for" else None)
            if which is not None:
                split.append((len(out), which))
            out.append(f"{m.group(1)}#pragma omp {pragma}")
    for at, which in reversed(split):
        out = _split(out, at, which)
    return "\n".join(out) + "\n"


def _extent(lines: list[str], at: int) -> int:
    """The line after the ``for`` loop that starts at line ``at`` (isl's indentation:
    its body is indented deeper, a ``{`` body closes at its own indentation)."""
    ind = len(lines[at]) - len(lines[at].lstrip())
    j = at + 1
    while j < len(lines) and (not lines[j].strip() or
                              len(lines[j]) - len(lines[j].lstrip()) > ind):
        j += 1
    if lines[at].rstrip().endswith("{") and j < len(lines):
        j += 1
    return j


def _which(lines: list[str], at: int, depth: int, works: tuple[ForkWork, ...] | None,
           scop: Scop | None) -> int | None:
    """The index in ``works`` of the parallel loop printed from line ``at`` (its depth
    and the statements called in it), None when not counted or ambiguous (the loop
    then stays parallel, as before the model)."""
    if not works or scop is None:
        return None
    while not lines[at].strip():
        at += 1
    text = "\n".join(lines[at:_extent(lines, at)])
    called = frozenset(s.name for s in scop.statements
                       if re.search(rf"\b{re.escape(s.name)}\(", text))
    # the statements under the mark; a subset where isl printed the loop in pieces
    found = [k for k, w in enumerate(works) if w.depth == depth and w.statements == called]
    found = found or [k for k, w in enumerate(works)
                      if w.depth == depth and called and called <= w.statements]
    return found[0] if len(found) == 1 else None


def _split(lines: list[str], at: int, which: int) -> list[str]:
    """Lines with the pragma at ``at`` and its loop printed as ``if (pm_par[which])
    { parallel } else { serial }``."""
    ind = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    end = _extent(lines, at + 1)
    loop = ["  " + l if l.strip() else l for l in lines[at + 1:end]]
    return (lines[:at] + [f"{ind}if (pm_par[{which}]) {{", "  " + lines[at]] + loop
            + [f"{ind}}} else {{"] + loop + [f"{ind}}}"] + lines[end:])


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
