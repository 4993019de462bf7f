"""Block-level and thread-level schedules and their superposition (seed 003 §4-5).

Two schedules are computed per statement, within the restricted affine forms of
§5.1 (loop permutation, distribution/fusion; no skewing):

* the **block-level** (outer) schedule, Algorithm 3: SCC by SCC from the outside
  in, the outermost *synchronisation-free* forall loops (Δ = 0 on every active
  dependence) become ``blockIdx`` dimensions (at most two, block.x innermost); an SCC
  without one is distributed along its outermost source loop, which becomes a host
  loop (one launch per iteration).  Adjacent kernels are fused when the union keeps
  the forall loops.
* the **thread-level** (regular) schedule, Algorithm 2, inside each kernel: SCC by
  SCC, the parallel loops are ranked by the DL model (§5.2, :mod:`.dl_model`); when
  the best one coalesces (it is the contiguous loop of a reference) it goes to
  ``threadIdx.x`` and the next ones to y and z (enclosing parallel loops are pushed
  down to it).  Otherwise the SCC's outermost source loop, if sequential, becomes a
  step loop executed by the whole block with ``__syncthreads`` between steps, and the
  algorithm recurses inside it (jacobi-2d-alt's ``t``).  Adjacent thread groups are
  fused only when the fusion keeps their thread loops parallel.  Loops not mapped
  run inside each thread in source order.
* **tree reductions** (§5.3 reduction loops mapped to threads): when the loop with the
  most negative ∂mem_cost/∂t of a one-statement SCC is a *reduction* loop (the
  statement's innermost loop, carrying only the dependences of its own
  associative-commutative update), it goes to ``threadIdx.x`` as a
  :class:`ThreadGroup` with ``reduction=True``: each thread accumulates its cyclic
  share of the loop in a register, the block combines the partial results with a
  tree in shared memory, and one thread combines the result with the global
  element (:mod:`polymagic.mapping`, :mod:`polymagic.lower`).  The enclosing loops
  stay on blocks or in the thread, uniform across the block.
* **fusion around tree reductions** (§5.4: greedy fusion only when it keeps the
  coalescing parallelism): a tree reduction's kernel runs one point of its block loop
  per block (tile 1); the kernels block fusion merged with it stay fused when their
  statements have no loop besides the block loop (one thread per block runs them:
  gesummv's inits and finishing statement, one kernel with barriers between the
  steps), else they are split off with the reason in the schedule view.  Two tree
  reductions over the same source loop with no dependence between them become one
  thread group: one pass over the loop accumulating both registers, one tree pass.
  A fused plan that fails the isl legality check is planned again unfused.

The superposition ``Θ* = (Θ_out*, Θ)`` (§4.2) is then one isl schedule tree built by
:mod:`polymagic.mapping`.  :func:`check_legality` verifies the flattened schedule
with isl before anything is emitted (Lemma 1: the outer dimensions carry no
dependence, the regular schedule satisfies every dependence, thread dimensions carry
none); an illegal plan is never emitted, the single mapping is used instead.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Union

import islpy as isl

from ..notes import Note, Stage
from ..scop import Scop
from .dl_model import StatementCost, statement_costs
from .loop_kinds import (reduction_operator, Combo, DependenceTable, LoopKind, OriginalNest, classify, make_table,
                         original_nests, strongly_connected, target_invariant)

#: combinations of per-statement loop choices tested per SCC (Algorithm 2 line 6)
MAX_COMBOS = 4096
MAX_BLOCK_DIMS = 2
MAX_THREAD_DIMS = 3
#: tree reductions sharing one pass and one tree: each keeps a shared buffer of one
#: element per thread (8 doubles x 256 threads = 16 KiB)
MAX_TREE_PARTNERS = 8


@dataclass
class ThreadGroup:
    """Statements whose parallel loops ``dims`` (x first) are mapped to threads."""
    statements: list[str]
    dims: list[Combo]
    why: str = ""
    #: dims[0] is a reduction loop (one statement, its innermost loop): tree reduction
    reduction: bool = False


@dataclass
class StepLoop:
    """A sequential loop: a host loop (outside kernels) or, inside a kernel, a loop
    run by the whole block with barriers between its steps."""
    statements: list[str]
    loop: Combo
    body: list["Item"]


@dataclass
class Kernel:
    statements: list[str]
    block: list[Combo]            # outermost first; the last one is block.x
    body: list["Item"] = field(default_factory=list)
    why: str = ""


Item = Union[ThreadGroup, StepLoop, Kernel]


@dataclass
class SuperPlan:
    """The superposition plan of one Scop."""
    items: list[Item]
    costs: dict[str, StatementCost]
    nests: dict[str, OriginalNest]
    iterators: dict[str, tuple[str, ...]]
    legal: bool = True
    problems: list[str] = field(default_factory=list)
    #: the dependences it was planned on (the mapping checks its thread tiles on them)
    validity: isl.UnionMap | None = None
    #: planning decisions worth a line in the schedule view
    notes: list[Note] = field(default_factory=list)

    def kernels(self) -> list[Kernel]:
        out: list[Kernel] = []

        def walk(items):
            for it in items:
                if isinstance(it, Kernel):
                    out.append(it)
                elif isinstance(it, StepLoop):
                    walk(it.body)
        walk(self.items)
        return out

    def loop_text(self, combo: Combo) -> str:
        """``i`` or ``S0:i/S1:j`` when the statements use different iterators."""
        names = {s: ("-" if d < 0 else "") + self.iterators[s][j] for s, (j, d) in combo.items()}
        uniq = sorted(set(names.values()))
        if len(uniq) == 1:
            return uniq[0]
        return "/".join(f"{s}:{n}" for s, n in names.items())

    def describe(self) -> str:
        """Both schedules as indented trees, the DL table and the decisions."""
        lines = ["block-level (outer) and thread-level (regular) schedules, superposed:"]

        def walk(items, ind, in_kernel):
            for it in items:
                pad = "  " * ind
                if isinstance(it, Kernel):
                    blk = ", ".join(f"{self.loop_text(c)}→block.{ax}"
                                    for c, ax in zip(it.block, _axes(len(it.block))))
                    lines.append(f"{pad}kernel [{','.join(it.statements)}]: "
                                 f"{blk or 'one block'}" + (f"  ({it.why})" if it.why else ""))
                    walk(it.body, ind + 1, True)
                elif isinstance(it, StepLoop):
                    what = "step loop (barrier after each step)" if in_kernel else "host loop"
                    lines.append(f"{pad}for {self.loop_text(it.loop)} [{','.join(it.statements)}]"
                                 f": {what}")
                    walk(it.body, ind + 1, in_kernel)
                else:
                    thr = ", ".join(f"{self.loop_text(c)}→thread.{ax}"
                                    for c, ax in zip(it.dims, "xyz"))
                    if it.reduction:
                        thr += " (tree reduction in shared memory)"
                    lines.append(f"{pad}threads [{','.join(it.statements)}]: "
                                 f"{thr or 'one thread'}" + (f"  ({it.why})" if it.why else ""))
                    if in_kernel and len(items) > 1 and it is not items[-1]:
                        lines.append(f"{pad}__syncthreads()")
        walk(self.items, 1, False)
        lines.append("")
        lines.append("DL model (seed 003 §5.2, L = 32 elements, ∂mem_cost/∂t at t = 16; "
                     "most negative = best for thread.x):")
        lines.append("  stmt  loop  ∂mem_cost/∂t   coalesces")
        for s, c in self.costs.items():
            for k, it in enumerate(c.iterators):
                lines.append(f"  {s:<5} {it:<5} {c.derivative[k]:>+13.3e}   "
                             f"{'yes' if c.coalesces(k) else 'no'}")
        for note in self.notes:
            lines.append(f"note: {note}")
        if not self.legal:
            lines.append("")
            lines.append("not legal (not emitted): " + "; ".join(self.problems))
        return "\n".join(lines)


def _axes(n: int) -> list[str]:
    """Axes of n block dims, outermost first: the innermost is x."""
    return ["xyz"[n - 1 - j] for j in range(n)]


# ---- helpers --------------------------------------------------------------------------

class _Planner:
    def __init__(self, scop: Scop, validity: isl.UnionMap,
                 strides: dict[str, tuple[int, ...]] | None = None, reductions: bool = True,
                 fuse_reductions: bool = True):
        self.scop = scop
        self.reductions = reductions
        self.fuse_reductions = fuse_reductions
        self.nests = original_nests(scop)
        self.costs = statement_costs(scop, strides)
        self.order = [s.name for s in scop.statements if s.name in self.nests]
        self.table = make_table(scop, validity, set(self.order))

    # candidates: the source loops not consumed by enclosing (host or step) loops
    def candidates(self, s: str, depth: int) -> list[tuple[int, int]]:
        return list(self.nests[s].loops[depth:])

    def combos(self, scc: list[str], depth: dict[str, int]):
        lists = [self.candidates(s, depth[s]) for s in scc]
        if any(not lst for lst in lists):
            return []
        out = []
        for prod in itertools.product(*lists):
            out.append(dict(zip(scc, prod)))
            if len(out) >= MAX_COMBOS:
                break
        return out

    def common_loop(self, scc: list[str], depth: dict[str, int]) -> Combo | None:
        """The next source loop enclosing every statement of the SCC, if any."""
        first = self.nests[scc[0]]
        d = depth[scc[0]]
        if any(depth[s] != d for s in scc):
            return None
        if all(first.shares_loop(self.nests[s], d) for s in scc):
            return {s: self.nests[s].loops[d] for s in scc}
        return None

    def derivative(self, combo: Combo) -> float:
        return sum(self.costs[s].derivative[j] for s, (j, _) in combo.items())

    def coalescing(self, combo: Combo) -> bool:
        return any(self.costs[s].coalesces(j) for s, (j, _) in combo.items())

    # ---- Algorithm 3: block level ----------------------------------------------------

    def block_level(self, stmts: list[str], table: DependenceTable, depth: dict[str, int]
                    ) -> list[Item]:
        items: list[Item] = []
        for scc in strongly_connected(stmts, table.subset(set(stmts)).edges()):
            sub = table.subset(set(scc))
            foralls = [c for c in self.combos(scc, depth) if classify(sub, c) == LoopKind.FORALL]
            if foralls:
                foralls.sort(key=lambda c: sum(self.nests[s].loops.index(c[s]) for s in c))
                block = _disjoint(foralls, MAX_BLOCK_DIMS)
                items.append(Kernel(scc, block, why="outermost synchronisation-free forall"))
                continue
            loop = self.common_loop(scc, depth)
            if loop is not None and classify(sub, loop) != LoopKind.ILLEGAL:
                inner = {s: depth[s] + 1 for s in scc}
                body = self.block_level(scc, sub.restrict(loop), inner)
                if any(k.block for k in _kernels(body)):
                    items.append(StepLoop(scc, loop, body))
                    continue
                # no block parallelism anywhere inside: one launch, not one per iteration
                items.append(Kernel(scc, [], why="no synchronisation-free forall loop"))
                continue
            items.append(Kernel(scc, [], why="no synchronisation-free forall loop"))
        parts: dict[int, list[Kernel]] = {}
        items = self.block_fusion(items, table, parts)
        out: list[Item] = []
        for it in items:
            if isinstance(it, Kernel):
                it.body = self.thread_level(it.statements, table.subset(set(it.statements)),
                                            dict(depth))
                if id(it) in parts and _has_reduction(it.body) and len(it.body) > 1:
                    out.extend(self.reduction_fusion(parts[id(it)], table, depth))
                    continue
            out.append(it)
        return out

    # ---- fusion around tree reductions (Algorithm 2's greedy fusion, §5.4) -----------

    def reduction_fusion(self, parts: list[Kernel], table: DependenceTable,
                         depth: dict[str, int]) -> list[Item]:
        """Regroup the kernels (``parts``, in order) that block fusion merged when the
        union holds a tree reduction.  A tree reduction runs one point of its block
        loop per block (tile 1), so a kernel may only gather, greedily from left to
        right (seed 003 §5.4: fusion only when it keeps coalescing parallelism):

        * tree-reduction kernels and *small* kernels (every loop of their statements
          is a block loop: one instance per block, run by one thread); the steps are
          separated by barriers (gesummv's inits, both reductions and the finishing
          statement in one kernel, one block per row);
        * or, without a tree reduction, any kernels (as :meth:`block_fusion`).

        A kernel whose statements keep a loop inside the block (mvt's ``S1``: its
        coalescing thread loop ``i`` would become one thread per block running the
        ``j`` loop) is not fused with a reduction.  ``fuse_reductions=False`` keeps
        every tree reduction in a kernel of its own (the plan's fallback when the
        fused schedule fails the isl legality check)."""
        for k in parts:
            k.body = self.thread_level(k.statements, table.subset(set(k.statements)),
                                       dict(depth))
        runs: list[list[Kernel]] = []
        for k in parts:
            if runs and self.joins(runs[-1], k, table) is None:
                runs[-1].append(k)
            else:
                if runs and _has_reduction(k.body) | any(_has_reduction(r.body)
                                                         for r in runs[-1]):
                    why = self.joins(runs[-1], k, table)
                    k.why += f"; not fused: {why}"
                runs.append([k])
        out: list[Item] = []
        for run in runs:
            if len(run) == 1:
                out.append(run[0])
                continue
            red = any(_has_reduction(k.body) for k in run)
            (f,) = self.block_fusion(list(run), table)
            f.body = self.thread_level(f.statements, table.subset(set(f.statements)),
                                       dict(depth))
            if red:
                self.one_thread(f)
                small = [s for k in run if not _has_reduction(k.body) for s in k.statements]
                f.why = ("outermost synchronisation-free forall (fused around tree "
                         "reductions: block tile 1, barriers between the steps"
                         + (f"; {','.join(small)} run on one thread per block" if small else "")
                         + ")")
            out.append(f)
        return out

    def joins(self, run: list[Kernel], k: Kernel, table: DependenceTable) -> str | None:
        """Why kernel ``k`` may not join ``run`` (None when it may)."""
        if not all(len(r.block) == len(k.block) for r in run):
            return "different block dimensions"
        reds = [r for r in run + [k] if _has_reduction(r.body)]
        if reds:
            if not self.fuse_reductions:
                return "tree reduction (fusion around reductions off)"
            if len(k.block) != 1:
                return "tree reduction under two block dimensions"
            for r in run + [k]:
                if r in reds:
                    continue
                wide = [s for s in r.statements if not self.small(s, r.block)]
                if wide:
                    loops = sorted({self.scop.statement(s).iterators[j] for s in wide
                                    for j, _ in self.nests[s].loops
                                    if all(b[s][0] != j for b in r.block)})
                    return (f"a tree reduction's block tile is 1: {','.join(wide)} would run "
                            f"its loop {'/'.join(loops)} in one thread per block (fusion "
                            f"would lose its thread parallelism)")
        merged = [{**a, **b} for a, b in zip(run[0].block, k.block)]
        for r in run[1:]:
            merged = [{**m, **b} for m, b in zip(merged, r.block)]
        sub = table.subset({s for r in run + [k] for s in r.statements})
        if not all(classify(sub, c) == LoopKind.FORALL for c in merged):
            return "the block loops would carry a dependence"
        return None

    def small(self, s: str, block: list[Combo]) -> bool:
        """Every source loop of ``s`` is one of the kernel's block loops."""
        used = {b[s][0] for b in block if s in b}
        return all(j in used for j, _ in self.nests[s].loops)

    @staticmethod
    def one_thread(k: Kernel) -> None:
        """In a kernel fused around tree reductions (block tile 1), the thread loops
        of the other groups that are block loops hold one point per block: one thread
        runs it."""
        for g in _groups(k.body):
            if not g.reduction and g.dims and all(
                    all(d.get(s) == k.block[-1].get(s) for s in g.statements) for d in g.dims):
                g.why = ("its thread loop is block.x with tile 1 (fused with tree "
                         "reductions): one thread per block runs it")
                g.dims = []

    def block_fusion(self, items: list[Item], table: DependenceTable,
                     parts: dict[int, list[Kernel]] | None = None) -> list[Item]:
        """Fuse adjacent kernels whose union keeps the block loops forall (``parts``:
        id of a fused kernel -> the kernels it was made of)."""
        parts = {} if parts is None else parts
        out: list[Item] = []
        for it in items:
            prev = out[-1] if out else None
            if (isinstance(it, Kernel) and isinstance(prev, Kernel) and it.block and prev.block
                    and len(it.block) == len(prev.block)):
                merged = [{**a, **b} for a, b in zip(prev.block, it.block)]
                sub = table.subset(set(prev.statements) | set(it.statements))
                if all(classify(sub, c) == LoopKind.FORALL for c in merged):
                    head, sep, tail = prev.why.partition(";")
                    out[-1] = Kernel(prev.statements + it.statements, merged,
                                     why=head + ("" if "(fused)" in head else " (fused)")
                                     + sep + tail)
                    parts[id(out[-1])] = parts.pop(id(prev), [prev]) + [it]
                    continue
                it.why += (f"; not fused with [{','.join(prev.statements)}]: the block "
                           f"loops would carry a dependence")
            elif isinstance(it, Kernel) and isinstance(prev, Kernel) and it.block and prev.block:
                it.why += (f"; not fused with [{','.join(prev.statements)}]: "
                           f"{len(prev.block)} and {len(it.block)} block dimensions")
            out.append(it)
        return out

    # ---- Algorithm 2: thread level ---------------------------------------------------

    def thread_level(self, stmts: list[str], table: DependenceTable, depth: dict[str, int]
                     ) -> list[Item]:
        items: list[Item] = []
        for scc in strongly_connected(stmts, table.subset(set(stmts)).edges()):
            items.append(self.thread_scc(scc, table.subset(set(scc)), depth))
        return self.thread_fusion(items, table)

    def loop_name(self, combo: Combo) -> str:
        names = sorted({self.scop.statement(s).iterators[j] for s, (j, _) in combo.items()})
        return "/".join(names)

    def thread_scc(self, scc: list[str], sub: DependenceTable, depth: dict[str, int]) -> Item:
        every = self.combos(scc, depth)
        par = [c for c in every if classify(sub, c) == LoopKind.FORALL]
        par.sort(key=lambda c: (self.derivative(c),
                                -sum(self.nests[s].loops.index(c[s]) for s in c)))
        best = min(every, key=self.derivative, default=None)
        red = self.tree_reduction(scc, sub, par, best)
        if red is not None:
            return red
        item = self._thread_scc(scc, sub, depth, par)
        if isinstance(item, ThreadGroup) and best is not None and best not in par \
                and self.derivative(best) < (self.derivative(par[0]) if par else 0):
            kind = classify(sub, best).value
            item.why += f"; {self.loop_name(best)} has the most negative ∂ but is {kind}"
            if kind == "reduction":
                item.why += (" (tree reductions off: --no-reductions)" if not self.reductions
                             else " (no tree reduction: " + self.no_tree_reason(scc, best) + ")")
            item.why += ", it runs in each thread"
        return item

    def no_tree_reason(self, scc: list[str], best: Combo) -> str:
        if len(scc) != 1:
            return "several statements in its dependence cycle"
        s = scc[0]
        if best[s] != self.nests[s].loops[-1]:
            return "not the statement's innermost loop"
        if not target_invariant(self.scop.statement(s), best[s][0]):
            return "the updated element changes with the loop"
        if not self.coalescing(best):
            return "it does not coalesce"
        return "not supported here"

    def tree_reduction(self, scc: list[str], sub: DependenceTable, par: list[Combo],
                       best: Combo | None) -> ThreadGroup | None:
        """The reduction loop with the most negative ∂mem_cost/∂t on thread x (a
        one-statement SCC, the statement's innermost loop, coalescing and better than
        every parallel loop), or None (seed 003 §5.3)."""
        if not self.reductions or best is None or len(scc) != 1 or best in par:
            return None
        s = scc[0]
        if classify(sub, best) != LoopKind.REDUCTION or not self.coalescing(best) \
                or best[s] != self.nests[s].loops[-1] \
                or not target_invariant(self.scop.statement(s), best[s][0]):
            return None
        if par and not self.derivative(best) < self.derivative(par[0]):
            return None
        why = (f"tree reduction: {self.loop_name(best)} is a reduction loop (only "
               f"'{reduction_operator(self.scop.statement(s).body)}' updates of one element "
               f"carried) with the "
               f"most negative ∂mem_cost/∂t (coalescing); partial results per thread, "
               f"combined in shared memory")
        if par:
            why += f"; parallel {self.loop_name(par[0])} stays on blocks/in the thread"
        return ThreadGroup(scc, [best], why=why, reduction=True)

    def _thread_scc(self, scc: list[str], sub: DependenceTable, depth: dict[str, int],
                    par: list[Combo]) -> Item:
        if par and self.coalescing(par[0]):
            return ThreadGroup(scc, _disjoint(par, MAX_THREAD_DIMS),
                               why="coalescing parallelism (most negative ∂mem_cost/∂t)")
        loop = self.common_loop(scc, depth)
        if loop is not None and classify(sub, loop) == LoopKind.SEQUENTIAL:
            inner = self.thread_level(scc, sub.restrict(loop), {s: depth[s] + 1 for s in scc})
            if _has_coalescing(inner, self) or (not par and _has_threads(inner)):
                return StepLoop(scc, loop, inner)
        if par:
            return ThreadGroup(scc, _disjoint(par, MAX_THREAD_DIMS),
                               why="parallel, not coalescing")
        return ThreadGroup(scc, [], why="no parallel loop")

    def thread_fusion(self, items: list[Item], table: DependenceTable) -> list[Item]:
        """Greedy fusion of adjacent thread groups that keeps their thread loops
        parallel (and coalescing)."""
        out: list[Item] = []
        for it in items:
            prev = out[-1] if out else None
            if isinstance(it, ThreadGroup) and isinstance(prev, ThreadGroup) \
                    and it.reduction and prev.reduction:
                if self.reductions_share_loop(prev, it, table):
                    out[-1] = ThreadGroup(
                        prev.statements + it.statements, [{**prev.dims[0], **it.dims[0]}],
                        why=prev.why.split("; one pass")[0] + "; one pass over "
                        f"{self.loop_name(prev.dims[0])} for {','.join(prev.statements)},"
                        f"{','.join(it.statements)} (their loads of the same elements "
                        f"shared) and one tree pass combining their partial results",
                        reduction=True)
                    continue
            elif isinstance(it, ThreadGroup) and isinstance(prev, ThreadGroup) \
                    and len(it.dims) == len(prev.dims) and not (it.reduction or prev.reduction):
                merged = [{**a, **b} for a, b in zip(prev.dims, it.dims)]
                sub = table.subset(set(prev.statements) | set(it.statements))
                if all(classify(sub, c) == LoopKind.FORALL for c in merged) and \
                        (not merged or self.coalescing(merged[0]) or not self.coalescing(prev.dims[0])):
                    out[-1] = ThreadGroup(prev.statements + it.statements, merged,
                                          why=prev.why + " (fused)" if " (fused)" not in prev.why
                                          else prev.why)
                    continue
            out.append(it)
        return out


    def reductions_share_loop(self, a: ThreadGroup, b: ThreadGroup,
                              table: DependenceTable) -> bool:
        """Two tree reductions may run as one (each thread accumulates both in one
        pass over its share of the loop, one tree combines both, seed 003 §5.3) when
        every statement is in the same source reduction loop, with the same enclosing
        loops, and no dependence joins the two groups (each keeps its own updates'
        order; nothing of one is read by the other)."""
        stmts = a.statements + b.statements
        if not self.fuse_reductions or len(stmts) > MAX_TREE_PARTNERS:
            return False
        first = self.nests[stmts[0]]
        r = len(first.loops) - 1
        if any(len(self.nests[s].loops) - 1 != r or not first.shares_loop(self.nests[s], r)
               or self.nests[s].loops != first.loops for s in stmts):
            return False
        if any(d[s] != first.loops[r] for d in (a.dims[0], b.dims[0]) for s in d):
            return False
        edges = table.subset(set(stmts)).edges()
        return not any((u in a.statements) != (v in a.statements) for u, v in edges)


