"""What the device runtimes share: the transfer plan of a run, its kernel variant,
device-memory tiling of launches, and the transfer statistics of the report.

Two modes (seed 002 §4.4–4.5):

``session``
    One plan for the whole function (every access of every statement, from the
    Scop): the buffers go to the device once, every launch of the host driver runs
    on them, the written regions come back once.
``tiled``
    When ``--device-mem`` is smaller than the session's buffers (plus the
    runtime-allocated temporaries, which stay resident), every launch gets its own
    plan from the kernel's accesses (:func:`tiling.kernel_references`) and is split
    into tiles of blocks whose buffers fit; each tile is packed, uploaded, run,
    downloaded and unpacked before the next, so later launches and tiles see
    earlier results in host memory.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Mapping

import numpy as np

from .. import kir
from ..dtypes import DTYPES
from ..expr import accesses, evaluate, row_major_strides
from ..notes import Note
from ..scop import Scop
from . import kernels as K
from .pack import transfer_table, whole_bytes
from .plan import (HostArray, Reference, TransferPlan, covering_references, plan_transfers,
                   scop_references, whole_array_references)
from .tiling import Tile, choose_tile, kernel_references, tiles


@dataclass
class TransferStats:
    """Planned transfer volume of one run (reported for every target)."""
    mode: str = "session"
    bytes_h2d: int = 0
    bytes_d2h: int = 0
    whole_h2d: int = 0               # what whole-array transfers would move
    whole_d2h: int = 0
    per_array: dict = field(default_factory=dict)
    tiles: int = 0                   # tiles run (tiled mode)
    launches: int = 0
    pack_s: float = 0.0
    unpack_s: float = 0.0
    buffers: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @classmethod
    def of_run(cls, program: kir.Program, sources: Mapping[str, np.ndarray]) -> TransferStats:
        """Nothing moved yet; what whole-array transfers of the run's parameter arrays
        (up, and down when written) would move."""
        names = kernel_param_arrays(program)
        written = written_param_arrays(program)
        return cls(whole_h2d=sum(whole_bytes(sources[n]) for n in names),
                   whole_d2h=sum(whole_bytes(sources[n]) for n in names if n in written))

    def add_plan(self, plan: TransferPlan, arrays: Mapping[str, np.ndarray]) -> None:
        self.bytes_h2d += plan.bytes_h2d
        self.bytes_d2h += plan.bytes_d2h
        for n, row in transfer_table(plan, arrays).items():
            acc = self.per_array.setdefault(n, {"bytes_h2d": 0, "bytes_d2h": 0,
                                                "whole_h2d": row["whole_h2d"],
                                                "whole_d2h": row["whole_d2h"],
                                                "nbytes": row["nbytes"]})
            acc["bytes_h2d"] += row["bytes_h2d"]
            acc["bytes_d2h"] += row["bytes_d2h"]
            if self.mode == "session":
                acc["buffer"], acc["case"], acc["layout"] = row["buffer"], row["case"], row["layout"]

    def summary(self) -> str:
        def mb(b: int) -> str:
            return f"{b / 1e6:.3g} MB" if b >= 1e5 else f"{b / 1e3:.3g} KB" if b >= 100 else f"{b} B"
        s = (f"transfers: H2D {mb(self.bytes_h2d)}, D2H {mb(self.bytes_d2h)} "
             f"(whole arrays: {mb(self.whole_h2d)} / {mb(self.whole_d2h)})")
        if self.mode == "tiled":
            s += f", {self.tiles} tile(s) over {self.launches} launch(es) within --device-mem"
        rows = [f"{n} {mb(r['bytes_h2d'])}/{mb(r['bytes_d2h'])} of {mb(r['whole_h2d'])}/"
                f"{mb(r['whole_d2h'])}" for n, r in self.per_array.items()]
        if rows:
            s += "; per array, H2D/D2H moved of whole: " + ", ".join(rows)
        return s

    def as_dict(self) -> dict:
        return {"mode": self.mode, "bytes_h2d": self.bytes_h2d, "bytes_d2h": self.bytes_d2h,
                "whole_h2d": self.whole_h2d, "whole_d2h": self.whole_d2h,
                "tiles": self.tiles, "pack_s": self.pack_s, "unpack_s": self.unpack_s,
                "per_array": self.per_array, "buffers": self.buffers}


def kernel_param_arrays(program: kir.Program) -> list[str]:
    """Parameter arrays some kernel uses, in Program order."""
    used = {a for k in program.kernels.values() for a in k.arrays}
    return [n for n, d in program.arrays.items() if d.kind == "param" and n in used]


def written_param_arrays(program: kir.Program) -> set[str]:
    return {s.assign.target.array for k in program.kernels.values() for s in kir.walk(k.body)
            if isinstance(s, kir.Compute)
            and program.arrays.get(s.assign.target.array, None) is not None
            and program.arrays[s.assign.target.array].kind == "param"}


def declared_strides(decl: kir.ArrayDecl, ints: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(int(evaluate(e, ints)) for e in row_major_strides(decl.shape))


def temp_shape(decl: kir.ArrayDecl, ints: Mapping[str, int]) -> tuple[int, ...]:
    shape = tuple(int(evaluate(e, ints)) for e in decl.shape)
    return shape if shape else (1,)


def temps_nbytes(program: kir.Program, ints: Mapping[str, int]) -> int:
    return sum(prod(temp_shape(d, ints)) * np.dtype(DTYPES.get(d.ctype, "float64")).itemsize
               for d in program.arrays.values() if d.kind == "temp")


@dataclass
class Session:
    """The whole-run plan and the kernel variant that indexes its buffers."""
    plan: TransferPlan
    variant: kir.Program
    refs: list[Reference]
    ints: dict[str, int]             # size parameters + stride ints of the variant
    unused: list[str]                # kernel arrays without accesses at these sizes
    arrays: list[str]                # kernel parameter arrays


def session_references(program: kir.Program, scop: Scop | None, ints: Mapping[str, int],
                       shapes: Mapping[str, tuple[int, ...]]) -> list[Reference]:
    """Every access of the Scop at these sizes, plus covering boxes for arrays that
    statements outside the Scop (shared-memory copy code, register loads and stores)
    touch: the box of their references, or the whole array when none runs."""
    stmts = {s.name for s in scop.statements} if scop is not None else set()
    if scop is None:
        return whole_array_references(shapes, written_param_arrays(program))
    refs = scop_references(scop, ints)
    other = set()
    for k in program.kernels.values():
        for s in kir.walk(k.body):
            if isinstance(s, kir.Compute) and s.stmt not in stmts:
                for acc in accesses(s.assign.target) + accesses(s.assign.value):
                    if acc.array in shapes:
                        other.add(acc.array)
    # a kernel statement outside the Scop may touch an array whose statements do not
    # run at these sizes (a register's load and store around a loop that has no
    # iterations: fuzz finding 18): it gets the whole array, uploaded, not written back
    idle = sorted(n for n in other if not any(r.array == n for r in refs))
    return (refs + covering_references(refs, sorted(other))
            + whole_array_references({n: shapes[n] for n in idle}, ()))


def plan_session(program: kir.Program, scop: Scop | None, sources: Mapping[str, np.ndarray],
                 ints: Mapping[str, int]) -> Session:
    names = kernel_param_arrays(program)
    shapes = {n: tuple(sources[n].shape) for n in names}
    refs = [r for r in session_references(program, scop, ints, shapes) if r.array in shapes]
    plan = plan_transfers(refs, {n: HostArray.of(n, sources[n]) for n in names})
    unused = [n for n in names if n not in plan.layouts]
    param = [n for n in names if n in unused
             or plan.layouts[n].strides != declared_strides(program.arrays[n], ints)]
    variant = K.layout_program(program, param)
    full = dict(ints)
    for n in param:
        strides = plan.layouts[n].strides if n in plan.layouts else (0,) * len(shapes[n])
        for d, s in enumerate(strides):
            full[K.stride_var(n, d)] = int(s)
    return Session(plan, variant, refs, full, unused, names)


def layout_span(decl: kir.ArrayDecl, strides, ints: Mapping[str, int]) -> int:
    """Elements a kernel may address from an array's pointer: 1 + Σ (n_a-1)·s_a."""
    shape = [int(evaluate(e, ints)) for e in decl.shape]
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


