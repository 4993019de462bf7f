"""A public hook into the mappers: :func:`polymagic.mapping.map_schedule` calls an
observer at fixed points of its walk, with frozen records of what it is about to
map or has just planned.

Seed 000 §4.3's tile-size search (:mod:`polymagic.tiles.sampling`) samples
the real mapper and memory planner at several tile vectors and reads, besides the
:class:`~.result.MappingResult`, what only the walk knows: a band's schedule before
it is tiled, a superposition kernel's block loops ``Θ_out`` before ``TL_k`` tiles
them (seed 003 §4.2), and which thread tiles a buffer's copies sit in.  The records
hold isl objects and plain values; an observer must not modify them.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl


@dataclass(frozen=True)
class BandEvent:
    """Single mapping (seed 004 §4.1): a band with coincident leading members, about
    to be tiled into kernel ``kernel``."""
    kernel: str                         # its mark, e.g. 'pm_kernel0'
    schedule: isl.MultiUnionPwAff       # the band's partial schedule, untiled
    domain: isl.UnionSet                # the statement instances below the band
    prefix: isl.UnionMap                # the prefix schedule (host loops) above it


@dataclass(frozen=True)
class SuperKernelEvent:
    """Superposition (seed 003 §4.2): kernel ``kernel`` about to be built."""
    kernel: str                                 # its mark, e.g. 'pm_kernel0'
    statements: tuple[str, ...]
    domain: isl.UnionSet                        # its statement instances
    host: isl.UnionMap                          # host prefix schedule on ``domain``
    block_loops: isl.MultiUnionPwAff | None     # ``Θ_out`` before tiling (None: one block)
    tied: tuple[tuple[str, ...], ...]           # per block loop, the thread axes running it
    default_block: tuple[int, int, int]         # threads per block before a tile caps them
    defaults: tuple[int, ...]                   # its block tiles without ``--tile``


@dataclass(frozen=True)
class ThreadTilesEvent:
    """Superposition: the thread tiles (``⌊Θ_thread / blockDim⌋``, then a sub-tile of
    a sequential loop when legal) of a thread group of kernel ``kernel``; None when
    the group gets none (no thread dimension, or not legal)."""
    kernel: str
    statements: tuple[str, ...]                 # the thread group's
    tiles: isl.MultiUnionPwAff | None


@dataclass(frozen=True)
class GroupBuffersEvent:
    """Superposition: shared buffers a thread group of kernel ``kernel`` planned per
    thread tile (seed 000 §3 below the block level)."""
    kernel: str
    statements: tuple[str, ...]                 # the thread group's
    buffers: tuple[str, ...]                    # the buffers' names
    split: tuple[int, ...]                      # block loops whose tiles its thread tiles split
    sub_tiled: bool                             # its copies sit inside the sub-tile loop
    #: instances of the group's statements (in the kernel's domain) -> the value of the
    #: loop its sub-tile tiles; None when not sub-tiled
    sub_tile_loop: isl.UnionMap | None


class MappingObserver:
    """Receives the mappers' events; every method does nothing by default, so an
    observer overrides only those it needs.  Called synchronously during
    :func:`polymagic.mapping.map_schedule`, in the order of the walk."""

    def band(self, event: BandEvent) -> None:
        """A band of the single mapping, before it is tiled."""

    def super_kernel(self, event: SuperKernelEvent) -> None:
        """A superposition kernel, before it is built."""

    def thread_tiles(self, event: ThreadTilesEvent) -> None:
        """A superposition thread group's thread tiles, when buffers are wanted."""

    def group_buffers(self, event: GroupBuffersEvent) -> None:
        """Buffers a superposition thread group planned per thread tile."""


#: the observer used when none is given
NO_OBSERVER = MappingObserver()
