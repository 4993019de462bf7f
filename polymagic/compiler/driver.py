"""The compiler driver: every stage, in the order it runs, from one function.

:func:`compile_source` reads top to bottom like Halide's ``lower_impl`` (src/Lower.cpp):
one ordered list of stages, each a function from typed, frozen inputs to a typed
result, each followed by a log of its result (:class:`StageLog`, ``--show stages``):

    parse -> dependences -> schedule -> lowering (tile choice, mapping, memory plan,
    Kernel IR, down the ladder of isl-budget fallbacks: :mod:`.lowering`) ->
    CUDA printer -> host printer

Results are cached by what each stage reads, in one dict (:func:`clear_caches`
forgets them all): the Scop by (source, language); the dependences by the
:class:`~polymagic.options.DependenceOptions` too; the schedule by the
:class:`~polymagic.options.ScheduleOptions` too; the whole compile by the
:class:`~polymagic.options.CompileOptions` (sizes left out where no stage reads
them before the code is known, see :func:`_compile_key`).  A tile change in the
explorer therefore re-runs only the lowering and the printers.  Later stages read
cached objects and never modify them.
"""
from __future__ import annotations

import resource
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Mapping, TypeVar

import islpy as isl

from .. import kir
from ..codegen.cpu_c import CacheModel, CpuCode, print_cpu
from ..codegen.cuda import print_cuda
from ..codegen.host import print_host_python
from ..deps import Dependences, compute_dependences
from ..dtypes import INT32
from ..errors import CompileError, InputError, PolymagicError, UnsupportedError
from ..frontend import parse
from ..helper_process import helper_seconds
from ..mapping import MappingResult
from ..notes import Note, Stage
from ..options import CompileOptions, Options
from ..schedule import ScheduleResult, compute_schedule
from ..scop import Scop, flat_violation
from ..lower.passes import PassLog
from .lowering import Lowered, TimeTilesOverBudget, map_and_lower
from .recurrence import RecurrenceChoice, choose, without


@dataclass(frozen=True)
class StageLog:
    """One stage of one compile: what it gave, in one line, and how long it took."""
    name: Stage                  # parse, dependences, schedule, lowering, cuda, host, cpu
    seconds: float               # run time, or cache lookup time when ``cached``
    result: str                  # one line describing the stage's result
    cached: bool = False         # served from the stage cache (it did not run)
    #: CPU seconds of this process and of the children it waited for (isl's scheduler
    #: and barvinok's counts run in forked children): on a shared machine the wall
    #: time grows with the load, this much less
    cpu_seconds: float = 0.0

    def line(self) -> str:
        how = "cached" if self.cached else f"{self.seconds * 1e3:.1f} ms"
        return f"{self.name:<12} {how:>10}  {self.result}"


@dataclass(frozen=True, eq=False)
class Compiled:
    """Everything one compile produced, stage by stage (the report and the runtime
    read it; nothing modifies it: :func:`specialise_layout` returns a copy)."""
    scop: Scop
    deps: Dependences
    schedule: ScheduleResult     # isl's schedule tree, the superposition plan, notes
    program: kir.Program
    cuda: str                    # CUDA source of all kernels
    host_py: str                 # Python source of the host driver (see codegen.host)
    compile_s: float             # driver time, parse -> printers
    summary: str                 # one line: loops -> blocks/threads, grid/block sizes, kernels
    #: the mapping stage's result (the mapped schedule tree and one plan per kernel)
    #: the code was generated from, kept so that views (the explorer, pictures) read
    #: it instead of mapping again
    mapping: MappingResult
    #: the options of the compile that produced this code (a cached compile is
    #: shared by requests whose :func:`_compile_key` is equal: its sizes may differ)
    options: CompileOptions
    notes: tuple[Note, ...] = ()
    language: str = "c"
    stages: tuple[StageLog, ...] = ()
    #: the tile vector ``--tile auto`` chose (seed 000 §4.3); None when no search ran
    chosen_tile: tuple[int, ...] | None = None
    #: how a host wavefront (an in-place recurrence) is run, by the cost model of
    #: :mod:`.recurrence`; None when the schedule has none or an option decided
    recurrence: RecurrenceChoice | None = None
    #: the CPU target's tiled OpenMP C (issue 21), printed from ``schedule`` when
    #: :attr:`CompileOptions.cpu_code` asks for it; None otherwise
    cpu: CpuCode | None = None
    #: each Kernel-IR pass over each kernel, in order (``--show passes``)
    passes: tuple[PassLog, ...] = ()

    @property
    def note_lines(self) -> tuple[str, ...]:
        """The notes as the lines users read (``str`` of each :class:`Note`)."""
        return tuple(str(n) for n in self.notes)


