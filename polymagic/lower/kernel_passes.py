"""Passes over one kernel's lowered body, and its summary line.

Register promotion of the planned arrays (seed 004 §4.2), ``#pragma unroll`` marks
(seed 004 §4.3), the lane and group values of 16-byte copies (seed 002 §3.4).
"""
from __future__ import annotations

from dataclasses import replace

from .. import kir
from ..expr import Access, Int, Var
from ..expr import walk as walk_expr
from ..mapping import KernelPlan
from ..memory.registers import RegisterOutcome, RegisterPlan, promote_registers


def promote_plan_registers(plan: KernelPlan, body: list[kir.Stmt], buffers: list
                           ) -> tuple[list[kir.Stmt], list[kir.RegisterDecl],
                                      dict[str, RegisterOutcome]]:
    """Seed 004 §4.2: the planned arrays (or their shared buffers) kept in
    per-thread registers across the sequential loops; returns the body, the
    registers and what became of each planned array (its plan's decision line,
    :func:`.memory.registers.decision_line`).  ``buffers``: the shared buffers the
    kernel uses."""
    mem = plan.memory
    if mem is None or not mem.registers:
        return body, [], {}
    accessed = accessed_arrays(body)
    targets: dict[str, str] = {}
    owner: dict[str, RegisterPlan] = {}
    for r in mem.registers:
        for n in [r.array] + [b.name for b in buffers
                              if getattr(b, "array", None) == r.array]:
            if n in accessed:
                targets[n], owner[n] = r.ctype, r
    members = [(mm.axis, mm.tile, mm.threads) for mm in plan.members
               if getattr(plan, "member_points", True)]
    private = frozenset(n for n in targets if owner[n].private)
    body, decls, result = promote_registers(body, targets, members, private,
                                            pieces=plan.full_tiles)
    made = {r.array: RegisterOutcome() for r in mem.registers}
    for n, (regs, skipped, once) in result.items():
        made[owner[n].array] += RegisterOutcome(tuple(regs), tuple(skipped))
        if n == owner[n].array:
            for d in decls:
                if d.name.endswith("_" + n) and d.name.startswith("pm_r"):
                    d.array, d.once_per_point = n, once
    return body, decls, made


#: Most iterations of an inner loop with constant bounds that get ``#pragma unroll``.
UNROLL_MAX = 32
#: Most statement instances of a loop nest unrolled whole around a register tile
#: (the k sub-tile loop of a full tile: 16 steps of an 8 x 8 outer product)
UNROLL_NEST_MAX = 1024


