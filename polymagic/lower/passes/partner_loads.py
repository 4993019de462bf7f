"""Pass: one load of an element that fused tree reductions share (seed 003 §5.3).

Reductions fused in one pass (:class:`polymagic.mapping.TreeReduction` partners)
read some global elements in common (gesummv's ``x[j]``); each is loaded into a
register once before them (:func:`polymagic.lower.reductions.share_partner_loads`).
"""
from __future__ import annotations

from dataclasses import replace

from ..reductions import share_partner_loads
from .context import KernelIR, PassContext


def run(ir: KernelIR, ctx: PassContext) -> KernelIR:
    registers = list(ir.registers)
    body = share_partner_loads(list(ir.body), registers, dict(ctx.reductions),
                               dict(ctx.ctypes))
    return replace(ir, body=tuple(body), registers=tuple(registers))
