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

from dataclasses import dataclass, field

import islpy as isl

from . import kir
from .errors import OptionsError, PolymagicError
from .expr import (Access, Assign, Binary, Call, CPrinter, Expr, Int, Var, map_expr,
                   substitute, substitute_assign)
from .expr import walk as walk_expr
from .isl_util import ast_expr_to_expr, pw_aff_to_expr, val_to_int
from .memory.plan import BufferPlan, CopyNamer, KernelMemory, graft_copies, plan_kernel_memory
from .options import Options
from .schedule import ScheduleResult
from .scop import Scop

DEFAULT_TILES = {1: (256,), 2: (32, 32), 3: (4, 8, 32)}
DEFAULT_BLOCKS = {1: (256,), 2: (32, 8), 3: (32, 4, 2)}
DEFAULT_SUB_TILE = 16
MARK_PREFIX = "pm_kernel"
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

    @property
    def block(self) -> tuple[int, int, int]:
        b = {m.axis: m.threads for m in self.members}
        return (b.get("x", 1), b.get("y", 1), b.get("z", 1))


@dataclass
class MappingResult:
    schedule: isl.Schedule               # the mapped schedule tree (tiled, marked)
    plans: dict[str, KernelPlan]
    host_loops: list[str]
    copies: dict[str, tuple[str, BufferPlan]] = field(default_factory=dict)


# ---- schedule tree transformation ---------------------------------------------------

def _leading_coincident(node: isl.ScheduleNode) -> int:
    k = 0
    while k < node.band_n_member() and node.band_member_get_coincident(k):
        k += 1
    return k


