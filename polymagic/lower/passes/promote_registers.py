"""Pass: the planned arrays kept in per-thread registers (seed 004 §4.2).

The register plans of the kernel's memory plan (:mod:`polymagic.memory.registers`)
become register declarations, loads before and stores after the sequential loops
that reuse them; what became of each plan travels out in ``KernelIR.outcomes``
(the report's decision line for it).
"""
from __future__ import annotations

from dataclasses import replace

from ..kernel_passes import promote_plan_registers
from .context import KernelIR, PassContext


def run(ir: KernelIR, ctx: PassContext) -> KernelIR:
    body, decls, made = promote_plan_registers(ctx.plan, list(ir.body),
                                               list(ir.buffers.values()))
    return replace(ir, body=tuple(body), registers=ir.registers + tuple(decls),
                   outcomes={**ir.outcomes, **made})
