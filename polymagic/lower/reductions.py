"""Thread-level tree reductions in the Kernel IR (seed 003 §5.3).

A reduction loop mapped to threads (:class:`polymagic.mapping.TreeReduction`)
accumulates into a register per thread (``pm_rini_S``); ``pm_rfin_S`` combines the
block's registers in a shared buffer by halving steps, then thread 0 combines the
result with the global element.
"""
from __future__ import annotations

from typing import Callable

from .. import kir
from ..expr import Access, Assign, Binary, Call, Expr, Int, accesses, map_expr, \
    substitute_assign
from ..mapping import TreeReduction
from ..scop import Scop
from ..thread_space import linear_thread_id_rows


class TreeBuffer:
    """The shared buffer of a tree reduction (one element per thread of the block)."""

    def __init__(self, name: str, ctype: str, extents: tuple[int, ...]):
        self.name, self.ctype, self.extents = name, ctype, extents


def tree_reduction(name: str, args: list[Expr], reductions: dict[str, TreeReduction],
                   scop: Scop, barrier: Callable[[], kir.Barrier]) -> kir.Stmt:
    """``pm_rini_S``: ``acc = identity``; ``pm_rfin_S``: the block's tree reduction
    of the registers in shared memory, then thread 0 combines with the global
    element (see :class:`mapping.TreeReduction`).  With partners (reductions
    fused in one pass), one tree pass combines every register: one barrier per
    halving step for all of them (``barrier`` makes each barrier)."""
    red = reductions[name]
    reds = [red] + [reductions[f"pm_rini_{p}"] for p in red.partners]
    targets = []
    for r in reds:
        stmt = scop.statement(r.stmt)
        targets.append(substitute_assign(stmt.body, dict(zip(stmt.iterators, args))).target)
    acc = Access(red.acc, ())

    def combine(r, a: Expr, b: Expr) -> Expr:
        return Binary(r.op, a, b) if r.op in ("+", "*") else Call(r.op, (a, b))
    if name.startswith("pm_rini_"):
        # max/min are idempotent: the element itself is an identity for them
        init = {"+": Int(0), "*": Int(1)}.get(red.op, targets[0])
        return kir.Compute(name, Assign(acc, "=", init))
    bx, by, bz = red.block
    lin = linear_thread_id_rows(red.block)
    n = bx * by * bz
    out: list[kir.Stmt] = [kir.Compute(name, Assign(Access(r.buf, (lin,)), "=",
                                                    Access(r.acc, ())))
                           for r in reds]
    out.append(barrier())
    while n > 1:
        h = (n + 1) // 2
        step = []
        for r in reds:
            mine, other = Access(r.buf, (lin,)), Access(r.buf, (Binary("+", lin, Int(h)),))
            step.append(kir.Compute(name, Assign(mine, "=", combine(r, mine, other))))
        out.append(kir.If(Binary("<", lin, Int(n - h)), step))
        out.append(barrier())
        n = h
    out.append(kir.If(Binary("==", lin, Int(0)),
                      [kir.Compute(name, Assign(t, "=", combine(r, t, Access(r.buf, (Int(0),)))))
                       for r, t in zip(reds, targets)]))
    return kir.If(Int(1), out)


def share_partner_loads(body: list[kir.Stmt], registers: list[kir.RegisterDecl],
                        reductions: dict[str, TreeReduction], ctypes: dict[str, str]
                        ) -> list[kir.Stmt]:
    """Tree reductions fused in one pass (:class:`mapping.TreeReduction` partners)
    accumulate into registers, so in their loop body a global element that several
    of them read is loaded once into a register before them (gesummv's ``x[j]``):
    nothing in that body writes global memory.  ``ctypes``: the arrays' element
    types; the new registers are appended to ``registers``."""
    groups = [{r.stmt, *r.partners} for r in reductions.values()
              if r.lead and r.partners]
    if not groups:
        return body

    def visit(stmts: list[kir.Stmt]) -> list[kir.Stmt]:
        out: list[kir.Stmt] = []
        for st in stmts:
            if isinstance(st, kir.Loop):
                st = kir.Loop(st.var, st.lower, st.upper, st.step, share(visit(st.body)),
                              st.unroll)
            elif isinstance(st, kir.If):
                st = kir.If(st.cond, visit(st.then), visit(st.orelse))
            out.append(st)
        return out

    def share(stmts: list[kir.Stmt]) -> list[kir.Stmt]:
        computes = [c for c in stmts if isinstance(c, kir.Compute)]
        if len(computes) != len(stmts) or not any(
                len({c.stmt for c in computes} & g) > 1 for g in groups) or \
                any(c.assign.target.array in ctypes for c in computes):
            return stmts
        seen: dict[Access, int] = {}
        for c in computes:
            for a in set(accesses(c.assign.value)):
                if a.array in ctypes:
                    seen[a] = seen.get(a, 0) + 1
        repl: dict[Access, Access] = {}
        loads: list[kir.Stmt] = []
        for a, n in seen.items():
            if n > 1:
                reg = kir.RegisterDecl(f"pm_s{len(registers)}_{a.array}", ctypes[a.array])
                registers.append(reg)
                repl[a] = Access(reg.name, ())
                loads.append(kir.Compute(f"pm_load_{reg.name}", Assign(repl[a], "=", a)))
        if not repl:
            return stmts
        sub = lambda e: repl.get(e) if isinstance(e, Access) else None  # noqa: E731
        return loads + [kir.Compute(c.stmt, Assign(c.assign.target, c.assign.op,
                                                   map_expr(c.assign.value, sub)))
                        for c in computes]
    return visit(body)