#: stage results and compiles by the keys of the module docstring (tests empty it
#: with :func:`clear_caches`)
_CACHE: dict[tuple, object] = {}

T = TypeVar("T")


def clear_caches() -> None:
    """Forget every compile and stage output."""
    _CACHE.clear()


def compile_source(source: str, options: CompileOptions | Options | None = None,
                   language: str = "c") -> Compiled:
    """Run every stage on one function's source (cached).  ``options``: the compile
    options, or the user's :class:`~polymagic.options.Options` (its ``.compile``)."""
    options = _compile_options(options)
    hit = _cached_compile(source, language, options)
    if hit is not None:
        _check_sizes(hit.scop, options)
        return hit
    if options.cpu_code:
        return _with_cpu(source, language, options)
    t0 = time.perf_counter()
    log = _StageLogger()
    scop, deps, sched = _front(source, language, options, log)
    # a host wavefront (an in-place recurrence): host loop, one block or time tiles,
    # by the cost model of compiler/recurrence.py; then the tile choice (seed 000
    # §4.3), mapping, memory plan and Kernel IR, down the ladder of isl-budget
    # fallbacks (compiler/lowering.py)
    lowered, recurrence = log.run(
        Stage.LOWERING, "mapping",
        lambda: _lower_recurrence(source, language, scop, deps, sched, options,
                                  choose(scop, deps, sched, options)),
        _describe_lowered)
    program = lowered.program
    cuda = log.run(Stage.CUDA, "code generation", lambda: print_cuda(program), _describe_text)
    host_py = log.run(Stage.HOST, "code generation", lambda: print_host_python(program),
                      _describe_text)
    compiled = Compiled(scop=scop, deps=deps, schedule=sched, program=program, cuda=cuda,
                        host_py=host_py, compile_s=time.perf_counter() - t0,
                        summary=lowered.summary, mapping=lowered.mapping, options=options,
                        # each note once (a stage may record one decision twice)
                        notes=tuple(dict.fromkeys(
                            tuple(e.note() for e in scop.expansions)
                            + tuple(deps.notes) + ((recurrence.note(),) if recurrence else ())
                            + lowered.notes)), language=language,
                        stages=log.stages(), chosen_tile=lowered.chosen_tile,
                        passes=lowered.passes,
                        recurrence=recurrence)
    _remember(source, language, options, compiled)
    return compiled


def _front(source: str, language: str, options: CompileOptions, log: "_StageLogger"
           ) -> tuple[Scop, Dependences, ScheduleResult]:
    """The stages every target shares: parse, dependences, schedule (each cached)."""
    scop = log.run(Stage.PARSE, "parsing", lambda: parse(source, language),
                   _describe_scop, key=("parse", source, language))
    _check_sizes(scop, options)
    deps = log.run(Stage.DEPENDENCES, "dependence analysis",
                   lambda: compute_dependences(scop, options.deps),
                   _describe_deps, key=("deps", source, language, options.deps))
    sched = log.run(Stage.SCHEDULE, "scheduling",
                    lambda: compute_schedule(scop, deps, options.schedule), _describe_schedule,
                    key=("schedule", source, language, options.deps, options.schedule))
    return scop, deps, sched


def _without_gpu_code(source: str, language: str, options: CompileOptions,
                      error: CompileError) -> Compiled:
    """The shared stages alone, when the GPU code could not be made (an isl failure in
    the mapping or its AST, fuzz finding 50): the CPU target prints from the schedule
    and needs none of it, so ``--target openmp`` still runs; a note says why there is
    no CUDA, and the program has no kernel."""
    t0 = time.perf_counter()
    log = _StageLogger()
    scop, deps, sched = _front(source, language, options, log)
    why = str(error).splitlines()[0]
    note = Note(Stage.CPU, f"no GPU code ({why}): the OpenMP C is printed from the schedule "
                "and does not need it", kind="fallback")
    program = kir.Program(scop.name, {}, list(scop.size_params), {}, [], {})
    return Compiled(scop=scop, deps=deps, schedule=sched, program=program, cuda="",
                    host_py="", compile_s=time.perf_counter() - t0,
                    summary="no GPU code (the mapping failed)",
                    mapping=MappingResult(sched.schedule, {}, []), options=options,
                    notes=tuple(deps.notes) + (note,), language=language,
                    stages=log.stages())