def _disjoint(ranked: list[Combo], limit: int) -> list[Combo]:
    """The first combos of ``ranked`` that use distinct loops in every statement."""
    chosen: list[Combo] = []
    for c in ranked:
        if all(all(c[s][0] != d[s][0] for s in c) for d in chosen):
            chosen.append(c)
            if len(chosen) == limit:
                break
    return chosen


def _found(items: list[Item], kind: type) -> list:
    """The items of type ``kind`` among ``items`` and inside their step loops, in order."""
    out: list = []
    for it in items:
        if isinstance(it, kind):
            out.append(it)
        elif isinstance(it, StepLoop):
            out.extend(_found(it.body, kind))
    return out


def _kernels(items: list[Item]) -> list[Kernel]:
    return _found(items, Kernel)


def _groups(items: list[Item]) -> list[ThreadGroup]:
    """The thread groups among ``items`` and inside their step loops, in order."""
    return _found(items, ThreadGroup)


def _any_group(items: list[Item], pred) -> bool:
    """Whether a thread group among ``items`` (or inside their step loops) has ``pred``."""
    return any(pred(it) if isinstance(it, ThreadGroup) else
               isinstance(it, StepLoop) and _any_group(it.body, pred) for it in items)


def _has_reduction(items: list[Item]) -> bool:
    return _any_group(items, lambda g: bool(g.reduction))


