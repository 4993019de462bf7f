"""Predicted global-memory element loads and stores per kernel, from the plan's sets.

Seed 000 §3 moves each element of a block's data space once between global and
shared memory (copy-in/copy-out sets, §3.1.3) and rewrites the buffered references
to the buffer; seed 004 §4.2 orders copy-in, compute and copy-out per block.  So a
kernel's global traffic is

* loads  = Σ_buffers |copy_in|  + Σ_unbuffered reads  |domain of the statement|
* stores = Σ_buffers |copy_out| + Σ_unbuffered writes |domain of the statement|

where a copy set ``{ [prefix] -> A[a] }`` is counted over every prefix (host loops
and tile indices: one copy per block and sub-tile), and every unbuffered reference
is executed once per statement instance (a compound assignment's target is a read
and a write, as in the scop's access list).  Counting is islpy's (barvinok's
``card`` when available, else enumeration), at fixed sizes.  The emulator counts
the same accesses dynamically (``polymagic/runtime/emu_support.h``); tests assert
that both agree exactly (issue 3).  A tree reduction's statement accumulates in a
register: its element is counted per point of the enclosing loops.  Limits: a value read inside a ``?:`` branch
that is not taken is still predicted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol

import islpy as isl

from .. import kir
from ..names import strip_generated
from ..scop import Scop
from .plan import KernelMemory


class _KernelPlan(Protocol):
    memory: KernelMemory | None
    statements: list[str]


class MappedKernels(Protocol):
    """What the counts read of the mapping stage's result
    (:class:`polymagic.mapping.MappingResult`; memory/ does not import the mapping)."""
    plans: Mapping[str, _KernelPlan]
    reductions: Mapping


class CompiledProgram(Protocol):
    """What :func:`predict_for` reads of a compile (``polymagic.compiler.Compiled``)."""
    scop: Scop
    mapping: MappedKernels
    program: kir.Program


@dataclass(frozen=True)
class KernelCounts:
    """Predicted global element accesses of one kernel over the whole run."""
    loads: int = 0
    stores: int = 0
    copy_loads: int = 0          # of which: copy-in into shared buffers
    copy_stores: int = 0         # of which: copy-out from shared buffers
    buffers: list[str] = field(default_factory=list)


def _fix(s: isl.Set, sizes: Mapping[str, int]) -> isl.Set:
    """``s`` with every parameter fixed (sizes; 0 for thread/block ids, which the
    copy and iteration sets do not constrain)."""
    for pos in range(s.dim(isl.dim_type.param)):
        name = s.get_dim_name(isl.dim_type.param, pos)
        s = s.fix_val(isl.dim_type.param, pos, isl.Val(int(sizes.get(name, 0))))
    return s


def count_points(s: isl.Set, sizes: Mapping[str, int]) -> int:
    """Number of points of ``s`` at ``sizes`` (barvinok's card, else isl's count)."""
    s = _fix(s, sizes)
    if s.is_empty():
        return 0
    card = getattr(s, "card", None)
    if card is not None:
        try:
            pw = card()
            pt = _fix(isl.Set.universe(pw.get_domain_space()), sizes).sample_point()
            v = pw.eval(pt)
            return int(v.to_python())
        except (isl.Error, AttributeError, TypeError, ValueError):
            pass
    return int(s.count_val().to_python())


def copy_volume(rel: isl.Map | None, sizes: Mapping[str, int]) -> int:
    """Σ over prefixes (blocks, sub-tiles, host loops) of the copy set's size."""
    return 0 if rel is None else count_points(rel.wrap(), sizes)


