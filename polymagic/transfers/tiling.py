"""Tiling launches whose data exceed the device memory (seed 002 §4.4).

"When the data to be transferred ... does not fit on the GPU memory resource, the
compiler must attempt to tile the loop.  The compiler only tiles parallel loops
because such tiling is always legal" (§4.4).  A kernel's parallel loops are its
block-mapped loops, and blocks of one launch are independent (the emulator checks
that no two blocks race), so a tile here is a box of the launch's blocks: it runs
as a launch of a sub-grid with block offsets (:func:`kernels.offset_program`),
with its own transfers, tiles one after the other.

What a tile touches comes from the kernel itself, by interval arithmetic over its
KIR body (:func:`kernel_references`): block ids range over the tile, thread ids
over the block, loop variables over their bounds, and every global access gives a
box (a sound superset; conditions are ignored).  Beyond the paper, which halves
every parallel loop until the data fit (2^m tiles per step, at most 64 tiles),
:func:`choose_tile` sizes tiles from the data spaces: per grid axis, outermost
first, the largest number of blocks whose planned buffers fit, by binary search.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil, floor
from typing import Callable, Mapping

from .. import kir
from ..errors import DeviceError
from ..expr import (Access, Binary, Call, Cast, Cond, Expr, Float, Int, Unary, Var,
                    accesses)
from .plan import Box, Reference

INF = float("inf")
MAX_TILES = 4096

Interval = tuple[float, float]


class NotAnalysable(Exception):
    pass


def _iv(e: Expr, env: Mapping[str, Interval]) -> Interval:
    """Interval of an integer expression (sound: contains every value)."""
    if isinstance(e, Int):
        return (e.value, e.value)
    if isinstance(e, Var):
        try:
            return env[e.name]
        except KeyError:
            raise NotAnalysable(e.name) from None
    if isinstance(e, Cast):
        return _iv(e.a, env)
    if isinstance(e, Unary):
        lo, hi = _iv(e.a, env)
        if e.op == "-":
            return (-hi, -lo)
        if e.op == "+":
            return (lo, hi)
        if e.op == "!":
            return (0, 1)
        raise NotAnalysable(e.op)
    if isinstance(e, Cond):
        a, b = _iv(e.a, env), _iv(e.b, env)
        return (min(a[0], b[0]), max(a[1], b[1]))
    if isinstance(e, Binary):
        if e.op in ("<", "<=", ">", ">=", "==", "!=", "&&", "||"):
            return (0, 1)
        a, b = _iv(e.a, env), _iv(e.b, env)
        if e.op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if e.op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if e.op == "*":
            c = [_mul(x, y) for x in a for y in b]
            return (min(c), max(c))
        if e.op in ("/", "%") and b[0] == b[1] and b[0] > 0:
            d = b[0]
            if e.op == "/":
                return (_tdiv(a[0], d), _tdiv(a[1], d))
            return (0, d - 1) if a[0] >= 0 else (-(d - 1), d - 1)
        raise NotAnalysable(e.op)
    if isinstance(e, Call):
        args = [_iv(x, env) for x in e.args]
        if e.func == "min":
            return (min(x[0] for x in args), min(x[1] for x in args))
        if e.func == "max":
            return (max(x[0] for x in args), max(x[1] for x in args))
        if e.func == "floord" and args[1][0] == args[1][1] and args[1][0] > 0:
            d = args[1][0]
            return (_fdiv(args[0][0], d), _fdiv(args[0][1], d))
        if e.func == "pm_mod" and args[1][0] == args[1][1] and args[1][0] > 0:
            return (0, args[1][0] - 1)
        raise NotAnalysable(e.func)
    if isinstance(e, Float):
        raise NotAnalysable("float")
    raise NotAnalysable(type(e).__name__)


def _mul(x: float, y: float) -> float:
    if x == 0 or y == 0:
        return 0
    return x * y


def _tdiv(a: float, d: int) -> float:
    if a in (INF, -INF):
        return a
    q = abs(a) // d
    return q if a >= 0 else -q


def _fdiv(a: float, d: int) -> float:
    if a in (INF, -INF):
        return a
    return floor(a / d) if isinstance(a, float) else a // d


def kernel_references(program: kir.Program, kernel: str, ints: Mapping[str, int],
                      blocks: Mapping[str, tuple[int, int]],
                      grid: Mapping[str, int]) -> list[Reference] | None:
    """Boxes of the global accesses of ``kernel`` when it runs blocks
    ``blocks[axis] = (first, last)`` of a ``grid`` with ``ints`` (size parameters and
    host loop variables) fixed.  None when an expression is out of reach of the
    interval arithmetic (the caller then uses whole arrays)."""
    k = program.kernels[kernel]
    env: dict[str, Interval] = {n: (v, v) for n, v in ints.items()}
    for a, (lo, hi) in blocks.items():
        env[kir.BLOCK_IDS[a]] = (lo, hi)
        env[kir.GRID_DIMS[a]] = (grid[a], grid[a])
    for i, a in enumerate(kir.AXES):
        env[kir.THREAD_IDS[a]] = (0, k.block[i] - 1)
        env[kir.BLOCK_DIMS[a]] = (k.block[i], k.block[i])
        env.setdefault(kir.BLOCK_IDS[a], (0, 0))
        env.setdefault(kir.GRID_DIMS[a], (1, 1))
    shared = {s.name for s in k.shared}
    out: list[Reference] = []

    def visit(body: list[kir.Stmt], env: dict[str, Interval]) -> None:
        for s in body:
            if isinstance(s, kir.Loop):
                lo, hi = _iv(s.lower, env)[0], _iv(s.upper, env)[1]
                if lo > hi:
                    continue
                visit(s.body, {**env, s.var: (lo, hi)})
            elif isinstance(s, kir.If):
                visit(s.then, env)
                visit(s.orelse, env)
            elif isinstance(s, kir.Let):
                env = {**env, s.var: _iv(s.value, env)}
            elif isinstance(s, kir.Compute):
                a = s.assign
                seen = [(a.target, True)] + [(x, False) for x in accesses(a.value)]
                seen += [(x, False) for x in _accesses_index(a.target)]
                if a.op != "=":
                    seen.append((a.target, False))
                for acc, w in seen:
                    if acc.array in shared or acc.array not in program.arrays:
                        continue
                    if program.arrays[acc.array].kind != "param":
                        continue
                    ivs = [_iv(i, env) for i in acc.index]
                    if isinstance(s, kir.VectorCopy) and ivs:     # width elements on
                        ivs[-1] = (ivs[-1][0], ivs[-1][1] + s.width - 1)
                    if any(lo in (INF, -INF) or hi in (INF, -INF) for lo, hi in ivs):
                        raise NotAnalysable(acc.array)
                    out.append(Reference(acc.array, Box(tuple(int(ceil(lo)) for lo, _ in ivs),
                                                        tuple(int(floor(hi)) for _, hi in ivs)),
                                         w, s.stmt))
    try:
        visit(k.body, env)
    except NotAnalysable:
        return None
    return out


def _accesses_index(target: Access) -> list[Access]:
    out = []
    for i in target.index:
        out += accesses(i)
    return out


@dataclass(frozen=True)
class Tile:
    """Blocks ``first[a] .. first[a] + count[a] - 1`` of each grid axis."""
    first: tuple[int, int, int]
    count: tuple[int, int, int]

    def blocks(self) -> dict[str, tuple[int, int]]:
        return {a: (f, f + c - 1) for a, f, c in zip(kir.AXES, self.first, self.count)}


def choose_tile(grid: tuple[int, int, int], fits: Callable[[Tile], bool]) -> tuple[int, int, int]:
    """Blocks per tile along (x, y, z): the whole grid when it fits, else, axis by
    axis from the outermost (z, y, x), the largest count whose tile fits (binary
    search; the data of a tile grow with its block counts).  DeviceError when not
    even one block fits."""
    count = list(grid)
    if fits(Tile((0, 0, 0), tuple(count))):
        return tuple(count)
    for ax in (2, 1, 0):
        if grid[ax] <= 1:
            continue
        lo, hi = 1, grid[ax]       # largest n in [lo, hi] with fits; lo may not fit either
        while lo < hi:
            mid = (lo + hi + 1) // 2
            c = list(count)
            c[ax] = mid
            if fits(Tile((0, 0, 0), tuple(c))):
                lo = mid
            else:
                hi = mid - 1
        count[ax] = lo
        if fits(Tile((0, 0, 0), tuple(count))):
            return tuple(count)
    if not fits(Tile((0, 0, 0), tuple(count))):
        raise DeviceError("--device-mem is too small: the data of a single thread block "
                          "of a launch do not fit")
    return tuple(count)


def tiles(grid: tuple[int, int, int], count: tuple[int, int, int]) -> list[Tile]:
    """The tiles covering ``grid`` with ``count`` blocks each (smaller at the edges)."""
    n = 1
    for g, c in zip(grid, count):
        n *= -(-g // c)
    if n > MAX_TILES:
        raise DeviceError(f"--device-mem is too small: a launch would need {n} tiles "
                          f"(at most {MAX_TILES})")
    out = []
    for z in range(0, grid[2], count[2]):
        for y in range(0, grid[1], count[1]):
            for x in range(0, grid[0], count[0]):
                first = (x, y, z)
                out.append(Tile(first, tuple(min(c, g - f) for c, g, f in zip(count, grid, first))))
    return out


__all__ = ["kernel_references", "choose_tile", "tiles", "Tile", "MAX_TILES"]
