"""The mapping's public observer hook (polymagic.mapping.observer): the events the
tile search reads, and a mapping that does not change when it is observed."""
from __future__ import annotations

import pathlib

import islpy as isl

from polymagic.mapping import (BandEvent, GroupBuffersEvent, MappingObserver, SuperKernelEvent,
                               ThreadTilesEvent, map_schedule)
from polymagic.options import Options
from polymagic.compiler import compile_source

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


class _Log(MappingObserver):
    def __init__(self) -> None:
        self.events: list = []

    def band(self, event: BandEvent) -> None:
        self.events.append(event)

    def super_kernel(self, event: SuperKernelEvent) -> None:
        self.events.append(event)

    def thread_tiles(self, event: ThreadTilesEvent) -> None:
        self.events.append(event)

    def group_buffers(self, event: GroupBuffersEvent) -> None:
        self.events.append(event)


def _mapped(name: str, options: Options):
    c = compile_source((EXAMPLES / f"{name}.c").read_text(), options)
    log = _Log()
    seen = map_schedule(c.scop, c.schedule, options.compile, observer=log)
    plain = map_schedule(c.scop, c.schedule, options.compile)
    return c, log.events, seen, plain


def test_single_mapping_reports_each_band_before_tiling():
    c, events, seen, plain = _mapped("gemm", Options(mapping="single", sizes={"N": 64}))
    (band,) = events
    assert isinstance(band, BandEvent) and band.kernel == "pm_kernel0"
    assert band.schedule.dim(isl.dim_type.set) == 3       # i, j, k: the band untiled
    assert str(seen.schedule) == str(plain.schedule) == str(c.mapping.schedule)


def test_superposition_reports_kernels_and_thread_tile_buffers():
    c, events, seen, plain = _mapped("jacobi-2d-alt", Options(sizes={"tsteps": 4, "n": 64}))
    assert c.schedule.use_superposition
    kernels = [e for e in events if isinstance(e, SuperKernelEvent)]
    groups = [e for e in events if isinstance(e, GroupBuffersEvent)]
    assert [k.kernel for k in kernels] == list(plain.plans)
    assert kernels[0].block_loops is not None and kernels[0].defaults
    bufs = {b.name for p in plain.plans.values() if p.memory for b in p.memory.buffers}
    assert groups and {n for g in groups for n in g.buffers} <= bufs
    assert any(isinstance(e, ThreadTilesEvent) for e in events)
    assert str(seen.schedule) == str(plain.schedule)
