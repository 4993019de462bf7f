"""Lowering: isl's AST of the mapped schedule -> the Kernel IR (:mod:`polymagic.kir`).

Host code is what lies outside the kernel marks (host loops, guards, launches);
each mark becomes a :class:`kir.Kernel`.  Array subscripts are computed by isl's
AST build at each statement instance (the ``at_each_domain`` callback, as PPCG
does): the access function — for buffered references the local one,
``F'(y) - g`` of seed 000 §3.1.2 — is pulled back to the loop iterators and printed
by isl, which simplifies it with what it knows of the loops (``i mod 32`` inside a
tile becomes the point-loop iterator).
"""
from __future__ import annotations

import functools
import os

import islpy as isl

from . import kir
from .errors import PolymagicError
from .expr import (Access, accesses, Assign, Binary, Call, CPrinter, Expr, Int, Unary, Var, map_expr,
                   substitute, substitute_assign)
from .expr import walk as walk_expr
from .isl_util import ast_expr_to_expr, pw_aff_to_expr, set_to_expr, val_to_int
from .mapping.result import ALL_IDS as _ALL_IDS, HOST_PARAM, MARK_PREFIX, KernelPlan, MappingResult, kernel_mark

#: names of the launch statements of the host tree in per-kernel mode
GROUP_PREFIX = "pm_group_"
#: generate every program's kernels one by one (:func:`_generate_per_kernel`), not only
#: those where isl's one-tree AST lets the host depend on block/thread ids; tests set
#: ``POLYMAGIC_PER_KERNEL=always`` to run everything through that path
PER_KERNEL = os.environ.get("POLYMAGIC_PER_KERNEL", "") == "always"
from .memory.plan import BufferPlan, chunk_guards, copy_split_params
from .memory.registers import (RegisterPlan, decision_line, eliminate_redundant_loads,
                               promote_registers)
from .scop import Scop