def _has_threads(items: list[Item]) -> bool:
    return _any_group(items, lambda g: bool(g.dims))


def _has_coalescing(items: list[Item], planner: _Planner) -> bool:
    for it in items:
        if isinstance(it, ThreadGroup) and it.dims and planner.coalescing(it.dims[0]):
            return True
        if isinstance(it, StepLoop) and _has_coalescing(it.body, planner):
            return True
    return False


# ---- legality (Lemma 1) ------------------------------------------------------------------

#: one schedule dimension of a statement: ('c', value) or ('l', (iterator, direction)),
#: with 'seq' or 'par'
_Dim = tuple[str, object, str]


def flat_schedules(plan: SuperPlan) -> dict[str, list[_Dim]]:
    """Every statement's superposed schedule as a flat vector (2d+1 style):
    host positions and loops, kernel id, block dims (par), thread-level positions and
    step loops, thread dims z, y, x (par), then the source order within a thread."""
    vec: dict[str, list[_Dim]] = {}

    def walk(items: list[Item], prefix: dict[str, list[_Dim]]):
        for pos, it in enumerate(items):
            p = {s: prefix[s] + [("c", pos, "seq")] for s in it.statements}
            if isinstance(it, StepLoop):
                walk(it.body, {s: p[s] + [("l", it.loop[s], "seq")] for s in it.statements})
            elif isinstance(it, Kernel):
                q = {s: p[s] + [("l", b[s], "par") for b in it.block]
                     + [("c", 0, "par")] * (MAX_BLOCK_DIMS - len(it.block))
                     for s in it.statements}
                walk(it.body, q)
            else:
                for s in it.statements:
                    # a tree reduction reassociates its loop (seed 003 §5.3): it keeps
                    # the source order in this check, and may carry its own update
                    dims = [("l", d[s], "par") for d in reversed(it.dims)] \
                        if not it.reduction else []
                    dims = [("c", 0, "par")] * (MAX_THREAD_DIMS - len(dims)) + dims
                    nest = plan.nests[s]
                    orig: list[_Dim] = []
                    for k, loop in enumerate(nest.loops):
                        orig += [("c", nest.betas[k], "seq"), ("l", loop, "seq")]
                    orig.append(("c", nest.betas[len(nest.loops)], "seq"))
                    vec[s] = p[s] + dims + orig
    walk(plan.items, {s: [] for s in plan.iterators})
    width = max((len(v) for v in vec.values()), default=0)
    for s in vec:
        vec[s] = vec[s] + [("c", 0, "seq")] * (width - len(vec[s]))
    return vec


