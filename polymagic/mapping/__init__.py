"""Mapping: schedule tree -> tiles, thread blocks, threads, host loops (one
:class:`~.result.KernelPlan` per kernel, the mapped tree in a
:class:`~.result.MappingResult`), from which :mod:`polymagic.lower` makes Kernel IR.

Two mappers:

* :mod:`.single` — seed 004 §4.1's single-schedule mapping (PPCG's): tiled
  coincident bands on blocks and threads, host loops above, one-thread kernels for
  sequential code; with seed 000 §4.1 sub-tiles and shared buffers, seed 004 §4.2
  registers and ``__constant__`` arrays, seed 001 localisation, and the time-loop
  kernels of :mod:`.time_kernels`;
* :mod:`.superposition` — seed 003 §4.2-4.3's superposed schedule (block loops
  ``Θ_out`` tiled by ``TL``, thread groups, step loops, tree reductions), with
  :mod:`.super_memory` and :mod:`.super_local`.

:func:`map_schedule` picks one.  Its ``observer`` (:mod:`.observer`) sees the
mappers' bands and kernels before they are tiled: seed 000 §4.3's tile search reads
them there.
"""
from __future__ import annotations

from ..errors import OptionsError
from ..options import CompileOptions
from ..schedule import ScheduleResult
from ..scop import Scop
from .observer import (NO_OBSERVER, BandEvent, GroupBuffersEvent, MappingObserver,
                       SuperKernelEvent, ThreadTilesEvent)
from .result import (DEFAULT_BLOCKS, DEFAULT_SUB_TILE, DEFAULT_TILES, HOST_PARAM,
                     MARK_PREFIX, KernelPlan, MappedMember, MappingResult, TreeReduction,
                     kernel_mark)
from .single import map_single
from .superposition import default_block, map_superposition, tied_axes


def superposed(sched: ScheduleResult, options: CompileOptions) -> bool:
    """Whether the seed 003 superposition maps this program (per-thread tiles,
    ``--tile T:t``, included: :func:`.superposition.tiles_and_threads`)."""
    return options.mapping == "superposition" and sched.use_superposition


def map_schedule(scop: Scop, sched: ScheduleResult, options: CompileOptions,
                 observer: MappingObserver = NO_OBSERVER) -> MappingResult:
    """Tile and mark the schedule tree; return it with one plan per kernel.
    ``observer`` is told of each band or superposition kernel on the way
    (:class:`.observer.MappingObserver`)."""
    for name, vals in (("--tile", options.tile or ()), ("--block", options.block or ())):
        if any(v <= 0 for v in vals):
            raise OptionsError(f"{name} sizes must be positive")
    if superposed(sched, options):
        return map_superposition(scop, sched.superposition, options, observer)
    return map_single(scop, sched, options, observer)


__all__ = ["map_schedule", "map_superposition", "map_single", "superposed", "default_block",
           "tied_axes", "MappingObserver", "NO_OBSERVER", "BandEvent", "SuperKernelEvent",
           "ThreadTilesEvent", "GroupBuffersEvent", "MappingResult", "KernelPlan",
           "MappedMember", "TreeReduction", "kernel_mark", "DEFAULT_BLOCKS",
           "DEFAULT_SUB_TILE", "DEFAULT_TILES", "HOST_PARAM", "MARK_PREFIX"]
