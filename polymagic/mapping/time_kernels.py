"""The single mapper's kernels that run a time loop inside the GPU (seed 001).

* ``--localise t`` on a host loop: the time loop and everything below it as one
  kernel of one block, with ``t``'s data localised in shared memory (seed 001 §4,
  §5; :meth:`TimeKernels.time_kernel`).
* ``--time-tiling`` (issue 5): one block per skewed time tile, launched once per
  wavefront, the tile's points distributed over the block's threads with a barrier
  after each time step, and its data kept in shared memory
  (:meth:`TimeKernels.time_tile_kernel`).
"""
from __future__ import annotations

import math
import re
from dataclasses import replace

import islpy as isl

from ..errors import OptionsError
from ..isl_util import param_id
from ..memory.localcode import LocalBuffer, LocalPlan
from ..memory.plan import CopyNamer
from ..names import strip_generated
from ..options import CompileOptions
from ..scop import Scop
from ..thread_space import (block_bounds_set, block_id_on, cyclic_filter, thread_bounds_set,
                            thread_id_on)
from .result import DEFAULT_BLOCKS, HOST_PARAM, KernelPlan, MappedMember, kernel_mark
from .tree import member_text, single_piece, statement_names

#: time tiles keep their whole footprint in L (one write-back) instead of seed 001's per-step moves
TILE_FOOTPRINT = True


