"""Run a program's launches in tiles whose data fit the device memory (seed 002 §4.4).

When ``--device-mem`` is smaller than the buffers of one plan for the whole run
(plus the runtime-allocated temporaries, which stay resident), every launch of the
host driver gets its own plans: :func:`polymagic.transfers.session.launch_plans`
splits it into tiles of blocks whose buffers fit.  Each tile is packed on the host,
copied to the device, run, copied back and unpacked into host memory, so later
tiles and launches see the results of earlier ones.

The emulator and the GPU runtime share this driver and lend it their primitives as
a :class:`TileDevice`: allocate host staging buffers, start a tile (copy in, launch,
copy out) and wait for it.  A device that can overlap (the GPU, on two CUDA
streams) starts the next tile before the previous one is waited for, when their
data do not conflict and both fit the budget; the emulator runs a tile to the end
as it starts it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Generic, Mapping, Protocol, TypeVar

import numpy as np

from .. import kir
from ..errors import DeviceError
from ..transfers import session as S
from ..transfers.pack import Staging, pack, unpack
from ..transfers.plan import TransferPlan
from ..transfers.tiling import Tile

Job = TypeVar("Job")

#: ``host(ints, launch)``: the host driver (:func:`polymagic.runtime.gpu.load_host`).
HostDriver = Callable[[dict, Callable], None]


class TileDevice(Protocol[Job]):
    """What a runtime lends the tiled driver.

    ``overlap``: whether a tile may start before the previous one is waited for.
    ``prepare``: called once with the tiled variant (compile it, upload constants,
    allocate the resident temporaries).  ``allocate``: the host staging buffers of a
    tile's plan.  ``start``: copy the packed buffers in, launch the tile, copy the
    written ranges out (asynchronously where the device can); ``index`` counts the
    tiles of the launch.  ``wait``: until the tile has finished (raise if it went
    wrong).  ``synchronize``: after the host driver, until every tile has finished.
    """
    overlap: bool

    def prepare(self, variant: kir.Program, ints: Mapping[str, int]) -> None: ...

    def allocate(self, plan: TransferPlan, ints: Mapping[str, int]) -> list[Staging]: ...

    def start(self, index: int, kernel: str, tile: Tile, plan: TransferPlan,
              staging: list[Staging], ints: dict[str, int]) -> Job: ...

    def wait(self, job: Job, staging: list[Staging]) -> None: ...

    def synchronize(self) -> None: ...


@dataclass
class _Running(Generic[Job]):
    """A started tile not yet unpacked."""
    plan: TransferPlan
    staging: list[Staging]
    job: Job


def tile_budget(program: kir.Program, ints: Mapping[str, int], device_mem: int) -> int:
    """Bytes left for a tile's buffers once the temporaries are allocated
    (DeviceError when nothing is left)."""
    temps = S.temps_nbytes(program, ints)
    if device_mem - temps <= 0:
        raise DeviceError(f"--device-mem {device_mem} B does not even hold the "
                          f"temporaries ({temps} B)")
    return device_mem - temps


def conflicts(a: TransferPlan, b: TransferPlan) -> bool:
    """Does ``b`` upload an element that ``a`` writes back (so ``b`` must wait)?"""
    for n, la in a.layouts.items():
        lb = b.layouts.get(n)
        if lb is not None and any(x.intersects(y) for x in la.copy_out for y in lb.copy_in):
            return True
    return False


def run_tiled(program: kir.Program, host: HostDriver, device: TileDevice,
              sources: Mapping[str, np.ndarray], results: Mapping[str, np.ndarray],
              ints: Mapping[str, int], device_mem: int, stats: S.TransferStats) -> float:
    """Run every launch of ``host`` in tiles within ``device_mem`` bytes on ``device``.

    Data are read from ``sources``; the parameter arrays in ``results`` are first
    set to their sources and then receive every tile's written regions (in place).
    ``stats`` (mode 'tiled') gathers the tiles' transfers, pack and unpack times and
    the launches.  Returns the wall seconds of the host driver (every launch, its
    transfers included)."""
    ints = {k: int(v) for k, v in ints.items()}
    stats.mode = "tiled"
    budget = tile_budget(program, ints, device_mem)
    variant = S.tiled_variant(program)
    device.prepare(variant, ints)
    names = S.kernel_param_arrays(program)
    work = {n: (results[n] if n in results else sources[n]) for n in names}
    for n in names:
        if n in results and results[n] is not sources[n]:
            results[n][...] = sources[n]
    shapes = {n: tuple(a.shape) for n, a in work.items()}

    def finish(run: _Running) -> None:
        device.wait(run.job, run.staging)
        t0 = time.perf_counter()
        unpack(run.plan, run.staging, work)
        stats.unpack_s += time.perf_counter() - t0

    def launch(name: str, grid, extra=None) -> None:
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        if min(grid) <= 0:          # an empty launch is not a launch
            return
        env = {**ints, **{k: int(v) for k, v in (extra or {}).items()}}
        pending: _Running | None = None
        for i, (tile, plan) in enumerate(S.launch_plans(program, name, grid, env, work,
                                                        budget)):
            if pending is not None and (not device.overlap or conflicts(pending.plan, plan)
                                        or pending.plan.bytes_h2d + plan.bytes_h2d > budget):
                finish(pending)
                pending = None
            t0 = time.perf_counter()
            staging = device.allocate(plan, env)
            pack(plan, work, staging)
            stats.pack_s += time.perf_counter() - t0
            ti = S.tile_ints(variant, name, plan, tile, grid, env, shapes)
            job = device.start(i, name, tile, plan, staging, ti)
            if pending is not None:
                finish(pending)
            pending = _Running(plan, staging, job)
            stats.add_plan(plan, work)
            stats.tiles += 1
        if pending is not None:
            finish(pending)
        stats.launches += 1

    t0 = time.perf_counter()
    host(dict(ints), launch)
    device.synchronize()
    return time.perf_counter() - t0


__all__ = ["TileDevice", "run_tiled", "tile_budget", "conflicts"]
