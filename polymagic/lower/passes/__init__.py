"""Kernel-IR passes: one module per pass, run in one ordered list (issue 33).

The lowering (:mod:`polymagic.lower.lowerer`) turns isl's AST of one kernel into a
Kernel-IR body; the passes below then rewrite it, in this order, as Halide's
``lower_impl`` runs its passes and TVM's ``tir/transforms`` keeps one file per pass:

==========================  =======================================================
``promote_registers``       planned arrays in per-thread registers (seed 004 §4.2)
``reduction_accumulators``  tree reductions' accumulators and buffers (seed 003 §5.3)
``partner_loads``           one load of an element fused reductions share (seed 003 §5.3)
``redundant_loads``         one load of an element a statement reads twice (seed 004 §4.2)
``unroll``                  ``#pragma unroll`` marks (seed 004 §4.3)
``block_guard``             the guards of the block's instances around the body
``copy_split``              lane and group values of 16-byte copies (seed 002 §3.4)
==========================  =======================================================

Each pass is a function ``(KernelIR, PassContext) -> KernelIR`` over frozen values;
:func:`run_passes` runs :data:`PASSES` and logs each step (:class:`PassLog`: time,
what changed, the body after it), which ``--show passes`` prints.
"""
from __future__ import annotations

import time

from .context import KernelIR, PassContext, PassLog
from . import (block_guard, copy_split, partner_loads, promote_registers, redundant_loads,
               reduction_accumulators, unroll)

#: the passes, in the order they run: (name, function)
PASSES = (
    ("promote_registers", promote_registers.run),
    ("reduction_accumulators", reduction_accumulators.run),
    ("partner_loads", partner_loads.run),
    ("redundant_loads", redundant_loads.run),
    ("unroll", unroll.run),
    ("block_guard", block_guard.run),
    ("copy_split", copy_split.run),
)


def run_passes(ir: KernelIR, ctx: PassContext) -> tuple[KernelIR, tuple[PassLog, ...]]:
    """``ir`` after every pass of :data:`PASSES`, and a log line per pass."""
    logs = []
    for name, fn in PASSES:
        t0 = time.perf_counter()
        out = fn(ir, ctx)
        logs.append(PassLog(ctx.kernel, name, time.perf_counter() - t0, ir.change(out),
                            tuple(out.body), out.registers))
        ir = out
    return ir, tuple(logs)


__all__ = ["KernelIR", "PassContext", "PassLog", "PASSES", "run_passes"]