class TimeKernels:
    """The time-loop kernels of :class:`.single.SingleMapper` (a mixin: it reads the
    mapper's ``scop``, ``options``, ``plans``, ``namer`` and ``local_copies``)."""
    scop: Scop
    options: CompileOptions
    plans: dict[str, KernelPlan]
    namer: CopyNamer
    local_copies: dict[str, tuple[str, LocalBuffer]]

    def new_name(self) -> str:
        raise NotImplementedError

    def time_in_block(self, node: isl.ScheduleNode) -> bool:
        """``--localise t`` names this host loop (one of the iterators it combines),
        or the recurrence model chose it (:attr:`CompileOptions.time_block`): run it
        inside one block instead (:mod:`..schedule.timeblock`)."""
        if self.options.time_block is not None:
            # the recurrence model's one block (compiler/recurrence.py): that loop only
            return member_text(node.band_get_partial_schedule(), 0) == \
                self.options.time_block[0]
        if self.options.localise is None or kernel_mark(node.child(0)) is None and \
                node.child(0).get_type() == isl.schedule_node_type.mark:
            return False           # the wavefront of a time-tiled schedule
        text = member_text(node.band_get_partial_schedule(), 0)
        return self.options.localise[0] in re.findall(r"[A-Za-z_]\w*", text)

    def time_kernel(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        """The time loop and everything below it as one kernel of one block, ``t``
        localised in shared memory (seed 001 §4, §5; the recurrence model's block:
        its whole footprint, :meth:`box_block`)."""
        from ..memory.localcode import graft_shared, plan_shared
        from ..memory.plan import sync_graft
        from ..schedule.timeblock import thread_map
        name = self.new_name()
        threads = (self.options.block or (256,))[0]
        text = member_text(node.band_get_partial_schedule(), 0)
        bounds = thread_bounds_set((threads, 1, 1), ["x"])
        sizes = {k: v for k, v in self.options.sizes.items() if k in self.scop.size_params}
        if sizes:
            fixed = " and ".join(f"{k} = {int(v)}" for k, v in sizes.items())
            node = node.insert_filter(node.get_domain().intersect_params(
                isl.Set(f"[{', '.join(sizes)}] -> {{ : {fixed} }}"))).child(0)
        depth = node.get_tree_depth()

        def sync(n: isl.ScheduleNode) -> isl.ScheduleNode:
            return n.graft_after(sync_graft(self.scop, n, self.namer.sync()))
        x = thread_map(node.child(0), threads, sync, bounds)
        block = (threads, 1, 1)
        plan = KernelPlan(name, [], [text], statement_names(node), threads=block,
                          text=f"{text} sequential inside one block, parallel loops over "
                               f"{threads} threads (time loop in the kernel)")
        if self.options.time_block is not None:
            # the recurrence model's one block (compiler/recurrence.py): its whole
            # footprint in shared memory when it fits, else none
            node = x.ancestor(x.get_tree_depth() - depth)
            if self.options.time_block[1]:
                node, local = self.box_block(node, plan)
                plan = replace(plan, local=local)
        else:
            plan = replace(plan, local=plan_shared(self.scop, x, self.options, strip_generated(name), block,
                                                   self.options.localise[1]))
            if plan.local.buffers:
                x = graft_shared(self.scop, x, plan.local, self.local_copies, self.namer)
            node = x.ancestor(x.get_tree_depth() - depth)
        self.plans[name] = replace(plan, specialised={k: int(v) for k, v in sizes.items()})
        if sizes:
            node = node.parent()
        return node.insert_mark(isl.Id(name))

    def box_block(self, node: isl.ScheduleNode, plan: KernelPlan
                  ) -> tuple[isl.ScheduleNode, LocalPlan]:
        """The one-block kernel's whole footprint in shared memory, copied in once
        before its time loop ``node`` and back once after it
        (:func:`.memory.localcode.plan_tile_box` with ``whole``); returns the node at
        ``node``'s position, and the localisation planned."""
        from ..memory.localcode import graft_tile_box, plan_tile_box
        local = plan_tile_box(self.scop, node, self.options, strip_generated(plan.name), plan.block,
                              1, whole=True)
        if not local.buffers:
            return node, local
        depth = node.get_tree_depth()
        node = graft_tile_box(self.scop, node, local, self.local_copies, self.namer)
        return node.ancestor(node.get_tree_depth() - depth), local

    def time_tile_kernel(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        """One block per time tile (``--time-tiling``, issue 5): ``node`` is the band
        of tile coordinates ``c_1..`` (one block each, innermost on x), its child the
        sequential points (the skewed time loop first), then the coincident points,
        distributed cyclically over the block's threads (``b ≡ tid (mod B)``, as
        :func:`..schedule.timeblock.thread_map` does for one block) with a barrier after each
        sequential point (:func:`..schedule.timeblock.time_tiled_schedule` checked with isl that
        no dependence joins two points of one sequential step)."""
        from ..memory.plan import sync_graft
        from ..schedule.timeblock import time_tiles
        name = self.new_name()
        nc = node.band_n_member()
        cband = node.band_get_partial_schedule()
        domain = node.get_domain()
        rng = isl.UnionMap.from_multi_union_pw_aff(cband).intersect_domain(
            domain).range().extract_set(cband.get_space()).intersect_params(self.scop.context)
        members: list[MappedMember] = []
        block_filt, block_axes = domain, []
        block_first: list[isl.UnionPwAff] = []      # tile coordinate of each block
        for j in range(nc):
            axis = "xyz"[nc - 1 - j]
            tmin, tmax = rng.dim_min(j).coalesce(), rng.dim_max(j).coalesce()
            members.append(MappedMember(axis, 1, 1, member_text(cband, j), tmin, tmax))
            b = block_id_on(domain, axis)
            offset = isl.UnionPwAff.pw_aff_on_domain(domain, single_piece(tmin)).add(b)
            block_first.append(offset)
            block_filt = block_filt.intersect(cband.get_at(j).sub(offset).zero_union_set())
            block_axes.append(axis)
        seq = node.child(0)
        wband = node.parent()
        if wband.get_type() == isl.schedule_node_type.band and wband.band_n_member() == 1:
            t0 = time_tiles(self.options.time_tiling, nc + 1)[0]
            launch = wavefront_launch(domain, seq.band_get_partial_schedule().get_at(0), t0,
                                       block_first, wband.get_schedule_depth())
        else:
            launch = None
        seq_text = [member_text(seq.band_get_partial_schedule(), i)
                    for i in range(seq.band_n_member())]
        par = seq.child(0)
        pband = par.band_get_partial_schedule()
        npar = par.band_n_member()
        tiles = time_tiles(self.options.time_tiling, nc + 1)[1:]
        blk = list(self.options.block or DEFAULT_BLOCKS[min(npar, 3)]) + [1, 1, 1]
        threads: list[int] = []
        thread_filt, par_axes = par.get_domain(), []
        for j in range(min(npar, 3)):
            axis = "xyz"[min(npar, 3) - 1 - j]
            k = "xyz".index(axis)
            bj = max(1, min(blk[k], tiles[j] if j < len(tiles) else blk[k]))
            threads.append(bj)
            t = thread_id_on(thread_filt, axis)
            if j < nc and bj == tiles[j]:
                # one thread per point of the tile's extent: b = T·(c_min + block id) + tid,
                # an equality in the ids (no loop, no floor or modulo for isl's AST
                # generator: the point is a function of t and the ids)
                off = block_first[j].intersect_domain(thread_filt).scale_val(isl.Val(bj))
                thread_filt = thread_filt.intersect(
                    cyclic_filter(pband.get_at(j).sub(off), t, bj, points=bj))
            else:
                thread_filt = thread_filt.intersect(cyclic_filter(pband.get_at(j), t, bj))
            par_axes.append(axis)
        block = tuple((threads[::-1] + [1, 1, 1])[:3])
        if math.prod(block) > 1024:
            raise OptionsError(f"--time-tiling: {block} threads per block, at most 1024")
        par = par.insert_filter(thread_filt.intersect_params(
            thread_bounds_set(block, par_axes)))
        par = par.graft_after(sync_graft(self.scop, par, self.namer.sync()))
        depth = node.get_tree_depth()
        par_text = [member_text(pband, i) for i in range(npar)]
        plan = KernelPlan(name, members, seq_text, statement_names(node), threads=block,
                          launch_domain=launch,
                          time_tile=time_tiles(self.options.time_tiling, nc + 1),
                          text=f"one block per time tile ({', '.join(mm.loop for mm in members)}"
                               f"), sequential in the block: {', '.join(seq_text)} (a barrier "
                               f"after each step), over {'x'.join(map(str, block))} threads: "
                               f"{', '.join(par_text)} (cyclic)")
        node, local = self.localise_tile(par.ancestor(par.get_tree_depth() - depth - 1), plan)
        node = node.ancestor(node.get_tree_depth() - depth)
        node = node.insert_filter(block_filt.intersect_params(block_bounds_set(block_axes)))
        self.plans[name] = replace(plan, local=local)
        return node.insert_mark(isl.Id(name))

    def localise_tile(self, seq: isl.ScheduleNode, plan: KernelPlan
                      ) -> tuple[isl.ScheduleNode, LocalPlan | None]:
        """Seed 001 localisation along the skewed time loop of a time tile (the first
        member of the band ``seq``, split off): what the tile's threads access at step
        ``t`` stays in shared memory for step ``t + 1``, only the difference moves
        (:func:`.memory.localcode.plan_shared`, :func:`~.memory.localcode.graft_shared`,
        as for the one-block time loop).  On unless ``--shared none`` or ``--no-localise``; ``--localise
        LOOP:w`` sets the window.  Tiles take these per-step moves only when
        ``--localise`` asks (with 2+ spatial loops they cost tens of seconds to minutes
        of isl's AST generation;
        :data:`polymagic.compiler.lowering.LOCALISED_TILES_FACTOR` times the budget); by
        default their whole footprint is copied in once and written back once
        (:meth:`box_tile`, about a second; jacobi-1d: the same global loads and stores
        as the per-step moves, compiled in 0.6 s instead of 1-2 s).  With :data:`TILE_FOOTPRINT` L holds the
        tile's whole footprint (:meth:`footprint_tile`).  Returns the node at
        ``seq``'s position and the localisation planned (None: none)."""
        if self.options.shared == "none" or \
                self.options.localise is None and not self.options.localise_auto:
            return seq, None
        from ..memory.localcode import graft_shared, plan_shared
        if self.options.localise is None:
            return self.box_tile(seq, plan)
        depth = seq.get_tree_depth()
        if seq.band_n_member() > 1:
            seq = seq.band_split(1)
        window = self.options.localise[1] if self.options.localise else 1
        x = seq.child(0)
        local = plan_shared(self.scop, x, self.options, strip_generated(plan.name), plan.block, window)
        if TILE_FOOTPRINT:
            return self.footprint_tile(seq, x, local, strip_generated(plan.name), depth)
        local = replace(local, buffers=tuple(
            replace(lb, loc=replace(lb.loc, move_out=lb.loc.move_out.intersect(
                written_so_far(self.scop, lb)))) if lb.loc.written else lb
            for lb in local.buffers))
        if local.buffers:
            x = graft_shared(self.scop, x, local, self.local_copies, self.namer)
        return x.ancestor(x.get_tree_depth() - depth), local

    def box_tile(self, seq: isl.ScheduleNode, plan: KernelPlan
                 ) -> tuple[isl.ScheduleNode, LocalPlan]:
        """The default for tiles with 2+ spatial loops: each array's whole footprint in
        shared memory, copied in once before the tile's steps and written back once
        after them (:func:`.memory.localcode.plan_tile_box`); isl's code for these
        two copies per array takes about a second where the per-step moves of seed
        001 (``--localise t``) take 40 s to minutes.  Returns the node at ``seq``'s
        position and the localisation planned."""
        from ..memory.localcode import graft_tile_box, plan_tile_box
        from ..schedule.timeblock import time_tiles
        steps = time_tiles(self.options.time_tiling, 1)[0]
        local = plan_tile_box(self.scop, seq, self.options, strip_generated(plan.name), plan.block, steps)
        if not local.buffers:
            return seq, local
        return graft_tile_box(self.scop, seq, local, self.local_copies, self.namer), local

    def footprint_tile(self, seq: isl.ScheduleNode, x: isl.ScheduleNode, local: LocalPlan,
                       kname: str, depth: int) -> tuple[isl.ScheduleNode, LocalPlan]:
        """The tile's buffers hold its whole footprint (:func:`.memory.localcode.
        tile_footprint`): move-ins at first touch inside the time loop, one write-back
        after it.  ``local``: :func:`.memory.localcode.plan_shared`'s plan; returns the
        node and the plan of the footprints."""
        from ..memory.localcode import LOCAL_LIMIT, graft_shared, graft_tile_writeback, \
            local_note, tile_footprint
        keep, backs, lines, used = [], [], [], 0
        limit = min(self.options.shared_mem, LOCAL_LIMIT)
        for lb in local.buffers:
            lb2, back, why = tile_footprint(self.scop, lb, limit, used)
            lines.append(local_note(kname, lb.array, why))
            if lb2 is not None:
                keep.append(lb2)
                used += lb2.nbytes
                if back is not None:
                    backs.append(back)
        # the footprint's line replaces each buffer's line of plan_shared
        replaced = {lb.array for lb in local.buffers}
        local = replace(local, buffers=tuple(keep), decisions=tuple(
            d for d in local.decisions if d.subject not in replaced) + tuple(lines))
        if not keep:
            return seq, local
        x = graft_shared(self.scop, x, local, self.local_copies, self.namer)
        band = x.ancestor(x.get_tree_depth() - depth)
        band = graft_tile_writeback(self.scop, band, backs, self.local_copies, self.namer)
        return band.ancestor(band.get_tree_depth() - depth), local


def written_so_far(scop: Scop, lb) -> isl.Map:
    """``{ p -> A[x] }``: the elements of ``lb``'s array that the instances of the same
    outer prefix written at a step ``<= p`` (the last prefix dimension) write, with
    isl.  A time tile moves out only these (seed 001 §4.3's ``W``): an element it only
    read holds the value global memory has, and writing it back would be a store
    that another block of the wavefront may race with."""
    from ..memory.localcode import array_writes
    writes = array_writes(scop, lb.array)
    prefix = lb.prefix
    space = lb.loc.move_out.get_space()
    if writes is None:
        return isl.Map.empty(space)
    at = prefix.reverse().apply_range(writes.intersect_domain(prefix.domain()))
    n = space.dim(isl.dim_type.in_)
    ps = [f"p{k}" for k in range(n)]
    qs = [f"q{k}" for k in range(n)]
    cond = " and ".join([f"q{k} = p{k}" for k in range(n - 1)] + [f"q{n - 1} <= p{n - 1}"])
    le = isl.Map(f"{{ [{', '.join(ps)}] -> [{', '.join(qs)}] : {cond} }}")
    upto = isl.UnionMap.from_map(le.align_params(at.get_space())).apply_range(at)
    return upto.extract_map(space)


def wavefront_launch(domain: isl.UnionSet, b0: isl.UnionPwAff, t0: int,
                      block_first: list[isl.UnionPwAff], host: int) -> isl.UnionSet:
    """The instances of one launch of a time-tiled kernel as an affine set: the
    wavefront ``w = floor(b0/T0) + c_1 + .. + c_m`` (:func:`..schedule.timeblock.wavefront_tile_map`)
    equals the launch's host value ``pm_h<host>`` and each tile coordinate ``c_j`` is
    its block's (``block_first[j]``, affine in the block ids), so
    ``T0·(pm_h - Σ c_j) <= b0 <= T0·(pm_h - Σ c_j) + T0 - 1``.  Without floors, isl's
    AST generator need not project the wavefront's integer divisions (jacobi-2d,
    tiles 4,32,32: over 3,000,000 isl operations through the floors, 0.3 s so)."""
    h = isl.UnionPwAff.param_on_domain_id(domain, param_id(f"{HOST_PARAM}{host}"))
    first = h
    for c in block_first:
        first = first.sub(c.intersect_domain(domain))
    rel = b0.intersect_domain(domain).sub(first.scale_val(isl.Val(t0)))
    box = isl.UnionSet(isl.Set(f"{{ [d] : 0 <= d < {t0} }}"))
    return isl.UnionMap.from_union_pw_aff(rel).intersect_range(box).domain()
