"""Affine expressions: subscripts, loop bounds and conditions as isl objects.

A subscript, bound or condition is an affine function of the loop iterators (set
dimensions) and the size parameters (isl parameters): ``+``, ``-``, ``*`` by a
constant, ``/`` and ``%`` by a constant (truncating, as in C), ``min``, ``max``,
``abs`` and ``?:``.  Anything else raises :class:`~.symbols.NonAffine` with the
culprit node, which the caller turns into a located error naming the role
("non-affine subscript: ...").  Accesses become isl maps
``{ S[iterators] -> A[subscripts] }``.
"""
from __future__ import annotations

import islpy as isl
from pycparser import c_ast

from ... import expr as E
from ...errors import SourceError
from .source import const_expr
from .subset import CMP, INT_TYPES, call_args, call_name, type_name
from .mayaccess import data_dependent
from .symbols import BuilderState, NonAffine, Sym


class Affine(BuilderState):
    """Rules for accesses and affine expressions."""

    # -- accesses --

    def array_ref(self, node: c_ast.ArrayRef) -> tuple[E.Access, isl.Map]:
        """``A[e1][e2]`` with affine subscripts -> Access expr and access relation."""
        subs, base = [], node
        while isinstance(base, c_ast.ArrayRef):
            subs.insert(0, base.subscript)
            base = base.name
        if not isinstance(base, c_ast.ID):
            self.err("only named arrays can be subscripted", base)
        sym = self.lookup(base.name)
        if sym is None:
            self.err(f"undeclared array '{base.name}'", base, SourceError)
        if sym.kind != "array":
            self.err(f"'{base.name}' is not an array and cannot be subscripted", base)
        if sym.temp is not None:            # a local array (frontend/c/local_arrays.py)
            return self.local_array_ref(node, sym, subs)
        if len(subs) != sym.rank:
            self.err(f"array '{base.name}' has {sym.rank} dimension(s) but is used with "
                     f"{len(subs)} subscript(s)", node)
        for s in subs:
            self.no_assignment(s)
        space = self.dom.get_space()
        ls = isl.LocalSpace.from_space(space)
        try:
            pas = [self.aff_rec(s, ls) for s in subs]
        except NonAffine as e:
            if not data_dependent(e):
                pas = [self.aff(s, space, "subscript") for s in subs]   # raises
            self.check_index_types(subs)                   # a gather: frontend/c/mayaccess
            index = tuple(self.value(s) for s in subs)
            rel = self.may_relation(space, base.name, node)
            self.ref_may = True
            return E.Access(base.name, index), rel
        if base.name in self.splits:         # delinearised (frontend/c/pointers.py)
            self.inner_bounds(node, base.name, pas)
        index = tuple(self.value(s) for s in subs)
        self.ref_may = False
        return E.Access(base.name, index), self.relation(pas, space, base.name)

    def no_assignment(self, node: c_ast.Node) -> None:
        """Refuse an assignment inside a subscript (``A[k = 2]``) by name."""
        if isinstance(node, c_ast.Assignment):
            self.err("assignment inside a subscript is not supported: assign the index "
                     "in a statement of its own", node)
        for _, child in node.children():
            self.no_assignment(child)

    def relation(self, pas: list[isl.PwAff], space: isl.Space, array: str) -> isl.Map:
        """{ [iters] -> array[pas] } (the statement name is set later)."""
        if not pas:
            m = isl.Map.from_domain(isl.Set.universe(space))
        else:
            m = isl.Map.from_pw_aff(pas[0])
            for pa in pas[1:]:
                m = m.flat_range_product(isl.Map.from_pw_aff(pa))
        return m.set_tuple_name(isl.dim_type.out, array)

    def temp_access(self, sym: Sym, node: c_ast.Node) -> tuple[E.Access, isl.Map]:
        """A local scalar: its temp array at (iterator - min) for the enclosing loops
        of its declaration."""
        t = sym.temp
        space = self.dom.get_space()
        n = len(self.iters)
        ls = isl.LocalSpace.from_space(space)
        pas, index = [], []
        for p, (mn, mne) in enumerate(zip(t.mins, t.min_exprs)):
            var = isl.PwAff.var_on_domain(ls, isl.dim_type.set, p)
            try:       # the same minimum as the body's index expression
                low = self.expr_aff(mne, ls)
            except ValueError:
                low = mn.insert_dims(isl.dim_type.in_, 0, n)
            pas.append(var.sub(low))
            index.append(E.Binary("-", E.Var(self.iters[p]), mne)
                         if mne != E.Int(0) else E.Var(self.iters[p]))
        return E.Access(t.array, tuple(index)), self.relation(pas, space, t.array)

    # -- affine expressions --

    def expr_aff(self, e: E.Expr, ls: isl.LocalSpace) -> isl.PwAff:
        """An integer Expr of the size parameters (as printed from isl) as a PwAff;
        ValueError for anything else."""
        if isinstance(e, E.Int):
            return self._cst(ls, e.value)
        if isinstance(e, E.Var) and e.name in self.size_params:
            return isl.PwAff.var_on_domain(ls, isl.dim_type.param,
                                           self.size_params.index(e.name))
        if isinstance(e, E.Unary) and e.op == "-":
            return self.expr_aff(e.a, ls).neg()
        if isinstance(e, E.Binary) and e.op in ("+", "-"):
            a, b = self.expr_aff(e.a, ls), self.expr_aff(e.b, ls)
            return a.add(b) if e.op == "+" else a.sub(b)
        if isinstance(e, E.Binary) and e.op == "*" and isinstance(e.a, E.Int):
            return self.expr_aff(e.b, ls).scale_val(isl.Val.int_from_si(self.ctx, e.a.value))
        if isinstance(e, E.Binary) and e.op == "*" and isinstance(e.b, E.Int):
            return self.expr_aff(e.a, ls).scale_val(isl.Val.int_from_si(self.ctx, e.b.value))
        if isinstance(e, E.Call) and e.func in ("min", "max"):
            a, b = self.expr_aff(e.args[0], ls), self.expr_aff(e.args[1], ls)
            return a.min(b) if e.func == "min" else a.max(b)
        if isinstance(e, E.Call) and e.func == "floord" and isinstance(e.args[1], E.Int):
            return self.expr_aff(e.args[0], ls).scale_down_val(
                isl.Val.int_from_si(self.ctx, e.args[1].value)).floor()
        raise ValueError(f"cannot model {e!r}")

    def aff(self, node: c_ast.Node, space: isl.Space, what: str) -> isl.PwAff:
        """An affine integer expression as an isl PwAff over ``space``; ``what`` names
        the role ('subscript', 'loop bound') for the error message."""
        try:
            return self.aff_rec(node, isl.LocalSpace.from_space(space))
        except NonAffine as e:
            bad = e
        why = ""
        if what == "subscript" and bad.reason == "product of two non-constant terms" and \
                self._mentions_size(bad.node):
            why = (" (flat indexing such as A[i*n + j] with a size parameter n is "
                   "delinearised only on a pointer or 1-d array whose subscripts are all sums "
                   "of products of loop iterators, int parameters and constants: else "
                   "declare the array with its sizes, double A[m][n], and write A[i][j])")
        if what == "loop bound" and bad.reason.startswith("depends on the values"):
            why = (" (data-dependent loop bounds are not supported: the iterations of "
                   "every loop must follow from the sizes and the enclosing iterators)")
        self.err(f"non-affine {what}: {bad.reason}{why}", bad.node)

    def _mentions_size(self, node: c_ast.Node) -> bool:
        """Does the expression use an int size parameter?"""
        if isinstance(node, c_ast.ID):
            sym = self.lookup(node.name)
            return sym is not None and sym.kind == "size"
        return any(self._mentions_size(c) for _, c in node.children())

    def _cst(self, ls: isl.LocalSpace, v: int) -> isl.PwAff:
        return isl.PwAff.from_aff(isl.Aff.zero_on_domain(ls).set_constant_val(v))

    def aff_rec(self, node: c_ast.Node, ls: isl.LocalSpace) -> isl.PwAff:
        """C expression -> PwAff on ``ls``; raises NonAffine with the culprit node."""
        c = self.const_int(node)
        if c is not None:
            return self._cst(ls, c)
        if isinstance(node, c_ast.ID):
            return self.aff_id(node, ls)
        if isinstance(node, c_ast.BinaryOp):
            return self.aff_binary(node, ls)
        if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            a = self.aff_rec(node.expr, ls)
            return a.neg() if node.op == "-" else a
        if isinstance(node, c_ast.TernaryOp):
            s = self.cond_set(node.cond, ls)
            a, b = self.aff_rec(node.iftrue, ls), self.aff_rec(node.iffalse, ls)
            return a.intersect_domain(s).union_add(b.intersect_domain(s.complement()))
        if isinstance(node, c_ast.FuncCall) and call_name(node) == "abs":
            args = call_args(node)
            if len(args) != 1:
                raise NonAffine("abs() takes one argument", node)
            a = self.aff_rec(args[0], ls)
            return a.max(a.neg())
        if isinstance(node, c_ast.FuncCall) and call_name(node) in ("min", "max"):
            args = call_args(node)
            if len(args) != 2:
                raise NonAffine(f"{call_name(node)}() takes two arguments", node)
            a, b = self.aff_rec(args[0], ls), self.aff_rec(args[1], ls)
            return a.min(b) if call_name(node) == "min" else a.max(b)
        if isinstance(node, c_ast.Cast):
            if type_name(node.to_type.type) in INT_TYPES:
                return self.aff_rec(node.expr, ls)
            raise NonAffine("cast to a non-integer type", node)
        raise NonAffine(self._why_not_affine(node), node)

    def _why_not_affine(self, node: c_ast.Node) -> str:
        """Why a node cannot appear in an affine expression (for the message)."""
        if isinstance(node, c_ast.ArrayRef):
            base = node
            while isinstance(base, c_ast.ArrayRef):
                base = base.name
            name = getattr(base, "name", "an array")
            return f"depends on the values of array '{name}'"
        if isinstance(node, c_ast.FuncCall):
            return f"call to {call_name(node) or 'a function'}()"
        if isinstance(node, c_ast.Constant):
            return f"'{node.value}' is not an integer"
        if isinstance(node, c_ast.UnaryOp) and node.op in ("&", "*"):
            return "pointers are not supported"
        if isinstance(node, c_ast.UnaryOp) and node.op in ("!", "~"):
            return f"operator '{node.op}' is not affine"
        return "only + - * / % min max ?: of loop iterators, int parameters and constants " \
               "are allowed"

    def aff_id(self, node: c_ast.ID, ls: isl.LocalSpace) -> isl.PwAff:
        """Iterators are set dimensions, int parameters are isl parameters."""
        if node.name in self.constants:
            raise NonAffine(f"#define constant '{node.name}' is not an integer", node)
        sym = self.lookup(node.name)
        if sym is None:
            self.err(f"undeclared variable '{node.name}'", node, SourceError)
        if sym.kind == "iter":
            return isl.PwAff.var_on_domain(ls, isl.dim_type.set, sym.pos)
        if sym.kind == "size":
            return isl.PwAff.var_on_domain(ls, isl.dim_type.param, sym.pos)
        reason = {"scalar": f"depends on the floating-point parameter '{node.name}'",
                  "array": f"uses the array '{node.name}' as a number",
                  "itervar": f"uses the loop iterator '{node.name}' outside its loop",
                  "local": f"depends on the local variable '{node.name}' (only loop "
                           "iterators, int parameters and constants may appear)"}
        raise NonAffine(reason[sym.kind], node)

    def aff_binary(self, node: c_ast.BinaryOp, ls: isl.LocalSpace) -> isl.PwAff:
        """+ and -; * / % with a constant operand, / and % truncating as in C."""
        op = node.op
        if op in ("+", "-"):
            a, b = self.aff_rec(node.left, ls), self.aff_rec(node.right, ls)
            return a.add(b) if op == "+" else a.sub(b)
        if op == "*":
            ca, cb = self.const_int(node.left), self.const_int(node.right)
            if ca is None and cb is None:
                raise NonAffine("product of two non-constant terms", node)
            other = node.right if ca is not None else node.left
            return self.aff_rec(other, ls).scale_val(
                isl.Val.int_from_si(self.ctx, ca if ca is not None else cb))
        if op in ("/", "%"):
            c = self.const_int(node.right)
            if c is None:
                raise NonAffine(f"'{op}' by a non-constant", node.right)
            if c == 0:
                raise NonAffine("division by zero", node.right)
            a, d = self.aff_rec(node.left, ls), self._cst(ls, abs(c))
            if op == "%":
                return a.tdiv_r(d)       # C: sign of the dividend
            q = a.tdiv_q(d)              # C: truncation toward zero
            return q.neg() if c < 0 else q
        if op in CMP or op in ("&&", "||"):
            raise NonAffine("a comparison is used as a number", node)
        raise NonAffine(f"operator '{op}' is not affine", node)

    def cond_set(self, node: c_ast.Node, ls: isl.LocalSpace) -> isl.Set:
        """An affine condition as an isl set (raises NonAffine)."""
        if isinstance(node, c_ast.BinaryOp) and node.op in CMP:
            a, b = self.aff_rec(node.left, ls), self.aff_rec(node.right, ls)
            return CMP[node.op](a, b)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("&&", "||"):
            a, b = self.cond_set(node.left, ls), self.cond_set(node.right, ls)
            return a.intersect(b) if node.op == "&&" else a.union(b)
        if isinstance(node, c_ast.UnaryOp) and node.op == "!":
            return self.cond_set(node.expr, ls).complement()
        a = self.aff_rec(node, ls)
        return a.ne_set(self._cst(ls, 0))

    def const_int(self, node: c_ast.Node) -> int | None:
        """The value of an integer compile-time constant expression, else None."""
        e = const_expr(node, self.constants)
        if e is None:
            return None
        try:
            v = E.evaluate(e, {})
        except (ZeroDivisionError, KeyError, TypeError, ValueError):
            return None
        return v if isinstance(v, int) and not any(isinstance(x, E.Float) for x in E.walk(e)) \
            else None
