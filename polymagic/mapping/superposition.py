"""The superposition mapping (seed 003 §4.2-4.3): a
:class:`~polymagic.schedule.superposition.SuperPlan` (host loops, kernels, step
loops, thread groups) as one isl schedule tree.

Per kernel: a mark, the block filter ``⌊Θ_out/TL⌋ - min = blockIdx`` over the tiled
block loops, and below it the thread-level schedule (step loops with barriers,
thread bands under cyclic thread filters ``Θ_thread ≡ threadIdx (mod blockDim)``,
tree reductions on ``threadIdx.x``, seed 003 §5.3).  Shared buffers, registers and
``__constant__`` arrays are planned as for the single mapping
(:mod:`.super_memory`), seed 001 localisation by :mod:`.super_local`.
"""
from __future__ import annotations

import math
from dataclasses import replace

import islpy as isl

from .. import kir
from ..errors import OptionsError
from ..memory.constant import ConstantChooser
from ..memory.localcode import LocalBuffer, LocalPlanBuilder
from ..memory.plan import BufferPlan, CopyNamer, atomic, graft_copies
from ..names import strip_generated
from ..options import CompileOptions, per_thread_tile
from ..schedule.loop_kinds import reduction_operator
from ..schedule.superposition import Kernel, StepLoop, SuperPlan, ThreadGroup
from ..scop import Scop
from ..thread_space import (THREAD_IDS, block_bounds_set, block_id_on, cyclic_condition,
                            thread_axes, thread_bounds_set, thread_zero)
from .observer import (NO_OBSERVER, GroupBuffersEvent, MappingObserver, SuperKernelEvent,
                       ThreadTilesEvent)
from .result import (DEFAULT_BLOCKS, DEFAULT_SUB_TILE, MARK_PREFIX, KernelPlan,
                     MappedMember, MappingResult, TreeReduction)
from .super_local import SuperLocalisation
from .super_memory import SuperMemory
from .tree import guard_grafts, size_param_space, thread_dims, walk_items, with_id_params


class SuperText:
    """``member_text`` for the superposition's bands (their affine forms are written in
    positional iterators ``i0, i1, ...``): a member that is one source loop (the
    iterator itself) in every statement that has it (constants, the statements without
    that loop, are ignored) gives that loop's source name, as :func:`member_text` does
    for isl's schedule, so ``--localise k`` finds it; anything else gives ``'?'``."""

    def __init__(self, scop: Scop):
        self.scop = scop

    def __call__(self, mupa: isl.MultiUnionPwAff, i: int) -> str:
        names: set[str] = set()

        def piece(pa: isl.PwAff) -> None:
            stmt = pa.get_domain_space().get_tuple_name(isl.dim_type.set)
            if stmt.startswith(("pm_rini_", "pm_rfin_")):
                stmt = stmt.split("_", 2)[2]
            affs: list[isl.Aff] = []
            pa.foreach_piece(lambda _s, a: affs.append(a))
            text = "?"
            if len(affs) == 1 and affs[0].dim(isl.dim_type.div) == 0:
                a = affs[0]
                cs = [a.get_coefficient_val(isl.dim_type.in_, j).to_python()
                      for j in range(a.dim(isl.dim_type.in_))]
                nz = [j for j, c in enumerate(cs) if c]
                if not nz:
                    text = ""                     # a constant: no loop of this statement
                elif len(nz) == 1 and cs[nz[0]] == 1 and a.get_constant_val().is_zero():
                    text = self.scop.statement(stmt).iterators[nz[0]]
            names.add(text)
        mupa.get_at(i).foreach_pw_aff(piece)
        names.discard("")
        return names.pop() if len(names) == 1 else "?"


def default_block(k: Kernel, options: CompileOptions) -> tuple[int, int, int]:
    """Threads per block of superposition kernel ``k`` before a given tile caps
    them: ``--block``, else :data:`DEFAULT_BLOCKS` for its thread groups' largest
    number of dims."""
    groups = [g for g in walk_items(k.body) if isinstance(g, ThreadGroup)]
    n_thr = max((len(g.dims) for g in groups), default=0)
    if options.block:
        return tuple((list(options.block) + [1, 1, 1])[:3])
    return tuple((list(DEFAULT_BLOCKS[n_thr]) + [1, 1, 1])[:3]) if n_thr else (1, 1, 1)


