"""The lowerer: isl's AST of the mapped schedule -> the Kernel IR (:mod:`polymagic.kir`).

Host code is what lies outside the kernel marks (host loops, guards, launches);
each mark becomes a :class:`kir.Kernel`.  Each statement instance is lowered while
isl's AST build still knows its loops (:meth:`_Lowerer.at_each_domain`), its
subscripts printed by isl (:mod:`.subscripts`); copy statements become shared-memory
copies (seed 000 §3.1.2, 16-byte chunks of seed 002 §3.4) or seed 001's moves, tree
reductions their halving steps (seed 003 §5.3), and each kernel's planned arrays
are promoted to registers (seed 004 §4.2).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import islpy as isl

from .. import kir
from ..errors import PolymagicError
from ..expr import (Access, Assign, Binary, Call, CPrinter, Expr, Int, Unary, Var, map_expr,
                    substitute, substitute_assign)
from ..expr import walk as walk_expr
from ..isl_util import ast_build, ast_expr_to_expr, pw_aff_to_expr, val_to_int
from ..mapping import HOST_PARAM, MARK_PREFIX, KernelPlan, MappingResult
from ..memory.plan import (SCAN_MARK, BufferPlan, KernelMemory, chunk_guards,
                           copy_split_params, scan_renames)
from ..memory.registers import RegisterOutcome, decision_line
from ..names import strip_generated
from ..notes import Note
from ..scop import Scop
from ..thread_space import generic_id_context, thread_bounds_in
from .kernel_passes import accessed_arrays, plan_summary, rename_loops
from .full_tile_pieces import full_tile_schedule, launch_values, merge_pieces
from .per_kernel import (GROUP_PREFIX, boxed_launches, drop_fixed_host_loops, group_and_cut,
                         host_depends_on_ids, kernel_marks, kernel_schedule,
                         mentions_mapped_ids, rename_vars, with_thread_contexts)
from .passes import KernelIR, PassContext, PassLog, run_passes
from .passes.block_guard import conjoin, implied_by_block
from .reductions import tree_reduction
from .subscripts import (CHUNK_DIM, access_affs, access_order, build_index, chunk_cond,
                         copy_local_index, drop_domain, guard_expr, iterator_map, prefix_expr,
                         rewrite_accesses, stmt_prefix)


@dataclass(frozen=True)
class LowerOptions:
    """How the lowering generates code (hidden compile options: no flag sets them;
    :class:`polymagic.options.CompileOptions` carries them, part of the compile key)."""
    #: generate every program's kernels one by one (:mod:`.per_kernel`), not only
    #: those where isl's one-tree AST lets the host depend on block/thread ids (the
    #: tests send programs that do not need it through that path)
    per_kernel: bool = False
    #: print subscripts with their domains (the slow path :func:`.subscripts.drop_domain`
    #: skips; the same text, which tests check)
    exact_subscripts: bool = False


@dataclass(frozen=True)
class LowerResult:
    """The lowering's result: the program, and what the lowering decided of the
    mapping's plans: for each register plan's own line (:attr:`RegisterPlan.note`
    of :mod:`polymagic.memory.registers`), the line saying what was made of it."""
    program: kir.Program
    register_decisions: Mapping[Note, Note]
    #: every Kernel-IR pass over every kernel, in order (:mod:`.passes`)
    passes: tuple[PassLog, ...] = ()

    def decisions(self, mem: KernelMemory) -> tuple[Note, ...]:
        """A kernel's memory decisions as the report shows them: each register plan's
        line stands for the lowering's decision about it."""
        return tuple(self.register_decisions.get(d, d) for d in mem.decisions)


