"""The option space the fuzzer draws from: one table, one row per option.

A case's options are command-line arguments (``["--tile", "5,7", ...]``), parsed
by ``polymagic.options.parse_options`` exactly as the CLI and the magic parse
them, so a saved reproducer is also a shell command.  To fuzz a new option, add
a :class:`Dimension` row: ``draw`` returns a value or ``None`` (the default,
no argument), ``args`` turns a value into arguments.  ``code`` says whether the
option changes the generated code (then each value is a new compile; the
runner batches the cheap run-time options over one compile).  Rows with
``active=False`` are options that parse but have no effect yet; flip them on
when their stage lands.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Dimension:
    """One fuzzed option."""
    name: str
    draw: Callable[[random.Random], object]
    args: Callable[[object], list[str]]
    code: bool                    # changes the generated code (part of CompileOptions, the compile cache key)
    active: bool = True


def _sizes_list(vals) -> str:
    return ",".join(str(v) for v in vals)


def draw_tile(rng: random.Random):
    """None (default tiles), "auto" (the tile search), or 1-3 sizes in 1..40,
    odd sizes and 1 included."""
    r = rng.random()
    if r < 0.2:
        return None
    if r < 0.3:
        return "auto"
    pick = lambda: rng.choice((1, 2, 3, 4, 5, 7, 8, 16, 32)) if rng.random() < 0.6 \
        else rng.randint(1, 40)
    return tuple(pick() for _ in range(rng.randint(1, 3)))


def draw_time_tiling(rng: random.Random):
    """None (the host time loop) mostly, else T time steps and 1-2 spatial sizes."""
    if rng.random() >= 0.12:
        return None
    return (rng.randint(1, 6),) + tuple(rng.randint(2, 40) for _ in range(rng.randint(1, 2)))


def draw_block(rng: random.Random):
    """None or 1-3 thread counts (x, y, z) with at most 1024 threads in all."""
    if rng.random() < 0.45:
        return None
    vals = [rng.choice((1, 2, 3, 4, 5, 8, 13, 16, 32, 64)) for _ in range(rng.randint(1, 3))]
    while vals[0] * (vals[1] if len(vals) > 1 else 1) * (vals[2] if len(vals) > 2 else 1) > 1024:
        vals[vals.index(max(vals))] //= 2
    return tuple(vals)


def draw_tile_levels(rng: random.Random):
    """Multi-level tiling: a block tile and the points per thread (divides it)."""
    if rng.random() < 0.7:
        return None
    outer = tuple(rng.choice((8, 16, 32)) for _ in range(2))
    return outer, tuple(max(1, t // rng.choice((2, 4))) for t in outer)


OPTION_SPACE: tuple[Dimension, ...] = (
    Dimension("tile", draw_tile,
              lambda v: ["--tile", v if isinstance(v, str) else _sizes_list(v)], code=True),
    Dimension("block", draw_block, lambda v: ["--block", _sizes_list(v)], code=True),
    Dimension("target", lambda r: r.choice(("emulator", "emulator", "emulator", "openmp")),
              lambda v: ["--target", v], code=False),
    Dimension("emu_order", lambda r: r.choice(("shuffle", "shuffle", "reverse", "forward")),
              lambda v: ["--emu-order", v], code=False),
    Dimension("seed", lambda r: r.randrange(1000), lambda v: ["--seed", str(v)], code=False),
    Dimension("shared", lambda r: r.choice((None, None, "all", "none")),
              lambda v: ["--shared", v], code=True),
    Dimension("shared_mem", lambda r: r.choice((None, None, None, "512B", "2KB", "16KB")),
              lambda v: ["--shared-mem", v], code=True),
    Dimension("delta", lambda r: r.choice((None, None, None, 0.0, 0.1, 1.0)),
              lambda v: ["--delta", str(v)], code=True),
    Dimension("device_mem", lambda r: r.choice((None,) * 5 + ("2KB", "16KB", "256KB")),
              lambda v: ["--device-mem", v], code=True),
    # the same program through the Python front end (runner.program_source renders it)
    Dimension("python", lambda r: True if r.random() < 0.2 else None,
              lambda v: ["--python"], code=True),
    # block tile and points per thread (seed 000 §4.1); it replaces the tile and block
    # rows (both are --tile; a --block must agree with it, see draw)
    Dimension("tile_levels", draw_tile_levels,
              lambda v: ["--tile", ":".join(_sizes_list(t) for t in v)], code=True),
    Dimension("registers", lambda r: r.choice((None, None, None, False)),
              lambda v: ["--no-registers"], code=True),
    # seed 001 localisation along one of the program's loops: ``@k`` names the k-th
    # loop iterator of the rendered source (runner.program_source picks it)
    Dimension("localise", lambda r: r.randrange(1000) if r.random() < 0.15 else None,
              lambda v: ["--localise", f"@{v}"], code=True),
    # 16-byte chunk copies (seed 002 §3.4, on by default): element copies only
    Dimension("vector", lambda r: r.choice((None, None, False)),
              lambda v: ["--no-vector"], code=True),
    # time-skewed tiles (issue 5) of whatever permutable band isl finds: T steps,
    # then the skewed loops' sizes (the tiles' footprint copied into shared memory)
    Dimension("time_tiling", draw_time_tiling,
              lambda v: ["--time-tiling", _sizes_list(v)], code=True),
)


def _without(args: list[str], flags: tuple[str, ...]) -> list[str]:
    """``args`` without the given flags and their values."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in flags:
            skip = True
        else:
            out.append(a)
    return out


def draw(rng: random.Random, code: bool) -> list[str]:
    """Arguments for the active dimensions that do (``code``) or do not change
    the generated code."""
    out: list[str] = []
    for dim in OPTION_SPACE:
        if dim.active and dim.code == code:
            value = dim.draw(rng)
            if value is not None:
                if dim.name == "tile_levels":      # the threads follow from the levels
                    out = _without(out, ("--tile", "--block"))
                out += dim.args(value)
    return out


def draw_openmp(rng: random.Random, code: bool) -> list[str]:
    """An OpenMP campaign's arguments (``benchmarks/fuzz.py --target openmp``, issue
    32): the CPU printer reads no GPU option, so the code-changing draws are the
    front end, the tile model's cache sizes (tiny ones make many partial tiles) and
    the fork threshold (mostly 0: every parallel loop forks), the run-time draws the
    target and a seed for the inputs."""
    if not code:
        return ["--target", "openmp", "--seed", str(rng.randrange(1000))]
    out = ["--python"] if rng.random() < 0.2 else []
    cache = rng.choice((None, None, "1KB,4KB", "2KB,16KB", "4KB,64KB"))
    # the fuzzer's sizes are small: without --cpu-min-work 0 the cost model runs
    # every loop serially and the parallel code would go untested
    work = rng.choice(("0", "0", "0", None))
    return (out + (["--cpu-cache", cache] if cache else [])
            + (["--cpu-min-work", work] if work else []))


def defaults() -> list[str]:
    """The simplest run options (what shrinking tries first)."""
    return ["--target", "emulator", "--emu-order", "forward"]
