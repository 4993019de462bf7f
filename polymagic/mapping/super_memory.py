"""Shared memory, registers and ``__constant__`` arrays of one superposition kernel
(seed 000 §3 and seed 004 §4.2 on seed 003's tree; see :class:`SuperMemory`)."""
from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import islpy as isl

from ..memory.localcode import LocalPlan
from ..memory.registers import RegisterPlan, plan_kernel_registers
from ..names import buffer_stem
from ..memory.plan import BufferPlan, CopyNamer, KernelMemory, drop_register_buffers, \
    graft_copies, is_decision_about, memory_note
from ..notes import Note, Stage
from ..options import CompileOptions
from ..schedule.superposition import Kernel, SuperPlan, ThreadGroup
from ..scop import Scop
from .result import TreeReduction
from .tree import thread_dims, walk_items


class KernelBuilder(Protocol):
    """What :class:`SuperMemory` reads of the mapper building its kernel
    (:class:`.superposition.SuperMapper`)."""
    scop: Scop
    plan: SuperPlan
    options: CompileOptions
    namer: CopyNamer
    block: tuple[int, int, int]                         # threads per block of the kernel
    steps: list[dict[str, tuple[int, int]]]             # step loops around the node built
    reductions: dict[str, TreeReduction]
    local: LocalPlan | None


