"""Pass: the lane and group values of 16-byte copies, from the thread ids (seed 002 §3.4).

A buffer copied in ``float4``/``double2`` chunks splits the block's threads into
groups of lanes (:data:`polymagic.kir.COPY_GROUP`); the body starts with the values
of the split variables it uses (:func:`polymagic.lower.kernel_passes.copy_split_values`).
"""
from __future__ import annotations

from dataclasses import replace

from ..kernel_passes import copy_split_values
from .context import KernelIR, PassContext


def run(ir: KernelIR, ctx: PassContext) -> KernelIR:
    return replace(ir, body=tuple(copy_split_values(list(ir.body), ctx.block)))
