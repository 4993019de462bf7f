"""Seed 001 localisation inside the superposition's kernels (seed 003 §4 trees):
L private to each thread along a loop a thread group runs sequentially
(:meth:`SuperLocalisation.localise_group`), or shared by the block along a step
loop (:meth:`SuperLocalisation.step_local`)."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import islpy as isl

from .. import kir
from ..memory.localcode import LocalBuffer, LocalPlanBuilder, local_note
from ..memory.plan import CopyNamer
from ..options import CompileOptions
from ..schedule.superposition import Kernel, SuperPlan, ThreadGroup
from ..scop import Scop
from .result import TreeReduction
from .super_memory import SuperMemory


class SuperLocalisation:
    """The localisation part of :class:`.superposition.SuperMapper` (a mixin: it
    reads the mapper's plan, options, the kernel being built and its memory)."""
    scop: Scop
    options: CompileOptions
    namer: CopyNamer
    local_copies: dict[str, tuple[str, LocalBuffer]]
    plan: SuperPlan
    local: LocalPlanBuilder | None
    local_avoid: dict[str, str]
    reductions: dict[str, TreeReduction]
    memory: SuperMemory | None
    block: tuple[int, int, int]
    kernel_block: list[dict[str, tuple[int, int]]]
    steps: list[dict[str, tuple[int, int]]]
    specialised: dict[str, int]
    text: Callable[[isl.MultiUnionPwAff, int], str]

    def start_local(self, k: Kernel, domain: isl.UnionSet, point: isl.UnionMap | None, n_host: int,
                    constant: set[str]) -> None:
        """Before kernel ``k``'s thread-level items are built: what seed 001 localisation
        must leave alone (seed 000 block buffers, seed 004 registers and ``__constant__``
        arrays: they already serve those references), asked before the registers are
        applied (:meth:`SuperMemory.register_plan`, no side effect)."""
        from ..memory.localcode import LocalPlanBuilder
        self.local = LocalPlanBuilder()
        self.specialised = {}
        self.local_avoid = {}
        if self.options.localise is None and not self.options.localise_auto:
            return
        for b in self.memory.block_bufs:
            self.local_avoid[b.array] = "it has a per-block buffer"
        for a in constant:
            self.local_avoid[a] = "read from __constant__ memory"
        try:
            regs = self.memory.register_plan(k, domain, point, n_host)
        except isl.Error:
            regs = None
        for r in (regs[0] if regs else []):
            self.local_avoid[r.array] = "kept in a register"
        for s in k.statements:
            if s in self.reductions:
                for a in self.scop.statement(s).accesses:
                    self.local_avoid[a.array] = "a tree reduction accesses it"

    def end_local(self, k: Kernel, kname: str):
        """The kernel's LocalPlan (None when nothing was tried), with a note when
        ``--localise LOOP`` names one of its iterators that the superposition maps to
        blocks or threads (a parallel loop: nothing to localise along)."""
        plan, self.local = self.local, None
        loop = self.options.localise[0] if self.options.localise else None
        if loop is not None and not plan.buffers and not plan.decisions and any(
                loop in self.scop.statement(s).iterators for s in k.statements):
            plan.decisions.append(
                local_note(
                    kname, None,
                    f"--localise {loop}: {loop} is not a sequential loop inside this "
                    "superposition kernel (it is mapped to blocks or threads): not localised"))
        return plan.plan() if plan.buffers or plan.decisions else None

    def _local_refs(self, statements: list[str]) -> set[tuple[str, int]]:
        """References localisation leaves alone: :attr:`local_avoid` arrays, buffered
        references (block and thread-tile buffers) and those already localised."""
        refs = {r for b in self.memory.mem.buffers for r in b.refs}
        refs |= {r for lb in self.local.buffers for r in lb.refs}
        refs |= {(s, k) for s in statements
                 for k, a in enumerate(self.scop.statement(s).accesses)
                 if a.array in self.local_avoid}
        return refs

    def _local_bytes(self) -> int:
        return sum(b.nbytes for b in self.memory.mem.buffers) + \
            sum(lb.nbytes for lb in self.local.buffers)

    def _sequential_loops(self, g: ThreadGroup) -> list[str]:
        """The source loops each thread of group ``g`` runs (neither a block, thread nor
        step loop), outermost first: the candidates of seed 001 intra-thread
        localisation."""
        out: list[str] = []
        for s in g.statements:
            its = self.scop.statement(s).iterators
            out += [its[lp[0]] for lp in self._unmapped(g, s) if its[lp[0]] not in out]
        return out

    def _unmapped(self, g: ThreadGroup, s: str) -> list:
        """The loops of statement ``s`` (of group ``g``) that are neither a thread, a
        block nor a step loop, outermost first (its nest's ``loops`` entries)."""
        used = {d[s][0] for d in g.dims} | {b[s][0] for b in self.kernel_block if s in b} | \
            {st[s][0] for st in self.steps if s in st}
        return [lp for lp in self.plan.nests[s].loops if lp[0] not in used]

    def _same_loops(self, g: ThreadGroup) -> bool:
        """Whether every statement of group ``g`` runs the same source loops (by
        iterator name) on each block and thread dimension."""
        for dims in (g.dims, self.kernel_block):
            for d in dims:
                names = {self.scop.statement(s).iterators[d[s][0]]
                         for s in g.statements if s in d}
                if len(names) > 1:
                    return False
        return True

    def localise_group(self, node: isl.ScheduleNode, g: ThreadGroup) -> isl.ScheduleNode:
        """Seed 001 §4 inside thread group ``g`` (``node``: its thread filter): along a
        loop each thread runs sequentially (``--localise LOOP[:w]``, else the one the
        analytic model picks, :func:`.memory.localcode.auto_localise`, as the single
        mapping does in :meth:`.single.SingleMapper.localise`), L private to each thread (one row
        per thread).  The search starts below the thread band, at the group's source
        order band.  A kernel that cannot be localised keeps its code, with a note."""
        from ..memory.localcode import LOCAL_LIMIT, auto_localise, exposed_move_in, \
            localise_kernel
        from ..memory.localise import LocaliseError
        opts = self.options
        if self.local is None or g.reduction or self.memory is None:
            return node
        loops = self._sequential_loops(g)
        forced = opts.localise is not None
        if forced and opts.localise[0] not in loops or not forced and \
                not (opts.localise_auto and loops):
            return node
        kname = self.memory.kname + (f"g{len(self.local.buffers)}" if self.local.buffers
                                     else "")
        if not self._same_loops(g):
            # fuzz finding 38: statements fused into one group with other loops on its
            # blocks or threads (S2's l and S3's i on thread x): the moves ran in blocks
            # that do not own the group's points (a cross-block race on the emulator)
            self.local.decisions.append(
                local_note(
                    kname, None,
                    f"not localised along a thread's loop: its statements "
                    f"{', '.join(g.statements)} run different loops on the blocks or threads "
                    "(their moves are not yet confined to each statement's blocks)"))
            return node
        depth = node.get_tree_depth()
        orig = node.child(0).child(0) if g.dims else node.child(0)
        trial: dict = {}
        buffered = self._local_refs(g.statements)
        try:
            if forced:
                new, lp = localise_kernel(self.scop, orig, kname, self.block, opts, buffered,
                                          trial, self.text, exposed_move_in)
            else:
                new, lp = auto_localise(self.scop, orig, kname, self.block, opts, buffered,
                                        trial, self.text, loops, exposed_move_in)
        except (LocaliseError, isl.Error) as e:
            self.local.decisions.append(local_note(
                kname, None,
                f"not localised ({e}); left in global "
                "memory"))
            return node
        if lp is None:
            return node
        extra = sum(lb.nbytes for lb in lp.buffers)
        if extra and self._local_bytes() + extra > min(opts.shared_mem, LOCAL_LIMIT):
            self.local.decisions.append(
                local_note(
                    kname, None,
                    f"not localised ({extra} bytes of per-thread L next to the "
                    "kernel's buffers would exceed the shared memory of a block)"))
            return node
        self.local.decisions += lp.decisions
        if not lp.buffers:
            return node
        self.local.buffers += lp.buffers
        self.local_copies.update(trial)
        return new.ancestor(new.get_tree_depth() - depth)

    def step_local(self, x: isl.ScheduleNode, it):
        """Seed 001 inter-thread localisation along step loop ``it`` of the kernel being
        built (``x``: the leaf below its band, before the body is built): L shared by
        the block, addressed modulo its extents (:func:`.memory.localcode.plan_shared`),
        moved in after a barrier at each step and out after the step's closing barrier
        (§4.3 end: the input dependences cross threads).  ``--localise LOOP`` naming
        the step loop sizes L at the ``--size`` values when its footprint grows with
        the problem size (the kernel is then specialised to them); by default only
        footprints bounded for every size are considered, and the analytic model
        must predict fewer global accesses.  The arrays localised are taken off the
        thread tiles' buffers.  Returns the LocalPlan to graft after the body, or None."""
        from ..memory.localcode import LOCAL_LIMIT, exposed_move_in, plan_shared
        opts = self.options
        if self.local is None or self.memory is None:
            return None
        name = self.plan.loop_text(it.loop)
        forced = opts.localise is not None
        if forced and opts.localise[0] not in name.replace("/", ":").split(":") or \
                not forced and not opts.localise_auto:
            return None
        if any(s in self.reductions for s in it.statements):
            if forced:
                self.local.decisions.append(local_note(
                    self.memory.kname, None,
                    f"step loop {name} not "
                    "localised (its tree reductions keep their own "
                    "shared memory)"))
            return None
        kname = self.memory.kname
        window = opts.localise[1] if forced else 1
        # asked for, the step loop's L takes the register arrays too: a register lives
        # for one step, L for all of them (jacobi-2d-alt's B)
        skip = {a: why for a, why in self.local_avoid.items()
                if not (forced and why == "kept in a register")}
        skip.update({b.array: "it has a per-block buffer" for b in self.memory.mem.buffers})
        limit = min(opts.shared_mem, LOCAL_LIMIT) - self._local_bytes()
        try:
            words = {"along": f"the step loop {name}", "sharers": "the block's threads"}
            lp = plan_shared(self.scop, x, opts.with_(sizes={}, shared_mem=max(limit, 0)),
                             kname, self.block, window, skip, **words)
            sized = {}
            if forced:
                fixed = {p: int(v) for p, v in opts.sizes.items() if p in self.scop.size_params}
                at = plan_shared(self.scop, x, opts.with_(shared_mem=max(limit, 0)), kname,
                                 self.block, window, skip, **words) if fixed else lp
                if len(at.buffers) > len(lp.buffers):
                    lp, sized = at, fixed
                elif not lp.buffers:
                    lp = at                 # its notes say why, at the sizes given
            lp = replace(lp, buffers=tuple(exposed_move_in(self.scop, lb)
                                           for lb in lp.buffers))
            if not forced and lp.buffers:
                lp = self._step_gain(lp, kname, name)
        except Exception as e:            # noqa: BLE001 - never a crash: unlocalised code
            from ..memory.localise import LocaliseError
            if not isinstance(e, (isl.Error, LocaliseError)):
                raise
            self.local.decisions.append(local_note(
                kname, None,
                f"step loop {name} not localised ({e})"))
            return None
        if lp is None or not forced and not lp.buffers:
            return None             # the default says nothing where it localises nothing
        self.local.decisions += lp.decisions
        if not lp.buffers:
            return None
        if sized:
            self.specialised.update(sized)
            self.local.decisions.append(
                local_note(
                    kname, None,
                    f"L of step loop {name} sized at " +
                    ", ".join(f"{k}={v}" for k, v in sized.items()) +
                    " (its footprint grows with the problem size): the kernel is specialised "
                    "to these sizes"))
        self.local.buffers += lp.buffers
        done = {lb.array for lb in lp.buffers}
        self.memory.deferred = [a for a in self.memory.deferred if a not in done]
        return lp

    def _step_gain(self, lp, kname: str, name: str):
        """The default: keep the step loop's L only where the analytic model (seed 001
        I/O sets counted with barvinok for block 0 at :data:`.memory.localcode.AUTO_SIZE`
        per size) predicts fewer global accesses; else None."""
        from ..isl_util import in_child
        from ..memory.localcode import AUTO_OPERATIONS, AUTO_SECONDS, AUTO_SIZE
        from ..memory.localise import traffic_change, trial_limits
        sizes = {p: AUTO_SIZE for p in self.scop.size_params}
        sizes.update({v: 0 for v in (*kir.THREAD_IDS.values(), *kir.BLOCK_IDS.values())})
        bufs = lp.buffers
        try:
            with trial_limits(AUTO_SECONDS, AUTO_OPERATIONS):
                saved = in_child(lambda: -sum(sum(traffic_change(self.scop, lb.prefix, lb.loc,
                                                                 sizes)) for lb in bufs),
                                 AUTO_SECONDS)
        except Exception:                 # noqa: BLE001 - the model failed: not localised
            return None
        if saved <= 0:
            return None
        return replace(lp, decisions=(local_note(
            kname, None,
            f"localised along the step loop {name} by default: "
            f"the analytic model predicts {saved} fewer global accesses "
            f"per block at {AUTO_SIZE} per size (--no-localise turns it off)"),)
            + lp.decisions)

    def graft_step_local(self, x: isl.ScheduleNode, lp) -> isl.ScheduleNode:
        """Graft the step loop's moves around its body ``x``; returns ``x``'s position."""
        from ..memory.localcode import graft_shared
        depth = x.get_tree_depth()
        node = graft_shared(self.scop, x, lp, self.local_copies, self.namer)
        return node.ancestor(node.get_tree_depth() - depth)
