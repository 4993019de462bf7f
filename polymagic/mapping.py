"""Mapping: schedule tree -> tiles, thread blocks, threads, host loops -> Kernel IR.

Baseline mapping (seed 004 §4.1, PPCG's single-schedule mapping that seed 003 §4
improves on):

* The schedule tree is walked from the root.  A band whose leading members are
  coincident (parallel) becomes a kernel: its first ``m <= 3`` coincident members
  are tiled (tile sizes ``T``); the tile loops map to ``blockIdx`` (one block per
  tile, ``b = tile - tile_min``) and the point loops to ``threadIdx`` with a cyclic
  distribution (``point ≡ t (mod B)``, seed 004 Fig. 9), the innermost mapped
  member to ``x``.  Remaining band members and everything below run sequentially
  inside each thread.
* A band with no parallel leading member that encloses parallel work becomes host
  loops (e.g. time loops): the kernel(s) below are launched once per iteration.
* A subtree without any parallelism becomes a one-thread kernel, so every
  statement runs.

The mapping is expressed *in isl*: block and thread ids are parameters
(``pm_bx``, ``pm_tx``, ...) constrained by filter nodes, so isl's AST generator
produces the guards and strided loops and handles degenerate dimensions.  Mark
nodes delimit kernels; the AST is then lowered to :mod:`polymagic.kir`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import islpy as isl

from . import kir
from .errors import OptionsError
from .isl_util import has_parallelism, leading_coincident, param_id
from .memory.plan import (BufferPlan, CopyNamer, KernelMemory, atomic, drop_register_buffers,
                          graft_copies, plan_kernel_memory)
from .memory.constant import ConstantChooser
from .options import Options, per_thread_tile
from .schedule import ScheduleResult
from .scop import Scop
from .timeblock import TIME_TILES_MARK

DEFAULT_TILES = {1: (256,), 2: (32, 32), 3: (4, 8, 32)}
DEFAULT_BLOCKS = {1: (256,), 2: (32, 8), 3: (32, 4, 2)}
DEFAULT_SUB_TILE = 16
#: The parameters ``pm_h0, pm_h1, ...`` a kernel receives the values of its host
#: loops in (per-kernel code generation, :func:`.lower.per_kernel.kernel_schedule`).
HOST_PARAM = "pm_h"
#: time tiles keep their whole footprint in L (one write-back) instead of seed 001's per-step moves
TILE_FOOTPRINT = True
MARK_PREFIX = "pm_kernel"


def kernel_mark(node: isl.ScheduleNode) -> str | None:
    """The kernel's name when ``node`` is a kernel mark of the mapped tree."""
    if node.get_type() == isl.schedule_node_type.mark:
        name = node.mark_get_id().get_name()
        if name.startswith(MARK_PREFIX):
            return name
    return None
_ALL_IDS = list(kir.THREAD_IDS.values()) + list(kir.BLOCK_IDS.values())


@dataclass
class MappedMember:
    """One band member mapped to a block and thread axis."""
    axis: str                 # 'x', 'y' or 'z'
    tile: int                 # tile size T
    threads: int              # threads along this axis B (≤ T)
    loop: str                 # the member as an expression of source iterators, e.g. 'i'
    tile_min: isl.PwAff       # smallest tile index (parameters only)
    tile_max: isl.PwAff


@dataclass
class KernelPlan:
    name: str
    members: list[MappedMember]          # outermost first; empty for one-thread kernels
    sequential: list[str] = field(default_factory=list)   # unmapped band members
    statements: list[str] = field(default_factory=list)
    sub_tiles: list[str] = field(default_factory=list)    # sequential members sub-tiled
    memory: KernelMemory | None = None
    threads: tuple[int, int, int] | None = None   # block dims when not those of members
    text: str = ""                                 # summary when not derived from members
    local: "object | None" = None        # memory.localcode.LocalPlan (--localise, seed 001)
    per_thread: tuple[int, ...] = ()     # points per thread per member (--tile T:t)
    jammed: bool = False                 # its point loops moved inside the sub-tile loops
    specialised: dict = field(default_factory=dict)  # sizes the kernel's domain is fixed to
    #: the thread point loops of the kernel body are its members' (tile, threads) loops, so
    #: the lowering may keep one register per point a thread owns; False for the
    #: superposition, whose thread loops need not be its block members' point loops
    member_points: bool = True
    # the instances of one launch as an affine set in the host loops' values
    # ``pm_h<k>`` (:data:`HOST_PARAM`) and the block ids, when the mapper knows one
    # (time tiles: no floor of the wavefront for isl's AST generator to project)
    launch_domain: "isl.UnionSet | None" = None

    @property
    def block(self) -> tuple[int, int, int]:
        if self.threads is not None:
            return self.threads
        b = {m.axis: m.threads for m in self.members}
        return (b.get("x", 1), b.get("y", 1), b.get("z", 1))


@dataclass
class MappingResult:
    schedule: isl.Schedule               # the mapped schedule tree (tiled, marked)
    plans: dict[str, KernelPlan]
    host_loops: list[str]
    copies: dict[str, tuple[str, BufferPlan]] = field(default_factory=dict)
    local_copies: dict = field(default_factory=dict)   # seed 001 moves: stmt -> (kind, LocalBuffer)
    constants: dict[str, kir.ConstantDecl] = field(default_factory=dict)
    #: tree reductions (superposition): grafted statement -> its :class:`TreeReduction`
    reductions: dict[str, "TreeReduction"] = field(default_factory=dict)


@dataclass
class TreeReduction:
    """A reduction loop mapped to ``threadIdx.x`` (seed 003 §5.3 reduction loops on
    threads).  Statement ``stmt``'s instances accumulate into the per-thread register
    ``acc`` (each thread its cyclic share of the loop); ``pm_rini_S`` (one instance per
    point of the enclosing loops, every thread of the block) sets ``acc`` to the
    identity, ``pm_rfin_S`` stores it into shared ``buf`` (one element per thread),
    reduces the buffer by halving (``⌈n/2⌉`` steps, any block size, a barrier after
    each) and thread 0 combines ``buf[0]`` with the global element."""
    stmt: str
    op: str               # '+', '*', 'max', 'min', 'fmax', ...
    loop: int             # position of the reduction iterator in the statement
    acc: str
    buf: str
    block: tuple[int, int, int] = (1, 1, 1)   # threads per block of its kernel
    #: the other statements of its thread group (one pass over the loop, one tree
    #: pass): the first statement's ``pm_rfin`` combines them all; theirs is not made
    partners: tuple[str, ...] = ()
    lead: bool = True


# ---- schedule tree transformation ---------------------------------------------------





def _member_text(mupa: isl.MultiUnionPwAff, i: int) -> str:
    """A band member as source text, e.g. 'i' or 'i + j' (first statement's piece)."""
    upa = mupa.get_at(i)
    texts: list[str] = []

    def piece(pa: isl.PwAff):
        s = pa.to_str()
        if "[(" in s:
            texts.append(s[s.index("[(") + 2: s.rindex(")]")])
    upa.foreach_pw_aff(piece)
    uniq = sorted(set(texts))
    if len(uniq) > 1:
        uniq = [u for u in uniq if not u.lstrip("-").isdigit()] or uniq
    return uniq[0] if len(uniq) == 1 else "/".join(uniq) if uniq else "?"


def _is_rectangular(mupa: isl.MultiUnionPwAff) -> bool:
    """Every band member is one source iterator (plus a constant) in every statement:
    tiles are rectangles of the original iteration space."""
    ok = [True]

    def piece(_s: isl.Set, aff: isl.Aff):
        n = aff.dim(isl.dim_type.in_)
        coeffs = [aff.get_coefficient_val(isl.dim_type.in_, i).to_python() for i in range(n)]
        nz = [c for c in coeffs if c != 0]
        if len(nz) > 1 or any(abs(c) != 1 for c in nz) or aff.dim(isl.dim_type.div) > 0:
            ok[0] = False
    for i in range(mupa.dim(isl.dim_type.set)):
        mupa.get_at(i).foreach_pw_aff(lambda pa: pa.foreach_piece(piece))
    return ok[0]


def _statements(node: isl.ScheduleNode) -> list[str]:
    names: list[str] = []
    node.get_domain().foreach_set(lambda s: names.append(s.get_tuple_name()))
    return sorted(names, key=lambda n: int(n[1:]) if n[1:].isdigit() else 0)


