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
from ..scop import Scop
from . import bounds, faults

#: statement instances the emulator may run (≈ a minute on one core with its checks)
EMULATOR_INSTANCES = int(float(os.environ.get("POLYMAGIC_MAX_EMULATOR_INSTANCES", 3e8)))
#: statement instances the CPU reference may run (≈ half a minute of -O2 code)
CPU_INSTANCES = int(float(os.environ.get("POLYMAGIC_MAX_CPU_INSTANCES", 2e10)))


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
                 sizes: Mapping[str, int]) -> None:
    """Every array three times (inputs, device results, CPU reference) must fit in
    half the free memory (``POLYMAGIC_MAX_BYTES`` overrides)."""
    need = 0
    for name, shape in shapes.items():
        n = 1
        for e in shape:
            n *= max(int(e), 0)
        need += n * np.dtype(DTYPES[scop.arrays[name].ctype]).itemsize
    limit = int(float(os.environ.get("POLYMAGIC_MAX_BYTES", available_bytes() // 2)))
    if 3 * need > limit:
        biggest = max(shapes, key=lambda k: np.prod([max(int(e), 1) for e in shapes[k]]))
        raise InputError(
            f"at {_at(sizes)} the arrays need {_human(need)} ({biggest} alone is "
            f"{'x'.join(map(str, shapes[biggest]))}), about {_human(3 * need)} with the "
            f"device and reference copies, more than the {_human(limit)} polymagic allows "
            "itself here; choose smaller sizes (or set POLYMAGIC_MAX_BYTES)")


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


def check_work(scop: Scop, sizes: Mapping[str, int], target: str, check: bool) -> int:
    """Refuse emulator runs and CPU checks that would take far too long, and runs
    that would fault or overflow at these sizes (:mod:`polymagic.runtime.faults`)."""
    faults.check(scop, sizes)
    bounds.check_bounds(scop, sizes)
    n = instances(scop, sizes)
    if target in ("emulator",) and n > EMULATOR_INSTANCES:
        raise InputError(
            f"{scop.name} runs {n:.3g} statement instances at {_at(sizes)}; the race-hunting "
            f"emulator allows {EMULATOR_INSTANCES:.3g} (about a minute): choose smaller sizes, "
            "--target openmp, or a GPU (POLYMAGIC_MAX_EMULATOR_INSTANCES raises the limit)")
    if check and n > CPU_INSTANCES:
        raise InputError(
            f"{scop.name} runs {n:.3g} statement instances at {_at(sizes)}; checking them on "
            f"the CPU is limited to {CPU_INSTANCES:.3g}: choose smaller sizes or --no-check "
            "(POLYMAGIC_MAX_CPU_INSTANCES raises the limit)")
    return n


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