def _with_cpu(source: str, language: str, options: CompileOptions) -> Compiled:
    """The compile without the CPU code (cached), plus the CPU printer's stage: tiled
    OpenMP C from the same schedule tree (issue 21; it reads no GPU mapping, so a
    failure of the GPU code's stages does not stop it)."""
    gpu_options = replace(options, cpu_code=False)
    t0 = time.perf_counter()
    try:
        base = compile_source(source, gpu_options, language)
    except CompileError as e:
        base = replace(_without_gpu_code(source, language, gpu_options, e),
                       compile_s=time.perf_counter() - t0)
    log = _StageLogger()
    cpu = log.run(Stage.CPU, "CPU code generation",
                  lambda: print_cpu(base.scop, base.deps, base.schedule,
                                    CacheModel(options.cpu_l1, options.cpu_l2),
                                    options.time_tiling_operations,
                                    min_work=options.cpu_min_work),
                  lambda c: c.summary())
    compiled = replace(base, cpu=cpu, options=options, stages=base.stages + log.stages(),
                       notes=base.notes + cpu.notes)
    _remember(source, language, options, compiled)
    return compiled


def _check_sizes(scop: Scop, options: CompileOptions) -> None:
    """Given sizes that no C ``int`` holds, and a delinearised access that is not
    exact at the given sizes (refused at its line and column, frontend/c/delinearise.py),
    are refused before any code is made: the code indexes with 32-bit ints, and the
    stages that read the sizes (the grid fill, the tile search) must not work on a
    problem no run could have."""
    for name in scop.size_params:
        v = options.sizes.get(name)
        if isinstance(v, int) and not isinstance(v, bool) and not INT32[0] <= v <= INT32[1]:
            raise InputError(f"size parameter {name}={v} does not fit a C int (the "
                             f"generated code indexes with 32-bit ints): choose a value "
                             f"from {INT32[0]} to {INT32[1]}")
    bad = flat_violation(scop.arrays, {**scop.constants, **options.sizes})
    if bad is not None:
        b, v = bad
        raise UnsupportedError(b.explain(dict(options.sizes), v), b.line, b.col, scop.source)


def _lower_recurrence(source: str, language: str, scop: Scop, deps: Dependences,
                      sched: ScheduleResult, options: CompileOptions,
                      choice: RecurrenceChoice | None
                      ) -> tuple[Lowered, RecurrenceChoice | None]:
    """The lowering of the candidate the recurrence model chose (:mod:`.recurrence`):
    the options that build it (:attr:`CompileOptions.time_block` for the one block,
    ``--time-tiling``'s for the tiles); when it cannot be built, the next cheapest candidate (the
    host wavefront last: it always can)."""
    while choice is not None and choice.chosen != "wavefront":
        built = choice.options(options)
        try:
            if choice.chosen == "tiles":
                tsched = _schedule_cached(source, language, scop, deps, built)
                if not any(n.kind == "refusal" for n in tsched.notes):
                    return map_and_lower(scop, tsched, built), choice
                choice = without(choice, "tiles", "isl's time tiles are not legal here")
                continue
            return map_and_lower(scop, sched, built), choice
        except (PolymagicError, isl.Error) as e:
            choice = without(choice, choice.chosen, str(e).splitlines()[0][:100])
    try:
        return map_and_lower(scop, sched, options), choice
    except TimeTilesOverBudget as e:
        return _host_time_loop(source, language, scop, deps, options, e), choice


def _host_time_loop(source: str, language: str, scop: Scop, deps: Dependences,
                    options: CompileOptions, why: TimeTilesOverBudget) -> Lowered:
    """``--time-tiling`` whose skewed tiles isl cannot generate within their budget
    (fuzz finding 43): the steps in the host time loop, as without the option, and a
    note saying why (the ladder's way: working code and the reason, not an error)."""
    host = options.with_(time_tiling=())
    lowered = map_and_lower(scop, _schedule_cached(source, language, scop, deps, host), host)
    note = Note(Stage.LOWERING, f"--time-tiling dropped: {why}; the host time loop runs the "
                "steps", kind="fallback")
    return replace(lowered, notes=(note,) + lowered.notes)