class _Mapper:
    def __init__(self, scop: Scop, options: Options):
        self.scop = scop
        self.options = options
        self.plans: dict[str, KernelPlan] = {}
        self.host_loops: list[str] = []
        self.namer = CopyNamer()
        self.local_copies: dict = {}
        self.constants = ConstantChooser(scop, options.sizes)

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
            self.host_loops.append(_member_text(node.band_get_partial_schedule(), 0))
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
            seq = [_member_text(mupa, i) for i in range(node.band_n_member())]
        self.plans[name] = KernelPlan(name, [], seq, _statements(node))
        node = self.localise(node, self.plans[name], _loop_names(node))
        return node.insert_mark(isl.Id(name))

    def time_in_block(self, node: isl.ScheduleNode) -> bool:
        """``--localise t`` names this host loop (one of the iterators it combines):
        run it inside one block instead (:mod:`.timeblock`)."""
        import re
        if self.options.localise is None or kernel_mark(node.child(0)) is None and \
                node.child(0).get_type() == isl.schedule_node_type.mark:
            return False           # the wavefront of a time-tiled schedule
        text = _member_text(node.band_get_partial_schedule(), 0)
        return self.options.localise[0] in re.findall(r"[A-Za-z_]\w*", text)

    def time_kernel(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        """The time loop and everything below it as one kernel of one block, ``t``
        localised in shared memory (seed 001 §4, §5)."""
        from .memory.localcode import graft_shared, plan_shared
        from .memory.plan import _sync_graft
        from .timeblock import thread_map
        name = self.new_name()
        threads = (self.options.block or (256,))[0]
        text = _member_text(node.band_get_partial_schedule(), 0)
        bounds = _id_bounds([f"0 <= {kir.THREAD_IDS['x']} < {threads}"])
        sizes = {k: v for k, v in self.options.sizes.items() if k in self.scop.size_params}
        if sizes:
            fixed = " and ".join(f"{k} = {int(v)}" for k, v in sizes.items())
            node = node.insert_filter(node.get_domain().intersect_params(
                isl.Set(f"[{', '.join(sizes)}] -> {{ : {fixed} }}"))).child(0)
        depth = node.get_tree_depth()

        def sync(n: isl.ScheduleNode) -> isl.ScheduleNode:
            return n.graft_after(_sync_graft(self.scop, n, self.namer.sync()))
        x = thread_map(node.child(0), threads, sync, bounds)
        block = (threads, 1, 1)
        plan = KernelPlan(name, [], [text], _statements(node), threads=block,
                          text=f"{text} sequential inside one block, parallel loops over "
                               f"{threads} threads (time loop in the kernel)")
        plan.local = plan_shared(self.scop, x, self.options, name[3:], block,
                                 self.options.localise[1])
        if plan.local.buffers:
            x = graft_shared(self.scop, x, plan.local, self.local_copies, self.namer)
        node = x.ancestor(x.get_tree_depth() - depth)
        plan.specialised = {k: int(v) for k, v in sizes.items()}
        self.plans[name] = plan
        if sizes:
            node = node.parent()
        return node.insert_mark(isl.Id(name))

    def time_tile_kernel(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        """One block per time tile (``--time-tiling``, issue 5): ``node`` is the band
        of tile coordinates ``c_1..`` (one block each, innermost on x), its child the
        sequential points (the skewed time loop first), then the coincident points,
        distributed cyclically over the block's threads (``b ≡ tid (mod B)``, as
        :func:`.timeblock.thread_map` does for one block) with a barrier after each
        sequential point (:func:`.timeblock.time_tiled_schedule` checked with isl that
        no dependence joins two points of one sequential step)."""
        from .memory.plan import _sync_graft
        from .timeblock import time_tiles
        name = self.new_name()
        nc = node.band_n_member()
        cband = node.band_get_partial_schedule()
        domain = node.get_domain()
        rng = isl.UnionMap.from_multi_union_pw_aff(cband).intersect_domain(
            domain).range().extract_set(cband.get_space()).intersect_params(self.scop.context)
        members: list[MappedMember] = []
        block_filt, block_ctx = domain, []
        block_first: list[isl.UnionPwAff] = []      # tile coordinate of each block
        for j in range(nc):
            axis = "xyz"[nc - 1 - j]
            tmin, tmax = rng.dim_min(j).coalesce(), rng.dim_max(j).coalesce()
            members.append(MappedMember(axis, 1, 1, _member_text(cband, j), tmin, tmax))
            b = isl.UnionPwAff.param_on_domain_id(domain, param_id(kir.BLOCK_IDS[axis]))
            offset = isl.UnionPwAff.pw_aff_on_domain(domain, _single_piece(tmin)).add(b)
            block_first.append(offset)
            block_filt = block_filt.intersect(cband.get_at(j).sub(offset).zero_union_set())
            block_ctx.append(f"{kir.BLOCK_IDS[axis]} >= 0")
        seq = node.child(0)
        wband = node.parent()
        if wband.get_type() == isl.schedule_node_type.band and wband.band_n_member() == 1:
            t0 = time_tiles(self.options.time_tiling, nc + 1)[0]
            launch = _wavefront_launch(domain, seq.band_get_partial_schedule().get_at(0), t0,
                                       block_first, wband.get_schedule_depth())
        else:
            launch = None
        seq_text = [_member_text(seq.band_get_partial_schedule(), i)
                    for i in range(seq.band_n_member())]
        par = seq.child(0)
        pband = par.band_get_partial_schedule()
        npar = par.band_n_member()
        tiles = time_tiles(self.options.time_tiling, nc + 1)[1:]
        blk = list(self.options.block or DEFAULT_BLOCKS[min(npar, 3)]) + [1, 1, 1]
        threads: list[int] = []
        thread_filt, thread_ctx = par.get_domain(), []
        for j in range(min(npar, 3)):
            axis = "xyz"[min(npar, 3) - 1 - j]
            k = "xyz".index(axis)
            bj = max(1, min(blk[k], tiles[j] if j < len(tiles) else blk[k]))
            threads.append(bj)
            t = isl.UnionPwAff.param_on_domain_id(thread_filt, param_id(kir.THREAD_IDS[axis]))
            if j < nc and bj == tiles[j]:
                # one thread per point of the tile's extent: b = T·(c_min + block id) + tid,
                # an equality in the ids (no loop, no floor or modulo for isl's AST
                # generator: the point is a function of t and the ids)
                off = block_first[j].intersect_domain(thread_filt).scale_val(isl.Val(bj))
                thread_filt = thread_filt.intersect(
                    pband.get_at(j).sub(off).sub(t).zero_union_set())
            else:
                thread_filt = thread_filt.intersect(
                    pband.get_at(j).sub(t).mod_val(isl.Val(bj)).zero_union_set())
            thread_ctx.append(f"0 <= {kir.THREAD_IDS[axis]} < {bj}")
        block = tuple((threads[::-1] + [1, 1, 1])[:3])
        if math.prod(block) > 1024:
            raise OptionsError(f"--time-tiling: {block} threads per block, at most 1024")
        par = par.insert_filter(thread_filt.intersect_params(_id_bounds(thread_ctx)))
        par = par.graft_after(_sync_graft(self.scop, par, self.namer.sync()))
        depth = node.get_tree_depth()
        par_text = [_member_text(pband, i) for i in range(npar)]
        plan = KernelPlan(name, members, seq_text, _statements(node), threads=block,
                          launch_domain=launch,
                          text=f"one block per time tile ({', '.join(mm.loop for mm in members)}"
                               f"), sequential in the block: {', '.join(seq_text)} (a barrier "
                               f"after each step), over {'x'.join(map(str, block))} threads: "
                               f"{', '.join(par_text)} (cyclic)")
        node = self.localise_tile(par.ancestor(par.get_tree_depth() - depth - 1), plan)
        node = node.ancestor(node.get_tree_depth() - depth)
        node = node.insert_filter(block_filt.intersect_params(_id_bounds(block_ctx)))
        self.plans[name] = plan
        return node.insert_mark(isl.Id(name))

    def localise_tile(self, seq: isl.ScheduleNode, plan: KernelPlan) -> isl.ScheduleNode:
        """Seed 001 localisation along the skewed time loop of a time tile (the first
        member of the band ``seq``, split off): what the tile's threads access at step
        ``t`` stays in shared memory for step ``t + 1``, only the difference moves
        (:func:`.memory.localcode.plan_shared`, :func:`~.memory.localcode.graft_shared`,
        as for the one-block time loop).  On unless ``--shared none`` or ``--no-localise``; ``--localise
        LOOP:w`` sets the window.  Tiles take these per-step moves only when
        ``--localise`` asks (with 2+ spatial loops they cost tens of seconds to minutes
        of isl's AST generation; :data:`.compiler.lowering.LOCALISED_TILES_FACTOR` times the budget); by
        default their whole footprint is copied in once and written back once
        (:meth:`box_tile`, about a second; jacobi-1d: the same global loads and stores
        as the per-step moves, compiled in 0.6 s instead of 1-2 s).  With :data:`TILE_FOOTPRINT` L holds the
        tile's whole footprint (:meth:`footprint_tile`).  Returns the node at
        ``seq``'s position."""
        if self.options.shared == "none" or \
                self.options.localise is None and not self.options.localise_auto:
            return seq
        from .memory.localcode import graft_shared, plan_shared
        if self.options.localise is None:
            return self.box_tile(seq, plan)
        depth = seq.get_tree_depth()
        if seq.band_n_member() > 1:
            seq = seq.band_split(1)
        window = self.options.localise[1] if self.options.localise else 1
        x = seq.child(0)
        plan.local = plan_shared(self.scop, x, self.options, plan.name[3:], plan.block, window)
        if TILE_FOOTPRINT:
            return self.footprint_tile(seq, x, plan, depth)
        for lb in plan.local.buffers:
            if lb.loc.written:
                lb.loc.move_out = lb.loc.move_out.intersect(_written_so_far(self.scop, lb))
        if plan.local.buffers:
            x = graft_shared(self.scop, x, plan.local, self.local_copies, self.namer)
        return x.ancestor(x.get_tree_depth() - depth)

    def box_tile(self, seq: isl.ScheduleNode, plan: KernelPlan) -> isl.ScheduleNode:
        """The default for tiles with 2+ spatial loops: each array's whole footprint in
        shared memory, copied in once before the tile's steps and written back once
        after them (:func:`.memory.localcode.plan_tile_box`); isl's code for these
        two copies per array takes about a second where the per-step moves of seed
        001 (``--localise t``) take 40 s to minutes.  Returns the node at ``seq``'s
        position."""
        from .memory.localcode import graft_tile_box, plan_tile_box
        from .timeblock import time_tiles
        steps = time_tiles(self.options.time_tiling, 1)[0]
        plan.local = plan_tile_box(self.scop, seq, self.options, plan.name[3:], plan.block,
                                   steps)
        if not plan.local.buffers:
            return seq
        return graft_tile_box(self.scop, seq, plan.local, self.local_copies, self.namer)

    def footprint_tile(self, seq: isl.ScheduleNode, x: isl.ScheduleNode, plan: KernelPlan,
                       depth: int) -> isl.ScheduleNode:
        """The tile's buffers hold its whole footprint (:func:`.memory.localcode.
        tile_footprint`): move-ins at first touch inside the time loop, one write-back
        after it."""
        from .memory.localcode import LOCAL_LIMIT, graft_shared, graft_tile_writeback, \
            tile_footprint
        kname = plan.name[3:]
        keep, backs, lines, used = [], [], [], 0
        limit = min(self.options.shared_mem, LOCAL_LIMIT)
        for lb in plan.local.buffers:
            lb2, back, why = tile_footprint(self.scop, lb, limit, used)
            lines.append(f"{kname}: {why}")
            if lb2 is not None:
                keep.append(lb2)
                used += lb2.nbytes
                if back is not None:
                    backs.append(back)
        plan.local.buffers = keep
        plan.local.decisions = [d for d in plan.local.decisions
                                if "localised along the time loop" not in d] + lines
        if not keep:
            return seq
        x = graft_shared(self.scop, x, plan.local, self.local_copies, self.namer)
        band = x.ancestor(x.get_tree_depth() - depth)
        band = graft_tile_writeback(self.scop, band, backs, self.local_copies, self.namer)
        return band.ancestor(band.get_tree_depth() - depth)

    def localise(self, node: isl.ScheduleNode, plan: KernelPlan,
                 loops: list[str] | None = None) -> isl.ScheduleNode:
        """``--localise LOOP[:w]`` (seed 001): keep what a sequential loop of this
        kernel reuses in L (see :mod:`.memory.localcode`); without it, the one of
        ``loops`` (the kernel's sequential loops inside a thread) the analytic model
        picks, unless ``--no-localise``.  ``node`` keeps its place."""
        from .memory.localcode import auto_localise, localise_kernel
        buffered = {r for b in (plan.memory.buffers if plan.memory else []) for r in b.refs}
        if self.options.localise is None:
            if not (self.options.localise_auto and loops):
                return node
            regs = {r.array for r in (plan.memory.registers if plan.memory else [])}
            buffered |= {(s.name, k) for s in self.scop.statements
                         for k, a in enumerate(s.accesses) if a.array in regs}
            node, plan.local = auto_localise(self.scop, node, plan.name[3:], plan.block,
                                             self.options, buffered, self.local_copies,
                                             _member_text, loops)
            return node
        node, plan.local = localise_kernel(self.scop, node, plan.name[3:], plan.block,
                                           self.options, buffered, self.local_copies,
                                           _member_text)
        return node

    def tile_sizes(self, m: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Tile sizes (outermost member first) and threads per member (outermost first)."""
        tiles = list(self.options.tile or DEFAULT_TILES[m])
        tiles = (tiles + list(DEFAULT_TILES[m]))[:m] if len(tiles) < m else tiles[:m]
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
        return per_thread_tile(self.options.tile_levels, self.options.block)

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
        original = node
        n = node.band_n_member()
        m = min(leading_coincident(node), 3)
        full = node.band_get_partial_schedule()
        host_prefix = node.get_prefix_schedule_union_map()
        rectangular = _is_rectangular(full) and _is_rectangular(
            node.get_prefix_schedule_multi_union_pw_aff())
        # sub-tile the sequential members too when buffers may be used (seed 000 §4.1),
        # or when each thread owns a per-thread tile (the point loops jam inside them)
        sub = self.options.shared != "none" or self.per_thread is not None
        s = n - m if sub and reuse is None and n > m and node.band_get_permutable() else 0
        seq = [_member_text(full, i) for i in range(m + s, n)]
        if n > m + s:
            node = node.band_split(m + s)
        tiles, threads = self.tile_sizes(m)
        tiles = tiles + self.sub_tile_sizes(m, s)
        space = node.band_get_space()
        node = node.band_tile(isl.MultiVal.from_val_list(space, _val_list(tiles)))
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
        block_ctx, thread_ctx = [], []
        for j in range(m):
            axis = "xyz"[m - 1 - j]
            tmin = rng.dim_min(j).coalesce()
            tmax = rng.dim_max(j).coalesce()
            members.append(MappedMember(axis, tiles[j], threads[j], _member_text(full, j),
                                        tmin, tmax))
            b = isl.UnionPwAff.param_on_domain_id(domain, param_id(kir.BLOCK_IDS[axis]))
            t = isl.UnionPwAff.param_on_domain_id(domain, param_id(kir.THREAD_IDS[axis]))
            offset = isl.UnionPwAff.pw_aff_on_domain(domain, tmin)
            block_filt = block_filt.intersect(
                tile_sched.get_at(j).sub(offset).sub(b).zero_union_set())
            point_j = point_sched.get_at(j)
            if threads[j] == tiles[j]:
                thread_filt = thread_filt.intersect(point_j.sub(t).zero_union_set())
            else:
                thread_filt = thread_filt.intersect(
                    point_j.sub(t).mod_val(isl.Val(threads[j])).zero_union_set())
            thread_ctx.append(f"0 <= {kir.THREAD_IDS[axis]} < {threads[j]}")
            block_ctx.append(f"{kir.BLOCK_IDS[axis]} >= 0")
        plan = KernelPlan(name, members, seq, _statements(node))
        for j in range(m, m + s):
            plan.sub_tiles.append(f"{_member_text(full, j)} (sub-tile {tiles[j]})")
        if s:
            node = node.band_split(m)
        depth = node.get_tree_depth()
        outer = node.child(0)                       # sub-tile band, or the point band
        inner = outer.child(0) if s else outer
        if reuse is not None:
            plan.memory = reuse
        elif self.options.shared != "none" and not rectangular:
            plan.memory = KernelMemory(decisions=[
                f"{name[3:]}: no buffers: the tiles are skewed (band or host loops are not plain "
                "loop iterators); buffers over skewed tiles are not planned yet"])
        elif self.options.shared != "none":
            plan.memory = plan_kernel_memory(self.scop, outer, inner, self.options, name[3:],
                                             host_prefix)
        if self.options.registers and m and reuse is None:
            from .memory.registers import plan_registers
            mapped = full.drop_dims(isl.dim_type.set, m, n - m) if n > m else full
            point = host_prefix.flat_range_product(isl.UnionMap.from_multi_union_pw_aff(mapped))
            if plan.memory is None:
                plan.memory = KernelMemory()
            regs, lines = plan_registers(self.scop, domain, point, name[3:],
                                         [mm.loop for mm in members],
                                         [_member_text(full, i) for i in range(m, n)],
                                         n_host=node.get_schedule_depth())
            for r in regs:
                r.line += len(plan.memory.decisions)
            plan.memory.registers, plan.memory.decisions = regs, plan.memory.decisions + lines
            drop_register_buffers(plan.memory, name[3:], self.options,
                                  math.prod(-(-mm.tile // mm.threads) for mm in members))
        jams = self.per_thread is not None and rectangular      # see jam_point_band below
        if s and not jams and not (plan.memory and plan.memory.buffers):
            memory = plan.memory or KernelMemory()
            subbed = ", ".join(_member_text(full, j) for j in range(m, m + s))
            memory.decisions = memory.decisions + [
                f"{name[3:]}: {subbed} not sub-tiled: no buffer to stage"]
            return self._parallel_kernel(original, memory)
        if m:
            self.constant_arrays(plan, domain, host_prefix, full, n, m,
                                 node.get_schedule_depth())
        if self.per_thread is not None:
            plan.per_thread = tuple(-(-mm.tile // mm.threads) for mm in members)
            # only over rectangular tiles: jamming a skewed band's point loops let two
            # threads write one element in a barrier phase (fuzz finding 23)
            if s and inner.get_type() == isl.schedule_node_type.band and rectangular:
                inner = self.jam_point_band(inner, m, s)
                plan.jammed = True
        # threads are mapped right above the point band, below the copy code, so the
        # loops and barriers around the copies do not depend on thread ids
        inner = inner.insert_filter(thread_filt.intersect_params(_id_bounds(thread_ctx)))
        mapped = {_member_text(full, i) for i in range(m)}
        inner = self.localise(inner, plan, [t for t in _loop_names(inner) if t not in mapped])
        node = self.add_copies(inner, plan, s > 0)
        node = node.ancestor(node.get_tree_depth() - depth)
        node = node.insert_filter(block_filt.intersect_params(_id_bounds(block_ctx)))
        if plan.memory is not None and plan.memory.buffers or plan.local is not None:
            node = _guard_grafts(node.child(0).child(0)).parent().parent()
        self.plans[name] = plan
        return node.insert_mark(isl.Id(name))

    def constant_arrays(self, plan: KernelPlan, domain: isl.UnionSet, host_prefix: isl.UnionMap,
                        full: isl.MultiUnionPwAff, n: int, m: int, n_host: int) -> None:
        """Seed 004 §4.2: read-only arrays the same for every thread go to
        ``__constant__`` memory (not to shared buffers)."""
        mapped = full.drop_dims(isl.dim_type.set, m, n - m) if n > m else full
        point = host_prefix.flat_range_product(isl.UnionMap.from_multi_union_pw_aff(mapped))
        chosen, lines = self.constants.consider(plan.name[3:], domain, point, n_host)
        if not lines and not chosen:
            return
        if plan.memory is None:
            plan.memory = KernelMemory()
        mem = plan.memory
        dropped = {b.array for b in mem.buffers if b.array in chosen}
        mem.buffers = [b for b in mem.buffers if b.array not in chosen]
        heads = {f"{plan.name[3:]}: {a}: " for a in dropped}
        mem.decisions = [next((h + "not buffered (read from __constant__ memory)"
                               for h in heads if d.startswith(h) and "register" not in d), d)
                         for d in mem.decisions] + lines

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


def _written_so_far(scop: Scop, lb) -> isl.Map:
    """``{ p -> A[x] }``: the elements of ``lb``'s array that the instances of the same
    outer prefix written at a step ``<= p`` (the last prefix dimension) write, with
    isl.  A time tile moves out only these (seed 001 §4.3's ``W``): an element it only
    read holds the value global memory has, and writing it back would be a store
    that another block of the wavefront may race with."""
    from .memory.localcode import array_writes
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


def _guard_grafts(node: isl.ScheduleNode) -> isl.ScheduleNode:
    """A guard node at ``node`` (right below the block's tile band): the tile values
    this block's statement instances reach.  Copy and barrier statements are grafted
    with extension nodes, which isl instantiates for every tile value the enclosing
    loops scan; where a band is skewed or its block offset piecewise, a block's tile
    loop scans neighbours' tiles too, and their copies raced with the blocks owning
    them (fuzz finding 22).  Returns the guard node."""
    reached = node.get_prefix_schedule_union_map().intersect_domain(node.get_domain()).range()
    if reached.is_empty():
        return node
    return node.insert_guard(isl.Set.from_union_set(reached).coalesce())


def _wavefront_launch(domain: isl.UnionSet, b0: isl.UnionPwAff, t0: int,
                      block_first: list[isl.UnionPwAff], host: int) -> isl.UnionSet:
    """The instances of one launch of a time-tiled kernel as an affine set: the
    wavefront ``w = floor(b0/T0) + c_1 + .. + c_m`` (:func:`.timeblock.wavefront_tile_map`)
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


def _single_piece(f: isl.PwAff) -> isl.PwAff:
    """``f`` on the whole parameter space when it has one piece (its domain, where
    some tile exists, only adds existentially quantified constraints that isl's AST
    generator would carry everywhere), else ``f``."""
    pieces: list[isl.Aff] = []
    f.foreach_piece(lambda _s, a: pieces.append(a))
    return isl.PwAff.from_aff(pieces[0]) if len(pieces) == 1 else f


def _id_bounds(constraints: list[str]) -> isl.Set:
    return isl.Set(f"[{', '.join(_ALL_IDS)}] -> {{ : {' and '.join(constraints) or '1 = 1'} }}")




def _val_list(vals) -> isl.ValList:
    lst = isl.ValList.alloc(isl.DEFAULT_CONTEXT, len(vals))
    for v in vals:
        lst = lst.add(isl.Val(v))
    return lst


# ---- superposition (seed 003 §4.2-4.3) ----------------------------------------------

class _SuperText:
    """``member_text`` for the superposition's bands (their affine forms are written in
    positional iterators ``i0, i1, ...``): a member that is one source loop (the
    iterator itself) in every statement that has it (constants, the statements without
    that loop, are ignored) gives that loop's source name, as :func:`_member_text` does
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


class _SuperMapper:
    """Builds the superposed schedule ``Θ* = (Θ_out*, Θ)`` of a
    :class:`~polymagic.schedule.superposition.SuperPlan` as one isl schedule tree:
    host loops, then per kernel a mark, the block filter (``⌊Θ_out/TL⌋ - min = blockIdx``)
    over the tiled block band, and below it the thread-level schedule: step loops and
    sequences with barriers (``pm_sync`` statements grafted as in
    :func:`memory.plan.graft_copies`), thread bands under thread filters
    (``Θ_thread ≡ threadIdx (mod blockDim)``), and the source order inside a thread."""

    def __init__(self, scop: Scop, plan, options: Options):
        self.scop = scop
        self.plan = plan
        self.options = options
        self.plans: dict[str, KernelPlan] = {}
        self.host_loops: list[str] = []
        self.namer = CopyNamer()
        self.params = ", ".join(scop.size_params + _ALL_IDS)
        self.block = (1, 1, 1)
        self.memory: _SuperMemory | None = None             # the kernel being built
        self.steps: list = []            # loops of the step loops around the node built
        self.kernel_block: list = []     # block loops of the kernel being built
        self.reductions: dict[str, TreeReduction] = {}      # by statement
        self.constants = ConstantChooser(scop, options.sizes)
        self.local_copies: dict = {}     # seed 001 moves of every kernel
        self.local = None                # the kernel's LocalPlan (seed 001), being built
        self.local_avoid: dict[str, str] = {}    # arrays not to localise, with the reason
        self.specialised: dict[str, int] = {}    # sizes a step loop's L was sized at
        self.text = _SuperText(scop)
        from .schedule.loop_kinds import reduction_operator
        from .schedule.superposition import ThreadGroup
        for g in _walk_items(plan.items):
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
        return isl.MultiUnionPwAff(f"[{self.params}] -> [{parts}]")

    @staticmethod
    def _loop(loop: tuple[int, int]) -> str:
        return f"{'-' if loop[1] < 0 else ''}i{loop[0]}"

    def _filter(self, stmts: list[str], conds: dict[str, list[str]] | None = None
                ) -> isl.UnionSet:
        parts = []
        for s in self._expand(stmts):
            c = " and ".join((conds or {}).get(s, [])) or "1 = 1"
            parts.append(f"{self._tuple(s)} : {c}")
        return isl.UnionSet(f"[{self.params}] -> {{ {'; '.join(parts)} }}")

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
        from .memory.plan import _sync_graft
        return _sync_graft(self.scop, node, self.namer.sync())

    def item(self, node: isl.ScheduleNode, it, in_kernel: bool) -> isl.ScheduleNode:
        from .schedule.superposition import Kernel, StepLoop
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

    # -- seed 001 localisation inside the superposition's kernels ---------------------

    def start_local(self, k, domain: isl.UnionSet, point: isl.UnionMap | None, n_host: int,
                    constant: set[str]) -> None:
        """Before kernel ``k``'s thread-level items are built: what seed 001 localisation
        must leave alone (seed 000 block buffers, seed 004 registers and ``__constant__``
        arrays: they already serve those references), asked before the registers are
        applied (:meth:`_SuperMemory.register_plan`, no side effect)."""
        from .memory.localcode import LocalPlan
        self.local = LocalPlan()
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

    def end_local(self, k, kname: str):
        """The kernel's LocalPlan (None when nothing was tried), with a note when
        ``--localise LOOP`` names one of its iterators that the superposition maps to
        blocks or threads (a parallel loop: nothing to localise along)."""
        plan, self.local = self.local, None
        loop = self.options.localise[0] if self.options.localise else None
        if loop is not None and not plan.buffers and not plan.decisions and any(
                loop in self.scop.statement(s).iterators for s in k.statements):
            plan.decisions.append(
                f"{kname}: --localise {loop}: {loop} is not a sequential loop inside this "
                "superposition kernel (it is mapped to blocks or threads): not localised")
        return plan if plan.buffers or plan.decisions else None

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

    def _sequential_loops(self, g) -> list[str]:
        """The source loops each thread of group ``g`` runs (neither a block, thread nor
        step loop), outermost first: the candidates of seed 001 intra-thread
        localisation."""
        out: list[str] = []
        for s in g.statements:
            its = self.scop.statement(s).iterators
            out += [its[lp[0]] for lp in self._unmapped(g, s) if its[lp[0]] not in out]
        return out

    def _unmapped(self, g, s: str) -> list:
        """The loops of statement ``s`` (of group ``g``) that are neither a thread, a
        block nor a step loop, outermost first (its nest's ``loops`` entries)."""
        used = {d[s][0] for d in g.dims} | {b[s][0] for b in self.kernel_block if s in b} | \
            {st[s][0] for st in self.steps if s in st}
        return [lp for lp in self.plan.nests[s].loops if lp[0] not in used]

    def _same_loops(self, g) -> bool:
        """Whether every statement of group ``g`` runs the same source loops (by
        iterator name) on each block and thread dimension."""
        for dims in (g.dims, self.kernel_block):
            for d in dims:
                names = {self.scop.statement(s).iterators[d[s][0]]
                         for s in g.statements if s in d}
                if len(names) > 1:
                    return False
        return True

    def localise_group(self, node: isl.ScheduleNode, g) -> isl.ScheduleNode:
        """Seed 001 §4 inside thread group ``g`` (``node``: its thread filter): along a
        loop each thread runs sequentially (``--localise LOOP[:w]``, else the one the
        analytic model picks, :func:`.memory.localcode.auto_localise`, as the single
        mapping does in :meth:`_Mapper.localise`), L private to each thread (one row
        per thread).  The search starts below the thread band, at the group's source
        order band.  A kernel that cannot be localised keeps its code, with a note."""
        from .memory.localcode import LOCAL_LIMIT, auto_localise, exposed_move_in, \
            localise_kernel
        from .memory.localise import LocaliseError
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
                f"{kname}: not localised along a thread's loop: its statements "
                f"{', '.join(g.statements)} run different loops on the blocks or threads "
                "(their moves are not yet confined to each statement's blocks)")
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
            self.local.decisions.append(f"{kname}: not localised ({e}); left in global "
                                        "memory")
            return node
        if lp is None:
            return node
        extra = sum(lb.nbytes for lb in lp.buffers)
        if extra and self._local_bytes() + extra > min(opts.shared_mem, LOCAL_LIMIT):
            self.local.decisions.append(
                f"{kname}: not localised ({extra} bytes of per-thread L next to the "
                "kernel's buffers would exceed the shared memory of a block)")
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
        from .memory.localcode import LOCAL_LIMIT, exposed_move_in, plan_shared
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
                self.local.decisions.append(f"{self.memory.kname}: step loop {name} not "
                                            "localised (its tree reductions keep their own "
                                            "shared memory)")
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
            lp = plan_shared(self.scop, x, opts.with_(sizes={}, shared_mem=max(limit, 0)),
                             kname, self.block, window, skip)
            sized = {}
            if forced:
                fixed = {p: int(v) for p, v in opts.sizes.items() if p in self.scop.size_params}
                at = plan_shared(self.scop, x, opts.with_(shared_mem=max(limit, 0)), kname,
                                 self.block, window, skip) if fixed else lp
                if len(at.buffers) > len(lp.buffers):
                    lp, sized = at, fixed
                elif not lp.buffers:
                    lp = at                 # its notes say why, at the sizes given
            for lb in lp.buffers:
                exposed_move_in(self.scop, lb)
            if not forced and lp.buffers:
                lp = self._step_gain(lp, kname, name)
        except Exception as e:            # noqa: BLE001 - never a crash: unlocalised code
            from .memory.localise import LocaliseError
            if not isinstance(e, (isl.Error, LocaliseError)):
                raise
            self.local.decisions.append(f"{kname}: step loop {name} not localised ({e})")
            return None
        if lp is None or not forced and not lp.buffers:
            return None             # the default says nothing where it localises nothing
        lp.decisions = [d.replace("along the time loop", f"along the step loop {name}")
                        .replace("shared by the block", "shared by the block's threads")
                        for d in lp.decisions]
        self.local.decisions += lp.decisions
        if not lp.buffers:
            return None
        if sized:
            self.specialised.update(sized)
            self.local.decisions.append(
                f"{kname}: L of step loop {name} sized at " +
                ", ".join(f"{k}={v}" for k, v in sized.items()) +
                " (its footprint grows with the problem size): the kernel is specialised "
                "to these sizes")
        self.local.buffers += lp.buffers
        done = {lb.array for lb in lp.buffers}
        self.memory.deferred = [a for a in self.memory.deferred if a not in done]
        return lp

    def _step_gain(self, lp, kname: str, name: str):
        """The default: keep the step loop's L only where the analytic model (seed 001
        I/O sets counted with barvinok for block 0 at :data:`.memory.localcode.AUTO_SIZE`
        per size) predicts fewer global accesses; else None."""
        from .isl_util import in_child
        from .memory.localcode import AUTO_SECONDS, AUTO_SIZE
        from .memory.localise import count_seconds, traffic_change
        sizes = {p: AUTO_SIZE for p in self.scop.size_params}
        sizes.update({v: 0 for v in (*kir.THREAD_IDS.values(), *kir.BLOCK_IDS.values())})
        bufs = lp.buffers
        try:
            with count_seconds(AUTO_SECONDS):
                saved = in_child(lambda: -sum(sum(traffic_change(self.scop, lb.prefix, lb.loc,
                                                                 sizes)) for lb in bufs),
                                 AUTO_SECONDS)
        except Exception:                 # noqa: BLE001 - the model failed: not localised
            return None
        if saved <= 0:
            return None
        lp.decisions.insert(0, f"{kname}: localised along the step loop {name} by default: "
                               f"the analytic model predicts {saved} fewer global accesses "
                               f"per block at {AUTO_SIZE} per size (--no-localise turns it off)")
        return lp

    def graft_step_local(self, x: isl.ScheduleNode, lp) -> isl.ScheduleNode:
        """Graft the step loop's moves around its body ``x``; returns ``x``'s position."""
        from .memory.localcode import graft_shared
        depth = x.get_tree_depth()
        node = graft_shared(self.scop, x, lp, self.local_copies, self.namer)
        return node.ancestor(node.get_tree_depth() - depth)

    def default_block(self, k) -> tuple[int, int, int]:
        """Threads per block of kernel ``k`` before a given tile caps them: ``--block``,
        else :data:`DEFAULT_BLOCKS` for its thread groups' largest number of dims."""
        from .schedule.superposition import ThreadGroup
        groups = [g for g in _walk_items(k.body) if isinstance(g, ThreadGroup)]
        n_thr = max((len(g.dims) for g in groups), default=0)
        if self.options.block:
            return tuple((list(self.options.block) + [1, 1, 1])[:3])
        return tuple((list(DEFAULT_BLOCKS[n_thr]) + [1, 1, 1])[:3]) if n_thr else (1, 1, 1)

    @staticmethod
    def tied_axes(k) -> list[list[str]]:
        """Per block loop of kernel ``k`` (outermost first), the thread axes on which a
        (non-reduction) thread group runs that same loop: the tile of that block loop
        is split over those threads (seed 003 §4.2, ``Θ_out`` tiled by ``TL``)."""
        from .schedule.superposition import ThreadGroup
        groups = [g for g in _walk_items(k.body) if isinstance(g, ThreadGroup)]
        return [[ax for g in groups if not g.reduction for d, ax in zip(g.dims, "xyz")
                 if all(b.get(s) == v for s, v in d.items())] for b in k.block]

    def tiles_and_threads(self, k) -> tuple[list[int], tuple[int, int, int]]:
        """Block tiles ``TL_k`` (``--tile``, else as many points as the threads of the
        axis running the same loop) and threads per block of kernel ``k``.  Per-thread
        tiles (``--tile T:t``, seed 000 §4.1): ``T_j / t_j`` threads on the axis
        running block loop j, so each thread computes ``t_j`` points of the tile,
        strided by the block size (the thread filter is cyclic) so that consecutive
        threads still touch consecutive elements (seed 003's coalescing)."""
        from .schedule.superposition import ThreadGroup
        groups = [g for g in _walk_items(k.body) if isinstance(g, ThreadGroup)]
        blk = self.default_block(k)
        tiles = []
        given = list(self.options.tile or ())
        per = per_thread_tile(self.options.tile_levels, self.options.block)
        for j, (b, axes) in enumerate(zip(k.block, self.tied_axes(k))):
            if j < len(given):
                tiles.append(given[j])
                if per is not None:
                    pts = per[j] if j < len(per) else 1
                    blk = tuple(max(1, given[j] // pts) if a in axes else n
                                for a, n in zip("xyz", blk))
                elif not self.options.block:
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

    def points_per_thread(self, k, tiles: list[int], blk: tuple[int, int, int]
                          ) -> tuple[int, ...]:
        """Points of the block tile each thread computes along each block loop: ⌈T/B⌉
        on the axis running that loop, 1 on a block loop no thread axis runs."""
        return tuple(max([-(-t // blk["xyz".index(a)]) for a in axes] + [1])
                     for t, axes in zip(tiles, self.tied_axes(k)))

    def kernel(self, node: isl.ScheduleNode, k) -> isl.ScheduleNode:
        name = f"{MARK_PREFIX}{len(self.plans)}"
        tiles, blk = self.tiles_and_threads(k)
        self.block = blk
        self.kernel_block = list(k.block)
        members: list[MappedMember] = []
        domain = node.get_domain()
        block_ctx: list[str] = []
        host = node.get_prefix_schedule_union_map().intersect_domain(domain)
        n_host = node.get_schedule_depth()
        point = self.thread_points(k, host)
        constant = self.constants.consider(name[3:], domain, point, n_host) \
            if point is not None and (k.block or self._thread_dims(k)) else (set(), [])
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
                bid = isl.UnionPwAff.param_on_domain_id(domain, param_id(kir.BLOCK_IDS[axis]))
                off = isl.UnionPwAff.pw_aff_on_domain(domain, tmin)
                filt = filt.intersect(tile_sched.get_at(j).sub(off).sub(bid).zero_union_set())
                block_ctx.append(f"{kir.BLOCK_IDS[axis]} >= 0")
            node = node.insert_partial_schedule(tile_sched)
            for j in range(len(k.block)):
                node = node.band_member_set_coincident(j, 1)
            node = atomic(node)
            self.memory = self.block_memory(name[3:], k, node.child(0), host)
            self.memory.constants(*constant)
            self.start_local(k, domain, point, n_host, constant[0])
            depth = node.get_tree_depth()
            body = self.items(node.child(0), k.body, True)
            self.memory.registers(k, domain, point, n_host, tiles)
            body = self.memory.graft_block(body)
            node = body.ancestor(body.get_tree_depth() - depth)
            node = node.insert_filter(filt.intersect_params(_id_bounds(block_ctx)))
            if self.memory.mem.buffers:
                node = _guard_grafts(node.child(0).child(0)).parent().parent()
        else:
            self.memory = self.block_memory(name[3:], k, None, host)
            self.memory.constants(*constant)
            self.start_local(k, domain, point, n_host, constant[0])
            node = self.items(node, k.body, True)
            self.memory.registers(k, domain, point, n_host, tiles)
        mem, self.memory = self.memory.result(), None
        kp = KernelPlan(name, members, [], list(k.statements), memory=mem,
                        threads=blk, text=self.summary(k, tiles, blk),
                        member_points=False, local=self.end_local(k, name[3:]))
        kp.specialised, self.specialised = self.specialised, {}
        if per_thread_tile(self.options.tile_levels, self.options.block) is not None:
            kp.per_thread = self.points_per_thread(k, tiles, blk)
            kp.text += "; per thread: " + " x ".join(map(str, kp.per_thread)) + \
                " point(s) strided by the block size"
        self.plans[name] = kp
        return node.insert_mark(isl.Id(name))

    @staticmethod
    def _thread_dims(k) -> bool:
        from .schedule.superposition import ThreadGroup
        return any(isinstance(g, ThreadGroup) and g.dims for g in _walk_items(k.body))

    def thread_points(self, k, host: isl.UnionMap) -> isl.UnionMap | None:
        """Each instance of kernel ``k`` -> its thread point (seed 004 §4.2 on seed
        003's tree): the host loops, the block loops ``Θ_out`` (not tiled), then the
        loops of its thread group on thread x, y, z (``0`` where the group maps fewer:
        those threads are filtered to 0).  One tuple is a point of one thread of one
        launch (block ``⌊Θ_out/TL⌋``, thread ``dims mod blockDim``; a thread may own
        several), as the single mapping's host loops and mapped members are, for :func:`.memory.registers.plan_registers`
        and :class:`.memory.constant.ConstantChooser`; the step loops, run by every
        thread, are not part of it.  None when a statement of ``k`` is in no thread
        group (then neither registers nor constants are planned)."""
        from .schedule.superposition import ThreadGroup
        groups = [g for g in _walk_items(k.body) if isinstance(g, ThreadGroup)]
        members = [{s: self._loop(b[s]) for s in k.statements} for b in k.block]
        for a in range(3):
            members.append({s: self._loop(g.dims[a][s]) if a < len(g.dims) else "0"
                            for g in groups for s in g.statements})
        if {s for g in groups for s in g.statements} != set(k.statements):
            return None
        mupa = isl.UnionMap.from_multi_union_pw_aff(self._mupa(members))
        return host.flat_range_product(mupa.intersect_domain(host.domain()))

    def block_memory(self, kname: str, k, body: isl.ScheduleNode | None,
                     host: isl.UnionMap) -> "_SuperMemory":
        """Plan the kernel's block-level buffers (``body``: the leaf below its block
        tile band, None for a one-block kernel); arrays whose block footprint grows
        with the problem size are left to its thread groups
        (:meth:`_SuperMemory.plan_group`)."""
        from .schedule.superposition import ThreadGroup
        mem = _SuperMemory(self, kname, host, body.get_schedule_depth() - len(k.block)
                           if body is not None else 0, len(k.block))
        if self.options.shared == "none":
            return mem
        if any(isinstance(g, ThreadGroup) and g.reduction for g in _walk_items(k.body)):
            return mem.refuse("its tree reductions keep their own shared memory; buffers "
                              "around them are not planned")
        if body is None:
            return mem.refuse("one block runs the whole kernel (no block-level loop); "
                              "buffers are planned per block tile")
        return mem.plan_block(body)

    def reduction_group(self, node: isl.ScheduleNode, g) -> isl.ScheduleNode:
        """A tree reduction: the source order of its statements (reduction loop
        innermost, shared by all of them) with ``pm_rini`` before and ``pm_rfin`` after
        that loop, only the statements filtered by ``loop ≡ threadIdx.x (mod
        blockDim.x)``; every thread runs the grafted statements, so their barriers are
        uniform across the block.  Several statements (a fused group) accumulate in one
        pass, and the first one's ``pm_rfin`` reduces all their registers."""
        for s in g.statements:
            self.reductions[s].block = self.block
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
        conds = {s: [f"({self._loop(g.dims[0][s])} - {kir.THREAD_IDS['x']}) mod {bx} = 0",
                     f"{kir.THREAD_IDS['y']} = 0", f"{kir.THREAD_IDS['z']} = 0"]
                 for s in g.statements}
        ctx = [f"0 <= {kir.THREAD_IDS[a]} < {b}" for a, b in zip("xyz", self.block)]
        return node.insert_filter(self._filter(g.statements, conds).intersect_params(
            _id_bounds(ctx)))

    def thread_group(self, node: isl.ScheduleNode, g) -> isl.ScheduleNode:
        if g.reduction:
            return self.reduction_group(node, g)
        wanted = self.memory is not None and self.memory.planned and bool(self.memory.deferred)
        chunk = self.thread_tiles(node, g) if wanted else None
        bufs = self.memory.plan_group(node, g, chunk) if chunk is not None else []
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
                conds[s].append(f"({self._loop(d[s])} - {kir.THREAD_IDS[ax]}) mod {b} = 0")
        for ax in axes[len(g.dims):]:
            for s in g.statements:
                conds[s].append(f"{kir.THREAD_IDS[ax]} = 0")
        if g.dims:
            members = [{s: self._loop(d[s]) for s in g.statements} for d in reversed(g.dims)]
            node = node.insert_partial_schedule(self._mupa(members))
            for j in range(len(g.dims)):
                node = node.band_member_set_coincident(j, 1)
            node = atomic(node)
        ctx = [f"0 <= {kir.THREAD_IDS[a]} < {b}" for a, b in zip("xyz", self.block)]
        if bufs:
            node = atomic(node.insert_partial_schedule(chunk))
            depth = node.get_tree_depth()
            node = node.child(0)
        node = node.insert_filter(self._filter(g.statements, conds).intersect_params(
            _id_bounds(ctx)))
        node = self.localise_group(node, g)
        if bufs:
            node = graft_copies(self.scop, node, bufs, self.block, self.namer)
            node = node.ancestor(node.get_tree_depth() - depth)
        return node

    def thread_tiles(self, node: isl.ScheduleNode, g) -> isl.MultiUnionPwAff | None:
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

    def sub_tile(self, g) -> dict[str, str] | None:
        """Per statement of ``g``, ``⌊L / T⌋`` of its outermost loop that is neither a
        thread, a block nor a step loop (``0`` for a statement without one); None when
        no statement has such a loop."""
        given = list(self.options.tile or ())[len(self.kernel_block):]
        size = given[0] if given else DEFAULT_SUB_TILE
        out = {s: f"floor(({lp})/{size})" if lp else "0"
               for s, lp in self.free_loops(g).items()}
        return out if any(v != "0" for v in out.values()) else None

    def free_loops(self, g) -> dict[str, str | None]:
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
        from .memory.plan import _prefix
        validity = getattr(self.plan, "validity", None)
        if validity is None:
            return False
        pre = _prefix(node)
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

    def summary(self, k, tiles: list[int], blk: tuple[int, int, int]) -> str:
        from .schedule.superposition import StepLoop, ThreadGroup
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


class _SuperMemory:
    """Shared-memory buffers of one superposition kernel (seed 000 §3 on seed 003's
    tree).  The decision rule is the single mapping's (:mod:`.memory.plan`: Algorithm 1
    with ``--shared``/``--delta``, bounded boxes, ``--shared-mem``), at two levels:

    * **block**: the prefix is the block tile (and host loops); copy-in before the
      kernel's thread steps, copy-out after them (seed 004 §4.2), the step loops'
      barriers separating the reuses of the buffer;
    * **thread tile**: an array whose block footprint grows with the problem size
      (jacobi-2d-alt's rows, a ``k`` loop in the thread) is planned per thread tile of
      each thread group that touches it (:meth:`_SuperMapper.thread_tiles`), copied in
      and out around the group's thread filter inside the tile loop, with barriers
      (:func:`.memory.plan.graft_copies`).

    A kernel with tree reductions or with one block gets no buffers (a note says so).
    Every kernel also gets the single mapping's registers (:meth:`registers`) and
    ``__constant__`` arrays (:meth:`constants`), decided on its thread points
    (:meth:`_SuperMapper.thread_points`)."""

    def __init__(self, mapper: "_SuperMapper", kname: str, host: isl.UnionMap, n_host: int,
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

    def refuse(self, why: str) -> "_SuperMemory":
        self.mem.decisions.append(f"{self.kname}: no buffers: {why}")
        return self

    def _budget(self):
        from .isl_util import OperationBudget
        from .memory.plan import PLAN_OPERATIONS
        return OperationBudget(self.mapper.scop.context.get_ctx(), PLAN_OPERATIONS)

    def _arrays(self, dom: isl.UnionSet, among: list[str] | None = None) -> list[str]:
        scop = self.mapper.scop
        used = {a.array for s in scop.statements for a in s.accesses
                if not dom.extract_set(s.domain.get_space()).is_empty()}
        return [a for a in scop.arrays if a in used and (among is None or a in among)]

    def plan_block(self, body: isl.ScheduleNode) -> "_SuperMemory":
        from .memory.plan import PLAN_OPERATIONS, _prefix, fit_buffers, level_buffers
        scop, options = self.mapper.scop, self.mapper.options
        prefix = _prefix(body)
        try:
            with self._budget():
                bufs, lines, self.deferred = level_buffers(
                    scop, prefix, options, self.kname, f"sh{self.kid}", "block",
                    self._arrays(prefix.domain()), self.host, True)
        except isl.Error:
            return self.refuse(f"planning them took more than {PLAN_OPERATIONS} isl "
                               "operations")
        self.planned = True
        self.block_bufs, dropped = fit_buffers(bufs, options, self.kname)
        self.mem.buffers += self.block_bufs
        self.mem.decisions += lines + dropped
        return self

    def plan_group(self, node: isl.ScheduleNode, g, chunk: isl.MultiUnionPwAff
                   ) -> list[BufferPlan]:
        """Buffers of the deferred arrays per thread tile of group ``g`` (built at
        ``node``, a leaf): the prefix is the group's (host, block tile, step loops)
        followed by its thread tiles ``chunk``."""
        from .memory.plan import _prefix, fit_buffers, level_buffers
        if not self.planned or not self.deferred:
            return []
        scop, options = self.mapper.scop, self.mapper.options
        pre = _prefix(node)
        arrays = self._arrays(pre.domain(), self.deferred)
        if not arrays:
            return []
        self.n_groups += 1
        label = f"{self.kname} (thread group [{','.join(g.statements)}])"
        try:
            with self._budget():
                tiles = isl.UnionMap.from_multi_union_pw_aff(chunk).intersect_domain(
                    pre.domain())
                prefix = pre.flat_range_product(tiles)
                bufs, lines, _ = level_buffers(scop, prefix, options, self.kname,
                                               f"sh{self.kid}t{self.n_groups}", "thread tile",
                                               arrays, self._fixed(pre), False)
                lines = [f"{ln} in thread group [{','.join(g.statements)}]" for ln in lines]
        except isl.Error:
            self.mem.decisions.append(f"{label}: no buffers: planning them took too many "
                                      "isl operations")
            return []
        self.decided.update(arrays)
        bufs, dropped = fit_buffers(bufs, options, self.kname,
                                    sum(b.nbytes for b in self.mem.buffers))
        self.mem.buffers += bufs
        self.mem.decisions += lines + dropped
        return bufs

    def constants(self, chosen: set[str], lines: list[str]) -> None:
        """Seed 004 §4.2 as in :meth:`_Mapper.constant_arrays`: the arrays read from
        ``__constant__`` memory get no shared buffer, at the block level (dropped) nor
        per thread tile (no longer deferred to the thread groups)."""
        dropped = {b.array for b in self.mem.buffers if b.array in chosen}
        self.mem.buffers = [b for b in self.mem.buffers if b.array not in chosen]
        self.block_bufs = [b for b in self.block_bufs if b.array not in chosen]
        self.deferred = [a for a in self.deferred if a not in chosen]
        heads = {f"{self.kname}: {a}: " for a in dropped}
        self.mem.decisions = [next((h + "not buffered (read from __constant__ memory)"
                                    for h in heads if d.startswith(h)), d)
                              for d in self.mem.decisions] + lines

    def registers(self, k, domain: isl.UnionSet, point: isl.UnionMap, n_host: int,
                  tiles: list[int]) -> None:
        """Seed 004 §4.2 on the superposed kernel ``k``: the arrays whose subscripts vary
        only with its thread points (:meth:`_SuperMapper.thread_points`) are planned
        into per-thread registers by :func:`.memory.registers.plan_registers`, the
        lowering keeping them across the thread's sequential loops (``sum[p]`` across
        doitgen's ``s``).  A tree reduction's statement keeps its own accumulator, so
        the arrays it accesses are left alone.  Block-level buffers of a register
        array are dropped (:func:`.memory.plan.drop_register_buffers`) only where each
        thread owns one point of the block tile in every group touching it, so the
        register is loaded once per thread point, not once per thread tile."""
        mapper = self.mapper
        scop, options = mapper.scop, mapper.options
        planned = self.register_plan(k, domain, point, n_host)
        if planned is None:
            return
        regs, lines = planned
        reduced = {a.array for s in k.statements if s in mapper.reductions
                   for a in scop.statement(s).accesses}
        local = {lb.array for lb in (mapper.local.buffers if mapper.local else [])}
        kept = []
        for r in regs:
            if r.array in local:
                lines[r.line] = (f"{self.kname}: {r.array}: not in a register (localised "
                                 "along a step loop: seed 001's L keeps it across the steps)")
                continue
            if r.array in reduced:
                lines[r.line] = (f"{self.kname}: {r.array}: not in a register (a tree "
                                 "reduction's statement accesses it; the reduction keeps its "
                                 "own per-thread accumulator)")
                continue
            r.line += len(self.mem.decisions)
            kept.append(r)
        self.mem.decisions += lines
        self.mem.registers = kept
        one = [r for r in kept if all(self._one_point(k, s, tiles) for s in r.statements)]
        self.mem.registers = one
        dropped = drop_register_buffers(self.mem, self.kname, options, 1)
        self.mem.registers = kept
        self.block_bufs = [b for b in self.block_bufs if b.array not in dropped]

    def register_plan(self, k, domain: isl.UnionSet, point: isl.UnionMap | None, n_host: int
                      ) -> tuple[list, list[str]] | None:
        """:func:`.memory.registers.plan_registers` on kernel ``k``'s thread points (no
        side effect: :meth:`registers` applies it; the localisation asks it first, to
        leave the register arrays alone); None when no register can be planned."""
        from .memory.registers import plan_registers
        from .schedule.superposition import ThreadGroup
        mapper = self.mapper
        scop, options, plan = mapper.scop, mapper.options, mapper.plan
        if not options.registers:
            return None
        groups = [g for g in _walk_items(k.body) if isinstance(g, ThreadGroup)]
        if point is None or not k.block and not mapper._thread_dims(k):
            return None
        mapped = [plan.loop_text(b) for b in k.block] + \
            [plan.loop_text(d) for g in groups for d in g.dims]
        used = {s: {b[s][0] for b in k.block} | {d[s][0] for g in groups for d in g.dims
                                                  if s in d} |
                {st[s][0] for st in mapper.steps if s in st} for s in k.statements}
        seq = [scop.statement(s).iterators[lp[0]] for s in k.statements
               for lp in plan.nests[s].loops if lp[0] not in used[s]]
        return plan_registers(scop, domain, point, self.kname,
                              list(dict.fromkeys(mapped)), list(dict.fromkeys(seq)),
                              n_host=n_host)

    def _one_point(self, k, s: str, tiles: list[int]) -> bool:
        """Each thread runs at most one thread point of statement ``s`` per block: every
        loop of its group on a thread axis is a block loop whose tile has no more
        points than threads along that axis."""
        from .schedule.superposition import ThreadGroup
        blk = self.mapper.block
        for g in _walk_items(k.body):
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
                self.mem.decisions.append(
                    f"{self.kname}: {a}: not buffered (footprint grows with the problem size "
                    "per block, and no thread group touching it has thread tiles)")
        return self.mem if self.mem.decisions or self.mem.buffers else None


def _walk_items(items):
    from .schedule.superposition import Kernel, StepLoop
    for it in items:
        yield it
        if isinstance(it, (StepLoop, Kernel)):
            yield from _walk_items(it.body)


def _loop_names(node: isl.ScheduleNode) -> list[str]:
    """The band members below ``node`` that are one source loop each (their text is
    an iterator name), outermost first: where ``--localise`` can name a loop."""
    out: list[str] = []
    if node.get_type() == isl.schedule_node_type.band:
        mupa = node.band_get_partial_schedule()
        out += [t for t in (_member_text(mupa, j) for j in range(node.band_n_member()))
                if t.isidentifier()]
    for c in range(node.n_children()):
        out += [t for t in _loop_names(node.child(c)) if t not in out]
    return out


def map_superposition(scop: Scop, plan, options: Options) -> MappingResult:
    """The superposed schedule tree of ``plan`` with one plan per kernel."""
    mapper = _SuperMapper(scop, plan, options)
    dom = mapper.domain().align_params(_mapped_param_space(scop))
    node = isl.Schedule.from_domain(dom).get_root().child(0)
    node = mapper.items(node, plan.items, False)
    return MappingResult(node.get_schedule(), mapper.plans, mapper.host_loops,
                         mapper.namer.copies, mapper.local_copies,
                         constants=mapper.constants.decls(), reductions=mapper.grafted())


def map_schedule(scop: Scop, sched: ScheduleResult, options: Options) -> MappingResult:
    """Tile and mark the schedule tree; return it with one plan per kernel."""
    for name, vals in (("--tile", options.tile or ()), ("--block", options.block or ())):
        if any(v <= 0 for v in vals):
            raise OptionsError(f"{name} sizes must be positive")
    if _superposed(sched, options):
        return map_superposition(scop, sched.superposition, options)
    mapper = _Mapper(scop, options)
    root = sched.schedule.align_params(_mapped_param_space(scop)).get_root()
    node = mapper.visit(root.child(0)) if root.n_children() else root
    return MappingResult(node.get_schedule(), mapper.plans, mapper.host_loops,
                         mapper.namer.copies, mapper.local_copies,
                         constants=mapper.constants.decls())


def _superposed(sched: ScheduleResult, options: Options) -> bool:
    """Whether the seed 003 superposition maps this program (per-thread tiles,
    ``--tile T:t``, included: :meth:`_SuperMapper.tiles_and_threads`)."""
    return options.mapping == "superposition" and getattr(sched, "use_superposition", False)


def _mapped_param_space(scop: Scop) -> isl.Space:
    """Parameter space of the size parameters plus every block/thread id."""
    names = scop.size_params + _ALL_IDS
    return isl.Set(f"[{', '.join(names)}] -> {{ : }}").get_space()
