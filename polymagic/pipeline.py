"""The compiler pipeline: source -> Scop -> Dependences -> Schedule -> Mapping -> KIR -> code.

:func:`compile_source` runs every stage once and returns a :class:`Compiled`
bundle; results are cached by (source, language, options that change code).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

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


_CACHE: dict[tuple, Compiled] = {}


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
    from .mapping import map_to_kir
    from .codegen.cuda import print_cuda
    from .codegen.host import print_host_python
    with _stage("parsing"):
        scop = parse(source, language)
    with _stage("dependence analysis"):
        deps = compute_dependences(scop)
    with _stage("scheduling"):
        sched = compute_schedule(scop, deps, options)
    with _stage("mapping"):
        program, summary, notes = map_to_kir(scop, sched, options)
    with _stage("code generation"):
        cuda = print_cuda(program)
        host_py = print_host_python(program)
    c = Compiled(scop, deps, sched, program, cuda, host_py, time.perf_counter() - t0,
                 summary, notes)
    _CACHE[key[:3]] = c
    if _size_dependent(c):
        _CACHE[key[:3] + (_size_values(scop, options),)] = c
    return c


def _size_dependent(c: Compiled) -> bool:
    """Whether the code depends on the values of the sizes (``__constant__`` memory
    is decided at the given sizes, seed 004 §4.2)."""
    return bool(c.program.constants) or any(
        "give --size" in n or "would bring the constant arrays" in n for n in c.notes)


def _size_values(scop: Scop, options: Options) -> tuple:
    return tuple((p, options.sizes.get(p)) for p in scop.size_params)