def _has_parallelism(node: isl.ScheduleNode) -> bool:
    found = []

    def visit(n: isl.ScheduleNode) -> bool:
        if n.get_type() == isl.schedule_node_type.band and _leading_coincident(n) > 0:
            found.append(True)
            return False
        return True
    node.foreach_descendant_top_down(visit)
    return bool(found)


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

    def new_name(self) -> str:
        return f"{MARK_PREFIX}{len(self.plans)}"

    def visit(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        t = node.get_type()
        if t == isl.schedule_node_type.band:
            if _leading_coincident(node) > 0:
                return self.parallel_kernel(node)
            if not _has_parallelism(node):
                return self.single_kernel(node)
            if node.band_n_member() > 1:
                node = node.band_split(1)
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
        if not _has_parallelism(node) and t == isl.schedule_node_type.filter:
            return self.visit(node.child(0)).parent()
        return self.visit(node.child(0)).parent()

    def single_kernel(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        name = self.new_name()
        seq = []
        if node.get_type() == isl.schedule_node_type.band:
            mupa = node.band_get_partial_schedule()
            seq = [_member_text(mupa, i) for i in range(node.band_n_member())]
        self.plans[name] = KernelPlan(name, [], seq, _statements(node))
        return node.insert_mark(isl.Id(name))

    def tile_sizes(self, m: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Tile sizes (outermost member first) and threads per member (outermost first)."""
        tiles = list(self.options.tile or DEFAULT_TILES[m])
        tiles = (tiles + list(DEFAULT_TILES[m]))[:m] if len(tiles) < m else tiles[:m]
        blk_xyz = list(self.options.block or DEFAULT_BLOCKS[m])
        blk_xyz = (blk_xyz + [1, 1, 1])[:3]
        # axis of member j (outermost first): innermost member -> x
        threads = [min(blk_xyz[m - 1 - j], tiles[j]) for j in range(m)]
        return tuple(tiles), tuple(threads)

    def parallel_kernel(self, node: isl.ScheduleNode) -> isl.ScheduleNode:
        name = self.new_name()
        n = node.band_n_member()
        m = min(_leading_coincident(node), 3)
        full = node.band_get_partial_schedule()
        host_prefix = node.get_prefix_schedule_union_map()
        # sub-tile the sequential members too when buffers may be used (seed 000 §4.1)
        s = n - m if self.options.shared != "none" and n > m and node.band_get_permutable() else 0
        seq = [_member_text(full, i) for i in range(m + s, n)]
        if n > m + s:
            node = node.band_split(m + s)
        tiles, threads = self.tile_sizes(m)
        tiles = tiles + self.sub_tile_sizes(m, s)
        space = node.band_get_space()
        node = node.band_tile(isl.MultiVal.from_val_list(space, _val_list(tiles)))
        domain = node.get_domain()
        tile_sched = node.band_get_partial_schedule()
        point_sched = node.child(0).band_get_partial_schedule()
        rng = isl.Set.from_union_set(
            isl.UnionMap.from_multi_union_pw_aff(tile_sched).intersect_domain(domain).range()
        ).intersect_params(self.scop.context)
        members: list[MappedMember] = []
        block_filt, thread_filt = domain, domain
        block_ctx, thread_ctx = [], []
        for j in range(m):
            axis = "xyz"[m - 1 - j]
            tmin = rng.dim_min(j).coalesce()
            tmax = rng.dim_max(j).coalesce()
            members.append(MappedMember(axis, tiles[j], threads[j], _member_text(full, j),
                                        tmin, tmax))
            b = isl.UnionPwAff.param_on_domain_id(domain, _param_id(kir.BLOCK_IDS[axis]))
            t = isl.UnionPwAff.param_on_domain_id(domain, _param_id(kir.THREAD_IDS[axis]))
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
        if self.options.shared != "none":
            plan.memory = plan_kernel_memory(self.scop, outer, inner, self.options, name,
                                             host_prefix)
        # threads are mapped right above the point band, below the copy code, so the
        # loops and barriers around the copies do not depend on thread ids
        inner = inner.insert_filter(thread_filt.intersect_params(_id_bounds(thread_ctx)))
        node = self.add_copies(inner, plan, s > 0)
        node = node.ancestor(node.get_tree_depth() - depth)
        node = node.insert_filter(block_filt.intersect_params(_id_bounds(block_ctx)))
        self.plans[name] = plan
        return node.insert_mark(isl.Id(name))

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


def _id_bounds(constraints: list[str]) -> isl.Set:
    return isl.Set(f"[{', '.join(_ALL_IDS)}] -> {{ : {' and '.join(constraints) or '1 = 1'} }}")


def _param_id(name: str) -> isl.Id:
    """The isl id that parsing ``name`` as a parameter gives (plain ``isl.Id(name)``
    from Python carries a user pointer and would be a different parameter)."""
    return isl.Set(f"[{name}] -> {{ : }}").get_space().get_dim_id(isl.dim_type.param, 0)


def _val_list(vals) -> isl.ValList:
    lst = isl.ValList.alloc(isl.DEFAULT_CONTEXT, len(vals))
    for v in vals:
        lst = lst.add(isl.Val(v))
    return lst


def map_schedule(scop: Scop, sched: ScheduleResult, options: Options) -> MappingResult:
    """Tile and mark the schedule tree; return it with one plan per kernel."""
    for name, vals in (("--tile", options.tile or ()), ("--block", options.block or ())):
        if any(v <= 0 for v in vals):
            raise OptionsError(f"{name} sizes must be positive")
    mapper = _Mapper(scop, options)
    root = sched.schedule.align_params(_mapped_param_space(scop)).get_root()
    node = mapper.visit(root.child(0)) if root.n_children() else root
    return MappingResult(node.get_schedule(), mapper.plans, mapper.host_loops,
                         mapper.namer.copies)


def _mapped_param_space(scop: Scop) -> isl.Space:
    """Parameter space of the size parameters plus every block/thread id."""
    names = scop.size_params + _ALL_IDS
    return isl.Set(f"[{', '.join(names)}] -> {{ : }}").get_space()


# ---- AST -> Kernel IR ------------------------------------------------------------

class _Lowerer:
    """Translates isl's AST of the mapped schedule into a :class:`kir.Program`."""

    def __init__(self, scop: Scop, mapping: MappingResult):
        self.scop = scop
        self.mapping = mapping
        self.kernels: dict[str, kir.Kernel] = {}
        self.host_vars: list[str] = []
        self.guards: list[list[Expr]] = []
        self.used_buffers: dict[str, BufferPlan] = {}
        self.block_dims = (1, 1, 1)

    def block(self, node: isl.AstNode, in_kernel: bool) -> list[kir.Stmt]:
        t = node.get_type()
        if t == isl.ast_node_type.block:
            out: list[kir.Stmt] = []
            children = node.block_get_children()
            for i in range(children.n_ast_node()):
                out.extend(self.block(children.get_at(i), in_kernel))
            return out
        if t == isl.ast_node_type.for_:
            return [self.loop(node, in_kernel)]
        if t == isl.ast_node_type.if_:
            cond = ast_expr_to_expr(node.if_get_cond())
            if not in_kernel:
                return self.host_if(node, cond)
            then = self.block(node.if_get_then_node(), in_kernel)
            orelse = self.block(node.if_get_else_node(), in_kernel) if node.if_has_else_node() else []
            kept = [c for c in _conjuncts(cond) if not _implied_by_block(c, self.block_dims)]
            if not kept:
                return then
            return [kir.If(_conjoin(kept), then, orelse)]
        if t == isl.ast_node_type.mark:
            name = node.mark_get_id().get_name()
            if in_kernel or not name.startswith(MARK_PREFIX):
                return self.block(node.mark_get_node(), in_kernel)
            return [self.launch(name, node.mark_get_node())]
        if t == isl.ast_node_type.user:
            if not in_kernel:
                raise PolymagicError("internal: statement outside any kernel")
            return [self.compute(node.user_get_expr())]
        raise PolymagicError(f"internal: unexpected AST node type {t}")

    def host_if(self, node: isl.AstNode, cond: Expr) -> list[kir.Stmt]:
        """isl hoists conditions on block/thread ids above the kernel mark; such
        conjuncts are pushed into the kernels below as per-thread guards."""
        host_part, kernel_part = [], []
        for c in _conjuncts(cond):
            (kernel_part if _mentions_mapped_ids(c) else host_part).append(c)
        if kernel_part and node.if_has_else_node():
            raise PolymagicError("internal: guard on thread ids with an else branch")
        self.guards.append(kernel_part)
        then = self.block(node.if_get_then_node(), False)
        self.guards.pop()
        orelse = self.block(node.if_get_else_node(), False) if node.if_has_else_node() else []
        if not host_part:
            return then
        return [kir.If(_conjoin(host_part), then, orelse)]

    def loop(self, node: isl.AstNode, in_kernel: bool) -> kir.Stmt:
        var = node.for_get_iterator().get_id().get_name()
        init = ast_expr_to_expr(node.for_get_init())
        if not in_kernel:
            self.host_vars.append(var)
        body = self.block(node.for_get_body(), in_kernel)
        if node.for_is_degenerate():
            return kir.If(Int(1), [kir.Let(var, init)] + body)
        cond = node.for_get_cond()
        upper = _upper_bound(cond, var)
        step = val_to_int(node.for_get_inc().get_val())
        return kir.Loop(var, init, upper, step, body)

    def compute(self, call: isl.AstExpr) -> kir.Stmt:
        name = call.get_op_arg(0).get_id().get_name()
        args = [ast_expr_to_expr(call.get_op_arg(i + 1)) for i in range(call.get_op_n_arg() - 1)]
        if name.startswith("pm_sync"):
            return kir.Barrier(int(name[len("pm_sync"):]))
        if name in self.mapping.copies:
            return self.copy(name, args)
        stmt = self.scop.statement(name)
        body = self.buffered_body(stmt)
        return kir.Compute(name, substitute_assign(body, dict(zip(stmt.iterators, args))))

    def copy(self, name: str, args: list[Expr]) -> kir.Compute:
        """``sh[a - g(p)] = A[a]`` (copy-in) or ``A[a] = sh[a - g(p)]`` (copy-out)."""
        direction, buf = self.mapping.copies[name]
        na = len(buf.extents)
        p, a = args[:len(args) - na], args[len(args) - na:]
        env = {f"p{i}": e for i, e in enumerate(p)}
        local = tuple(Binary("-", ai, substitute(_prefix_expr(g), env)) for ai, g in zip(a, buf.lower))
        glob = Access(buf.array, tuple(a))
        sh = Access(buf.name, local)
        self.used_buffers.setdefault(buf.name, buf)
        if direction == "in":
            return kir.Compute(name, Assign(sh, "=", glob))
        return kir.Compute(name, Assign(glob, "=", sh))

    def buffered_body(self, stmt) -> Assign:
        """The statement with its buffered references rewritten to ``F'(y) - g``
        (seed 000 §3.1.2), ``g`` the buffer's lower bounds at the block's prefix."""
        refs = {r: b for b in self.buffers_of(stmt.name) for r in b.refs if r[0] == stmt.name}
        if not refs:
            return stmt.body
        order = _access_order(stmt.body)
        if len(order) != len(stmt.accesses):
            raise PolymagicError(f"internal: access count mismatch in {stmt.name}")
        rewrite: dict[int, BufferPlan] = {}
        for k, _ in enumerate(order):
            if (stmt.name, k) in refs:
                rewrite[k] = refs[(stmt.name, k)]
                self.used_buffers.setdefault(refs[(stmt.name, k)].name, refs[(stmt.name, k)])

        def local(acc: Access, buf: BufferPlan) -> Access:
            g = [pw_aff_to_expr(lb.pullback_pw_multi_aff(_stmt_prefix(buf, stmt)))
                 for lb in buf.lower]
            return Access(buf.name, tuple(Binary("-", i, gi) for i, gi in zip(acc.index, g)))
        return _rewrite_accesses(stmt.body, {k: (lambda a, b=b: local(a, b))
                                             for k, b in rewrite.items()})

    def buffers_of(self, stmt: str) -> list[BufferPlan]:
        return [b for plan in self.mapping.plans.values() if plan.memory
                for b in plan.memory.buffers if any(r[0] == stmt for r in b.refs)]

    def launch(self, name: str, body_node: isl.AstNode) -> kir.Launch:
        plan = self.mapping.plans[name]
        self.used_buffers = {}
        self.block_dims = plan.block
        body = self.block(body_node, True)
        shared = [kir.SharedDecl(b.name, b.ctype, b.extents) for b in self.used_buffers.values()]
        guard = [c for g in self.guards for c in g if not _implied_by_block(c, plan.block)]
        if guard:
            body = [kir.If(_conjoin(guard), body)]
        kname = f"kernel{len(self.kernels)}"
        used = kir.used_vars(body) - {b.name for b in shared}
        for a in [a for a in self.scop.arrays if a in used]:
            for ext in self.scop.arrays[a].shape[1:]:      # printed into linearised subscripts
                used |= {x.name for x in walk_expr(ext) if isinstance(x, Var)}
        defined = {s.var for s in kir.walk(body) if isinstance(s, (kir.Loop, kir.Let))}
        arrays = [a for a in self.scop.arrays if a in used]
        scalars = [p.name for p in self.scop.scalar_params if p.name in used]
        ints = [p for p in self.scop.size_params if p in used] + \
               [v for v in self.host_vars if v in used and v not in defined]
        grid = [Int(1), Int(1), Int(1)]
        for mm in plan.members:
            extent = mm.tile_max.sub(mm.tile_min).add_constant_val(isl.Val(1))
            grid["xyz".index(mm.axis)] = Call("max", (Int(1), pw_aff_to_expr(extent.coalesce())))
        summary = _plan_summary(kname, plan)
        if plan.members:
            summary += "; grid " + " x ".join(CPrinter()(g) for g in grid if g != Int(1))
        if plan.sub_tiles:
            summary += "; sub-tiled: " + ", ".join(plan.sub_tiles)
        if shared:
            summary += "; shared: " + ", ".join(
                f"{d.name}[{']['.join(map(str, d.shape))}]" for d in shared)
        self.kernels[kname] = kir.Kernel(kname, body, plan.block, arrays, scalars, ints,
                                         shared=shared, summary=summary)
        return kir.Launch(kname, tuple(grid))


def _prefix_expr(g: isl.PwAff) -> Expr:
    """A buffer lower bound (a function of the prefix dims) with dims named p0, p1..."""
    for i in range(g.dim(isl.dim_type.in_)):
        g = g.set_dim_id(isl.dim_type.in_, i, isl.Id(f"p{i}"))
    return pw_aff_to_expr(g)


def _stmt_prefix(buf: BufferPlan, stmt) -> isl.PwMultiAff:
    """The prefix schedule of the buffer's level as a function of the statement's
    instance (e.g. gemm's ``S0[i, j, k] -> [floor(i/32), floor(j/32), floor(k/16)]``)."""
    maps: list[isl.Map] = []
    buf.prefix.foreach_map(lambda m: maps.append(m) if m.get_tuple_name(isl.dim_type.in_) == stmt.name else None)
    m = maps[0]
    for i, it in enumerate(stmt.iterators):
        m = m.set_dim_id(isl.dim_type.in_, i, isl.Id(it))
    return isl.PwMultiAff.from_map(m)


def _access_order(a: Assign) -> list[Access]:
    """Accesses in the front end's order: target read (compound ops), value reads
    left to right, target write."""
    vals = [x for x in walk_expr(a.value) if isinstance(x, Access)]
    return ([a.target] if a.op != "=" else []) + vals + [a.target]


def _rewrite_accesses(a: Assign, repl: dict) -> Assign:
    """Replace the k-th access (in :func:`_access_order`) by ``repl[k](access)``."""
    order = _access_order(a)
    n_val = len(order) - (2 if a.op != "=" else 1)
    counter = iter(range(1 if a.op != "=" else 0, 1 + n_val if a.op != "=" else n_val))

    def f(e):
        if isinstance(e, Access):
            k = next(counter)
            return repl[k](e) if k in repl else e
        return None
    value = map_expr(a.value, f)
    w = len(order) - 1
    target = repl[w](a.target) if w in repl else a.target
    if a.op != "=" and (0 in repl) != (w in repl):
        raise PolymagicError("internal: read and write of one target in different buffers")
    return Assign(target, a.op, value)


def _conjuncts(e: Expr) -> list[Expr]:
    if isinstance(e, Binary) and e.op == "&&":
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def _conjoin(es: list[Expr]) -> Expr:
    out = es[0]
    for e in es[1:]:
        out = Binary("&&", out, e)
    return out


def _implied_by_block(c: Expr, block: tuple[int, int, int]) -> bool:
    """``pm_tx <= c`` with c ≥ blockDim.x - 1, or ``pm_tx >= 0``: always true."""
    if isinstance(c, Binary) and isinstance(c.a, Var) and isinstance(c.b, Int):
        ids = {v: block["xyz".index(a)] for a, v in kir.THREAD_IDS.items()}
        if c.a.name in ids and c.op == "<=" and c.b.value >= ids[c.a.name] - 1:
            return True
        if c.a.name in kir.MAPPED_IDS and c.op == ">=" and c.b.value <= 0:
            return True
        if c.a.name in ids and c.op == "==" and c.b.value == 0 and ids[c.a.name] == 1:
            return True
    return False


def _mentions_mapped_ids(e: Expr) -> bool:
    return any(isinstance(x, Var) and x.name in kir.MAPPED_IDS for x in walk_expr(e))


def _upper_bound(cond: isl.AstExpr, var: str) -> Expr:
    """Inclusive upper bound from an isl loop condition ``var <= e`` or ``var < e``."""
    op = cond.get_op_type()
    lhs = ast_expr_to_expr(cond.get_op_arg(0))
    rhs = ast_expr_to_expr(cond.get_op_arg(1))
    if lhs != Var(var):
        raise PolymagicError(f"internal: unexpected loop condition {cond.to_C_str()}")
    if op == isl.ast_expr_op_type.le:
        return rhs
    if op == isl.ast_expr_op_type.lt:
        return Binary("-", rhs, Int(1))
    raise PolymagicError(f"internal: unexpected loop condition {cond.to_C_str()}")


def _plan_summary(kname: str, plan: KernelPlan) -> str:
    stmts = ",".join(plan.statements)
    if not plan.members:
        return f"{kname} [{stmts}]: one thread" + (
            f" (sequential: {', '.join(plan.sequential)})" if plan.sequential else "")
    parts = [f"{mm.loop}→block.{mm.axis}/thread.{mm.axis} (tile {mm.tile}, {mm.threads} threads)"
             for mm in plan.members]
    seq = f"; sequential in thread: {', '.join(plan.sequential)}" if plan.sequential else ""
    return f"{kname} [{stmts}]: " + ", ".join(parts) + seq


def lower(scop: Scop, mapping: MappingResult) -> kir.Program:
    """Generate isl's AST for the mapped schedule and lower it to the Kernel IR."""
    ctx = scop.context.get_ctx()
    ids_ctx = isl.Set(f"[{', '.join(_ALL_IDS)}] -> {{ : "
                      + " and ".join(f"0 <= {v} < 1024" for v in kir.THREAD_IDS.values())
                      + " and " + " and ".join(f"{v} >= 0" for v in kir.BLOCK_IDS.values())
                      + " }")
    space = mapping.schedule.get_domain().get_space()
    build = isl.AstBuild.from_context(
        scop.context.align_params(space).intersect_params(ids_ctx.align_params(space)))
    depth = 64
    ids = isl.IdList.alloc(ctx, depth)
    for i in range(depth):
        ids = ids.add(isl.Id(f"pm_c{i}"))
    build = build.set_iterators(ids)
    ast = build.node_from_schedule(mapping.schedule)
    low = _Lowerer(scop, mapping)
    host = low.block(ast, False)
    arrays = {n: kir.ArrayDecl(n, a.ctype, a.shape, kind=a.kind) for n, a in scop.arrays.items()}
    scalars = {p.name: p.ctype for p in scop.scalar_params}
    return kir.Program(scop.name, arrays, scop.size_params, scalars, host, low.kernels)


def map_to_kir(scop: Scop, sched: ScheduleResult, options: Options
               ) -> tuple[kir.Program, str, list[str]]:
    """Schedule -> Program, plus a one-line summary and notes for the report."""
    mapping = map_schedule(scop, sched, options)
    program = lower(scop, mapping)
    launches = program.launches()
    host = f"host loops: {', '.join(mapping.host_loops)}; " if mapping.host_loops else ""
    blocks = "; ".join(k.summary + f", block {k.block[0]}x{k.block[1]}x{k.block[2]}"
                       for k in program.kernels.values())
    summary = f"{host}{len(program.kernels)} kernel(s), {len(launches)} launch site(s): {blocks}"
    notes = [d for plan in mapping.plans.values() if plan.memory for d in plan.memory.decisions]
    return program, summary, notes
