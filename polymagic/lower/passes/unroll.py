"""Pass: ``#pragma unroll`` marks (seed 004 §4.3).

Innermost loops with a small constant trip count and no barrier, and a constant
loop around register-tile loops already marked (a full tile's k sub-tile loop), up
to a bound on the unrolled instances (:func:`polymagic.lower.kernel_passes.mark_unroll`).
"""
from __future__ import annotations

from dataclasses import replace

from ..kernel_passes import mark_unroll
from .context import KernelIR, PassContext


def run(ir: KernelIR, ctx: PassContext) -> KernelIR:
    return replace(ir, body=tuple(mark_unroll(list(ir.body))))