class _Lowerer:
    """Translates isl's AST of the mapped schedule into a :class:`kir.Program`."""

    def __init__(self, scop: Scop, mapping: MappingResult, settings: LowerOptions):
        self.scop = scop
        self.mapping = mapping
        self.settings = settings
        # one-piece subscripts lose their domains before isl prints them (same text)
        self.drop_domains = not settings.exact_subscripts
        self.kernels: dict[str, kir.Kernel] = {}
        self.host_vars: list[str] = []
        self.guards: list[list[Expr]] = []
        self.used_buffers: dict[str, BufferPlan] = {}
        #: each Kernel-IR pass over each kernel, in order (``--show passes``)
        self.pass_logs: tuple[PassLog, ...] = ()
        self.block_dims = (1, 1, 1)
        self.domain_stmts: list[kir.Stmt] = []
        self.errors: list[Exception] = []
        # kernels generated one by one (:func:`_generate_per_kernel`): the base build,
        # and the kernel made for each mark (a mark isl repeats reuses it)
        self.per_kernel = False
        self.build: isl.AstBuild | None = None
        self.context: isl.Set | None = None      # the build's context
        self.made: dict[str, kir.Launch] = {}
        self.n_tree_sync = 0
        # memoised isl work: printed subscripts by (AST point, access, buffer), and a
        # buffer's lower bounds on a statement's instances by (buffer, statement)
        self.indices: dict[tuple, tuple[isl.AstBuild, tuple[Expr, ...] | None]] = {}
        self.prefixes: dict[tuple[str, str, bool], tuple[bool, list[isl.PwAff]]] = {}
        self.memos: dict[int, tuple[isl.AstBuild, dict[str, Expr]]] = {}
        # the chunk guards of the 16-byte copy statements by statement name
        self.chunk_sets: dict[str, tuple[isl.Map, list[isl.Map]]] = {}
        # per kernel mark, what the register promotion made of each planned array
        # (summed over the kernels made for the mark: isl may generate it twice)
        self.promoted: dict[str, dict[str, RegisterOutcome]] = {}

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
            kept = [c for c in _conjuncts(cond) if not implied_by_block(c, self.block_dims)]
            if not kept:
                return then
            return [kir.If(conjoin(kept), then, orelse)]
        if t == isl.ast_node_type.mark:
            name = node.mark_get_id().get_name()
            if name.startswith(SCAN_MARK):
                return rename_loops(self.block(node.mark_get_node(), in_kernel),
                                    scan_renames(name))
            if in_kernel or not name.startswith(MARK_PREFIX):
                return self.block(node.mark_get_node(), in_kernel)
            if self.per_kernel:
                return self.launch_site(name, node.mark_get_node())
            return [self.launch(name, node.mark_get_node())]
        if t == isl.ast_node_type.user:
            if not in_kernel:
                raise PolymagicError("internal: statement outside any kernel")
            return [self.domain_stmts[int(node.get_annotation().get_name()[len("pm_dom"):])]]
        raise PolymagicError(f"internal: unexpected AST node type {t}")

    def host_if(self, node: isl.AstNode, cond: Expr) -> list[kir.Stmt]:
        """isl hoists conditions on block/thread ids above the kernel mark; such
        conjuncts are pushed into the kernels below as per-thread guards."""
        host_part, kernel_part = [], []
        for c in _conjuncts(cond):
            (kernel_part if mentions_mapped_ids(c) else host_part).append(c)
        self.guards.append(kernel_part)
        then = self.block(node.if_get_then_node(), False)
        self.guards.pop()
        if kernel_part and node.if_has_else_node():
            # the else branch runs for the threads where the whole condition fails:
            # its launches all happen, each thread guarded by the negation
            self.guards.append([Unary("!", cond)])
            orelse = self.block(node.if_get_else_node(), False)
            self.guards.pop()
            head = [kir.If(conjoin(host_part), then)] if host_part else then
            return head + orelse
        orelse = self.block(node.if_get_else_node(), False) if node.if_has_else_node() else []
        if not host_part:
            return then
        return [kir.If(conjoin(host_part), then, orelse)]

    def loop(self, node: isl.AstNode, in_kernel: bool) -> kir.Stmt:
        var = node.for_get_iterator().get_id().get_name()
        init = ast_expr_to_expr(node.for_get_init())
        if not in_kernel:                 # the host loops enclosing a launch, innermost last
            self.host_vars.append(var)
        body = self.block(node.for_get_body(), in_kernel)
        if not in_kernel:
            self.host_vars.pop()
        if node.for_is_degenerate():
            return kir.If(Int(1), [kir.Let(var, init)] + body)
        cond = node.for_get_cond()
        upper = _upper_bound(cond, var)
        step = val_to_int(node.for_get_inc().get_val())
        return kir.Loop(var, init, upper, step, body)

    # -- statement instances (called by isl's AST build at each domain) -----------

    def at_each_domain(self, node: isl.AstNode, build: isl.AstBuild) -> isl.AstNode:
        """Lower the statement of a user node while the build still knows its loops;
        the node is annotated with the index of the lowered statement.  Nothing may
        escape: islpy drops an exception raised in a callback and hands isl a null
        node, on which isl goes on until the process dies (fuzz finding 42: isl's
        operation budget spent while allocating the annotation).  Errors are kept and
        re-raised after AST generation; once one is kept, no isl call is made."""
        if self.errors:
            return node.copy()
        try:
            stmt = self.domain_stmt(node.user_get_expr(), build)
            self.domain_stmts.append(stmt)
            return node.set_annotation(isl.Id(f"pm_dom{len(self.domain_stmts) - 1}"))
        except Exception as e:          # re-raised after AST generation
            self.errors.append(e)
            return node.copy()

    def domain_stmt(self, call: isl.AstExpr, build: isl.AstBuild) -> kir.Stmt:
        name = call.get_op_arg(0).get_id().get_name()
        args = [ast_expr_to_expr(call.get_op_arg(i + 1)) for i in range(call.get_op_n_arg() - 1)]
        if name.startswith(GROUP_PREFIX):      # a launch of the host tree (per-kernel mode)
            return kir.Barrier(-1)
        if name.startswith("pm_sync"):
            return kir.Barrier(int(name[len("pm_sync"):]))
        if name in self.mapping.reductions:
            return tree_reduction(name, args, self.mapping.reductions, self.scop,
                                  self.tree_barrier)
        iters = iterator_map(build, name)
        if name in self.mapping.local_copies:
            return self.local_copy(name, args, build, iters)
        if name in self.mapping.copies:
            return self.copy(name, args, build, iters)
        stmt = self.scop.statement(name)
        body = self.lowered_body(stmt, build, iters)
        body = substitute_assign(body, dict(zip(stmt.iterators, args)))
        if stmt.guard is not None or stmt.atomic:    # frontend/c/mayaccess.py
            out: kir.Stmt = kir.Compute(name, body, atomic=stmt.atomic)
            if stmt.guard is None:
                return out
            return kir.If(substitute(stmt.guard, dict(zip(stmt.iterators, args))), [out])
        red = self.mapping.reductions.get(f"pm_rini_{name}")
        if red is not None:          # accumulate into the thread's register instead
            tgt = body.target.array
            to_acc = lambda e: Access(red.acc, ()) \
                if isinstance(e, Access) and e.array == tgt else None  # noqa: E731
            body = Assign(Access(red.acc, ()), body.op, map_expr(body.value, to_acc))
        return kir.Compute(name, body)

    def tree_barrier(self) -> kir.Barrier:
        self.n_tree_sync += 1
        return kir.Barrier(1_000_000 + self.n_tree_sync)

    def copy(self, name: str, args: list[Expr], build: isl.AstBuild,
             iters: isl.PwMultiAff | None) -> kir.Stmt:
        """``sh[a - g(p)] = A[a]`` (copy-in) or ``A[a] = sh[a - g(p)]`` (copy-out); for
        a 16-byte chunk statement (``a = (a', k)``, :func:`memory.plan.chunk_domain`)
        the elements ``w k + j`` of the buffer row, ``g(p) + w k + j`` of the array's."""
        direction, buf = self.mapping.copies[name]
        na = len(buf.extents)
        w = buf.vector if direction.startswith("v") else 1
        p, a = args[:len(args) - na], args[len(args) - na:]
        index = None
        if iters is not None:
            bare = self.drop_domains and iters.n_piece() == 1
            index = build_index(build, iters, copy_local_index(name, len(p), buf, bare, w),
                                self.drop_domains)
        if index is None:
            env = {f"p{i}": e for i, e in enumerate(p)}
            index = tuple(Binary("-", ai, substitute(prefix_expr(g), env))
                          for ai, g in zip(a, buf.lower))
            if w > 1:
                last = Binary("*", Int(w), a[-1])
                g = substitute(prefix_expr(buf.lower[-1]), env)
                index = index[:-1] + (last, Binary("+", last, g))
        if w > 1:
            local, a = index[:-1], a[:-1] + [index[-1]]
        else:
            local = index
        glob = Access(buf.array, tuple(a))
        sh = Access(buf.name, local)
        self.used_buffers.setdefault(buf.name, buf)
        if w > 1:
            return self.chunk_copy(name, direction, buf, sh, glob, args)
        if direction == "in":
            return kir.Compute(name, Assign(sh, "=", glob))
        return kir.Compute(name, Assign(glob, "=", sh))

    def chunk_copy(self, name: str, direction: str, buf: BufferPlan, sh: Access,
                   glob: Access, args: list[Expr]) -> kir.Stmt:
        """Seed 002 §3.4: a chunk whose elements are all copied (and the array's rows
        aligned: :func:`memory.plan.chunk_guards`) is one 16-byte access when the
        array's base is aligned (``pm_aligned16``), else its elements one by one; the
        other chunks (row ends, sizes that misalign rows) copy each of their elements
        in the copy set, under isl's condition for it."""
        def at(acc: Access, j: int) -> Access:
            return Access(acc.array, acc.index[:-1] + (Binary("+", acc.index[-1], Int(j)),)
                          if j else acc.index)
        pairs = [(at(sh, j), at(glob, j)) if direction == "vin" else (at(glob, j), at(sh, j))
                 for j in range(buf.vector)]
        elems = [kir.Compute(name, Assign(d, "=", s)) for d, s in pairs]
        if name not in self.chunk_sets:
            rel = buf.copy_in if direction == "vin" else buf.copy_out
            full, ins = chunk_guards(self.scop, buf, rel)
            self.chunk_sets[name] = (chunk_cond(full), [chunk_cond(e) for e in ins])
        full_c, ins_c = self.chunk_sets[name]
        env = {f"{CHUNK_DIM}{i}": e for i, e in enumerate(args)}
        vec = kir.If(Call(kir.ALIGNED16, (Var(buf.array), Int(buf.vector))),
                     [kir.VectorCopy(name, elems[0].assign, width=buf.vector)], elems)
        cond = substitute(full_c, env)
        if cond == Int(1):
            return vec
        some = []
        for c, s in zip(ins_c, elems):
            if c != Int(0):
                some.append(s if c == Int(1) else kir.If(substitute(c, env), [s]))
        if cond == Int(0):
            return kir.If(Int(1), some)
        return kir.If(cond, [vec], some)

    def local_copy(self, name: str, args: list[Expr], build: isl.AstBuild,
                   iters: isl.PwMultiAff | None) -> kir.Compute:
        """Seed 001 moves: ``L[ρ(x, p)] = A[x]`` (in), ``A[x] = L[ρ(x, p)]`` (out),
        ``L[ρ(x, p + 1)] = L[ρ(x, p)]`` (in-situ reorganisation)."""
        kind, lb = self.mapping.local_copies[name]
        na = lb.loc.cached.dim(isl.dim_type.out)
        n_p = len(args) - na
        here = build_index(build, iters, lb.copy_index(name, n_p), self.drop_domains) \
            if iters is not None else None
        if here is None:
            raise PolymagicError(f"internal: cannot print the subscripts of {name}")
        self.used_buffers.setdefault(lb.name, lb)
        loc = Access(lb.name, lb.row() + here)
        if kind == "move":
            nxt = build_index(build, iters, lb.copy_index(name, n_p, next_step=True),
                              self.drop_domains)
            return kir.Compute(name, Assign(Access(lb.name, lb.row() + nxt), "=", loc))
        glob = Access(lb.array, tuple(args[n_p:]))
        out = kir.Compute(name, Assign(loc, "=", glob) if kind == "in" else Assign(glob, "=", loc))
        guard = lb.guards.get(name)
        if guard is None:
            return out
        return kir.If(guard_expr(build, iters, name, guard), [out])

    def lowered_body(self, stmt, build: isl.AstBuild, iters: isl.PwMultiAff | None) -> Assign:
        """The statement with every subscript printed by isl at this point of the AST;
        buffered references become ``F'(y) - g`` (seed 000 §3.1.2), ``g`` the
        buffer's lower bounds at the block's prefix."""
        refs = {r: b for b in self.buffers_of(stmt.name) for r in b.refs if r[0] == stmt.name}
        order = access_order(stmt.body)
        if len(order) != sum(1 for a in stmt.accesses if not a.guard):
            raise PolymagicError(f"internal: access count mismatch in {stmt.name}")
        repl = {}
        local = {r: lb for _kind, lb in self.mapping.local_copies.values() for r in lb.refs
                 if r[0] == stmt.name}
        for k, acc in enumerate(order):
            if (stmt.name, k) in local:
                repl[k] = self.local_access(stmt, k, local[(stmt.name, k)], build, iters)
                continue
            if any(isinstance(x, Access) for i in acc.index for x in walk_expr(i)):
                continue     # a gather (frontend/c/mayaccess.py): its subscripts as written
            buf = refs.get((stmt.name, k))
            if buf is not None:
                self.used_buffers.setdefault(buf.name, buf)
            repl[k] = self.access_lowerer(stmt, k, acc, buf, build, iters)
        return rewrite_accesses(stmt.body, repl)

    def local_access(self, stmt, k: int, lb, build: isl.AstBuild,
                     iters: isl.PwMultiAff | None):
        """A served access ``A[f(i)]`` -> ``L[ρ(f(i), p(i))]`` (seed 001 §4.2)."""
        index = build_index(build, iters, lb.access_index(stmt, k), self.drop_domains) \
            if iters is not None else None
        if index is None:
            raise PolymagicError(f"internal: cannot print the localised subscript in {stmt.name}")
        self.used_buffers.setdefault(lb.name, lb)
        return lambda _a: Access(lb.name, lb.row() + index)

    def access_lowerer(self, stmt, k: int, acc: Access, buf: BufferPlan | None,
                       build: isl.AstBuild, iters: isl.PwMultiAff | None):
        index = None
        if iters is not None:
            # a reference repeated in the statement (the target of ``+=`` read and
            # written, ``A[i] + A[i]``) has the same subscripts at this AST point:
            # isl prints them once
            key = (id(build), str(stmt.accesses[k].relation), buf.name if buf else None)
            if key in self.indices:
                index = self.indices[key][1]
            else:
                affs = self.subscripts(stmt, k, buf,
                                       self.drop_domains and iters.n_piece() == 1)
                if affs is not None:
                    index = build_index(build, iters, affs, self.drop_domains,
                                        self.subscript_memo(build))
                self.indices[key] = (build, index)     # the build kept alive: its id stays its own
        name = buf.name if buf is not None else acc.array

        def lowered(a: Access) -> Access:
            if index is not None:
                return Access(name, index)
            if buf is None:
                return a
            g = [pw_aff_to_expr(lb.pullback_pw_multi_aff(stmt_prefix(buf, stmt)))
                 for lb in buf.lower]
            return Access(name, tuple(Binary("-", i, gi) for i, gi in zip(a.index, g)))
        return lowered

    def subscript_memo(self, build: isl.AstBuild) -> dict[str, Expr]:
        """The subscripts printed at the AST point ``build`` by their functions' text
        (:func:`build_index`; the build kept alive: its id stays its own)."""
        return self.memos.setdefault(id(build), (build, {}))[1]

    def subscripts(self, stmt, k: int, buf: BufferPlan | None, bare: bool = False
                   ) -> list[isl.PwAff] | None:
        """The subscripts of access ``k`` of ``stmt`` on the statement's instance; for a
        buffered reference the local ones, ``F'(y) - g`` with ``g`` at the prefix.
        With ``bare`` (one-piece iterator map: :func:`build_index` drops one-piece
        domains) one-piece functions lose their domains before they are combined."""
        affs = access_affs(stmt.accesses[k].relation)
        if affs is None or buf is None:
            return affs
        pkey = (buf.name, stmt.name, bare)
        if pkey not in self.prefixes:
            prefix = stmt_prefix(buf, stmt)
            bare = bare and prefix.n_piece() == 1     # else the pieces keep their domains
            self.prefixes[pkey] = (bare, [(drop_domain(g) if bare else g)
                                          .pullback_pw_multi_aff(prefix) for g in buf.lower])
        bare, gs = self.prefixes[pkey]
        if bare:
            affs = [drop_domain(f) for f in affs]
        return [f.sub(g.align_params(f.get_space())) for f, g in zip(affs, gs)]

    def buffers_of(self, stmt: str) -> list[BufferPlan]:
        return [b for plan in self.mapping.plans.values() if plan.memory
                for b in plan.memory.buffers if any(r[0] == stmt for r in b.refs)]

    def launch(self, name: str, body_node: isl.AstNode) -> kir.Launch:
        plan = self.mapping.plans[name]
        self.block_dims = plan.block
        body = self.block(body_node, True)
        if plan.full_instances is not None:
            body = self.with_full_tiles(name, plan, body, self.host_vars)
        return self.make_kernel(name, plan, body)

    def with_full_tiles(self, name: str, plan: KernelPlan, generic: list[kir.Stmt],
                        host: list[str]) -> list[kir.Stmt]:
        """``if (the block's tile is full) <full piece> else generic``, the full piece
        generated on its own (:mod:`.full_tile_pieces`); ``host``: the names the
        launch's host loop values go by in the body (the host loop iterators, or
        ``pm_h<k>``).  ``generic`` alone when those do not match the kernel's depth."""
        tree, full_set, depth = full_tile_schedule(self.mapping.schedule, name, plan)
        if len(host) != depth:
            return generic
        # the host runs the launch only for its host loop values: isl need not check them
        known = launch_values(self.mapping.schedule, name)
        context = self.context if known is None else \
            self.context.align_params(known.get_space()).intersect_params(known)
        build = self.build if known is None else ast_build(context)
        inside = ast_build(context.intersect_params(full_set).intersect_params(
            thread_bounds_in(plan.block, context.get_space())))
        full = drop_fixed_host_loops(self.block(_generate(inside, tree, self)[1], True))
        cond = ast_expr_to_expr(build.expr_from_set(full_set))
        names = {f"{HOST_PARAM}{k}": Var(v) for k, v in enumerate(host)
                 if v != f"{HOST_PARAM}{k}"}
        if names:
            full = rename_vars(full, names)
            cond = substitute(cond, names)
        return merge_pieces(full, generic, cond)

    def launch_site(self, name: str, call_node: isl.AstNode) -> list[kir.Stmt]:
        """Per-kernel mode: the host binds the launch's host loop values (the
        arguments of its ``pm_group_`` call) to ``pm_h0, pm_h1, ...`` and launches
        the kernel made once for the mark (:meth:`launch_alone`).  Fresh names, not
        the host iterators ``pm_c<k>``: an argument such as ``pm_c1 + 2`` would
        otherwise rebind the loop's own iterator (fuzz finding 26)."""
        call = call_node.user_get_expr()
        args = [ast_expr_to_expr(call.get_op_arg(i + 1)) for i in range(call.get_op_n_arg() - 1)]
        if name not in self.made:
            self.made[name] = self.launch_alone(name, self.mapping.plans[name], len(args))
        lets = [kir.Let(f"{HOST_PARAM}{k}", a) for k, a in enumerate(args)]
        # a scope of its own: two launches in one loop body bind pm_h0 twice
        return [kir.If(Int(1), lets + [self.made[name]])]

    def launch_alone(self, name: str, plan: KernelPlan, depth: int) -> kir.Launch:
        """The kernel of mark ``name`` from its own AST: the tree restricted to one
        launch, lowered whole as kernel code; the fixed host loops come back as the
        kernel's ``pm_h<k>`` parameters."""
        self.block_dims = plan.block
        schedule, n = kernel_schedule(self.mapping.schedule, name, plan)
        assert n == depth, (n, depth)
        build = ast_build(self.context.intersect_params(
            thread_bounds_in(plan.block, self.context.get_space())))
        ast = _generate(build, schedule, self)[1]
        body = drop_fixed_host_loops(self.block(ast, True))
        if plan.full_instances is not None:
            body = self.with_full_tiles(name, plan, body,
                                        [f"{HOST_PARAM}{k}" for k in range(depth)])
        outer, self.host_vars = self.host_vars, [f"{HOST_PARAM}{k}" for k in range(depth)]
        try:
            return self.make_kernel(name, plan, body)
        finally:
            self.host_vars = outer

    def pass_context(self, name: str, plan: KernelPlan) -> PassContext:
        """What the Kernel-IR passes read of kernel ``name`` (:mod:`.passes`)."""
        reductions = self.mapping.reductions
        return PassContext(
            strip_generated(name), plan, plan.block, {n: a.ctype for n, a in self.scop.arrays.items()},
            reductions, tuple(c for g in self.guards for c in g),
            {r.stmt: self.scop.arrays[self.scop.statement(r.stmt).body.target.array].ctype
             for r in reductions.values()})

    def make_kernel(self, name: str, plan: KernelPlan, body: list[kir.Stmt]) -> kir.Launch:
        ir, logs = run_passes(KernelIR(tuple(body), (), dict(self.used_buffers)),
                              self.pass_context(name, plan))
        self.note_promoted(name, ir.outcomes)
        self.used_buffers.update({k: v for k, v in ir.buffers.items()
                                  if k not in self.used_buffers})
        self.pass_logs += logs
        body, registers = list(ir.body), list(ir.registers)
        names = accessed_arrays(body)
        shared = [kir.SharedDecl(b.name, b.ctype, b.extents)
                  for b in self.used_buffers.values() if b.name in names]
        kname = strip_generated(name)   # as in the plan's notes
        if kname in self.kernels:            # isl generated the marked subtree twice
            kname = f"{kname}_{len(self.kernels)}"
        used = kir.used_vars(body) - {b.name for b in shared} - {r.name for r in registers}
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
        summary = plan_summary(kname, plan)
        if plan.members:
            summary += "; grid " + " x ".join(CPrinter()(g) for g in grid if g != Int(1))
        if plan.sub_tiles:
            summary += "; sub-tiled: " + ", ".join(plan.sub_tiles)
        if shared:
            summary += "; shared: " + ", ".join(
                f"{d.name}[{']['.join(map(str, d.shape))}]" for d in shared)
        dynamic = kir.dynamic_shared_bytes(shared)
        if dynamic:
            summary += f" ({dynamic} B of dynamic shared memory)"
        self.kernels[kname] = kir.Kernel(kname, body, plan.block, arrays, scalars, ints,
                                         shared=shared, summary=summary,
                                         registers=registers,
                                         dynamic_shared=dynamic)
        return kir.Launch(kname, tuple(grid))

    def note_promoted(self, name: str, made: dict[str, RegisterOutcome]) -> None:
        """Add what one kernel of mark ``name`` made of its register plans."""
        if not made:
            return
        done = self.promoted.setdefault(name, {})
        for array, outcome in made.items():
            done[array] = done.get(array, RegisterOutcome()) + outcome

    def register_decisions(self) -> dict[Note, Note]:
        """Each register plan's line -> the decision line of what was made of it, for
        the kernels made (:func:`.memory.registers.decision_line`)."""
        out: dict[Note, Note] = {}
        for name, done in self.promoted.items():
            mem = self.mapping.plans[name].memory
            for r in (mem.registers if mem else ()):
                out[r.note] = decision_line(strip_generated(name), r, done[r.array])
        return out