def _trips(s: kir.Loop) -> int:
    """The loop's constant trip count, 0 when its bounds are not constants."""
    if isinstance(s.lower, Int) and isinstance(s.upper, Int) and isinstance(s.step, int) \
            and s.step > 0:
        return max(0, (s.upper.value - s.lower.value) // s.step + 1)
    return 0


def _unrolled_nest(body: list[kir.Stmt]) -> int:
    """Statements (lets aside) of one pass over ``body`` when each loop inside is
    unrolled (marked) and no barrier lies inside; 0 otherwise."""
    n = 0
    for s in body:
        if isinstance(s, kir.Barrier) or isinstance(s, kir.Loop) and not s.unroll:
            return 0
        if isinstance(s, kir.Loop):
            inner = _unrolled_nest(s.body)
            if not inner or not _trips(s):
                return 0
            n += _trips(s) * inner
        elif isinstance(s, kir.If):
            a, b = _unrolled_nest(s.then), _unrolled_nest(s.orelse)
            if not a and s.then or not b and s.orelse:
                return 0
            n += max(a, b)
        elif not isinstance(s, kir.Let):
            n += 1
    return n


def mark_unroll(body: list[kir.Stmt]) -> list[kir.Stmt]:
    """Seed 004 §4.3: ``#pragma unroll`` on innermost loops with constant trip counts
    (at most :data:`UNROLL_MAX`, no barrier inside), and on a constant loop around
    register-tile loops already unrolled (the k sub-tile loop of a full tile, where
    the fragments of each k step are then loaded from shared memory once), up to
    :data:`UNROLL_NEST_MAX` instances."""
    out: list[kir.Stmt] = []
    for s in body:
        if isinstance(s, kir.Loop):
            inner = mark_unroll(s.body)
            leaf = not any(isinstance(x, (kir.Loop, kir.Barrier)) for x in kir.walk(s.body))
            trips = _trips(s)
            nest = not leaf and any(isinstance(x, kir.Loop) for x in inner) and \
                1 < trips and trips * _unrolled_nest(inner) <= UNROLL_NEST_MAX and \
                _unrolled_nest(inner) > 0
            out.append(kir.Loop(s.var, s.lower, s.upper, s.step, inner,
                                s.unroll or (leaf and 1 < trips <= UNROLL_MAX) or nest))
        elif isinstance(s, kir.If):
            out.append(kir.If(s.cond, mark_unroll(s.then), mark_unroll(s.orelse)))
        else:
            out.append(s)
    return out


def accessed_arrays(body: list[kir.Stmt]) -> set[str]:
    """The arrays and buffers the statements of ``body`` read or write."""
    out: set[str] = set()
    for st in kir.walk(body):
        if isinstance(st, kir.Compute):
            for e in (st.assign.target, st.assign.value):
                out |= {x.array for x in walk_expr(e) if isinstance(x, Access)}
    return out


def copy_split_values(body: list[kir.Stmt], block: tuple[int, int, int]) -> list[kir.Stmt]:
    """The kernel body preceded by the values of the 16-byte copies' lane and group
    variables it uses (:data:`kir.COPY_GROUP`), from the thread ids of its block."""
    used = sorted(v for v in kir.used_vars(body) if kir.copy_split_var(v) is not None)
    return [kir.Let(v, kir.copy_split_value(v, block)) for v in used] + body


def rename_loops(body: list[kir.Stmt], names: dict[str, str]) -> list[kir.Stmt]:
    """``body`` with the loop iterators (and degenerate loops' ``Let``s) of ``names``
    renamed, and every read of them (a copy band's loops, named as before its
    coordinate members were dropped: :func:`memory.plan.scan_renames`).  Inner
    loops first: the new names are deeper ones, which no loop of ``body`` keeps."""
    if not names:
        return body
    out: list[kir.Stmt] = []
    for s in body:
        if isinstance(s, kir.Loop):
            inner = rename_loops(s.body, names)
            s = replace(s, body=inner)
            if s.var in names:
                s = replace(kir.map_body([s], _renamer(s.var, names[s.var]))[0],
                            var=names[s.var])
        elif isinstance(s, kir.If):
            s = replace(s, then=rename_loops(s.then, names), orelse=rename_loops(s.orelse, names))
            for let in [x for x in s.then if isinstance(x, kir.Let) and x.var in names]:
                new = names[let.var]
                then = kir.map_body(s.then, _renamer(let.var, new))
                s = replace(s, then=[replace(x, var=new) if isinstance(x, kir.Let)
                                     and x.var == let.var else x for x in then])
        out.append(s)
    return out


def _renamer(old: str, new: str):
    return lambda e: Var(new) if isinstance(e, Var) and e.name == old else None


def plan_summary(kname: str, plan: KernelPlan) -> str:
    """The kernel's summary line: statements, each mapped loop's tile and threads,
    sequential loops and per-thread tiles (the report's first line)."""
    stmts = ",".join(plan.statements)
    if plan.text:
        return f"{kname} [{stmts}]: {plan.text}"
    if not plan.members:
        return f"{kname} [{stmts}]: one thread" + (
            f" (sequential: {', '.join(plan.sequential)})" if plan.sequential else "")
    parts = [f"{mm.loop}→block.{mm.axis}/thread.{mm.axis} (tile {mm.tile}, {mm.threads} threads)"
             for mm in plan.members]
    seq = f"; sequential in thread: {', '.join(plan.sequential)}" if plan.sequential else ""
    if plan.per_thread:       # the third tiling level (seed 000 §4.1): points per thread
        many = any(p > 1 for p in plan.per_thread)
        seq += f"; per thread: {' x '.join(map(str, plan.per_thread))} point{'s' if many else ''}"
        if plan.jammed:
            seq += " (point loops unrolled and jammed inside the sub-tile loops)"
    return f"{kname} [{stmts}]: " + ", ".join(parts) + seq
