"""Pass: each tree reduction's accumulator register and tree buffer (seed 003 §5.3).

A reduction mapped to threads accumulates its partial sum in a register and
combines the threads' sums through a shared buffer of one element per thread of
the block; both are declared for the reductions whose accumulator the body uses.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ... import kir
from ..kernel_passes import accessed_arrays
from ..reductions import TreeBuffer
from .context import KernelIR, PassContext


def run(ir: KernelIR, ctx: PassContext) -> KernelIR:
    accessed = accessed_arrays(list(ir.body))
    registers, buffers = list(ir.registers), dict(ir.buffers)
    threads = math.prod(ctx.block)
    for red in {r.stmt: r for r in ctx.reductions.values() if r.acc in accessed}.values():
        ctype = ctx.reduction_ctypes[red.stmt]
        registers.append(kir.RegisterDecl(red.acc, ctype))
        buffers.setdefault(red.buf, TreeBuffer(red.buf, ctype, (threads,)))
    return replace(ir, registers=tuple(registers), buffers=buffers)
