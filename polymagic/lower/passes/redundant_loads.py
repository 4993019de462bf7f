"""Pass: one load of a global element a statement reads several times (seed 004 §4.2).

A statement reads every value before it writes its target, so a repeated read of
one element is loaded once into a register just before the statement
(:func:`polymagic.memory.registers.eliminate_redundant_loads`).
"""
from __future__ import annotations

from dataclasses import replace

from ...memory.registers import eliminate_redundant_loads
from .context import KernelIR, PassContext


def run(ir: KernelIR, ctx: PassContext) -> KernelIR:
    body, loads = eliminate_redundant_loads(list(ir.body), dict(ctx.ctypes))
    return replace(ir, body=tuple(body), registers=ir.registers + tuple(loads))