def _conjuncts(e: Expr) -> list[Expr]:
    if isinstance(e, Binary) and e.op == "&&":
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


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


def lower(scop: Scop, mapping: MappingResult, settings: LowerOptions = LowerOptions()
          ) -> LowerResult:
    """Generate isl's AST for the mapped schedule and lower it to the Kernel IR: from
    the whole tree at once, or kernel by kernel (:mod:`.per_kernel`) when the plans
    ask for it (time tiles' launch sets), ``settings.per_kernel`` does, or the host
    part of the one-tree AST depends on block/thread ids."""
    split = copy_split_params([b for _d, b in mapping.copies.values()],
                              [p.block for p in mapping.plans.values()])
    space = mapping.schedule.get_domain().get_space()
    # the ids the mapped tree mentions (kir.ids_in, mapping.tree.with_id_params)
    ids = [v for v in kir.ISL_IDS if space.find_dim_by_name(isl.dim_type.param, v) >= 0]
    ids_ctx = generic_id_context(ids, split)
    context = scop.context.align_params(space).intersect_params(ids_ctx.align_params(space))
    build = ast_build(context)
    if settings.per_kernel or any(p.launch_domain is not None for p in mapping.plans.values()):
        low, ast = _generate_per_kernel(build, scop, mapping, settings)
    else:
        low = _Lowerer(scop, mapping, settings)
        low.build = build
        low, ast = _generate(build, with_thread_contexts(mapping.schedule, mapping.plans), low)
        if host_depends_on_ids(ast, list(kernel_marks(mapping.schedule))):
            low, ast = _generate_per_kernel(build, scop, mapping, settings)
    low.context = context              # (kernels are lowered while the host AST is)
    host = low.block(ast, False)
    # a temp no kernel reaches in global memory (a private local scalar kept in
    # registers, memory.registers) is neither allocated nor passed
    used = {a for k in low.kernels.values() for a in k.arrays}
    arrays = {n: kir.ArrayDecl(n, a.ctype, a.shape, kind=a.kind) for n, a in scop.arrays.items()
              if a.kind != "temp" or n in used}
    scalars = {p.name: p.ctype for p in scop.scalar_params}
    program = kir.Program(scop.name, arrays, scop.size_params, scalars, host, low.kernels,
                          constants=dict(mapping.constants),
                          specialised={k: v for p in mapping.plans.values()
                                       for k, v in getattr(p, "specialised", {}).items()})
    return LowerResult(program, low.register_decisions(), low.pass_logs)