# ---- tiled mode -------------------------------------------------------------------

def tiled_variant(program: kir.Program) -> kir.Program:
    """Every parameter array's strides as ints, and block offsets."""
    return K.offset_program(K.layout_program(program, kernel_param_arrays(program)))


def launch_plans(program: kir.Program, kernel: str, grid: tuple[int, int, int],
                 env: Mapping[str, int], sources: Mapping[str, np.ndarray],
                 budget: int | None) -> list[tuple[Tile, TransferPlan]]:
    """The tiles of one launch and their plans, each within ``budget`` bytes of
    buffers (None: one tile)."""
    k = program.kernels[kernel]
    names = [a for a in k.arrays if program.arrays[a].kind == "param"]
    host = {n: HostArray.of(n, sources[n]) for n in names}
    written = written_param_arrays(program)

    def plan_for(t: Tile) -> TransferPlan:
        refs = kernel_references(program, kernel, env, t.blocks(), dict(zip(kir.AXES, grid)))
        if refs is None:
            refs = whole_array_references({n: host[n].shape for n in names},
                                          [n for n in names if n in written])
        return plan_transfers(refs, host)

    cache: dict[Tile, TransferPlan] = {}

    def fits(t: Tile) -> bool:
        p = cache.get(t)
        if p is None:
            p = cache[t] = plan_for(t)
        return budget is None or p.bytes_h2d <= budget
    count = choose_tile(grid, fits) if budget is not None else grid
    out = []
    for t in tiles(grid, count):
        p = cache.get(t) or plan_for(t)
        out.append((t, p))
    return out


def tile_ints(variant: kir.Program, kernel: str, plan: TransferPlan, tile: Tile,
              grid: tuple[int, int, int], env: Mapping[str, int],
              shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
    """Ints of one tile's launch: the launch's ints, the layouts' strides (0 for
    arrays the tile does not touch), block offsets and the full grid."""
    out = dict(env)
    for n in variant.kernels[kernel].arrays:
        if variant.arrays[n].kind != "param":
            continue
        strides = plan.layouts[n].strides if n in plan.layouts else (0,) * len(shapes[n])
        for d, s in enumerate(strides):
            out[K.stride_var(n, d)] = int(s)
    for a, f, g in zip(kir.AXES, tile.first, grid):
        out[K.BLOCK_OFFSETS[a]] = int(f)
        out[K.GRID_FULL[a]] = int(g)
    for a, c in zip(kir.AXES, tile.count):
        out[K.GRID_VARS[a]] = int(c)
    return out


__all__ = ["TransferStats", "Session", "plan_session", "tiled_variant", "launch_plans",
           "tile_ints", "kernel_param_arrays", "written_param_arrays", "temps_nbytes",
           "temp_shape", "layout_span"]
