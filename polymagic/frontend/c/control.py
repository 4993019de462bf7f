"""Control flow: ``for`` loops and ``if`` statements become the domains of the
statements they enclose, and their positions the original schedule.

A loop adds a set dimension named after its iterator, bounded by its affine
initial value and condition and, for a step ``c > 1``, the congruence
``(it - lb) mod c = 0``; a loop that counts down contributes ``-it`` to the
schedule (its iterations run in decreasing order).  An ``if`` restricts its
branches to its affine condition and its complement.  The schedule is the 2d+1
form (statement positions interleaved with iterators), padded with zeros.
"""
from __future__ import annotations

import islpy as isl
from pycparser import c_ast

from ...errors import SourceError
from .subset import CMP, FLIP, INT_TYPES, type_name
from .mayaccess import data_dependent
from .symbols import BuilderState, Modifies, Names, NonAffine, Sym


class ControlFlow(BuilderState):
    """Rules for loops and conditions, and the schedule they give."""

    # -- loops --

    def for_loop(self, n: c_ast.For) -> None:
        """A for loop: a new set dimension constrained by its bounds and stride."""
        it, ctype, lb_node, declared = self.loop_init(n)
        step = self.loop_step(n, it)
        self.check_not_modified(n.stmt, it)
        if n.cond is None:
            self.err(f"loop over '{it}' has no condition: loops need an affine bound", n)
        depth = len(self.iters)
        outer_dom = self.dom
        dom = outer_dom.add_dims(isl.dim_type.set, 1).set_dim_name(isl.dim_type.set, depth, it)
        space = dom.get_space()
        lb = self.aff(lb_node, space, "loop bound")
        bound = self.loop_cond(n.cond, it, step, space)
        ls = isl.LocalSpace.from_space(space)
        var = isl.PwAff.var_on_domain(ls, isl.dim_type.set, depth)
        dom = dom.intersect(var.ge_set(lb) if step > 0 else var.le_set(lb)).intersect(bound)
        if abs(step) > 1:
            zero = isl.PwAff.val_on_domain(isl.Set.universe(space), 0)
            dom = dom.intersect(var.sub(lb).mod_val(abs(step)).eq_set(zero))
        self.scopes.append({})
        self.scopes[-1][it] = Sym("iter", it, ctype, pos=depth)
        if self.iterator_ctypes.get(it, "long") == "long":
            self.iterator_ctypes[it] = ctype
        self.iters.append(it)
        # a loop that counts down runs its iterations in decreasing order: -it
        self.prefix += [self.pos[-1], it if step > 0 else "-" + it]
        self.pos.append(0)
        self.dom = dom.coalesce()
        self.stmt(n.stmt)
        self.dom = outer_dom
        self.pos.pop()
        del self.prefix[-2:]
        self.pos[-1] += 1
        self.iters.pop()
        self.scopes.pop()

    def loop_init(self, n: c_ast.For) -> tuple[str, str, c_ast.Node, bool]:
        """The iterator, its type and its initial value."""
        init = n.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1:
            d = init.decls[0]
            ctype = INT_TYPES.get(type_name(d.type) or "")
            if ctype is None:
                self.err(f"loop iterator '{d.name}' must be an int or long", d)
            if d.init is None:
                self.err(f"loop iterator '{d.name}' needs an initial value", d)
            self._check_iter_name(d.name, d)
            return d.name, ctype, d.init, True
        if isinstance(init, c_ast.Assignment) and init.op == "=" and \
                isinstance(init.lvalue, c_ast.ID):
            name = init.lvalue.name
            sym = self.lookup(name)
            if sym is None:
                self.err(f"undeclared loop iterator '{name}'", init.lvalue, SourceError)
            if sym.kind in ("size", "scalar", "array"):
                self.err(f"assignment to function parameter '{name}' is not supported: "
                         "parameters are read-only", init.lvalue)
            if sym.kind == "iter":
                self.err(f"loop iterator '{name}' is modified in the loop body", init)
            if sym.kind != "itervar":
                self.err(f"'{name}' cannot be a loop iterator", init.lvalue)
            self._check_iter_name(name, init.lvalue)
            return name, sym.ctype, init.rvalue, False
        self.err("a for loop must initialise one integer iterator, e.g. "
                 "for (int i = 0; i < n; i++)", init if init is not None else n)

    def _check_iter_name(self, name: str, node: c_ast.Node) -> None:
        """An iterator may not hide a constant, a parameter or an enclosing iterator
        (its set dimension would be ambiguous)."""
        if name in self.constants:
            self.err(f"loop iterator '{name}' has the name of a #define constant", node)
        old = self.lookup(name)
        if old is not None and old.kind in ("size", "scalar", "array"):
            self.err(f"loop iterator '{name}' hides the function parameter of that name", node)
        if name in self.iters:
            self.err(f"loop iterator '{name}' hides the enclosing loop iterator of that name",
                     node)

    def loop_step(self, n: c_ast.For, it: str) -> int:
        """+c or -c for i++, i--, i += c, i -= c, i = i + c (c a positive constant)."""
        nx = n.next
        if isinstance(nx, c_ast.UnaryOp) and nx.op in ("++", "p++", "--", "p--"):
            self._step_var(nx.expr, it, nx)
            return 1 if "+" in nx.op else -1
        if isinstance(nx, c_ast.Assignment) and nx.op in ("+=", "-=", "="):
            self._step_var(nx.lvalue, it, nx)
            sign, amount = (1 if nx.op == "+=" else -1), nx.rvalue
            if nx.op == "=":
                sign, amount = self._step_from_sum(nx.rvalue, it)
            c = self.const_int(amount)
            if c is None:
                self.err(f"loop step of '{it}' is not a constant", amount)
            if c <= 0:
                self.err(f"loop step of '{it}' must be a positive constant (got {c})", amount)
            return sign * c
        self.err(f"unsupported loop step: use {it}++, {it}--, {it} += c or {it} -= c "
                 "with a constant c", nx if nx is not None else n)

    def _step_var(self, node: c_ast.Node, it: str, at: c_ast.Node) -> None:
        if not (isinstance(node, c_ast.ID) and node.name == it):
            self.err(f"the loop step must update the iterator '{it}'", at)

    def _step_from_sum(self, rv: c_ast.Node, it: str) -> tuple[int, c_ast.Node]:
        """i = i + c, i = c + i, i = i - c."""
        if isinstance(rv, c_ast.BinaryOp) and rv.op in ("+", "-"):
            if isinstance(rv.left, c_ast.ID) and rv.left.name == it:
                return (1 if rv.op == "+" else -1), rv.right
            if rv.op == "+" and isinstance(rv.right, c_ast.ID) and rv.right.name == it:
                return 1, rv.left
        self.err(f"unsupported loop step: use {it}++, {it}--, {it} += c or {it} -= c "
                 "with a constant c", rv)

    def check_not_modified(self, body: c_ast.Node, it: str) -> None:
        v = Modifies(it)
        v.visit(body)
        if v.shadow:
            self.err(f"declaration of '{it}' hides the enclosing loop iterator of that name",
                     v.hit)
        if v.hit is not None:
            self.err(f"loop iterator '{it}' is modified in the loop body", v.hit)

    def loop_cond(self, cond: c_ast.Node, it: str, step: int, space: isl.Space) -> isl.Set:
        """The loop condition: a conjunction of bounds ``it < e`` (or ``>`` when the loop
        counts down) where ``e`` is affine and does not depend on ``it``."""
        if isinstance(cond, c_ast.BinaryOp) and cond.op == "&&":
            return self.loop_cond(cond.left, it, step, space).intersect(
                self.loop_cond(cond.right, it, step, space))
        want = "an upper" if step > 0 else "a lower"
        if not (isinstance(cond, c_ast.BinaryOp) and cond.op in FLIP):
            self.err(f"loop condition must be {want} bound on '{it}', e.g. "
                     f"{it} {'<' if step > 0 else '>='} expr", cond)
        op, other = cond.op, cond.right
        if not self._is_id(cond.left, it):
            if not self._is_id(cond.right, it):
                self.err(f"loop condition must compare the iterator '{it}' with a bound", cond)
            op, other = FLIP[cond.op], cond.left
        if self._mentions(other, it):
            self.err(f"loop bound of '{it}' must not depend on '{it}'", other)
        if (op in ("<", "<=")) != (step > 0):
            self.err(f"loop condition must be {want} bound on '{it}' for a loop that "
                     f"{'increments' if step > 0 else 'decrements'} it", cond)
        bound = self.aff(other, space, "loop bound")
        var = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(space), isl.dim_type.set,
                                      len(self.iters))
        return CMP[op](var, bound)

    @staticmethod
    def _is_id(node: c_ast.Node, name: str) -> bool:
        return isinstance(node, c_ast.ID) and node.name == name

    def _mentions(self, node: c_ast.Node, name: str) -> bool:
        v = Names()
        v.visit(node)
        return name in v.ids

    # -- if --

    def if_stmt(self, n: c_ast.If) -> None:
        """then/else branches get the condition / its complement in their domain."""
        space = self.dom.get_space()
        try:
            cond = self.cond_set(n.cond, isl.LocalSpace.from_space(space))
        except NonAffine as e:
            bad = e
        else:
            return self.if_branches(n, cond)
        if data_dependent(bad):          # evaluated at run time: frontend/c/mayaccess
            return self.guarded_if(n)
        self.err(f"non-affine condition in if: {bad.reason}", bad.node)

    def if_branches(self, n: c_ast.If, cond: isl.Set) -> None:
        outer = self.dom
        self.dom = outer.intersect(cond).coalesce()
        self.stmt(n.iftrue)
        if n.iffalse is not None:
            self.dom = outer.intersect(cond.complement()).coalesce()
            self.stmt(n.iffalse)
        self.dom = outer

    # -- the schedule --

    def schedule(self) -> isl.UnionMap:
        """The execution order in 2d+1 form, padded with zeros to a common length
        (restricted to the statement domains); a loop that counts down contributes
        ``-it`` (its iterations run in decreasing order)."""
        umap = isl.UnionMap.empty(self.context.get_space())
        width = max((len(s) for s in self.sched), default=1)
        npar = len(self.size_params)
        for st, sched in zip(self.statements, self.sched):
            sp = isl.Space.alloc(self.ctx, npar, len(st.iterators), width)
            for k, p in enumerate(self.size_params):
                sp = sp.set_dim_name(isl.dim_type.param, k, p)
            for k, it in enumerate(st.iterators):
                sp = sp.set_dim_name(isl.dim_type.in_, k, it)
            m = isl.Map.universe(sp)
            ls = isl.LocalSpace.from_space(sp)
            for k, v in enumerate(sched + [0] * (width - len(sched))):
                c = isl.Constraint.equality_alloc(ls).set_coefficient_val(isl.dim_type.out, k, 1)
                if isinstance(v, str):
                    down = v.startswith("-")
                    c = c.set_coefficient_val(isl.dim_type.in_,
                                              st.iterators.index(v.lstrip("-")),
                                              1 if down else -1)
                else:
                    c = c.set_constant_val(-v)
                m = m.add_constraint(c)
            m = m.set_tuple_name(isl.dim_type.in_, st.name).intersect_domain(st.domain)
            umap = umap.union(isl.UnionMap.from_map(m))
        return umap