def _generate(build: isl.AstBuild, schedule: isl.Schedule, low: _Lowerer
              ) -> tuple[_Lowerer, isl.AstNode]:
    """isl's AST of ``schedule`` (the mapped one), with ``low`` collecting the
    statement instances (its ``at_each_domain`` callback)."""
    build, _keep = build.set_at_each_domain(low.at_each_domain), None
    if isinstance(build, tuple):      # islpy returns (build, callback handle)
        build, _keep = build
    ast = build.node_from_schedule(schedule)
    if low.errors:
        raise low.errors[0]
    return low, ast


def _generate_per_kernel(build: isl.AstBuild, scop: Scop, mapping: MappingResult,
                         settings: LowerOptions) -> tuple[_Lowerer, isl.AstNode]:
    """PPCG's split (fuzz findings 19, 20): the host AST from the tree with each
    kernel's subtree grouped and cut, each kernel's body from the tree restricted to
    one launch (:func:`kernel_schedule`), so isl never mixes host loops with the
    block/thread ids of a kernel."""
    low = _Lowerer(scop, mapping, settings)
    low.build = build
    low.per_kernel = True
    host = group_and_cut(mapping.schedule)
    boxed = [f"{GROUP_PREFIX}{n}" for n, p in mapping.plans.items()
             if p.launch_domain is not None]
    if boxed:
        host = boxed_launches(host, boxed)
    return _generate(build, host, low)
