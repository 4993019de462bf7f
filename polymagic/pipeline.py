"""The compiler pipeline: source -> Scop -> Dependences -> Schedule -> Mapping -> KIR -> code.

:func:`compile_source` runs every stage once and returns a :class:`Compiled`
bundle; results are cached by (source, language, options that change code).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Mapping

from . import kir
from .errors import CompileError
from .options import Options
from .scop import Scop


@dataclass
class Compiled:
    scop: Scop
    deps: object                 # deps.Dependences
    schedule: object             # schedule.ScheduleResult (islpy schedule tree + notes)
    program: kir.Program
    cuda: str                    # CUDA source of all kernels
    host_py: str                 # Python source of the host driver (see codegen.host)
    compile_s: float             # pipeline time, parse -> CUDA
    summary: str                 # one line: loops -> blocks/threads, grid/block sizes, kernels
    notes: list[str] = field(default_factory=list)
    language: str = "c"
    #: the mapping stage's result (mapping.MappingResult: the mapped schedule tree and
    #: one plan per kernel) the code was generated from, kept so that views (the
    #: explorer, pictures) read it instead of mapping again; ``options_key`` is the
    #: ``Options.key()`` of the compile request it belongs to
    mapping: object = None
    options_key: tuple | None = None


#: compiles by (source, language, Options.key()), and, in the same dict (so that
#: emptying it forgets them too), stage outputs that do not depend on tile sizes,
#: block sizes or memory options, keyed by what they do depend on:
#: ('stage:front', source, language) -> (Scop, Dependences);
#: ('stage:schedule', source, language, schedule_key) -> ScheduleResult.
#: A change of a tile size in the explorer re-runs only the mapping and code
#: generation.  Later stages read these objects and never modify them.
_CACHE: dict[tuple, object] = {}
#: how often each stage really ran (not served from a cache): tests count calls
STAGE_RUNS: dict[str, int] = {"front": 0, "schedule": 0, "mapping": 0}


def clear_caches() -> None:
    """Forget every compile and stage output (tests that patch stage constants)."""
    _CACHE.clear()


def schedule_key(options: Options) -> tuple:
    """What :func:`polymagic.schedule.compute_schedule` reads of the options: the
    mapping choice (the superposition is planned only for it), whether the tile
    search or localisation runs (they keep the single mapping), the arrays' real
    layout (the DL model's strides), whether thread-level tree reductions may be
    planned, and the module's superposition policy.  A new option the scheduler
    reads must be added here (``tests/test_pipeline_cache.py`` checks the list)."""
    from . import schedule
    return (options.mapping, bool(options.tile_auto), options.localise is not None,
            options.layout, options.reductions, options.time_tiling, schedule.REQUIRE_GAIN,
            schedule.SUPER_OPERATIONS, schedule.MAX_OPERATIONS)


@contextmanager
def _stage(name: str):
    """An isl failure inside a stage becomes a one-paragraph error naming the stage
    (a polymagic or isl bug, but the user gets a message, not a traceback)."""
    import islpy as isl
    try:
        yield
    except isl.Error as e:
        raise CompileError(f"internal error in {name}: isl failed ({e}); please report "
                           "this function") from None


def compile_source(source: str, options: Options | None = None, language: str = "c") -> Compiled:
    """Run the whole pipeline on one function's source (cached)."""
    options = options or Options()
    key = (source, language, options.key())
    hit = _CACHE.get(key)
    if hit is not None and _size_dependent(hit):
        # __constant__ memory is chosen at the given sizes: cache per size values
        key = key + (_size_values(hit.scop, options),)
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    t0 = time.perf_counter()
    from .frontend import parse
    from .deps import compute_dependences
    from .schedule import compute_schedule
    from .compiler.lowering import map_and_lower
    from .codegen.cuda import print_cuda
    from .codegen.host import print_host_python
    front = _CACHE.get(("stage:front", source, language))
    if front is None:
        with _stage("parsing"):
            scop = parse(source, language)
        with _stage("dependence analysis"):
            deps = compute_dependences(scop)
        STAGE_RUNS["front"] += 1
        front = _CACHE[("stage:front", source, language)] = (scop, deps)
    scop, deps = front
    skey = ("stage:schedule", source, language, schedule_key(options))
    sched = _CACHE.get(skey)
    if sched is None:
        with _stage("scheduling"):
            sched = compute_schedule(scop, deps, options)
        STAGE_RUNS["schedule"] += 1
        _CACHE[skey] = sched
    with _stage("mapping"):
        program, summary, notes, mapping = map_and_lower(scop, sched, options)
    STAGE_RUNS["mapping"] += 1
    notes = list(deps.notes) + list(notes)
    with _stage("code generation"):
        cuda = print_cuda(program)
        host_py = print_host_python(program)
    c = Compiled(scop, deps, sched, program, cuda, host_py, time.perf_counter() - t0,
                 summary, notes, language, mapping, options.key())
    _CACHE[key[:3]] = c
    if _size_dependent(c):
        _CACHE[key[:3] + (_size_values(scop, options),)] = c
    return c


def _size_dependent(c: Compiled) -> bool:
    """Whether the code depends on the values of the sizes (``__constant__`` memory
    is decided at the given sizes, seed 004 §4.2)."""
    return bool(c.program.constants) or c.mapping.size_dependent


def _size_values(scop: Scop, options: Options) -> tuple:
    return tuple((p, options.sizes.get(p)) for p in scop.size_params)


def array_layout(scop: Scop, arrays: Mapping[str, object]) -> tuple[tuple[str, tuple[int, ...]], ...]:
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


def specialise_layout(compiled: Compiled, options: Options, arrays: Mapping[str, object]
                      ) -> tuple[Compiled, Options]:
    """The compilation for the arrays' real layout (seed 002 §2.3: layouts are
    discovered at call time).  Only the superposition's DL model reads strides (seed
    003 §5.2: which loop coalesces, hence goes to thread x, depends on them), so with
    ``--mapping single``, or arrays laid out as declared, ``compiled`` is returned as
    it is; otherwise the function is recompiled (cached per layout) with a note."""
    if options.mapping != "superposition":
        return compiled, options
    layout = array_layout(compiled.scop, arrays)
    if layout == options.layout:
        return compiled, options
    options = options.with_(layout=layout)
    c = compile_source(compiled.scop.source, options, language=compiled.language)
    if layout:
        views = ", ".join(f"{n} (element strides {', '.join(map(str, s))})" for n, s in layout)
        note = f"the DL coalescing model used the real strides of {views}"
        if note not in c.notes:
            c.notes.append(note)
    return c, options