def _schedule_cached(source: str, language: str, scop: Scop, deps: Dependences,
                     options: CompileOptions) -> ScheduleResult:
    """The schedule for ``options`` from the schedule stage's cache (run once)."""
    key = ("schedule", source, language, options.deps, options.schedule)
    hit = _CACHE.get(key)
    if hit is None:
        hit = _CACHE[key] = compute_schedule(scop, deps, options.schedule)
    return hit


class _StageLogger:
    """Runs the stages of one compile in order (or takes them from the cache), and
    logs each one's time and result (Halide's ``lower_impl``: a log after every pass)."""

    def __init__(self) -> None:
        self._logs: list[StageLog] = []

    def run(self, name: Stage, what: str, stage: Callable[[], T], describe: Callable[[T], str],
            key: tuple | None = None) -> T:
        """``stage()``'s result (``_CACHE[key]`` when there), logged as ``name``;
        ``what`` names the stage in an internal-error message."""
        t0, c0 = time.perf_counter(), cpu_seconds()
        result = _CACHE.get(key) if key is not None else None
        cached = result is not None
        if not cached:
            with _isl_errors(what):
                result = stage()
            if key is not None:
                _CACHE[key] = result
        self._logs.append(StageLog(name, time.perf_counter() - t0, describe(result), cached,
                                   cpu_seconds() - c0))
        return result

    def stages(self) -> tuple[StageLog, ...]:
        return tuple(self._logs)


