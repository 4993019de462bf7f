"""Refuse runs that cannot finish: too much memory or too much work for the target.

A size typed by mistake (``--size N=200000`` for an N×N array, or a billion time
steps) must give a one-paragraph error before anything is allocated or run, not a
``MemoryError`` traceback or an hour of emulation.  The work of a run is the number
of statement instances at the given sizes, counted exactly with barvinok
(``islpy-barvinok``'s counting of the statement domains).
"""
from __future__ import annotations

import os
from typing import Mapping

import islpy as isl
import numpy as np

from ..errors import InputError
from ..dtypes import DTYPES
from ..options import RunOptions
from ..scop import Scop
from . import bounds, faults

def available_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _at(sizes: Mapping[str, int]) -> str:
    """``N=64, M=32`` (what follows "at"); a function without size parameters runs
    at its constant sizes (issue 18: an empty list was printed)."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "its constant sizes"


def check_memory(scop: Scop, shapes: Mapping[str, tuple[int, ...]],
                 sizes: Mapping[str, int], limits: RunOptions = RunOptions()) -> None:
    """Every array three times (inputs, device results, CPU reference) must fit in
    ``limits.max_memory`` bytes (None: half the free memory)."""
    max_memory = limits.max_memory
    need = 0
    for name, shape in shapes.items():
        n = 1
        for e in shape:
            n *= max(int(e), 0)
        need += n * np.dtype(DTYPES[scop.arrays[name].ctype]).itemsize
    limit = max_memory if max_memory is not None else available_bytes() // 2
    if 3 * need > limit:
        biggest = max(shapes, key=lambda k: np.prod([max(int(e), 1) for e in shapes[k]]))
        raise InputError(
            f"at {_at(sizes)} the arrays need {_human(need)} ({biggest} alone is "
            f"{'x'.join(map(str, shapes[biggest]))}), about {_human(3 * need)} with the "
            f"device and reference copies, more than the {_human(limit)} polymagic allows "
            "itself here; choose smaller sizes (or give --max-memory)")


def instances(scop: Scop, sizes: Mapping[str, int]) -> int:
    """Statement instances executed at these sizes: barvinok's parametric count of
    each domain (``Set.card``), evaluated at the sizes — instant even for 10^11
    instances, where enumerating points (``count_val``) would take minutes."""
    env = {k: int(v) for k, v in sizes.items()}
    total = 0
    for s in scop.statements:
        try:
            total += int(s.domain.card().eval_with_dict(env))
        except (isl.Error, TypeError, ValueError):
            continue
    return total


def check_work(scop: Scop, sizes: Mapping[str, int], target: str, check: bool,
               limits: RunOptions = RunOptions()) -> int:
    """Refuse emulator runs and CPU checks that would take far too long (``limits``'
    instance counts), and runs that would fault or overflow at these sizes
    (:mod:`polymagic.runtime.faults`)."""
    faults.check(scop, sizes)
    bounds.check_bounds(scop, sizes)
    n = instances(scop, sizes)
    most = limits.max_emulator_instances
    if target in ("emulator",) and n > most:
        raise InputError(
            f"{scop.name} runs {n:.3g} statement instances at {_at(sizes)}; the race-hunting "
            f"emulator allows {most:.3g} (about a minute): choose smaller sizes, "
            "--target openmp, or a GPU (--max-emulator-instances raises the limit)")
    most = limits.max_cpu_instances
    if check and n > most:
        raise InputError(
            f"{scop.name} runs {n:.3g} statement instances at {_at(sizes)}; checking them on "
            f"the CPU is limited to {most:.3g}: choose smaller sizes or --no-check "
            "(--max-cpu-instances raises the limit)")
    return n


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