def _theta(scop: Scop, s: str, dims: list[_Dim]) -> isl.Map:
    st = scop.statement(s)
    sp = st.domain.get_space()
    rng = isl.Space.set_alloc(sp.get_ctx(), 0, len(dims)).align_params(sp)
    m = isl.Map.universe(isl.Space.map_from_domain_and_range(sp, rng)).intersect_domain(st.domain)
    ls = isl.LocalSpace.from_space(m.get_space())
    for k, (kind, v, _tag) in enumerate(dims):
        c = isl.Constraint.equality_alloc(ls).set_coefficient_val(isl.dim_type.out, k, -1)
        if kind == "c":
            c = c.set_constant_val(v)
        else:
            c = c.set_coefficient_val(isl.dim_type.in_, v[0], v[1])
        m = m.add_constraint(c)
    return m


def check_legality(scop: Scop, validity: isl.UnionMap, plan: SuperPlan) -> list[str]:
    """Problems of the superposed schedule (empty when legal), checked with isl on
    every dependence: a ``par`` dimension (block or thread) must have Δ = 0 on the
    dependences the dimensions before it leave, a ``seq`` one Δ ≥ 0, and no
    dependence may be left at the end (seed 003 Lemma 1)."""
    vec = flat_schedules(plan)
    thetas = {s: _theta(scop, s, v) for s, v in vec.items()}
    problems = []
    pairs: list[isl.Map] = []
    validity.foreach_map(pairs.append)
    for d in pairs:
        s, t = d.get_tuple_name(isl.dim_type.in_), d.get_tuple_name(isl.dim_type.out)
        if s not in thetas or t not in thetas:
            problems.append(f"{s}→{t}: statement not scheduled")
            continue
        m = d.apply_domain(thetas[s]).apply_range(thetas[t])
        ls = isl.LocalSpace.from_space(m.get_space())
        for k, (_kind, _v, tag) in enumerate(vec[s]):
            if m.is_empty():
                break
            lt = isl.Constraint.inequality_alloc(ls).set_coefficient_val(
                isl.dim_type.in_, k, 1).set_coefficient_val(isl.dim_type.out, k, -1) \
                .set_constant_val(-1)                         # in - out - 1 >= 0: Δ < 0
            gt = isl.Constraint.inequality_alloc(ls).set_coefficient_val(
                isl.dim_type.in_, k, -1).set_coefficient_val(isl.dim_type.out, k, 1) \
                .set_constant_val(-1)
            if not m.add_constraint(lt).is_empty():
                problems.append(f"{s}→{t}: dimension {k} runs the dependence backwards")
                break
            if tag == "par" and not m.add_constraint(gt).is_empty():
                problems.append(f"{s}→{t}: parallel dimension {k} carries a dependence")
                break
            eq = isl.Constraint.equality_alloc(ls).set_coefficient_val(
                isl.dim_type.in_, k, 1).set_coefficient_val(isl.dim_type.out, k, -1)
            m = m.add_constraint(eq)
        else:
            if not m.is_empty():
                problems.append(f"{s}→{t}: dependent instances at the same schedule point")
    return problems


