"""The single-schedule mapping (seed 004 §4.1, PPCG's mapping that seed 003 §4
improves on): schedule tree -> tiles, thread blocks, threads, host loops.

* The schedule tree is walked from the root.  A band whose leading members are
  coincident (parallel) becomes a kernel: its first ``m <= 3`` coincident members
  are tiled (tile sizes ``T``); the tile loops map to ``blockIdx`` (one block per
  tile, ``b = tile - tile_min``) and the point loops to ``threadIdx`` with a cyclic
  distribution (``point ≡ t (mod B)``, seed 004 Fig. 9), the innermost mapped
  member to ``x``.  Remaining band members and everything below run sequentially
  inside each thread; with buffers (seed 000 §4.1) or per-thread tiles they are
  sub-tiled.
* A band with no parallel leading member that encloses parallel work becomes host
  loops (e.g. time loops): the kernel(s) below are launched once per iteration.
* A subtree without any parallelism becomes a one-thread kernel, so every
  statement runs.

The mapping is expressed *in isl*: block and thread ids are parameters
(``pm_bx``, ``pm_tx``, ...) constrained by filter nodes, so isl's AST generator
produces the guards and strided loops and handles degenerate dimensions.  Mark
nodes delimit kernels; :mod:`polymagic.lower` turns the tree into Kernel IR.
"""
from __future__ import annotations

import math
from dataclasses import replace

import islpy as isl

from ..errors import OptionsError
from ..isl_util import has_parallelism, leading_coincident
from ..memory.constant import ConstantChooser
from ..memory.localcode import LocalBuffer
from ..memory.plan import (CopyNamer, KernelMemory, atomic, drop_register_buffers,
                           graft_copies, is_decision_about, keep_private_in_registers,
                           memory_note, plan_kernel_memory)
from ..memory.registers import plan_kernel_registers
from ..names import strip_generated
from ..notes import Note, Stage
from ..options import CompileOptions, per_thread_tile
from ..schedule import ScheduleResult
from ..scop import Scop
from ..thread_space import (block_bounds_set, block_id_on, cyclic_filter, thread_bounds_set,
                            thread_id_on)
from ..schedule.timeblock import TIME_TILES_MARK
from .full_tiles import full_tile_instances, full_tiles
from .grid_fill import GridFill, grid_fill
from .register_tiles import compute_bound, split_fixed_statements
from .observer import NO_OBSERVER, BandEvent, MappingObserver
from .result import (DEFAULT_BLOCKS, DEFAULT_SUB_TILE, DEFAULT_TILES, MARK_PREFIX, KernelPlan,
                     MappedMember, MappingResult)
from .time_kernels import TimeKernels
from .tree import (guard_grafts, is_rectangular, loop_names, member_text, size_param_space,
                   statement_names, val_list, with_id_params)