def tied_axes(k: Kernel) -> list[list[str]]:
    """Per block loop of kernel ``k`` (outermost first), the thread axes on which a
    (non-reduction) thread group runs that same loop: the tile of that block loop
    is split over those threads (seed 003 §4.2, ``Θ_out`` tiled by ``TL``)."""
    groups = [g for g in walk_items(k.body) if isinstance(g, ThreadGroup)]
    return [[ax for g in groups if not g.reduction for d, ax in zip(g.dims, "xyz")
             if all(b.get(s) == v for s, v in d.items())] for b in k.block]


def tiles_and_threads(k: Kernel, options: CompileOptions) -> tuple[list[int], tuple[int, int, int]]:
    """Block tiles ``TL_k`` (``--tile``, else as many points as the threads of the
    axis running the same loop) and threads per block of kernel ``k``.  Per-thread
    tiles (``--tile T:t``, seed 000 §4.1): ``T_j / t_j`` threads on the axis
    running block loop j, so each thread computes ``t_j`` points of the tile,
    strided by the block size (the thread filter is cyclic) so that consecutive
    threads still touch consecutive elements (seed 003's coalescing)."""
    groups = [g for g in walk_items(k.body) if isinstance(g, ThreadGroup)]
    blk = default_block(k, options)
    tiles = []
    given = list(options.tile or ())
    per = per_thread_tile(options.tile_levels, options.block)
    for j, (b, axes) in enumerate(zip(k.block, tied_axes(k))):
        if j < len(given):
            tiles.append(given[j])
            if per is not None:
                pts = per[j] if j < len(per) else 1
                blk = tuple(max(1, given[j] // pts) if a in axes else n
                            for a, n in zip("xyz", blk))
            elif not options.block:
                # a given tile smaller than the default threads: as many threads as
                # points (the single mapping's B ≤ T), not idle ones
                blk = tuple(min(n, given[j]) if a in axes else n
                            for a, n in zip("xyz", blk))
            continue
        if not axes and j == len(k.block) - 1 and any(g.reduction for g in groups):
            tiles.append(1)     # block.x: one point of a tree reduction's outer loop
            continue
        tiles.append(max([blk["xyz".index(a)] for a in axes] + [1]) if axes else 32)
    if per is not None and math.prod(blk) > 1024:
        raise OptionsError(f"--tile: block tiles {tiles[:len(k.block)]} with {list(per)} "
                           f"points per thread give {'x'.join(map(str, blk))} threads per "
                           "block on the superposition's kernel, at most 1024")
    return tiles, blk


class SuperMapper(SuperLocalisation):
    """Builds the superposed schedule ``Θ* = (Θ_out*, Θ)`` of a
    :class:`~polymagic.schedule.superposition.SuperPlan` as one isl schedule tree:
    host loops, then per kernel a mark, the block filter (``⌊Θ_out/TL⌋ - min = blockIdx``)
    over the tiled block band, and below it the thread-level schedule: step loops and
    sequences with barriers (``pm_sync`` statements grafted as in
    :func:`memory.plan.graft_copies`), thread bands under thread filters
    (``Θ_thread ≡ threadIdx (mod blockDim)``), and the source order inside a thread.
    ``observer`` sees each kernel before it is built, and each thread group's thread
    tiles and thread-tile buffers (:mod:`.observer`)."""

    def __init__(self, scop: Scop, plan: SuperPlan, options: CompileOptions,
                 observer: MappingObserver = NO_OBSERVER):
        self.scop = scop
        self.plan = plan
        self.options = options
        self.observer = observer
        self.kernel_name = ""                    # the kernel being built, its mark
        self.kernel_domain: isl.UnionSet | None = None     # and its statement instances
        self.plans: dict[str, KernelPlan] = {}
        self.host_loops: list[str] = []
        self.namer = CopyNamer()
        self.block: tuple[int, int, int] = (1, 1, 1)
        self.memory: SuperMemory | None = None             # the kernel being built
        #: the step loops around the node being built, and the block loops of the kernel
        #: being built (statement -> (loop position, direction), as the plan's loops)
        self.steps: list[dict[str, tuple[int, int]]] = []
        self.kernel_block: list[dict[str, tuple[int, int]]] = []
        self.reductions: dict[str, TreeReduction] = {}      # by statement
        self.constants = ConstantChooser(scop, options.sizes)
        self.local_copies: dict[str, tuple[str, LocalBuffer]] = {}   # seed 001 moves
        self.local: LocalPlanBuilder | None = None   # the kernel's seed 001 plan, being built
        self.local_avoid: dict[str, str] = {}    # arrays not to localise, with the reason
        self.specialised: dict[str, int] = {}    # sizes a step loop's L was sized at
        self.text = SuperText(scop)
        for g in walk_items(plan.items):
            if isinstance(g, ThreadGroup) and g.reduction:
                for st in g.statements:
                    self.reductions[st] = TreeReduction(
                        st, reduction_operator(scop.statement(st).body), g.dims[0][st][0],
                        f"pm_acc_{st}", f"pm_red_{st}",
                        partners=tuple(g.statements[1:]) if st == g.statements[0] else (),
                        lead=st == g.statements[0])

    def _grafts(self, s: str) -> tuple[str, ...]:
        """The grafted statements of tree reduction ``s`` (a partner has no ``fin``)."""
        return ("ini", "fin") if self.reductions[s].lead else ("ini",)

    def grafted(self) -> dict[str, TreeReduction]:
        return {f"pm_r{k}_{s}": r for s, r in self.reductions.items() for k in self._grafts(s)}

    def domain(self) -> isl.UnionSet:
        """The Scop's domain plus one initialising and one final statement per tree
        reduction: the statement's instances with the reduction iterator fixed to 0."""
        dom = self.scop.domain
        for s, r in self.reductions.items():
            d = self.scop.statement(s).domain
            d = d.project_out(isl.dim_type.set, r.loop, 1).insert_dims(isl.dim_type.set, r.loop, 1)
            d = d.fix_val(isl.dim_type.set, r.loop, isl.Val(0))
            for k in self._grafts(s):
                dom = dom.union(isl.UnionSet.from_set(d.set_tuple_name(f"pm_r{k}_{s}")))
        return dom

    def _expand(self, stmts) -> list[str]:
        out = []
        for s in stmts:
            out.append(s)
            if s in self.reductions:
                out += [f"pm_r{k}_{s}" for k in self._grafts(s)]
        return out

    # -- isl objects from plan combos (positional iterator names: i0, i1, ...) --------

    def _tuple(self, s: str) -> str:
        base = s.split("_", 2)[2] if s.startswith(("pm_rini_", "pm_rfin_")) else s
        n = len(self.scop.statement(base).iterators)
        return f"{s}[{', '.join(f'i{k}' for k in range(n))}]"

    def _mupa(self, members: list[dict[str, str]]) -> isl.MultiUnionPwAff:
        """One member per dict: statement -> affine text in i0, i1, ... (a tree
        reduction's grafted statements follow their statement unless named)."""
        members = [{**{g: e for s, e in m.items() for g in self._expand([s])[1:]}, **m}
                   for m in members]
        parts = ", ".join("{ " + "; ".join(f"{self._tuple(s)} -> [({e})]" for s, e in m.items())
                          + " }" for m in members)
        return isl.MultiUnionPwAff(kir.mupa_text(kir.isl_params(self.scop.size_params, parts),
                                                 parts))

    @staticmethod
    def _loop(loop: tuple[int, int]) -> str:
        return f"{'-' if loop[1] < 0 else ''}i{loop[0]}"

    def _filter(self, stmts: list[str], conds: dict[str, list[str]] | None = None
                ) -> isl.UnionSet:
        parts = []
        for s in self._expand(stmts):
            c = " and ".join((conds or {}).get(s, [])) or "1 = 1"
            parts.append(f"{self._tuple(s)} : {c}")
        text = '; '.join(parts)
        return isl.UnionSet(f"[{kir.isl_params(self.scop.size_params, text)}] -> {{ {text} }}")

    # -- tree construction -----------------------------------------------------------

    def items(self, node: isl.ScheduleNode, items: list, in_kernel: bool, step: bool = False
              ) -> isl.ScheduleNode:
        """Build ``items`` at ``node`` (a leaf); return the node at the same position.
        Inside a kernel, consecutive items are separated by barriers, and a step loop's
        body ends with one."""
        if len(items) == 1:
            node = self.item(node, items[0], in_kernel)
            if in_kernel and step:
                depth = node.get_tree_depth()
                node = node.graft_after(self.sync(node))
                node = node.ancestor(node.get_tree_depth() - depth)
            return node
        lst = isl.UnionSetList.alloc(self.scop.context.get_ctx(), len(items))
        for it in items:
            lst = lst.add(self._filter(it.statements))
        node = node.insert_sequence(lst)
        depth = node.get_tree_depth()
        for k, it in enumerate(items):
            child = self.item(node.child(k).child(0), it, in_kernel)
            if in_kernel and (step or k < len(items) - 1):
                child = child.graft_after(self.sync(child))
            node = child.ancestor(child.get_tree_depth() - depth)
        return node

    def sync(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        from ..memory.plan import sync_graft
        return sync_graft(self.scop, node, self.namer.sync())

    def item(self, node: isl.ScheduleNode, it, in_kernel: bool) -> isl.ScheduleNode:
        if isinstance(it, StepLoop):
            band = node.insert_partial_schedule(
                self._mupa([{s: self._loop(it.loop[s]) for s in it.statements}]))
            band = atomic(band)
            if not in_kernel:
                self.host_loops.append(self.plan.loop_text(it.loop))
            self.steps.append(it.loop)
            local = self.step_local(band.child(0), it) if in_kernel else None
            node = self.items(band.child(0), it.body, in_kernel, step=in_kernel)
            if local is not None:
                node = self.graft_step_local(node, local)
            node = node.parent()
            self.steps.pop()
            return node
        if isinstance(it, Kernel):
            return self.kernel(node, it)
        return self.thread_group(node, it)

    def points_per_thread(self, k: Kernel, tiles: list[int], blk: tuple[int, int, int]
                          ) -> tuple[int, ...]:
        """Points of the block tile each thread computes along each block loop: ⌈T/B⌉
        on the axis running that loop, 1 on a block loop no thread axis runs."""
        return tuple(max([-(-t // blk["xyz".index(a)]) for a in axes] + [1])
                     for t, axes in zip(tiles, tied_axes(k)))

    def kernel(self, node: isl.ScheduleNode, k: Kernel) -> isl.ScheduleNode:
        """Kernel ``k`` at ``node``: its mark, block filter over the tiled block loops
        ``⌊Θ_out/TL⌋`` (seed 003 §4.2), buffers, registers and ``__constant__``
        arrays, and its thread-level items below."""
        name = f"{MARK_PREFIX}{len(self.plans)}"
        self.kernel_name, self.kernel_domain = name, node.get_domain()
        if self.observer is not NO_OBSERVER:
            self.observer.super_kernel(self.kernel_event(node, k, name))
        tiles, blk = tiles_and_threads(k, self.options)
        self.block = blk
        self.kernel_block = list(k.block)
        members: list[MappedMember] = []
        domain = node.get_domain()
        block_axes: list[str] = []
        host = node.get_prefix_schedule_union_map().intersect_domain(domain)
        n_host = node.get_schedule_depth()
        point = self.thread_points(k, host)
        constant = self.constants.consider(strip_generated(name), domain, point, n_host) \
            if point is not None and (k.block or thread_dims(k)) else (set(), [])
        if k.block:
            tile_sched = self._mupa([{s: f"floor(({self._loop(b[s])})/{t})" for s in k.statements}
                                     for b, t in zip(k.block, tiles)])
            # extract_set: statements without instances give an empty range without a
            # space (fuzz findings 17, 21)
            rng = isl.UnionMap.from_multi_union_pw_aff(tile_sched).intersect_domain(
                domain).range().extract_set(tile_sched.get_space()).intersect_params(
                self.scop.context.align_params(tile_sched.get_space()))
            filt = domain
            for j, (b, t) in enumerate(zip(k.block, tiles)):
                axis = "xyz"[len(k.block) - 1 - j]
                tmin, tmax = rng.dim_min(j).coalesce(), rng.dim_max(j).coalesce()
                members.append(MappedMember(axis, t, blk["xyz".index(axis)],
                                            self.plan.loop_text(b), tmin, tmax))
                bid = block_id_on(domain, axis)
                off = isl.UnionPwAff.pw_aff_on_domain(domain, tmin)
                filt = filt.intersect(tile_sched.get_at(j).sub(off).sub(bid).zero_union_set())
                block_axes.append(axis)
            node = node.insert_partial_schedule(tile_sched)
            for j in range(len(k.block)):
                node = node.band_member_set_coincident(j, 1)
            node = atomic(node)
            self.memory = self.block_memory(strip_generated(name), k, node.child(0), host)
            self.memory.constants(*constant)
            self.start_local(k, domain, point, n_host, constant[0])
            depth = node.get_tree_depth()
            body = self.items(node.child(0), k.body, True)
            self.memory.registers(k, domain, point, n_host, tiles)
            body = self.memory.graft_block(body)
            node = body.ancestor(body.get_tree_depth() - depth)
            node = node.insert_filter(filt.intersect_params(block_bounds_set(block_axes)))
            if self.memory.mem.buffers:
                node = guard_grafts(node.child(0).child(0)).parent().parent()
        else:
            self.memory = self.block_memory(strip_generated(name), k, None, host)
            self.memory.constants(*constant)
            self.start_local(k, domain, point, n_host, constant[0])
            node = self.items(node, k.body, True)
            self.memory.registers(k, domain, point, n_host, tiles)
        mem, self.memory = self.memory.result(), None
        kp = KernelPlan(name, members, [], list(k.statements), memory=mem,
                        threads=blk, text=self.summary(k, tiles, blk),
                        member_points=False, local=self.end_local(k, strip_generated(name)),
                        specialised=self.specialised)
        self.specialised = {}
        if per_thread_tile(self.options.tile_levels, self.options.block) is not None:
            per = self.points_per_thread(k, tiles, blk)
            kp = replace(kp, per_thread=per, text=kp.text + "; per thread: " + " x ".join(
                map(str, per)) + " point(s) strided by the block size")
        self.plans[name] = kp
        return node.insert_mark(isl.Id(name))

    def kernel_event(self, node: isl.ScheduleNode, k: Kernel, name: str) -> SuperKernelEvent:
        """What the observer learns of kernel ``k`` before it is built: its domain,
        host prefix, block loops ``Θ_out`` untiled, and its sizes without ``--tile``."""
        domain = node.get_domain()
        plain = self.options.with_(tile=None, tile_levels=())
        defaults, _ = tiles_and_threads(k, plain)
        block = (self._mupa([{s: self._loop(b[s]) for s in k.statements} for b in k.block])
                 if k.block else None)
        return SuperKernelEvent(
            name, tuple(k.statements), domain,
            node.get_prefix_schedule_union_map().intersect_domain(domain), block,
            tuple(tuple(axes) for axes in tied_axes(k)), default_block(k, self.options),
            tuple(defaults))

    def group_event(self, g: ThreadGroup, chunk: isl.MultiUnionPwAff,
                    bufs: list[BufferPlan]) -> GroupBuffersEvent:
        """The thread-tile buffers ``bufs`` of group ``g`` for the observer: the block
        loops its thread tiles ``chunk`` split, and the loop its sub-tile tiles."""
        sub = chunk.dim(isl.dim_type.set) > len(g.dims)
        split = tuple(j for j, b in enumerate(self.kernel_block)
                      if any(all(b.get(s) == d[s] for s in g.statements) for d in g.dims))
        loop = None
        if sub:
            loops = {s: lp for s, lp in self.free_loops(g).items() if lp}
            dom = self.kernel_domain.intersect(self._filter(list(loops)))
            loop = isl.UnionMap.from_multi_union_pw_aff(self._mupa([loops])).intersect_domain(dom)
        return GroupBuffersEvent(self.kernel_name, tuple(g.statements),
                                 tuple(b.name for b in bufs), split, sub, loop)

    def thread_points(self, k: Kernel, host: isl.UnionMap) -> isl.UnionMap | None:
        """Each instance of kernel ``k`` -> its thread point (seed 004 §4.2 on seed
        003's tree): the host loops, the block loops ``Θ_out`` (not tiled), then the
        loops of its thread group on thread x, y, z (``0`` where the group maps fewer:
        those threads are filtered to 0).  One tuple is a point of one thread of one
        launch (block ``⌊Θ_out/TL⌋``, thread ``dims mod blockDim``; a thread may own
        several), as the single mapping's host loops and mapped members are, for :func:`.memory.registers.plan_registers`
        and :class:`.memory.constant.ConstantChooser`; the step loops, run by every
        thread, are not part of it.  None when a statement of ``k`` is in no thread
        group (then neither registers nor constants are planned)."""
        groups = [g for g in walk_items(k.body) if isinstance(g, ThreadGroup)]
        members = [{s: self._loop(b[s]) for s in k.statements} for b in k.block]
        for a in range(3):
            members.append({s: self._loop(g.dims[a][s]) if a < len(g.dims) else "0"
                            for g in groups for s in g.statements})
        if {s for g in groups for s in g.statements} != set(k.statements):
            return None
        mupa = isl.UnionMap.from_multi_union_pw_aff(self._mupa(members))
        return host.flat_range_product(mupa.intersect_domain(host.domain()))

    def block_memory(self, kname: str, k: Kernel, body: isl.ScheduleNode | None,
                     host: isl.UnionMap) -> "SuperMemory":
        """Plan the kernel's block-level buffers (``body``: the leaf below its block
        tile band, None for a one-block kernel); arrays whose block footprint grows
        with the problem size are left to its thread groups
        (:meth:`SuperMemory.plan_group`)."""
        mem = SuperMemory(self, kname, host, body.get_schedule_depth() - len(k.block)
                           if body is not None else 0, len(k.block))
        if self.options.shared == "none":
            return mem
        if any(isinstance(g, ThreadGroup) and g.reduction for g in walk_items(k.body)):
            return mem.refuse("its tree reductions keep their own shared memory; buffers "
                              "around them are not planned")
        if body is None:
            return mem.refuse("one block runs the whole kernel (no block-level loop); "
                              "buffers are planned per block tile")
        return mem.plan_block(body)

    def reduction_group(self, node: isl.ScheduleNode, g: ThreadGroup) -> isl.ScheduleNode:
        """A tree reduction: the source order of its statements (reduction loop
        innermost, shared by all of them) with ``pm_rini`` before and ``pm_rfin`` after
        that loop, only the statements filtered by ``loop ≡ threadIdx.x (mod
        blockDim.x)``; every thread runs the grafted statements, so their barriers are
        uniform across the block.  Several statements (a fused group) accumulate in one
        pass, and the first one's ``pm_rfin`` reduces all their registers."""
        for s in g.statements:
            self.reductions[s] = replace(self.reductions[s], block=self.block)
        orig = []
        nests = self.plan.nests
        width = max(2 * len(nests[s].loops) + 1 for s in g.statements)
        for d in range(width):
            m: dict[str, str] = {}
            for s in g.statements:
                nest = nests[s]
                r = len(nest.loops) - 1
                grafts = [f"pm_r{k}_{s}" for k in self._grafts(s)]
                if d % 2 == 0:
                    b = 3 * nest.betas[d // 2] if d // 2 < len(nest.betas) else 0
                    m[s] = str(b)
                    for gname in grafts:
                        off = (-1 if "rini" in gname else 1) if d == 2 * r else 0
                        m[gname] = "0" if d > 2 * r else str(b + off)
                else:
                    lp = self._loop(nest.loops[d // 2]) if d // 2 < len(nest.loops) else "0"
                    m[s] = lp
                    for gname in grafts:
                        m[gname] = lp if d < 2 * r else "0"
            orig.append(m)
        node = atomic(node.insert_partial_schedule(self._mupa(orig)))
        bx = self.block[0]
        conds = {s: [cyclic_condition(self._loop(g.dims[0][s]), THREAD_IDS["x"], bx)]
                 + [thread_zero(a) for a in thread_axes(self.block) if a != "x"]
                 for s in g.statements}
        return node.insert_filter(self._filter(g.statements, conds).intersect_params(
            thread_bounds_set(self.block)))

    def thread_group(self, node: isl.ScheduleNode, g: ThreadGroup) -> isl.ScheduleNode:
        if g.reduction:
            return self.reduction_group(node, g)
        wanted = self.memory is not None and self.memory.planned and bool(self.memory.deferred)
        chunk = self.thread_tiles(node, g) if wanted else None
        bufs = self.memory.plan_group(node, g, chunk) if chunk is not None else []
        if wanted and self.observer is not NO_OBSERVER:
            self.observer.thread_tiles(ThreadTilesEvent(self.kernel_name,
                                                        tuple(g.statements), chunk))
            if bufs:
                self.observer.group_buffers(self.group_event(g, chunk, bufs))
        nests = self.plan.nests
        width = max(2 * len(nests[s].loops) + 1 for s in g.statements)
        orig = []
        for d in range(width):
            m = {}
            for s in g.statements:
                nest = nests[s]
                if d % 2 == 0:
                    m[s] = str(nest.betas[d // 2]) if d // 2 < len(nest.betas) else "0"
                else:
                    m[s] = self._loop(nest.loops[d // 2]) if d // 2 < len(nest.loops) else "0"
            orig.append(m)
        node = atomic(node.insert_partial_schedule(self._mupa(orig)))
        conds: dict[str, list[str]] = {s: [] for s in g.statements}
        axes = "xyz"
        for d, ax in zip(g.dims, axes):
            b = self.block["xyz".index(ax)]
            for s in g.statements:
                conds[s].append(cyclic_condition(self._loop(d[s]), THREAD_IDS[ax], b))
        for ax in axes[len(g.dims):]:
            if ax in thread_axes(self.block):
                for s in g.statements:
                    conds[s].append(thread_zero(ax))
        if g.dims:
            members = [{s: self._loop(d[s]) for s in g.statements} for d in reversed(g.dims)]
            node = node.insert_partial_schedule(self._mupa(members))
            for j in range(len(g.dims)):
                node = node.band_member_set_coincident(j, 1)
            node = atomic(node)
        if bufs:
            node = atomic(node.insert_partial_schedule(chunk))
            depth = node.get_tree_depth()
            node = node.child(0)
        node = node.insert_filter(self._filter(g.statements, conds).intersect_params(
            thread_bounds_set(self.block)))
        node = self.localise_group(node, g)
        if bufs:
            node = graft_copies(self.scop, node, bufs, self.block, self.namer)
            node = node.ancestor(node.get_tree_depth() - depth)
        return node

    def thread_tiles(self, node: isl.ScheduleNode, g: ThreadGroup) -> isl.MultiUnionPwAff | None:
        """The thread tiles of a thread group built at ``node``: ``⌊Θ_thread /
        blockDim⌋`` per thread dimension (outermost first), one point per thread in
        each tile, then, when legal, a sub-tile ``⌊L / T⌋`` of a loop ``L`` each
        thread runs sequentially (gemm's ``k``; ``T`` from ``--tile`` after the block
        loops, else 16).  Above the group's thread filter they bound the data a block
        touches per tile, as the single mapping's sub-tiles do (seed 000 §4.1).  The
        thread tiles are legal because the thread dimensions carry no dependence
        (Lemma 1); the sub-tile is kept only when isl finds that no dependence
        between instances of one prefix goes backwards in the tiles (checked for the
        thread tiles too, as a guard).  None without thread dimensions, or when the
        check fails."""
        if not g.dims:
            return None
        members = [{s: f"floor(({self._loop(d[s])})/{self.block['xyz'.index(ax)]})"
                    for s in g.statements} for d, ax in reversed(list(zip(g.dims, "xyz")))]
        if not self._tiles_legal(node, members):
            return None
        sub = self.sub_tile(g)
        if sub is not None and self._tiles_legal(node, members + [sub]):
            members.append(sub)
        return self._mupa(members)

    def sub_tile(self, g: ThreadGroup) -> dict[str, str] | None:
        """Per statement of ``g``, ``⌊L / T⌋`` of its outermost loop that is neither a
        thread, a block nor a step loop (``0`` for a statement without one); None when
        no statement has such a loop."""
        given = list(self.options.tile or ())[len(self.kernel_block):]
        size = given[0] if given else DEFAULT_SUB_TILE
        out = {s: f"floor(({lp})/{size})" if lp else "0"
               for s, lp in self.free_loops(g).items()}
        return out if any(v != "0" for v in out.values()) else None

    def free_loops(self, g: ThreadGroup) -> dict[str, str | None]:
        """Per statement of ``g``, its outermost loop that is neither a thread, a block
        nor a step loop (the loop :meth:`sub_tile` tiles), None without one."""
        out: dict[str, str | None] = {}
        for s in g.statements:
            free = self._unmapped(g, s)
            out[s] = self._loop(free[0]) if free else None
        return out

    def _tiles_legal(self, node: isl.ScheduleNode, members: list[dict[str, str]]) -> bool:
        """No dependence between two instances of one prefix (host, block tile, step
        loops) goes from a later tile to an earlier one (isl, on the plan's
        dependences)."""
        from ..memory.plan import prefix_map
        validity = getattr(self.plan, "validity", None)
        if validity is None:
            return False
        pre = prefix_map(node)
        dom = pre.domain()
        deps = validity.align_params(pre.get_space()).intersect_domain(dom).intersect_range(dom)
        deps = deps.intersect(pre.apply_range(pre.reverse()))
        if deps.is_empty():
            return True
        tiles = isl.UnionMap.from_multi_union_pw_aff(self._mupa(members)).intersect_domain(dom)
        pairs = tiles.reverse().apply_range(deps).apply_range(tiles)
        if pairs.is_empty():
            return True
        m = isl.Map.from_union_map(pairs)
        return m.intersect(isl.Map.lex_gt(m.domain().get_space())).is_empty()

    def summary(self, k: Kernel, tiles: list[int], blk: tuple[int, int, int]) -> str:
        text = self.plan.loop_text
        parts = [f"{text(b)}→block.{'xyz'[len(k.block) - 1 - j]} (tile {t})"
                 for j, (b, t) in enumerate(zip(k.block, tiles))] or ["one block"]
        inner = []

        def walk(items):
            for it in items:
                if isinstance(it, StepLoop):
                    inner.append(f"step {text(it.loop)} {{")
                    walk(it.body)
                    inner.append("}")
                elif isinstance(it, ThreadGroup):
                    inner.append("[" + ",".join(it.statements) + "] " + (
                        ", ".join(f"{text(d)}→thread.{ax}" for d, ax in zip(it.dims, "xyz"))
                        or "one thread") + (" (tree reduction)" if it.reduction else ""))
        walk(k.body)
        return ("superposition: " + ", ".join(parts) + "; threads: " +
                " | ".join(inner).replace("{ |", "{").replace("| }", "}"))


def map_superposition(scop: Scop, plan: SuperPlan, options: CompileOptions,
                      observer: MappingObserver = NO_OBSERVER) -> MappingResult:
    """The superposed schedule tree of ``plan`` with one plan per kernel (seed 003
    §4.2-4.3)."""
    mapper = SuperMapper(scop, plan, options, observer)
    dom = mapper.domain().align_params(size_param_space(scop))
    node = isl.Schedule.from_domain(dom).get_root().child(0)
    node = mapper.items(node, plan.items, False)
    return MappingResult(with_id_params(node.get_schedule(), scop), mapper.plans,
                         mapper.host_loops,
                         mapper.namer.copies, mapper.local_copies,
                         constants=mapper.constants.decls(), reductions=mapper.grafted(),
                         size_dependent=mapper.constants.size_dependent)