def plan_superposition(scop: Scop, validity: isl.UnionMap,
                       strides: dict[str, tuple[int, ...]] | None = None,
                       reductions: bool = True, fuse_reductions: bool = True) -> SuperPlan:
    """Algorithms 3 and 2 of seed 003 on the Scop, then the isl legality check;
    ``reductions=False`` never maps a reduction loop to threads.  A plan whose
    kernels fused around tree reductions fails the check is planned again with every
    tree reduction in a kernel of its own (``fuse_reductions=False``), and says so."""
    pl = _Planner(scop, validity, strides, reductions, fuse_reductions)
    items = pl.block_level(pl.order, pl.table, {s: 0 for s in pl.order})
    plan = SuperPlan(items, pl.costs, pl.nests,
                     {s.name: s.iterators for s in scop.statements if s.name in pl.nests})
    plan.problems = check_legality(scop, validity, plan)
    plan.legal = not plan.problems
    plan.validity = validity
    if not plan.legal and fuse_reductions and reductions and any(
            _has_reduction(k.body) and len(k.body) > 1 for k in plan.kernels()):
        again = plan_superposition(scop, validity, strides, reductions, False)
        if again.legal:
            again.notes.append(Note(Stage.SCHEDULE, "kernels fused around tree reductions failed "
                                    "the isl legality check (" + "; ".join(plan.problems) +
                                    "): every tree reduction runs in a kernel of its own",
                                    kind="fallback"))
            return again
    return plan