def cpu_seconds() -> float:
    """CPU time of this process, of its children that have been waited for
    (``time.process_time`` alone misses the forked counts) and of the helper process's
    calls (the scheduler, :func:`polymagic.helper_process.helper_seconds`)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime + helper_seconds()


@contextmanager
def _isl_errors(what: str):
    """An isl failure inside a stage becomes a one-paragraph error naming the stage
    (a polymagic or isl bug, but the user gets a message, not a traceback)."""
    try:
        yield
    except isl.Error as e:
        raise CompileError(f"internal error in {what}: isl failed ({e}); please report "
                           "this function") from None


def _compile_options(options: CompileOptions | Options | None) -> CompileOptions:
    if options is None:
        return CompileOptions()
    return options.compile if isinstance(options, Options) else options


# ---- the compile cache -------------------------------------------------------------

def _compile_key(source: str, language: str, options: CompileOptions) -> tuple:
    """The compile's cache key: the sizes count only where a stage reads them before
    the code is known (the tile search, localisation); ``__constant__`` memory is
    chosen at the sizes too, which :func:`_size_dependent` tells after the compile."""
    return ("compile", source, language, options.size_independent())


def _cached_compile(source: str, language: str, options: CompileOptions) -> Compiled | None:
    key = _compile_key(source, language, options)
    hit = _CACHE.get(key)
    if hit is not None and _size_dependent(hit):
        hit = _CACHE.get(key + (_size_values(hit.scop, options),))
    return hit


def _remember(source: str, language: str, options: CompileOptions, c: Compiled) -> None:
    key = _compile_key(source, language, options)
    _CACHE[key] = c
    if _size_dependent(c):
        _CACHE[key + (_size_values(c.scop, options),)] = c


def schedule_for(compiled: Compiled, options: CompileOptions | Options) -> ScheduleResult:
    """The schedule of ``compiled``'s function for other ``options`` (the tile search
    of the explorer and of ``--autotune`` asks for it): the compile's own when the
    scheduler reads the same options, else from the schedule stage's cache, run
    there once when missing."""
    options = _compile_options(options)
    if options.schedule == compiled.options.schedule and options.deps == compiled.options.deps:
        return compiled.schedule
    source, language = compiled.scop.source, compiled.language
    key = ("schedule", source, language, options.deps, options.schedule)
    hit = _CACHE.get(key)
    if hit is None:
        with _isl_errors("scheduling"):
            hit = _CACHE[key] = compute_schedule(compiled.scop, compiled.deps, options.schedule)
    return hit


def is_cached(source: str, options: CompileOptions | Options, language: str = "c") -> bool:
    """Whether :func:`compile_source` would answer from the cache (the explorer
    reports it with each regeneration's time)."""
    return _cached_compile(source, language, _compile_options(options)) is not None


def _size_dependent(c: Compiled) -> bool:
    """Whether the code depends on the values of the sizes (``__constant__`` memory
    is decided at the given sizes, seed 004 §4.2; the recurrence model counts at
    them, or at its own when none are given)."""
    return bool(c.program.constants) or c.mapping.size_dependent or c.recurrence is not None


def _size_values(scop: Scop, options: CompileOptions) -> tuple:
    return tuple((p, options.sizes.get(p)) for p in scop.size_params)


# ---- one line per stage result (--show stages) --------------------------------------

def _describe_scop(scop: Scop) -> str:
    sizes = ", ".join(scop.size_params) or "none"
    return (f"{scop.name}: {len(scop.statements)} statement(s), {len(scop.arrays)} "
            f"array(s), size parameters {sizes}")


def _describe_deps(deps: Dependences) -> str:
    counts = ", ".join(f"{kind} {getattr(deps, kind).n_map()}"
                       for kind in ("flow", "anti", "output"))       # (input: formed on demand)
    approx = f"; {len(deps.notes)} approximation(s)" if deps.notes else ""
    return f"relations: {counts}{approx}"


def _describe_schedule(sched: ScheduleResult) -> str:
    used = ("superposition (seed 003)" if sched.use_superposition else
            "single schedule (isl)")
    planned = ", superposition planned" if sched.superposition is not None and \
        not sched.use_superposition else ""
    return f"{used}{planned}; {len(sched.notes)} note(s)"


def _describe_lowered(result: tuple[Lowered, RecurrenceChoice | None]) -> str:
    lowered, choice = result
    program = lowered.program
    tile = (f"; --tile auto chose {','.join(map(str, lowered.chosen_tile))}"
            if lowered.chosen_tile else "")
    rec = (f"; {choice.loop}: {choice.chosen} (recurrence model)" if choice else "")
    return (f"{len(program.kernels)} kernel(s), {len(program.launches())} launch site(s), "
            f"{len(program.constants)} __constant__ array(s){tile}{rec}")


def _describe_text(text: str) -> str:
    return f"{len(text.splitlines())} lines"


# ---- layouts discovered at call time ------------------------------------------------

def array_layout(scop: Scop, arrays: Mapping[str, object]
                 ) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Element strides (absolute) of the given arrays that are not row-major
    contiguous — transposes, column slices, Fortran order — sorted by name; arrays
    laid out as declared are left out, so contiguous inputs give ``()``."""
    import numpy as np
    out = []
    for name in sorted(p.name for p in scop.array_params):
        a = arrays.get(name)
        if not isinstance(a, np.ndarray) or a.ndim < 2:
            continue
        if any(s % a.itemsize for s in a.strides):
            continue                           # planned on a contiguous copy (transfers)
        real = tuple(abs(s) // a.itemsize for s in a.strides)
        row_major = tuple(int(np.prod(a.shape[k + 1:])) for k in range(a.ndim))
        if any(n > 1 and r != m for r, m, n in zip(real, row_major, a.shape)):
            out.append((name, real))
    return tuple(out)


O = TypeVar("O", CompileOptions, Options)


def specialise_layout(compiled: Compiled, options: O, arrays: Mapping[str, object]
                      ) -> tuple[Compiled, O]:
    """The compilation for the arrays' real layout (seed 002 §2.3: layouts are
    discovered at call time).  Only the superposition's DL model reads strides (seed
    003 §5.2: which loop coalesces, hence goes to thread x, depends on them), so with
    ``--mapping single``, or arrays laid out as declared, ``compiled`` is returned as
    it is; otherwise the function is recompiled (cached per layout) and a copy with
    a note is returned, with ``options`` carrying the layout."""
    if options.mapping != "superposition":
        return compiled, options
    layout = array_layout(compiled.scop, arrays)
    if layout == options.layout:
        return compiled, options
    options = options.with_(layout=layout)
    c = compile_source(compiled.scop.source, options, language=compiled.language)
    if layout:
        views = ", ".join(f"{n} (element strides {', '.join(map(str, s))})" for n, s in layout)
        note = Note(Stage.LAYOUT, f"the DL coalescing model used the real strides of {views}",
                    kind="info")
        if note not in c.notes:
            c = replace(c, notes=c.notes + (note,))
    return c, options