class _TreeBuffer:
    """The shared buffer of a tree reduction (one element per thread of the block)."""

    def __init__(self, name: str, ctype: str, extents: tuple[int, ...]):
        self.name, self.ctype, self.extents = name, ctype, extents


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
        self.domain_stmts: list[kir.Stmt] = []
        self.errors: list[Exception] = []
        # kernels generated one by one (:func:`_generate_per_kernel`): the base build,
        # and the kernel made for each mark (a mark isl repeats reuses it)
        self.per_kernel = False
        self.build: isl.AstBuild | None = None
        self.made: dict[str, kir.Launch] = {}
        self.n_tree_sync = 0
        # memoised isl work: printed subscripts by (AST point, access, buffer), and a
        # buffer's lower bounds on a statement's instances by (buffer, statement)
        self.indices: dict[tuple, tuple[isl.AstBuild, tuple[Expr, ...] | None]] = {}
        self.prefixes: dict[tuple[str, str, bool], tuple[bool, list[isl.PwAff]]] = {}
        # the chunk guards of the 16-byte copy statements by statement name
        self.chunk_sets: dict[str, tuple[isl.Map, list[isl.Map]]] = {}

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
            (kernel_part if _mentions_mapped_ids(c) else host_part).append(c)
        self.guards.append(kernel_part)
        then = self.block(node.if_get_then_node(), False)
        self.guards.pop()
        if kernel_part and node.if_has_else_node():
            # the else branch runs for the threads where the whole condition fails:
            # its launches all happen, each thread guarded by the negation
            self.guards.append([Unary("!", cond)])
            orelse = self.block(node.if_get_else_node(), False)
            self.guards.pop()
            head = [kir.If(_conjoin(host_part), then)] if host_part else then
            return head + orelse
        orelse = self.block(node.if_get_else_node(), False) if node.if_has_else_node() else []
        if not host_part:
            return then
        return [kir.If(_conjoin(host_part), then, orelse)]

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
        the node is annotated with the index of the lowered statement."""
        try:
            stmt = self.domain_stmt(node.user_get_expr(), build)
        except Exception as e:          # re-raised after AST generation
            self.errors.append(e)
            stmt = kir.Barrier(-1)
        self.domain_stmts.append(stmt)
        return node.set_annotation(isl.Id(f"pm_dom{len(self.domain_stmts) - 1}"))

    def domain_stmt(self, call: isl.AstExpr, build: isl.AstBuild) -> kir.Stmt:
        name = call.get_op_arg(0).get_id().get_name()
        args = [ast_expr_to_expr(call.get_op_arg(i + 1)) for i in range(call.get_op_n_arg() - 1)]
        if name.startswith(GROUP_PREFIX):      # a launch of the host tree (per-kernel mode)
            return kir.Barrier(-1)
        if name.startswith("pm_sync"):
            return kir.Barrier(int(name[len("pm_sync"):]))
        if name in self.mapping.reductions:
            return self.tree_reduction(name, args)
        iters = _iterator_map(build, name)
        if name in self.mapping.local_copies:
            return self.local_copy(name, args, build, iters)
        if name in self.mapping.copies:
            return self.copy(name, args, build, iters)
        stmt = self.scop.statement(name)
        body = self.lowered_body(stmt, build, iters)
        body = substitute_assign(body, dict(zip(stmt.iterators, args)))
        red = self.mapping.reductions.get(f"pm_rini_{name}")
        if red is not None:          # accumulate into the thread's register instead
            tgt = body.target.array
            to_acc = lambda e: Access(red.acc, ()) \
                if isinstance(e, Access) and e.array == tgt else None  # noqa: E731
            body = Assign(Access(red.acc, ()), body.op, map_expr(body.value, to_acc))
        return kir.Compute(name, body)

    def tree_reduction(self, name: str, args: list[Expr]) -> kir.Stmt:
        """``pm_rini_S``: ``acc = identity``; ``pm_rfin_S``: the block's tree reduction
        of the registers in shared memory, then thread 0 combines with the global
        element (see :class:`mapping.TreeReduction`).  With partners (reductions
        fused in one pass), one tree pass combines every register: one barrier per
        halving step for all of them."""
        red = self.mapping.reductions[name]
        reds = [red] + [self.mapping.reductions[f"pm_rini_{p}"] for p in red.partners]
        targets = []
        for r in reds:
            stmt = self.scop.statement(r.stmt)
            targets.append(substitute_assign(stmt.body, dict(zip(stmt.iterators, args))).target)
        acc = Access(red.acc, ())

        def combine(r, a: Expr, b: Expr) -> Expr:
            return Binary(r.op, a, b) if r.op in ("+", "*") else Call(r.op, (a, b))
        if name.startswith("pm_rini_"):
            # max/min are idempotent: the element itself is an identity for them
            init = {"+": Int(0), "*": Int(1)}.get(red.op, targets[0])
            return kir.Compute(name, Assign(acc, "=", init))
        bx, by, bz = red.block
        lin: Expr = Var(kir.THREAD_IDS["x"])
        if by * bz > 1:
            lin = Binary("+", lin, Binary("*", Int(bx), Var(kir.THREAD_IDS["y"])))
        if bz > 1:
            lin = Binary("+", lin, Binary("*", Int(bx * by), Var(kir.THREAD_IDS["z"])))
        n = bx * by * bz
        out: list[kir.Stmt] = [kir.Compute(name, Assign(Access(r.buf, (lin,)), "=",
                                                        Access(r.acc, ())))
                               for r in reds]
        out.append(self.tree_barrier())
        while n > 1:
            h = (n + 1) // 2
            step = []
            for r in reds:
                mine, other = Access(r.buf, (lin,)), Access(r.buf, (Binary("+", lin, Int(h)),))
                step.append(kir.Compute(name, Assign(mine, "=", combine(r, mine, other))))
            out.append(kir.If(Binary("<", lin, Int(n - h)), step))
            out.append(self.tree_barrier())
            n = h
        out.append(kir.If(Binary("==", lin, Int(0)),
                          [kir.Compute(name, Assign(t, "=", combine(r, t, Access(r.buf, (Int(0),)))))
                           for r, t in zip(reds, targets)]))
        return kir.If(Int(1), out)

    def share_partner_loads(self, body: list[kir.Stmt], registers: list) -> list[kir.Stmt]:
        """Tree reductions fused in one pass (:class:`mapping.TreeReduction` partners)
        accumulate into registers, so in their loop body a global element that several
        of them read is loaded once into a register before them (gesummv's ``x[j]``):
        nothing in that body writes global memory."""
        groups = [{r.stmt, *r.partners} for r in self.mapping.reductions.values()
                  if r.lead and r.partners]
        if not groups:
            return body
        ctypes = {n: a.ctype for n, a in self.scop.arrays.items()}

        def visit(stmts: list[kir.Stmt]) -> list[kir.Stmt]:
            out: list[kir.Stmt] = []
            for st in stmts:
                if isinstance(st, kir.Loop):
                    st = kir.Loop(st.var, st.lower, st.upper, st.step, share(visit(st.body)),
                                  st.unroll)
                elif isinstance(st, kir.If):
                    st = kir.If(st.cond, visit(st.then), visit(st.orelse))
                out.append(st)
            return out

        def share(stmts: list[kir.Stmt]) -> list[kir.Stmt]:
            computes = [c for c in stmts if isinstance(c, kir.Compute)]
            if len(computes) != len(stmts) or not any(
                    len({c.stmt for c in computes} & g) > 1 for g in groups) or \
                    any(c.assign.target.array in ctypes for c in computes):
                return stmts
            seen: dict[Access, int] = {}
            for c in computes:
                for a in set(accesses(c.assign.value)):
                    if a.array in ctypes:
                        seen[a] = seen.get(a, 0) + 1
            repl: dict[Access, Access] = {}
            loads: list[kir.Stmt] = []
            for a, n in seen.items():
                if n > 1:
                    reg = kir.RegisterDecl(f"pm_s{len(registers)}_{a.array}", ctypes[a.array])
                    registers.append(reg)
                    repl[a] = Access(reg.name, ())
                    loads.append(kir.Compute(f"pm_load_{reg.name}", Assign(repl[a], "=", a)))
            if not repl:
                return stmts
            sub = lambda e: repl.get(e) if isinstance(e, Access) else None  # noqa: E731
            return loads + [kir.Compute(c.stmt, Assign(c.assign.target, c.assign.op,
                                                       map_expr(c.assign.value, sub)))
                            for c in computes]
        return visit(body)

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
            index = _build_index(build, iters, _copy_local_index(name, len(p), buf,
                                                                 iters.n_piece() == 1, w))
        if index is None:
            env = {f"p{i}": e for i, e in enumerate(p)}
            index = tuple(Binary("-", ai, substitute(_prefix_expr(g), env))
                          for ai, g in zip(a, buf.lower))
            if w > 1:
                last = Binary("*", Int(w), a[-1])
                g = substitute(_prefix_expr(buf.lower[-1]), env)
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
            self.chunk_sets[name] = (_chunk_cond(full), [_chunk_cond(e) for e in ins])
        full_c, ins_c = self.chunk_sets[name]
        env = {f"{_CHUNK_DIM}{i}": e for i, e in enumerate(args)}
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
        here = _build_index(build, iters, lb.copy_index(name, n_p)) if iters is not None else None
        if here is None:
            raise PolymagicError(f"internal: cannot print the subscripts of {name}")
        self.used_buffers.setdefault(lb.name, lb)
        loc = Access(lb.name, lb.row() + here)
        if kind == "move":
            nxt = _build_index(build, iters, lb.copy_index(name, n_p, next_step=True))
            return kir.Compute(name, Assign(Access(lb.name, lb.row() + nxt), "=", loc))
        glob = Access(lb.array, tuple(args[n_p:]))
        out = kir.Compute(name, Assign(loc, "=", glob) if kind == "in" else Assign(glob, "=", loc))
        guard = lb.guards.get(name)
        if guard is None:
            return out
        return kir.If(_guard_expr(build, iters, name, guard), [out])

    def lowered_body(self, stmt, build: isl.AstBuild, iters: isl.PwMultiAff | None) -> Assign:
        """The statement with every subscript printed by isl at this point of the AST;
        buffered references become ``F'(y) - g`` (seed 000 §3.1.2), ``g`` the
        buffer's lower bounds at the block's prefix."""
        refs = {r: b for b in self.buffers_of(stmt.name) for r in b.refs if r[0] == stmt.name}
        order = _access_order(stmt.body)
        if len(order) != len(stmt.accesses):
            raise PolymagicError(f"internal: access count mismatch in {stmt.name}")
        repl = {}
        local = {r: lb for _kind, lb in self.mapping.local_copies.values() for r in lb.refs
                 if r[0] == stmt.name}
        for k, acc in enumerate(order):
            if (stmt.name, k) in local:
                repl[k] = self.local_access(stmt, k, local[(stmt.name, k)], build, iters)
                continue
            buf = refs.get((stmt.name, k))
            if buf is not None:
                self.used_buffers.setdefault(buf.name, buf)
            repl[k] = self.access_lowerer(stmt, k, acc, buf, build, iters)
        return _rewrite_accesses(stmt.body, repl)

    def local_access(self, stmt, k: int, lb, build: isl.AstBuild,
                     iters: isl.PwMultiAff | None):
        """A served access ``A[f(i)]`` -> ``L[ρ(f(i), p(i))]`` (seed 001 §4.2)."""
        index = _build_index(build, iters, lb.access_index(stmt, k)) if iters is not None else None
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
                affs = self.subscripts(stmt, k, buf, iters.n_piece() == 1)
                if affs is not None:
                    index = _build_index(build, iters, affs)
                self.indices[key] = (build, index)     # the build kept alive: its id stays its own
        name = buf.name if buf is not None else acc.array

        def lowered(a: Access) -> Access:
            if index is not None:
                return Access(name, index)
            if buf is None:
                return a
            g = [pw_aff_to_expr(lb.pullback_pw_multi_aff(_stmt_prefix(buf, stmt)))
                 for lb in buf.lower]
            return Access(name, tuple(Binary("-", i, gi) for i, gi in zip(a.index, g)))
        return lowered

    def subscripts(self, stmt, k: int, buf: BufferPlan | None, bare: bool = False
                   ) -> list[isl.PwAff] | None:
        """The subscripts of access ``k`` of ``stmt`` on the statement's instance; for a
        buffered reference the local ones, ``F'(y) - g`` with ``g`` at the prefix.
        With ``bare`` (one-piece iterator map: :func:`_build_index` drops one-piece
        domains) one-piece functions lose their domains before they are combined."""
        affs = _access_affs(stmt.accesses[k].relation)
        if affs is None or buf is None:
            return affs
        pkey = (buf.name, stmt.name, bare)
        if pkey not in self.prefixes:
            prefix = _stmt_prefix(buf, stmt)
            bare = bare and prefix.n_piece() == 1     # else the pieces keep their domains
            self.prefixes[pkey] = (bare, [(_universal(g) if bare else g)
                                          .pullback_pw_multi_aff(prefix) for g in buf.lower])
        bare, gs = self.prefixes[pkey]
        if bare:
            affs = [_universal(f) for f in affs]
        return [f.sub(g.align_params(f.get_space())) for f, g in zip(affs, gs)]

    def buffers_of(self, stmt: str) -> list[BufferPlan]:
        return [b for plan in self.mapping.plans.values() if plan.memory
                for b in plan.memory.buffers if any(r[0] == stmt for r in b.refs)]

    def launch(self, name: str, body_node: isl.AstNode) -> kir.Launch:
        plan = self.mapping.plans[name]
        self.block_dims = plan.block
        return self.make_kernel(name, plan, self.block(body_node, True))

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
        schedule, n = _kernel_schedule(self.mapping.schedule, name, plan)
        assert n == depth, (n, depth)
        ast = _generate(self.build, self.scop, schedule, self.mapping, self)[1]
        body = _drop_fixed_host_loops(self.block(ast, True))
        outer, self.host_vars = self.host_vars, [f"{HOST_PARAM}{k}" for k in range(depth)]
        try:
            return self.make_kernel(name, plan, body)
        finally:
            self.host_vars = outer

    def make_kernel(self, name: str, plan: KernelPlan, body: list[kir.Stmt]) -> kir.Launch:
        body, registers = self.registers(plan, body)
        nthreads = plan.block[0] * plan.block[1] * plan.block[2]
        accessed = _accessed_arrays(body)
        for red in {r.stmt: r for r in self.mapping.reductions.values()
                    if r.acc in accessed}.values():
            ctype = self.scop.arrays[self.scop.statement(red.stmt).body.target.array].ctype
            registers.append(kir.RegisterDecl(red.acc, ctype))
            self.used_buffers.setdefault(red.buf, _TreeBuffer(red.buf, ctype, (nthreads,)))
        body = self.share_partner_loads(body, registers)
        body, loads = eliminate_redundant_loads(
            body, {n: a.ctype for n, a in self.scop.arrays.items()})
        registers = registers + loads
        body = mark_unroll(body)
        names = _accessed_arrays(body)
        shared = [kir.SharedDecl(b.name, b.ctype, b.extents)
                  for b in self.used_buffers.values() if b.name in names]
        guard = [c for g in self.guards for c in g if not _implied_by_block(c, plan.block)]
        if guard:
            body = [kir.If(_conjoin(guard), body)]
        body = _copy_split_values(body, plan.block)
        kname = name[len("pm_"):] if name.startswith("pm_") else name   # as in the plan's notes
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
        summary = _plan_summary(kname, plan)
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

    def registers(self, plan: KernelPlan, body: list[kir.Stmt]
                  ) -> tuple[list[kir.Stmt], list[kir.RegisterDecl]]:
        """Seed 004 §4.2: the planned arrays (or their shared buffers) kept in
        per-thread registers across the sequential loops; the plan's decision lines
        say what was done."""
        mem = plan.memory
        if mem is None or not mem.registers:
            return body, []
        accessed = _accessed_arrays(body)
        targets: dict[str, str] = {}
        owner: dict[str, RegisterPlan] = {}
        for r in mem.registers:
            for n in [r.array] + [b.name for b in self.used_buffers.values()
                                  if getattr(b, "array", None) == r.array]:
                if n in accessed:
                    targets[n], owner[n] = r.ctype, r
        members = [(mm.axis, mm.tile, mm.threads) for mm in plan.members
                   if getattr(plan, "member_points", True)]
        body, decls, result = promote_registers(body, targets, members)
        kname = plan.name[len("pm_"):]
        for n, (made, skipped, once) in result.items():
            owner[n].registers += made
            owner[n].skipped += skipped
            if n == owner[n].array:
                owner[n].once_per_point = once
                for d in decls:
                    if d.name.endswith("_" + n) and d.name.startswith("pm_r"):
                        d.array, d.once_per_point = n, once
        for r in mem.registers:
            if 0 <= r.line < len(mem.decisions):
                mem.decisions[r.line] = decision_line(kname, r)
        return body, decls


#: Most iterations of an inner loop with constant bounds that get ``#pragma unroll``.
UNROLL_MAX = 32


def mark_unroll(body: list[kir.Stmt]) -> list[kir.Stmt]:
    """Seed 004 §4.3: ``#pragma unroll`` on innermost loops with constant trip counts
    (at most :data:`UNROLL_MAX`, no barrier inside)."""
    out: list[kir.Stmt] = []
    for s in body:
        if isinstance(s, kir.Loop):
            inner = mark_unroll(s.body)
            leaf = not any(isinstance(x, (kir.Loop, kir.Barrier)) for x in kir.walk(s.body))
            const = isinstance(s.lower, Int) and isinstance(s.upper, Int) and \
                isinstance(s.step, int) and s.step > 0
            trips = (s.upper.value - s.lower.value) // s.step + 1 if const else 0
            out.append(kir.Loop(s.var, s.lower, s.upper, s.step, inner,
                                s.unroll or (leaf and const and 1 < trips <= UNROLL_MAX)))
        elif isinstance(s, kir.If):
            out.append(kir.If(s.cond, mark_unroll(s.then), mark_unroll(s.orelse)))
        else:
            out.append(s)
    return out


def _accessed_arrays(body: list[kir.Stmt]) -> set[str]:
    out: set[str] = set()
    for st in kir.walk(body):
        if isinstance(st, kir.Compute):
            for e in (st.assign.target, st.assign.value):
                out |= {x.array for x in walk_expr(e) if isinstance(x, Access)}
    return out


def _iterator_map(build: isl.AstBuild, stmt: str) -> isl.PwMultiAff | None:
    """Loop iterators -> statement instance at this point of the AST (None when the
    schedule is not invertible there)."""
    maps: list[isl.Map] = []
    build.get_schedule().foreach_map(
        lambda m: maps.append(m) if m.get_tuple_name(isl.dim_type.in_) == stmt else None)
    if len(maps) != 1:
        return None
    try:
        return isl.PwMultiAff.from_map(maps[0].reverse())
    except isl.Error:
        return None


def _access_affs(relation: isl.Map) -> list[isl.PwAff] | None:
    """The subscripts of an access relation as piecewise affine functions."""
    try:
        pma = isl.PwMultiAff.from_map(relation)
    except isl.Error:
        return None
    return [pma.get_pw_aff(i) for i in range(relation.dim(isl.dim_type.out))]


def _copy_local_index(stmt: str, n_prefix: int, buf: BufferPlan, bare: bool = False,
                      width: int = 1) -> list[isl.PwAff]:
    """``a - g(p)`` on the copy statement's space ``stmt[p..., a...]``; with ``bare``
    a one-piece ``g`` loses its domain first (:func:`_build_index` would drop it);
    with ``width`` > 1 the last dim is a chunk ``k`` of the buffer row
    (:func:`memory.plan.chunk_domain`): its buffer subscript ``width * k``, then the
    array's ``g(p) + width * k`` follow."""
    na = len(buf.extents)
    params = buf.lower[0].get_space().params() if buf.lower else None
    dims = [f"p{i}" for i in range(n_prefix)] + [f"a{i}" for i in range(na)]
    pnames = ", ".join(params.get_var_names(isl.dim_type.param)) if params is not None else ""
    proj = _parsed(isl.MultiAff, f"[{pnames}] -> {{ {stmt}[{', '.join(dims)}] -> "
                                 f"[{', '.join(dims[:n_prefix])}] }}")
    out = []
    for i, g in enumerate(buf.lower):
        g = (_universal(g) if bare else g).pullback_multi_aff(proj)
        if width > 1 and i == na - 1:
            k = _parsed(isl.PwAff, f"[{pnames}] -> {{ {stmt}[{', '.join(dims)}] -> "
                                   f"[({width} * a{i})] }}")
            out += [k, k.add(g)]
        else:
            a = _parsed(isl.PwAff, f"[{pnames}] -> {{ {stmt}[{', '.join(dims)}] -> [(a{i})] }}")
            out.append(a.sub(g))
    return out


#: the names of a chunk statement's dims in its guards (substituted by the AST's)
_CHUNK_DIM = "pm_k"


def _chunk_cond(chunks: isl.Map) -> Expr:
    """A set of chunks ``{ [p] -> A[a', c] }`` (simplified against the statement's
    domain) as a condition on the statement's dims ``pm_k0 ..`` (``Int(1)``/``Int(0)``:
    always/never), printed by isl once per copy statement."""
    cond = chunks.wrap().flatten()
    if cond.is_empty():
        return Int(0)
    n = cond.dim(isl.dim_type.set)
    if cond.is_equal(isl.Set.universe(cond.get_space())):
        return Int(1)
    npar = cond.dim(isl.dim_type.param)
    cond = cond.move_dims(isl.dim_type.param, npar, isl.dim_type.set, 0, n)
    for i in range(n):
        cond = cond.set_dim_id(isl.dim_type.param, npar + i, isl.Id(f"{_CHUNK_DIM}{i}"))
    return set_to_expr(cond)


@functools.lru_cache(maxsize=1024)
def _parsed(cls, text: str):
    """``cls(text)``, parsed once (isl objects are immutable; the copy statements'
    spaces come back at every regeneration)."""
    return cls(text)


#: subscripts with more pieces than this are substituted instead of printed by isl
MAX_INDEX_PIECES = 4


def _build_index(build: isl.AstBuild, iters: isl.PwMultiAff, affs: list[isl.PwAff]
                 ) -> tuple[Expr, ...] | None:
    """Subscripts pulled back to the loop iterators and printed by the build."""
    try:
        out = []
        one = iters.n_piece() == 1
        for f in affs:
            f = _universal(f) if one else f
            f = f.align_params(iters.get_space())
            it = iters.align_params(f.get_space())
            g = f.pullback_pw_multi_aff(it)
            if g.n_piece() > MAX_INDEX_PIECES:     # printing it would be slow and long
                return None
            out.append(ast_expr_to_expr(build.expr_from_pw_aff(g)))
        return tuple(out)
    except isl.Error:
        return None


def _guard_expr(build: isl.AstBuild, iters: isl.PwMultiAff, stmt: str, guard: isl.Map
                ) -> Expr:
    """The condition ``(p, x) ∈ guard`` of a copy statement ``stmt[p..., x...]`` scanned
    over a superset (:func:`.memory.localcode.graft_tile_box`), printed by the build."""
    g = guard.wrap().flatten().set_tuple_name(stmt)
    g = g.align_params(iters.get_space())
    it = iters.align_params(g.get_space())
    cond = g.preimage_pw_multi_aff(it)
    return ast_expr_to_expr(build.expr_from_set(cond))


def _universal(f: isl.PwAff) -> isl.PwAff:
    """A one-piece subscript with its domain dropped.

    The domain of a subscript (the statement's domain, a buffer's blocks: unions of
    polyhedra with floors) holds every instance printed at the AST point, so isl
    prints the same expression without it: for one piece pulled back by one piece,
    :func:`_build_index`'s expression is the affine function simplified against the
    build's domain, the piece's condition being dropped as isl's last piece.  The
    domain only made the pullback and isl's gist slow (2-3x the time of the whole
    subscript printing on lu and fdtd-2d)."""
    if f.n_piece() != 1:
        return f
    pieces: list[isl.Aff] = []
    f.foreach_piece(lambda _s, a: pieces.append(a))
    return isl.PwAff.from_aff(pieces[0])


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
    return any(isinstance(x, Var) and (x.name in kir.MAPPED_IDS or kir.copy_split_var(x.name) is not None)
               for x in walk_expr(e))


def _copy_split_values(body: list[kir.Stmt], block: tuple[int, int, int]) -> list[kir.Stmt]:
    """The kernel body preceded by the values of the 16-byte copies' lane and group
    variables it uses (:data:`kir.COPY_GROUP`), from the thread ids of its block."""
    used = sorted(v for v in kir.used_vars(body) if kir.copy_split_var(v) is not None)
    return [kir.Let(v, kir.copy_split_value(v, block)) for v in used] + body


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
    if plan.text:
        return f"{kname} [{stmts}]: {plan.text}"
    if not plan.members:
        return f"{kname} [{stmts}]: one thread" + (
            f" (sequential: {', '.join(plan.sequential)})" if plan.sequential else "")
    parts = [f"{mm.loop}→block.{mm.axis}/thread.{mm.axis} (tile {mm.tile}, {mm.threads} threads)"
             for mm in plan.members]
    seq = f"; sequential in thread: {', '.join(plan.sequential)}" if plan.sequential else ""
    if plan.per_thread:       # the third tiling level (seed 000 §4.1): points per thread
        many = any(p > 1 for p in plan.per_thread)
        seq += f"; per thread: {' x '.join(map(str, plan.per_thread))} point{'s' if many else ''}"
        if plan.jammed:
            seq += " (point loops unrolled and jammed inside the sub-tile loops)"
    return f"{kname} [{stmts}]: " + ", ".join(parts) + seq


def lower(scop: Scop, mapping: MappingResult) -> kir.Program:
    """Generate isl's AST for the mapped schedule and lower it to the Kernel IR."""
    ctx = scop.context.get_ctx()
    split = copy_split_params([b for _d, b in mapping.copies.values()],
                              [p.block for p in mapping.plans.values()])
    ids_ctx = isl.Set(f"[{', '.join(_ALL_IDS + list(split))}] -> {{ : "
                      + " and ".join(f"0 <= {v} < 1024" for v in kir.THREAD_IDS.values())
                      + " and " + " and ".join(f"{v} >= 0" for v in kir.BLOCK_IDS.values())
                      + "".join(f" and 0 <= {v} < {n}" for v, n in split.items())
                      + " }")
    space = mapping.schedule.get_domain().get_space()
    build = isl.AstBuild.from_context(
        scop.context.align_params(space).intersect_params(ids_ctx.align_params(space)))
    depth = 64
    ids = isl.IdList.alloc(ctx, depth)
    for i in range(depth):
        ids = ids.add(isl.Id(f"pm_c{i}"))
    build = build.set_iterators(ids)
    if PER_KERNEL or any(p.launch_domain is not None for p in mapping.plans.values()):
        low, ast = _generate_per_kernel(build, scop, mapping)
    else:
        low, ast = _generate(build, scop, mapping.schedule, mapping)
        if _host_depends_on_ids(ast, list(_kernel_marks(mapping.schedule))):
            low, ast = _generate_per_kernel(build, scop, mapping)
    host = low.block(ast, False)
    arrays = {n: kir.ArrayDecl(n, a.ctype, a.shape, kind=a.kind) for n, a in scop.arrays.items()}
    scalars = {p.name: p.ctype for p in scop.scalar_params}
    return kir.Program(scop.name, arrays, scop.size_params, scalars, host, low.kernels,
                       constants=dict(mapping.constants),
                       specialised={k: v for p in mapping.plans.values()
                                    for k, v in getattr(p, "specialised", {}).items()})




def _generate(build: isl.AstBuild, scop: Scop, schedule: isl.Schedule,
              mapping: MappingResult, low: "_Lowerer | None" = None
              ) -> tuple["_Lowerer", isl.AstNode]:
    """isl's AST of ``schedule`` (the mapped one), with a lowerer (fresh unless
    given) collecting the statement instances (its ``at_each_domain`` callback)."""
    low = low or _Lowerer(scop, mapping)
    build, _keep = build.set_at_each_domain(low.at_each_domain), None
    if isinstance(build, tuple):      # islpy returns (build, callback handle)
        build, _keep = build
    ast = build.node_from_schedule(schedule)
    if low.errors:
        raise low.errors[0]
    return low, ast


def _rename_vars(body: list[kir.Stmt], names: dict[str, Expr]) -> list[kir.Stmt]:
    if not names:
        return body
    return kir.map_body(body, lambda e: names.get(e.name) if isinstance(e, Var) else None)


def _drop_fixed_host_loops(body: list[kir.Stmt]) -> list[kir.Stmt]:
    """``if (1) { v = pm_h<k>; ... }`` (a host loop fixed to the launch's value) ->
    ``...`` with ``v`` read as ``pm_h<k>``."""
    out: list[kir.Stmt] = []
    for s in body:
        if isinstance(s, kir.If) and s.cond == Int(1) and not s.orelse and s.then and \
                isinstance(s.then[0], kir.Let) and isinstance(s.then[0].value, Var) and \
                s.then[0].value.name.startswith(HOST_PARAM):
            rest = _rename_vars(s.then[1:], {s.then[0].var: s.then[0].value})
            out.extend(_drop_fixed_host_loops(rest))
        elif isinstance(s, kir.If):
            out.append(kir.If(s.cond, _drop_fixed_host_loops(s.then),
                              _drop_fixed_host_loops(s.orelse)))
        else:
            out.append(s)
    return out


def _kernel_marks(schedule: isl.Schedule) -> dict[str, isl.ScheduleNode]:
    """The kernel marks of the mapped tree by name, in its (depth-first) order."""
    out: dict[str, isl.ScheduleNode] = {}

    def visit(node: isl.ScheduleNode) -> None:
        name = kernel_mark(node)
        if name:
            out[name] = node
            return
        for i in range(node.n_children()):
            visit(node.child(i))
    visit(schedule.get_root())
    return out


def _host_depends_on_ids(ast: isl.AstNode, order: list[str]) -> bool:
    """Whether isl's AST lets the host part depend on block/thread ids in a way the
    host cannot honour: a host loop bounded by ids, a host ``if`` on ids with an else
    branch, or kernels launched out of the tree's order (isl treats the ids as
    parameters of one thread, for which kernels with disjoint guards commute; on the
    GPU every launch runs all threads)."""
    seen: list[str] = []
    bad = False

    def visit(node: isl.AstNode) -> None:
        nonlocal bad
        t = node.get_type()
        if t == isl.ast_node_type.block:
            children = node.block_get_children()
            for i in range(children.n_ast_node()):
                visit(children.get_at(i))
        elif t == isl.ast_node_type.mark:
            name = node.mark_get_id().get_name()
            if name.startswith(MARK_PREFIX):
                if name not in seen:
                    seen.append(name)
            else:
                visit(node.mark_get_node())
        elif t == isl.ast_node_type.for_:
            if any(_mentions_mapped_ids(ast_expr_to_expr(e))
                   for e in (node.for_get_init(), node.for_get_cond())):
                bad = True
            visit(node.for_get_body())
        elif t == isl.ast_node_type.if_:
            ids = _mentions_mapped_ids(ast_expr_to_expr(node.if_get_cond()))
            if ids and node.if_has_else_node():
                bad = True
            visit(node.if_get_then_node())
            if node.if_has_else_node():
                visit(node.if_get_else_node())

    visit(ast)
    return bad or seen != [m for m in order if m in seen]


def _group_and_cut(schedule: isl.Schedule) -> isl.Schedule:
    """The host tree: each kernel mark's subtree grouped by its host loop values
    (``isl_schedule_node_group``, one ``pm_group_<mark>`` instance per launch) and
    cut, so no block/thread id reaches the host loops."""
    def visit(node: isl.ScheduleNode) -> isl.ScheduleNode:
        name = kernel_mark(node)
        if name:
            # group() leaves the node below the new expansion node; cut that one
            grouped = node.child(0).group(isl.Id(f"{GROUP_PREFIX}{name}"))
            return grouped.parent().cut().parent()
        for i in range(node.n_children()):
            node = visit(node.child(i)).parent()
        return node
    return visit(schedule.get_root()).get_schedule()


def _kernel_schedule(schedule: isl.Schedule, mark: str, plan: KernelPlan | None = None
                     ) -> tuple[isl.Schedule, int]:
    """The mapped tree restricted to the instances of kernel ``mark`` at one launch:
    host loop values fixed to parameters ``pm_h0, pm_h1, ...`` (the kernel's int
    parameters); returns it and the number of host loops.  The plan's
    ``launch_domain`` (time tiles), an affine description of the same instances, is
    intersected in: with it isl's AST generator need not project the floors of the
    prefix (jacobi-2d, tiles 4,32,32: 0.3 s instead of over 3,000,000 operations)."""
    node = _kernel_marks(schedule)[mark]
    domain = node.get_domain()
    depth = node.get_schedule_depth()
    prefix = node.get_prefix_schedule_union_map().intersect_domain(domain)
    if depth:
        names = [f"{HOST_PARAM}{k}" for k in range(depth)]
        fixed = isl.Set(f"[{', '.join(names)}] -> {{ [{', '.join(f'x{k}' for k in range(depth))}]"
                        f" : {' and '.join(f'x{k} = {n}' for k, n in enumerate(names))} }}")
        domain = prefix.intersect_range(isl.UnionSet.from_set(fixed)).domain()
    if plan is not None and plan.launch_domain is not None:
        # the same instances, with affine constraints isl's AST generator projects
        # cheaply instead of the prefix's floors alone (time tiles)
        domain = domain.intersect(plan.launch_domain.align_params(domain.get_space()))
    root = schedule.get_root().child(0)
    if depth:       # a context node may introduce the parameters (a filter may not)
        root = root.insert_context(isl.Set(f"[{', '.join(names)}] -> {{ [] }}")).child(0)
    return root.insert_filter(domain).get_schedule(), depth


def _generate_per_kernel(build: isl.AstBuild, scop: Scop, mapping: MappingResult
                         ) -> tuple["_Lowerer", isl.AstNode]:
    """PPCG's split (fuzz findings 19, 20): the host AST from the tree with each
    kernel's subtree grouped and cut, each kernel's body from the tree restricted to
    one launch (:func:`_kernel_schedule`), so isl never mixes host loops with the
    block/thread ids of a kernel."""
    low = _Lowerer(scop, mapping)
    low.build = build
    low.per_kernel = True
    host = _group_and_cut(mapping.schedule)
    boxed = [f"{GROUP_PREFIX}{n}" for n, p in mapping.plans.items()
             if p.launch_domain is not None]
    if boxed:
        host = _boxed_launches(host, boxed)
    low, ast = _generate(build, scop, host, mapping, low)
    return low, ast


def _pieces_bound(f: isl.PwAff, upper: bool) -> isl.PwAff:
    """``f`` when it has one piece, else the maximum (``upper``) or minimum of its
    pieces' expressions on all parameters: a bound as loose as the worst piece, with
    no piece conditions for the host loop (seidel-2d, tiles 4,32,32: the exact
    maximum's piece conditions cost isl's AST generator 1 s, the bound nothing)."""
    pieces: list[isl.Aff] = []
    f.foreach_piece(lambda _s, a: pieces.append(a))
    if len(pieces) <= 1:
        return f
    out = isl.PwAff.from_aff(pieces[0])
    for a in pieces[1:]:
        out = out.max(isl.PwAff.from_aff(a)) if upper else out.min(isl.PwAff.from_aff(a))
    return out.coalesce()


def _boxed_launches(host: isl.Schedule, groups: list[str]) -> isl.Schedule:
    """The host tree with the launch sets of ``groups`` (``pm_group_<mark>[w..]``)
    replaced by their bounding boxes, when the tree is one chain of bands down to one
    kernel mark (a time-tiled program); else ``host``.  The exact set of wavefronts
    is the image of the skewed domain under sums of floors, which isl's AST generator
    projects at great cost (jacobi-2d, tiles 4,32,32: over 3,000,000 operations); its
    per-dimension minimum and maximum are cheap.  A launch of an empty wavefront
    inside the box would run no instance (each launch's instances are the mapper's
    exact ``launch_domain``)."""
    dom = host.get_domain()
    sets: list[isl.Set] = []
    dom.foreach_set(sets.append)
    if len(sets) != 1 or sets[0].get_tuple_name() not in groups:
        return host
    node, chain = host.get_root().child(0), []
    while node.get_type() == isl.schedule_node_type.band:
        chain.append(node.band_get_partial_schedule())
        node = node.child(0)
    if node.get_type() != isl.schedule_node_type.mark or node.child(0).n_children():
        return host
    group = sets[0]
    box = isl.Set.universe(group.get_space())
    for k in range(group.dim(isl.dim_type.set)):
        x = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(group.get_space()),
                                    isl.dim_type.set, k)
        lo = _pieces_bound(group.dim_min(k), False).insert_dims(
            isl.dim_type.in_, 0, group.dim(isl.dim_type.set))
        hi = _pieces_bound(group.dim_max(k), True).insert_dims(
            isl.dim_type.in_, 0, group.dim(isl.dim_type.set))
        lo = lo.set_tuple_id(isl.dim_type.in_, group.get_tuple_id())
        hi = hi.set_tuple_id(isl.dim_type.in_, group.get_tuple_id())
        box = box.intersect(lo.le_set(x)).intersect(x.le_set(hi))
    out = isl.Schedule.from_domain(isl.UnionSet(box)).get_root().child(0)
    for band in chain:
        out = out.insert_partial_schedule(band.intersect_domain(isl.UnionSet(box))).child(0)
    return out.insert_mark(node.mark_get_id()).get_schedule()