class SuperMemory:
    """Shared-memory buffers of one superposition kernel (seed 000 §3 on seed 003's
    tree).  The decision rule is the single mapping's (:mod:`.memory.plan`: Algorithm 1
    with ``--shared``/``--delta``, bounded boxes, ``--shared-mem``), at two levels:

    * **block**: the prefix is the block tile (and host loops); copy-in before the
      kernel's thread steps, copy-out after them (seed 004 §4.2), the step loops'
      barriers separating the reuses of the buffer;
    * **thread tile**: an array whose block footprint grows with the problem size
      (jacobi-2d-alt's rows, a ``k`` loop in the thread) is planned per thread tile of
      each thread group that touches it (:meth:`.superposition.SuperMapper.thread_tiles`), copied in
      and out around the group's thread filter inside the tile loop, with barriers
      (:func:`.memory.plan.graft_copies`).

    A kernel with tree reductions or with one block gets no buffers (a note says so).
    Every kernel also gets the single mapping's registers (:meth:`registers`) and
    ``__constant__`` arrays (:meth:`constants`), decided on its thread points
    (:meth:`.superposition.SuperMapper.thread_points`)."""

    def __init__(self, mapper: KernelBuilder, kname: str, host: isl.UnionMap, n_host: int,
                 n_tile: int):
        self.mapper = mapper
        self.n_host = n_host
        self.kname = kname
        self.kid = kname.rsplit("kernel", 1)[-1]
        self.host = host
        self.n_tile = n_tile
        self.mem = KernelMemory()
        self.planned = False
        self.block_bufs: list[BufferPlan] = []
        self.deferred: list[str] = []
        self.decided: set[str] = set()
        self.n_groups = 0

    def refuse(self, why: str) -> "SuperMemory":
        self.mem = self.mem.noted(memory_note(self.kname, None, f"no buffers: {why}",
                                              "fallback"))
        return self

    def _budget(self):
        from ..isl_util import OperationBudget
        from ..memory.plan import PLAN_OPERATIONS
        return OperationBudget(self.mapper.scop.context.get_ctx(), PLAN_OPERATIONS)

    def _arrays(self, dom: isl.UnionSet, among: list[str] | None = None) -> list[str]:
        scop = self.mapper.scop
        used = {a.array for s in scop.statements for a in s.accesses
                if not dom.extract_set(s.domain.get_space()).is_empty()}
        return [a for a in scop.arrays if a in used and (among is None or a in among)]

    def plan_block(self, body: isl.ScheduleNode) -> "SuperMemory":
        from ..memory.plan import PLAN_OPERATIONS, prefix_map, fit_buffers, level_buffers
        scop, options = self.mapper.scop, self.mapper.options
        prefix = prefix_map(body)
        try:
            with self._budget():
                bufs, lines, self.deferred = level_buffers(
                    scop, prefix, options, self.kname, buffer_stem(scop, f"sh{self.kid}"), "block",
                    self._arrays(prefix.domain()), self.host, True)
        except isl.Error:
            return self.refuse(f"planning them took more than {PLAN_OPERATIONS} isl "
                               "operations")
        self.planned = True
        self.block_bufs, dropped = fit_buffers(bufs, options, self.kname)
        self.mem = replace(self.mem, buffers=self.mem.buffers + tuple(self.block_bufs)
                           ).noted(*lines, *dropped)
        return self

    def plan_group(self, node: isl.ScheduleNode, g: ThreadGroup, chunk: isl.MultiUnionPwAff
                   ) -> list[BufferPlan]:
        """Buffers of the deferred arrays per thread tile of group ``g`` (built at
        ``node``, a leaf): the prefix is the group's (host, block tile, step loops)
        followed by its thread tiles ``chunk``."""
        from ..memory.plan import prefix_map, fit_buffers, level_buffers
        if not self.planned or not self.deferred:
            return []
        scop, options = self.mapper.scop, self.mapper.options
        pre = prefix_map(node)
        arrays = self._arrays(pre.domain(), self.deferred)
        if not arrays:
            return []
        self.n_groups += 1
        group = f"thread group [{','.join(g.statements)}]"
        try:
            with self._budget():
                tiles = isl.UnionMap.from_multi_union_pw_aff(chunk).intersect_domain(
                    pre.domain())
                prefix = pre.flat_range_product(tiles)
                bufs, lines, _ = level_buffers(scop, prefix, options, self.kname,
                                               buffer_stem(scop, f"sh{self.kid}t{self.n_groups}"),
                                               "thread tile",
                                               arrays, self._fixed(pre), False)
                lines = [replace(ln, text=f"{ln.text} in {group}") for ln in lines]
        except isl.Error:
            self.mem = self.mem.noted(Note(Stage.MEMORY, "no buffers: planning them took too many "
                                           "isl operations", kernel=self.kname, where=group,
                                           kind="fallback"))
            return []
        self.decided.update(arrays)
        bufs, dropped = fit_buffers(bufs, options, self.kname,
                                    sum(b.nbytes for b in self.mem.buffers))
        self.mem = replace(self.mem, buffers=self.mem.buffers + tuple(bufs)
                           ).noted(*lines, *dropped)
        return bufs

    def constants(self, chosen: set[str], lines: list[Note]) -> None:
        """Seed 004 §4.2 as in :meth:`SingleMapper.constant_arrays`: the arrays read from
        ``__constant__`` memory get no shared buffer, at the block level (dropped) nor
        per thread tile (no longer deferred to the thread groups)."""
        dropped = {b.array for b in self.mem.buffers if b.array in chosen}
        self.block_bufs = [b for b in self.block_bufs if b.array not in chosen]
        self.deferred = [a for a in self.deferred if a not in chosen]
        self.mem = replace(
            self.mem, buffers=tuple(b for b in self.mem.buffers if b.array not in chosen),
            decisions=tuple(replace(d, stage=Stage.CONSTANT, kind="decision",
                                    text="not buffered (read from __constant__ memory)")
                            if is_decision_about(d, self.kname, dropped) else d
                            for d in self.mem.decisions) + tuple(lines))

    def registers(self, k: Kernel, domain: isl.UnionSet, point: isl.UnionMap, n_host: int,
                  tiles: list[int]) -> None:
        """Seed 004 §4.2 on the superposed kernel ``k``: the arrays whose subscripts vary
        only with its thread points (:meth:`.superposition.SuperMapper.thread_points`) are planned
        into per-thread registers by :func:`.memory.registers.plan_registers`, the
        lowering keeping them across the thread's sequential loops (``sum[p]`` across
        doitgen's ``s``).  A tree reduction's statement keeps its own accumulator, so
        the arrays it accesses are left alone.  Block-level buffers of a register
        array are dropped (:func:`.memory.plan.drop_register_buffers`) only where each
        thread owns one point of the block tile in every group touching it, so the
        register is loaded once per thread point, not once per thread tile."""
        mapper = self.mapper
        scop, options = mapper.scop, mapper.options
        reduced = {a.array for s in k.statements if s in mapper.reductions
                   for a in scop.statement(s).accesses}
        elsewhere = {a: "a tree reduction's statement accesses it; the reduction keeps its "
                     "own per-thread accumulator" for a in reduced}
        elsewhere.update({lb.array: "localised along a step loop: seed 001's L keeps it "
                          "across the steps"
                          for lb in (mapper.local.buffers if mapper.local else [])})
        planned = self.register_plan(k, domain, point, n_host, elsewhere)
        if planned is None:
            return
        kept, lines = planned
        one = tuple(r for r in kept if all(self._one_point(k, s, tiles) for s in r.statements))
        mem, dropped = drop_register_buffers(replace(self.mem, registers=one).noted(*lines),
                                             self.kname, options, 1)
        self.mem = replace(mem, registers=kept)
        self.block_bufs = [b for b in self.block_bufs if b.array not in dropped]

    def register_plan(self, k: Kernel, domain: isl.UnionSet, point: isl.UnionMap | None,
                      n_host: int, elsewhere: dict[str, str] = {}
                      ) -> tuple[tuple[RegisterPlan, ...], tuple[Note, ...]] | None:
        """:func:`.memory.registers.plan_kernel_registers` on kernel ``k``'s thread
        points, ``elsewhere`` the arrays kept by other means, with why (no side effect:
        :meth:`registers` applies it; the localisation asks it first, to leave the
        register arrays alone); None when no register can be planned."""
        mapper = self.mapper
        scop, options, plan = mapper.scop, mapper.options, mapper.plan
        if not options.registers:
            return None
        groups = [g for g in walk_items(k.body) if isinstance(g, ThreadGroup)]
        if point is None or not k.block and not thread_dims(k):
            return None
        mapped = [plan.loop_text(b) for b in k.block] + \
            [plan.loop_text(d) for g in groups for d in g.dims]
        used = {s: {b[s][0] for b in k.block} | {d[s][0] for g in groups for d in g.dims
                                                  if s in d} |
                {st[s][0] for st in mapper.steps if s in st} for s in k.statements}
        seq = [scop.statement(s).iterators[lp[0]] for s in k.statements
               for lp in plan.nests[s].loops if lp[0] not in used[s]]
        return plan_kernel_registers(scop, domain, point, self.kname,
                                     list(dict.fromkeys(mapped)), list(dict.fromkeys(seq)),
                                     n_host=n_host, elsewhere=elsewhere)

    def _one_point(self, k: Kernel, s: str, tiles: list[int]) -> bool:
        """Each thread runs at most one thread point of statement ``s`` per block: every
        loop of its group on a thread axis is a block loop whose tile has no more
        points than threads along that axis."""
        blk = self.mapper.block
        for g in walk_items(k.body):
            if not isinstance(g, ThreadGroup) or s not in g.statements:
                continue
            if g.reduction:
                return False
            for d, ax in zip(g.dims, "xyz"):
                if not any(b.get(s) == d[s] and t <= blk["xyz".index(ax)]
                           for b, t in zip(k.block, tiles)):
                    return False
        return True

    def _fixed(self, pre: isl.UnionMap) -> isl.UnionMap:
        """The loops constant in one thread tile, for seed 000's rank test (§3.1.1):
        the prefix without the block tile dimensions (host and step loops)."""
        out = isl.UnionMap.empty(pre.get_space())
        maps: list[isl.Map] = []
        pre.foreach_map(maps.append)
        for m in maps:
            out = out.union(isl.UnionMap.from_map(
                m.project_out(isl.dim_type.out, self.n_host, self.n_tile)))
        return out

    def graft_block(self, body: isl.ScheduleNode) -> isl.ScheduleNode:
        """Copy-in before the kernel's body (below the block tile band), copy-out after."""
        if not self.block_bufs:
            return body
        return graft_copies(self.mapper.scop, body, self.block_bufs, self.mapper.block,
                            self.mapper.namer)

    def result(self) -> KernelMemory | None:
        for a in self.deferred:
            if a not in self.decided:
                self.mem = self.mem.noted(memory_note(
                    self.kname, a, "not buffered (footprint grows with the problem size per "
                    "block, and no thread group touching it has thread tiles)"))
        return self.mem if self.mem.decisions or self.mem.buffers else None
