"""The first line of a report: what the mapping made of the function, in words.

The compiler's own summary (``Compiled.summary``, also the comment above each
kernel in the CUDA) is exact but reads like isl ("host loops: floor((t)/4) +
floor((1 + 2t + i)/16) + …").  This one is built from the mapping's typed fields
(:class:`polymagic.mapping.KernelPlan`'s members, per-thread points, sub-tiles,
time tiles; the kernel's shared buffers and registers): "gemm: 1 kernel: i, j in
128×128 tiles, one per thread block of 16×16 threads, 8×8 points per thread;
sub-tiled: k (sub-tile 16); shared memory: sh0_A[128][16], sh0_B[16][128]; C in registers".
Kernels the mapping describes in its own words (one thread, the superposition,
one block running the time loop) keep that text.  The terms are the glossary's
(:mod:`.glossary`).
"""
from __future__ import annotations

from .. import kir
from ..compiler import Compiled
from ..mapping import KernelPlan
from ..names import generated


def _times(sizes) -> str:
    return "×".join(str(s) for s in sizes)


def _members(plan: KernelPlan, block: tuple[int, int, int]) -> str:
    loops = ", ".join(m.loop for m in plan.members)
    tiles = _times(m.tile for m in plan.members)
    threads = _times(m.threads for m in plan.members)
    text = (f"{loops} in {tiles} tiles, one per thread block of {threads} threads"
            if len(plan.members) > 1 else
            f"{loops} in tiles of {tiles}, one per thread block of {threads} threads")
    if any(p > 1 for p in plan.per_thread):
        text += f", {_times(plan.per_thread)} points per thread"
    return text


def _time_tiles(plan: KernelPlan, block: tuple[int, int, int]) -> str:
    steps, *points = plan.time_tile
    threads = _times(b for b in block if b > 1) or "1"
    return (f"time tiles of {steps} steps × {_times(points)} points, one thread block of "
            f"{threads} threads each, one launch per wavefront of tiles")


def _storage(kernel: kir.Kernel) -> list[str]:
    parts = []
    if kernel.shared:
        parts.append("shared memory: " + ", ".join(
            f"{d.name}{''.join(f'[{s}]' for s in d.shape)}" for d in kernel.shared))
    arrays = [r.array for r in kernel.registers if r.array]
    if arrays:
        parts.append(", ".join(dict.fromkeys(arrays)) + " in registers")
    return parts


def kernel_words(compiled: Compiled, name: str, kernel: kir.Kernel) -> str:
    """One kernel in words (its plan's typed fields), or its own summary."""
    plan = compiled.mapping.plans.get(generated(name)) \
        if name.startswith("kernel") else None
    if plan is not None and plan.time_tile:
        parts = [_time_tiles(plan, kernel.block)]
    elif plan is not None and plan.members and not plan.text:
        parts = [_members(plan, kernel.block)]
        if plan.sub_tiles:
            parts.append(f"sub-tiled: {', '.join(plan.sub_tiles)}")
    elif plan is not None and plan.text:
        parts = [plan.text]          # the mapping's own words, without the grid's formula
    else:
        text = kernel.summary.split("]: ", 1)[-1] if kernel.summary else ""
        return f"{name}: {text}" if text else name
    return f"{name}: " + "; ".join(parts + _storage(kernel))


def summary_words(compiled: Compiled) -> str:
    """The function's mapping in one line of words."""
    program = compiled.program
    kernels = program.kernels
    time_tiled = any(p.time_tile for p in compiled.mapping.plans.values())
    head = f"{len(kernels)} kernel{'s' if len(kernels) != 1 else ''}"
    host = compiled.mapping.host_loops
    if host and not time_tiled:
        head += (f", launched once per iteration of the host loop{'s' if len(host) > 1 else ''}"
                 f" {', '.join(host)}")
    body = " | ".join(kernel_words(compiled, n, k) for n, k in kernels.items())
    name = compiled.scop.name
    return f"{name}: {head}: {body}" if name else f"{head}: {body}"


__all__ = ["summary_words", "kernel_words"]