def predict_counts(scop: Scop, mapping: MappedKernels, sizes: Mapping[str, int],
                   program: kir.Program | None = None) -> dict[str, KernelCounts]:
    """Per kernel (KIR names: ``kernel0``...), the loads/stores the plan predicts.

    ``mapping`` is the mapping stage's result (:class:`polymagic.mapping.MappingResult`)
    the program was generated from, e.g. ``Compiled.mapping``, or
    :func:`polymagic.mapping.map_schedule`'s for the options it was compiled with;
    with ``program`` (the KIR), buffers that did not make it into a kernel
    (fallbacks) count as unbuffered references."""
    out: dict[str, KernelCounts] = {}
    for pname, plan in mapping.plans.items():
        kname = strip_generated(pname)
        buffers = list(plan.memory.buffers) if plan.memory else []
        if program is not None:
            k = program.kernels.get(kname)
            used = {d.name for d in k.shared} if k is not None else set()
            buffers = [b for b in buffers if b.name in used]
        copy_loads = copy_stores = 0
        refs = {r for b in buffers for r in b.refs}
        for b in buffers:
            copy_loads += copy_volume(b.copy_in, sizes)
            copy_stores += copy_volume(b.copy_out, sizes)
        loads, stores = copy_loads, copy_stores
        # seed 004 §4.2: an array kept in a register across all the sequential loops is
        # loaded once per thread point and stored once (memory.registers)
        decls = program.kernels[kname].registers \
            if program is not None and kname in program.kernels else []
        once = {d.array for d in decls if d.once_per_point}
        regs = {r.array: r for r in (plan.memory.registers if plan.memory else [])
                if r.array in once and r.points is not None}
        for r in regs.values():
            n_points = count_points(r.points, sizes)
            loads += n_points
            if any(a.array == r.array and a.is_write for st in r.statements
                   for a in scop.statement(st).accesses):
                stores += n_points
        # a private local scalar promoted to registers never touches memory
        made = {d.array for d in decls if d.array}
        private = {r.array for r in (plan.memory.registers if plan.memory else [])
                   if r.private and r.array in made}
        trees = {r.stmt: r for r in mapping.reductions.values()}
        refs = refs | _shared_partner_reads(scop, trees)
        for sname in plan.statements:
            stmt = scop.statement(sname)
            n = None
            tree = trees.get(sname)
            if tree is not None:
                # a tree reduction (seed 003 §5.3): the element is read and written once
                # per point of the enclosing loops (thread 0's combine), and for max/min
                # read by every thread as its accumulator's initial value
                outer = count_points(stmt.domain.project_out(isl.dim_type.set, tree.loop, 1),
                                     sizes)
                threads = tree.block[0] * tree.block[1] * tree.block[2]
                loads += outer * (1 if tree.op in ("+", "*") else 1 + threads)
                stores += outer
            for k, acc in enumerate(stmt.accesses):
                if (sname, k) in refs or acc.array in regs or acc.array in private:
                    continue
                if tree is not None and acc.array == stmt.body.target.array:
                    continue
                if n is None:
                    n = count_points(stmt.domain, sizes)
                if acc.is_write:
                    stores += n
                else:
                    loads += n
        out[kname] = KernelCounts(loads, stores, copy_loads, copy_stores,
                                  [b.name for b in buffers])
    return out


def _shared_partner_reads(scop, trees: dict) -> set[tuple[str, int]]:
    """Reads of tree reductions fused in one pass (``TreeReduction.partners``) that an
    earlier statement of the group makes of the same element: the lowering loads it
    once into a register for all of them."""
    out: set[tuple[str, int]] = set()
    for lead in trees.values():
        if not getattr(lead, "partners", ()):
            continue
        seen: list[isl.Map] = []
        for sname in (lead.stmt, *lead.partners):
            stmt = scop.statement(sname)
            for k, acc in enumerate(stmt.accesses):
                if acc.is_write or acc.array == stmt.body.target.array:
                    continue
                rel = acc.relation.set_tuple_name(isl.dim_type.in_, lead.stmt)
                if any(rel.is_equal(m) for m in seen):
                    out.add((sname, k))
                else:
                    seen.append(rel)
    return out


def predict_for(compiled: CompiledProgram, sizes: Mapping[str, int]
                ) -> dict[str, KernelCounts]:
    """:func:`predict_counts` for a compiled program, from the mapping its code was
    generated from (``compiled.mapping``)."""
    return predict_counts(compiled.scop, compiled.mapping, dict(sizes), compiled.program)


__all__ = ["KernelCounts", "count_points", "copy_volume", "predict_counts", "predict_for"]
