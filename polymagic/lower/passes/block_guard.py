"""Pass: the block's instances' host conditions around the kernel body.

The lowering collects, for each kernel, the conditions of the host code under which
its instances run (a triangular nest's ``n >= bx + 1``); the body runs under their
conjunction, less those the block's dimensions make true (``threadIdx.x < 32`` in a
block of 32 threads, ``threadIdx.y == 0`` in a block one thread high).
"""
from __future__ import annotations

from dataclasses import replace

from ... import kir
from ...expr import Binary, Expr, Int, Var
from .context import KernelIR, PassContext


def conjoin(es: list[Expr]) -> Expr:
    """``es[0] && es[1] && ...``"""
    out = es[0]
    for e in es[1:]:
        out = Binary("&&", out, e)
    return out


def implied_by_block(c: Expr, block: tuple[int, int, int]) -> bool:
    """``pm_tx <= c`` with c ≥ blockDim.x - 1, or ``pm_tx >= 0``: always true."""
    if isinstance(c, Binary) and isinstance(c.a, Var) and isinstance(c.b, Int):
        ids = {v: block["xyz".index(a)] for a, v in kir.THREAD_IDS.items()}
        if c.a.name in ids and c.op == "<=" and c.b.value >= ids[c.a.name] - 1:
            return True
        if c.a.name in kir.MAPPED_IDS and c.op == ">=" and c.b.value <= 0:
            return True
        if c.a.name in ids and c.op == "==" and c.b.value == 0 and ids[c.a.name] == 1:
            return True
    return False


def run(ir: KernelIR, ctx: PassContext) -> KernelIR:
    guard = [c for c in ctx.guards if not implied_by_block(c, ctx.block)]
    if not guard:
        return ir
    return replace(ir, body=(kir.If(conjoin(guard), list(ir.body)),))