class SingleMapper(TimeKernels):
    """Walks a schedule tree and maps it (see the module docstring); the time-loop
    kernels are :class:`.time_kernels.TimeKernels`'.  ``observer`` sees each band
    before it is tiled (:meth:`parallel_kernel`)."""

    def __init__(self, scop: Scop, options: CompileOptions,
                 observer: MappingObserver = NO_OBSERVER):
        self.scop = scop
        self.options = options
        self.observer = observer
        self.plans: dict[str, KernelPlan] = {}
        self.host_loops: list[str] = []
        self.namer = CopyNamer()
        self.local_copies: dict[str, tuple[str, LocalBuffer]] = {}
        self.constants = ConstantChooser(scop, options.sizes)
        #: private local scalars (ScheduleResult.private_temps): registers only
        self.private: frozenset[str] = frozenset()
        # (block tile, points per thread or None) chosen for the band being mapped, by default
        self.band_default: tuple[tuple[int, ...], tuple[int, ...] | None] | None = None
        #: the default tiles of the band being mapped (:mod:`.grid_fill`)
        self.band_fill: GridFill | None = None
        #: a default tile was chosen at the sizes' values (or for want of them)
        self.sizes_read = False

    def new_name(self) -> str:
        return f"{MARK_PREFIX}{len(self.plans)}"

    def visit(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        t = node.get_type()
        if t == isl.schedule_node_type.band:
            if leading_coincident(node) > 0:
                return self.parallel_kernel(node)
            if not has_parallelism(node):
                return self.single_kernel(node)
            if node.band_n_member() > 1:
                node = node.band_split(1)
            if self.time_in_block(node):
                return self.time_kernel(node)
            self.host_loops.append(member_text(node.band_get_partial_schedule(), 0))
            return self.visit(node.child(0)).parent()
        if t == isl.schedule_node_type.leaf:
            return self.single_kernel(node)
        if t in (isl.schedule_node_type.sequence, isl.schedule_node_type.set):
            for i in range(node.n_children()):
                node = self.visit(node.child(i)).parent()
            return node
        if node.n_children() == 0:
            return node
        if not has_parallelism(node) and t == isl.schedule_node_type.filter:
            return self.visit(node.child(0)).parent()
        if t == isl.schedule_node_type.mark and node.mark_get_id().get_name() == TIME_TILES_MARK:
            return self.time_tile_kernel(node.delete())
        return self.visit(node.child(0)).parent()

    def single_kernel(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        name = self.new_name()
        seq = []
        if node.get_type() == isl.schedule_node_type.band:
            mupa = node.band_get_partial_schedule()
            seq = [member_text(mupa, i) for i in range(node.band_n_member())]
        node, self.plans[name] = self.localise(node, KernelPlan(name, [], seq,
                                                                statement_names(node)),
                                               loop_names(node))
        return node.insert_mark(isl.Id(name))

    def localise(self, node: isl.ScheduleNode, plan: KernelPlan,
                 loops: list[str] | None = None) -> tuple[isl.ScheduleNode, KernelPlan]:
        """``--localise LOOP[:w]`` (seed 001): keep what a sequential loop of this
        kernel reuses in L (see :mod:`.memory.localcode`); without it, the one of
        ``loops`` (the kernel's sequential loops inside a thread) the analytic model
        picks, unless ``--no-localise``.  ``node`` keeps its place; returns it and the
        plan with its localisation."""
        from ..memory.localcode import auto_localise, localise_kernel
        buffered = {r for b in (plan.memory.buffers if plan.memory else []) for r in b.refs}
        if self.options.localise is None:
            if not (self.options.localise_auto and loops):
                return node, plan
            regs = {r.array for r in (plan.memory.registers if plan.memory else [])}
            buffered |= {(s.name, k) for s in self.scop.statements
                         for k, a in enumerate(s.accesses) if a.array in regs}
            node, local = auto_localise(self.scop, node, strip_generated(plan.name), plan.block,
                                        self.options, buffered, self.local_copies,
                                        member_text, loops)
            return node, replace(plan, local=local)
        node, local = localise_kernel(self.scop, node, strip_generated(plan.name), plan.block,
                                      self.options, buffered, self.local_copies,
                                      member_text)
        return node, replace(plan, local=local)

    def tile_sizes(self, m: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Tile sizes (outermost member first) and threads per member (outermost first)."""
        default = self.band_default[0] if self.band_default else DEFAULT_TILES[m]
        tiles = list(self.options.tile or default)
        tiles = (tiles + list(default))[:m] if len(tiles) < m else tiles[:m]
        per = self.per_thread
        if per is not None:
            # seed 000 §4.1, inner tiles per thread: T_j / t_j threads along member j,
            # each owning t_j points (cyclically, point ≡ thread mod B_j)
            # a kernel mapping fewer loops takes the leading sizes, as --tile's first level
            pts = list(per[:m]) + [1] * (m - len(per[:m]))
            threads = [max(1, tiles[j] // pts[j]) for j in range(m)]
            if math.prod(threads) > 1024:
                raise OptionsError(f"--tile: a {m}-d block tile {tiles} with "
                                   f"{pts} points per thread needs {math.prod(threads)} "
                                   "threads per block, at most 1024")
            return tuple(tiles), tuple(threads)
        blk_xyz = list(self.options.block or DEFAULT_BLOCKS[m])
        blk_xyz = (blk_xyz + [1, 1, 1])[:3]
        # axis of member j (outermost first): innermost member -> x
        threads = [min(blk_xyz[m - 1 - j], tiles[j]) for j in range(m)]
        return tuple(tiles), tuple(threads)

    @property
    def per_thread(self) -> tuple[int, ...] | None:
        """Points per thread along the block-tile members (``--tile T:t``), or None."""
        if self.band_default:
            return self.band_default[1]         # None: default tiles without registers
        return per_thread_tile(self.options.tile_levels, self.options.block)

    def default_register_tile(self, node: isl.ScheduleNode) -> None:
        """Issue 16: register tiles by default on a compute-bound band
        (:func:`.register_tiles.compute_bound`) when no tile, block or per-thread
        size is given; sets :attr:`band_default` for the band being mapped."""
        self.band_default = None
        self.band_fill = None
        o = self.options
        if o.tile is not None or o.block is not None or o.tile_levels or not o.registers \
                or o.shared == "none":
            return
        n = node.band_n_member()
        mupa = node.band_get_partial_schedule()
        if compute_bound(self.scop, mupa, node.get_domain(),
                         min(leading_coincident(node), 3), n, node.band_get_permutable()) \
                and is_rectangular(mupa):
            # the tiles that fill the grid at the given sizes (seed 000 §4.1)
            fill = grid_fill(self.scop, mupa, node.get_domain(), o.sizes, o.device_sms)
            self.sizes_read = self.sizes_read or o.device_sms > 0
            self.band_fill = fill
            if fill.points is not None or fill.tile != DEFAULT_TILES[2]:
                self.band_default = (fill.tile, fill.points)

    def jam_point_band(self, inner: isl.ScheduleNode, m: int, s: int) -> isl.ScheduleNode:
        """Unroll-and-jam for per-thread tiles (seed 000 §4.1 register tiling, seed 004
        §4.3 ``#pragma unroll``): the point band ``[p_1..p_m, q_1..q_s]`` (mapped
        members, then the sub-tiled sequential ones) becomes ``[q_1..q_s, p_1..p_m]``,
        so each thread's constant-trip point loops sit innermost around the statement
        and a shared value loaded for one ``q`` is reused across the register tile.
        Legal because the tiled band is permutable (any order of its members is)."""
        mupa = inner.band_get_partial_schedule()
        order = list(range(m, m + s)) + list(range(m))
        upas = isl.UnionPwAffList.alloc(inner.get_ctx(), m + s)
        for i in order:
            upas = upas.add(mupa.get_at(i))
        new = isl.MultiUnionPwAff.from_union_pw_aff_list(mupa.get_space(), upas)
        node = inner.delete().insert_partial_schedule(new)
        node = node.band_set_permutable(1)
        return atomic(node)

    def parallel_kernel(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        """A kernel from a band with coincident leading members (the observer sees the
        band first)."""
        if self.observer is not NO_OBSERVER:
            self.observer.band(BandEvent(self.new_name(), node.band_get_partial_schedule(),
                                         node.get_domain(),
                                         node.get_prefix_schedule_union_map()))
        return self._parallel_kernel(node)

    def _parallel_kernel(self, node: isl.ScheduleNode, reuse: KernelMemory | None = None
                         ) -> isl.ScheduleNode:
        """A kernel from a band with ``m`` leading coincident members: block tiles,
        threads, and (for buffers, seed 000 §4.1, or per-thread tiles) the sequential
        members sub-tiled.  When the sub-tiles end up holding no buffer the band is
        mapped again without them, reusing the memory plan (``reuse``): a sub-tile
        loop staging nothing (and jamming no per-thread point loops) only costs isl's
        AST generator (fuzz finding 36: tiles 33,34 over a three-statement band with
        parametric members, over 40M operations with the sub-tile band, 1 s without)."""
        name = self.new_name()
        if reuse is None:
            self.default_register_tile(node)
        original = node
        n = node.band_n_member()
        m = min(leading_coincident(node), 3)
        full = node.band_get_partial_schedule()
        host_prefix = node.get_prefix_schedule_union_map()
        rectangular = is_rectangular(full) and is_rectangular(
            node.get_prefix_schedule_multi_union_pw_aff())
        # sub-tile the sequential members too when buffers may be used (seed 000 §4.1),
        # or when each thread owns a per-thread tile (the point loops jam inside them)
        sub = self.options.shared != "none" or self.per_thread is not None
        s = n - m if sub and reuse is None and n > m and node.band_get_permutable() else 0
        seq = [member_text(full, i) for i in range(m + s, n)]
        if n > m + s:
            node = node.band_split(m + s)
        tiles, threads = self.tile_sizes(m)
        tiles = tiles + self.sub_tile_sizes(m, s)
        space = node.band_get_space()
        node = node.band_tile(isl.MultiVal.from_val_list(space, val_list(tiles)))
        node = atomic(atomic(node).child(0)).parent()
        domain = node.get_domain()
        tile_sched = node.band_get_partial_schedule()
        point_sched = node.child(0).band_get_partial_schedule()
        # extract_set, not from_union_set: a band whose statements have no instances
        # (a loop that never runs) has an empty range without a space
        rng = isl.UnionMap.from_multi_union_pw_aff(tile_sched).intersect_domain(
            domain).range().extract_set(tile_sched.get_space()).intersect_params(
            self.scop.context)
        members: list[MappedMember] = []
        block_filt, thread_filt = domain, domain
        axes: list[str] = []
        for j in range(m):
            axis = "xyz"[m - 1 - j]
            tmin = rng.dim_min(j).coalesce()
            tmax = rng.dim_max(j).coalesce()
            members.append(MappedMember(axis, tiles[j], threads[j], member_text(full, j),
                                        tmin, tmax))
            b = block_id_on(domain, axis)
            t = thread_id_on(domain, axis)
            offset = isl.UnionPwAff.pw_aff_on_domain(domain, tmin)
            block_filt = block_filt.intersect(
                tile_sched.get_at(j).sub(offset).sub(b).zero_union_set())
            thread_filt = thread_filt.intersect(
                cyclic_filter(point_sched.get_at(j), t, threads[j], tiles[j]))
            axes.append(axis)
        plan = KernelPlan(name, members, seq, statement_names(node), sub_tiles=[
            f"{member_text(full, j)} (sub-tile {tiles[j]})" for j in range(m, m + s)])
        if s:
            node = node.band_split(m)
        depth = node.get_tree_depth()
        outer = node.child(0)                       # sub-tile band, or the point band
        inner = outer.child(0) if s else outer
        if reuse is not None:
            plan = replace(plan, memory=reuse)
        elif self.options.shared != "none" and not rectangular:
            plan = replace(plan, memory=KernelMemory(decisions=(memory_note(
                strip_generated(name), None, "no buffers: the tiles are skewed (band or host loops are not "
                "plain loop iterators); buffers over skewed tiles are not planned yet"),)))
        elif self.options.shared != "none":
            plan = replace(plan, memory=plan_kernel_memory(self.scop, outer, inner, self.options,
                                                           strip_generated(name), host_prefix, m))
        plan = replace(plan, grid_fill=self.band_fill)
        if self.band_fill is not None and reuse is None:
            plan = replace(plan, memory=(plan.memory or KernelMemory()).noted(Note(
                Stage.MAPPING, self.band_fill.text(), kernel=strip_generated(name))))
        if self.options.registers and m and reuse is None:
            mapped = full.drop_dims(isl.dim_type.set, m, n - m) if n > m else full
            point = host_prefix.flat_range_product(isl.UnionMap.from_multi_union_pw_aff(mapped))
            here = set(plan.statements)
            private = frozenset(t for t in self.private if all(
                s.name in here for s in self.scop.statements
                if any(a.array == t for a in s.accesses)))
            if self.options.shared == "all":
                # every partition buffered, a private scalar's too (seed 000 §3.1.4: a
                # block-local buffer never loaded nor stored), unless its buffer was
                # dropped for size: then it stays a private register, never in memory
                buffered = {b.array for b in (plan.memory.buffers if plan.memory else ())}
                private = frozenset(t for t in private if t not in buffered)
            regs, lines = plan_kernel_registers(self.scop, domain, point, strip_generated(name),
                                                [mm.loop for mm in members],
                                                [member_text(full, i) for i in range(m, n)],
                                                n_host=node.get_schedule_depth(),
                                                private=private)
            mem = replace(plan.memory or KernelMemory(), registers=regs).noted(*lines)
            mem, _ = drop_register_buffers(mem, strip_generated(name), self.options,
                                           math.prod(-(-mm.tile // mm.threads) for mm in members))
            plan = replace(plan, memory=keep_private_in_registers(mem, strip_generated(name), private))
        if m:
            # before the check below: a buffer replaced by __constant__ memory stages nothing
            plan = self.constant_arrays(plan, domain, host_prefix, full, n, m,
                                        node.get_schedule_depth())
        jams = self.per_thread is not None and rectangular      # see jam_point_band below
        if s and not jams and not (plan.memory and plan.memory.buffers):
            subbed = ", ".join(member_text(full, j) for j in range(m, m + s))
            memory = (plan.memory or KernelMemory()).noted(Note(
                Stage.MAPPING, f"{subbed} not sub-tiled: no buffer to stage", kernel=strip_generated(name)))
            return self._parallel_kernel(original, memory)
        if self.per_thread is not None:
            plan = replace(plan, per_thread=tuple(-(-mm.tile // mm.threads) for mm in members))
            # only over rectangular tiles: jamming a skewed band's point loops let two
            # threads write one element in a barrier phase (fuzz finding 23)
            if s and inner.get_type() == isl.schedule_node_type.band and rectangular:
                inner = self.jam_point_band(inner, m, s)
                if plan.memory and any(b.level == "sub-tile" for b in plan.memory.buffers):
                    # with copies in the k steps the split-off statements stay inside
                    # the sub-tile loop, where their register serves them too
                    inner = split_fixed_statements(inner, m)
                plan = replace(plan, jammed=True)
                full_set = full_tiles(full, host_prefix, domain, tiles[:m])
                if full_set is not None and not full_set.is_empty():
                    blocks = tile_sched.drop_dims(isl.dim_type.set, m, s) if s else tile_sched
                    within = full_tile_instances(blocks, host_prefix, domain, full_set)
                    # every tile full (sizes given, multiples of the tile): one piece
                    if not within.is_empty() and not domain.is_subset(within):
                        plan = replace(plan, full_instances=within, full_tiles=True)
        # threads are mapped right above the point band, below the copy code, so the
        # loops and barriers around the copies do not depend on thread ids
        inner = inner.insert_filter(thread_filt.intersect_params(
            thread_bounds_set(plan.block, axes)))
        mapped = {member_text(full, i) for i in range(m)}
        inner, plan = self.localise(inner, plan,
                                    [t for t in loop_names(inner) if t not in mapped])
        node = self.add_copies(inner, plan, s > 0)
        node = node.ancestor(node.get_tree_depth() - depth)
        node = node.insert_filter(block_filt.intersect_params(block_bounds_set(axes)))
        if plan.memory is not None and plan.memory.buffers or plan.local is not None:
            node = guard_grafts(node.child(0).child(0)).parent().parent()
        self.plans[name] = plan
        return node.insert_mark(isl.Id(name))

    def constant_arrays(self, plan: KernelPlan, domain: isl.UnionSet, host_prefix: isl.UnionMap,
                        full: isl.MultiUnionPwAff, n: int, m: int, n_host: int
                        ) -> KernelPlan:
        """Seed 004 §4.2: read-only arrays the same for every thread go to
        ``__constant__`` memory (not to shared buffers); returns the plan with them."""
        mapped = full.drop_dims(isl.dim_type.set, m, n - m) if n > m else full
        point = host_prefix.flat_range_product(isl.UnionMap.from_multi_union_pw_aff(mapped))
        chosen, lines = self.constants.consider(strip_generated(plan.name), domain, point, n_host)
        if not lines and not chosen:
            return plan
        mem = plan.memory or KernelMemory()
        dropped = {b.array for b in mem.buffers if b.array in chosen}
        return replace(plan, memory=replace(
            mem, buffers=tuple(b for b in mem.buffers if b.array not in chosen),
            decisions=tuple(replace(d, stage=Stage.CONSTANT, kind="decision",
                                    text="not buffered (read from __constant__ memory)")
                            if is_decision_about(d, strip_generated(plan.name), dropped) and
                            d.stage != Stage.REGISTERS else d
                            for d in mem.decisions) + tuple(lines)))

    def sub_tile_sizes(self, m: int, s: int) -> tuple[int, ...]:
        """Sizes of the sequential (sub-tile) members: from --tile after the first m."""
        given = list(self.options.tile or ())[m:m + s]
        return tuple(given + [DEFAULT_SUB_TILE] * (s - len(given)))

    def add_copies(self, inner: isl.ScheduleNode, plan: KernelPlan, has_sub: bool
                   ) -> isl.ScheduleNode:
        """Graft the copy code of the planned buffers: sub-tile buffers around the
        point band (``inner``), block buffers around the sub-tile loop."""
        mem = plan.memory
        if mem is None or not mem.buffers:
            return inner
        inner_bufs = [b for b in mem.buffers if b.level == "sub-tile"]
        outer_bufs = [b for b in mem.buffers if b.level == "block"]
        node = graft_copies(self.scop, inner, inner_bufs, plan.block, self.namer)
        if has_sub and outer_bufs:
            node = node.parent()
            while node.get_type() != isl.schedule_node_type.band:
                node = node.parent()
        if outer_bufs:
            node = graft_copies(self.scop, node, outer_bufs, plan.block, self.namer)
        return node


def map_single(scop: Scop, sched: ScheduleResult, options: CompileOptions,
               observer: MappingObserver = NO_OBSERVER) -> MappingResult:
    """Seed 004 §4.1's mapping of ``sched``'s tree: tiled and marked, one plan per
    kernel."""
    mapper = SingleMapper(scop, options, observer)
    mapper.private = sched.private_temps
    root = sched.schedule.align_params(size_param_space(scop)).get_root()
    node = mapper.visit(root.child(0)) if root.n_children() else root
    return MappingResult(with_id_params(node.get_schedule(), scop), mapper.plans,
                         mapper.host_loops,
                         mapper.namer.copies, mapper.local_copies,
                         constants=mapper.constants.decls(),
                         size_dependent=mapper.constants.size_dependent or mapper.sizes_read)
