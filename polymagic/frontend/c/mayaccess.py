"""Data-dependent subscripts and conditions as may-accesses (pet's approach).

pet (Verdoolaege and Grosser, "Polyhedral Extraction Tool", IMPACT 2012, section 3)
keeps a static control part whole when a subscript or a condition depends on the
values of arrays: the access is over-approximated and marked *may*, and PPCG then
generates code that evaluates the condition (or the subscript) at run time.  The
same rules here:

* a gather ``x[perm[j]]`` reads (may-reads) every element of ``x``: the relation
  ``{ S[j] -> x[o] : 0 <= o < n }``; its index stays the expression as written, so
  every printer evaluates ``perm[j]`` at run time;
* a statement under a data-dependent ``if (A[i][j] > 0)`` keeps its domain (the
  condition is not affine) and carries the condition as
  :attr:`~polymagic.scop.Statement.guard`; its writes are may-writes (they may not
  happen, so they kill no earlier write: :mod:`polymagic.deps`), its condition's
  reads are accesses flagged ``guard``;
* a commutative, associative update through a data-dependent subscript
  (``h[bin[i]] += w[i]``, ``h[b] = fmax(h[b], v)``) is an *atomic* statement: its
  instances commute, so they carry no dependences among themselves, and the GPU
  runs them as ``atomicAdd``/``atomicMax``.

A condition is evaluated once per statement instance, so a condition the guarded
statements themselves change (``if (A[i] > 0) { A[i] = 0; B[i] = 1; }``) is refused
unless it guards one statement outside any loop of its own (the condition is read
before that statement writes).
"""
from __future__ import annotations

import islpy as isl
from pycparser import c_ast

from ... import expr as E
from ...scop import Access
from .subset import INT_TYPES
from .symbols import BuilderState, NonAffine

#: reasons of :class:`NonAffine` that come from the data, not from the form
_DATA = ("depends on the values of array", "depends on the local variable")

#: calls that make ``h[b] = f(h[b], v)`` a max/min update
_MINMAX = {"fmax": "max", "fmaxf": "max", "max": "max", "fmin": "min", "fminf": "min",
           "min": "min"}


def data_dependent(e: NonAffine) -> bool:
    """Whether a non-affine expression is so because it reads array or local values."""
    return e.reason.startswith(_DATA)


class MayAccesses(BuilderState):
    """Rules for may-accesses, guards and atomic updates."""

    #: data-dependent conditions around the statement being built: (node, polarity)
    guards: tuple[tuple[c_ast.Node, bool], ...] = ()
    #: whether the last :meth:`array_ref` made a may-access
    ref_may: bool = False
    #: pointer parameters read or written through a data-dependent subscript: the
    #: first such reference (for messages)
    unsized: dict[str, c_ast.Node] = {}

    def may_relation(self, space: isl.Space, array: str, node: c_ast.Node) -> isl.Map:
        """``{ [iters] -> array[o] : 0 <= o_k < extent_k }``: every element.  A pointer
        parameter's extent is not known until every access is built
        (:meth:`~.pointers.Pointers.pointer_extents` sizes it from the affine ones):
        its outermost dimension is left unbounded above here and bounded there."""
        dom = isl.Set.universe(space)
        pointer = array in self.pointer_names()
        box = self.element_box(array, node, sized=not pointer)
        if pointer:
            self.unsized = {array: node, **self.unsized}
        return isl.Map.from_domain_and_range(dom, box).set_tuple_name(isl.dim_type.out, array)

    def pointer_names(self) -> set[str]:
        return {d.name for d in getattr(self, "pointer_decls", ())}

    def element_box(self, array: str, node: c_ast.Node | None, sized: bool = True
                    ) -> isl.Set:
        """The elements of ``array`` over the size parameters: ``0 <= o_k < extent_k``
        (the outermost extent left out unless ``sized``)."""
        arr = self.arrays[array]
        npar = len(self.size_params)
        sp = isl.Space.set_alloc(self.ctx, npar, len(arr.shape))
        for k, p in enumerate(self.size_params):
            sp = sp.set_dim_name(isl.dim_type.param, k, p)
        box = isl.Set.universe(sp)
        ls = isl.LocalSpace.from_space(sp)
        for k, ext in enumerate(arr.shape):
            var = isl.PwAff.var_on_domain(ls, isl.dim_type.set, k)
            box = box.intersect(var.ge_set(self._cst(ls, 0)))
            if k == 0 and not sized:
                continue
            try:
                hi = self.expr_aff(ext, ls)
            except ValueError:
                self.err(f"data-dependent subscript of array '{array}': its extent is not "
                         "an affine expression of the sizes", node)
            box = box.intersect(var.lt_set(hi))
        return box.set_tuple_name(array)

    def check_index_types(self, subs: list[c_ast.Node]) -> None:
        """A data-dependent subscript reads integer arrays and locals only."""
        for node in subs:
            for ref in _array_refs(node):
                base = ref
                while isinstance(base, c_ast.ArrayRef):
                    base = base.name
                arr = self.arrays.get(getattr(base, "name", ""))
                if arr is not None and arr.ctype not in INT_TYPES.values():
                    self.err(f"non-affine subscript: reads the {arr.ctype} array '{arr.name}' "
                             "(a subscript computed from array values must read integer "
                             "arrays)", ref)

    # -- data-dependent ifs --

    def guarded_if(self, n: c_ast.If) -> None:
        """Both branches under the condition (then) or its negation (else)."""
        outer, first, depth = self.guards, len(self.statements), len(self.iters)
        self.guards = outer + ((n.cond, True),)
        self.stmt(n.iftrue)
        if n.iffalse is not None:
            self.guards = outer + ((n.cond, False),)
            self.stmt(n.iffalse)
        self.guards = outer
        region = self.statements[first:]
        if len(region) == 1 and len(region[0].iterators) == depth:
            return
        read = {a.array for st in region for a in st.accesses if a.guard}
        for st in region:
            for a in st.writes:
                if a.array in read:
                    self.err("the data-dependent condition reads "
                             f"'{self.arrays[a.array].name}', which the statements it guards "
                             "write: the condition would be evaluated again after the first "
                             "of them; guard one statement only, or copy the condition to "
                             "a local scalar first", n.cond)

    def guard_of(self) -> E.Expr | None:
        """The conjunction of the enclosing data-dependent conditions (their reads
        recorded as guard accesses), or None."""
        if not self.guards:
            return None
        first = len(self.acc)
        conds = []
        for node, polarity in self.guards:
            c = self.value(node)
            conds.append(c if polarity else E.Unary("!", c))
        for k in range(first, len(self.acc)):
            a = self.acc[k]
            self.acc[k] = Access(a.array, a.relation, a.is_write, a.may, guard=True)
        out = conds[0]
        for c in conds[1:]:
            out = E.Binary("&&", out, c)
        return out

    # -- atomic updates --

    def atomic_op(self, target: E.Access, op: str, value: E.Expr) -> str | None:
        """'+' for ``t += v`` / ``t -= v``; 'max'/'min' for ``t = fmax(t, v)``; else
        None.  Neither ``v`` nor ``t``'s subscripts may read ``t``'s array (the other
        reads of the element would race with the updates), and an integer ``t`` needs
        an integer ``v`` (C converts ``t + v`` back, not ``v``)."""
        if op in ("+=", "-="):
            rest, kind = [value], "+"
        elif op == "=" and isinstance(value, E.Call) and value.func in _MINMAX and \
                len(value.args) == 2 and target in value.args:
            rest, kind = [a for a in value.args if a != target], _MINMAX[value.func]
            if not rest:
                return None
        else:
            return None
        if any(a.array == target.array for r in (*rest, *target.index)
               for a in E.accesses(r)):
            return None
        if self.arrays[target.array].ctype in INT_TYPES.values() and \
                not all(self._integer(r) for r in rest):
            return None
        return kind

    def guarded_extremum(self, target: E.Access, op: str, value: E.Expr,
                         guard: E.Expr | None) -> tuple[E.Expr, str] | None:
        """``if (v > t) t = v;`` (or ``t < v``; ``<`` for min) under no other
        data-dependent condition: ``t = max(t, v)`` as an atomic update, with the
        accesses recorded for that form (the target's subscripts' reads, the target
        read, ``v``'s reads); None for any other statement.  The same value as the
        user's code but for NaNs."""
        if guard is None or len(self.guards) != 1 or op != "=" or \
                not isinstance(guard, E.Binary) or guard.op not in (">", ">=", "<", "<="):
            return None
        a, b = guard.a, guard.b
        t_second = (a, b) == (value, target)
        if t_second:
            kind = "max" if guard.op in (">", ">=") else "min"
        elif (a, b) == (target, value):
            kind = "max" if guard.op in ("<", "<=") else "min"
        else:
            return None
        fused = E.Call(kind, (target, value))
        if self.atomic_op(target, "=", fused) != kind:
            return None
        g0 = next(k for k, x in enumerate(self.acc) if x.guard)
        body, cond = self.acc[:g0], self.acc[g0:]
        n_t = sum(len(E.accesses(i)) for i in target.index)
        n_v = len(E.accesses(value))
        t_part = cond[n_v:] if t_second else cond[:len(cond) - n_v]
        t_part = [Access(x.array, x.relation, x.is_write, x.may) for x in t_part]
        self.acc[:] = body[:n_t] + t_part + body[n_t:]
        return fused, kind

    def _integer(self, e: E.Expr) -> bool:
        """Whether ``e`` surely has an integer type (integer arrays, iterators and
        sizes, integer literals and casts, + - * / % of them)."""
        if isinstance(e, E.Int):
            return True
        if isinstance(e, E.Var):
            return e.name not in {p.name for p in self.params if p.kind == "scalar"}
        if isinstance(e, E.Access):
            return self.arrays[e.array].ctype in INT_TYPES.values()
        if isinstance(e, E.Cast):
            return e.ctype in INT_TYPES.values()
        if isinstance(e, E.Unary) and e.op in ("-", "+"):
            return self._integer(e.a)
        if isinstance(e, E.Binary) and e.op in ("+", "-", "*", "/", "%"):
            return self._integer(e.a) and self._integer(e.b)
        if isinstance(e, E.Call) and e.func in ("min", "max"):
            return all(self._integer(a) for a in e.args)
        return False

def _array_refs(node: c_ast.Node) -> list[c_ast.ArrayRef]:
    """The outermost array references inside ``node``."""
    if isinstance(node, c_ast.ArrayRef):
        return [node]
    return [r for _, c in node.children() for r in _array_refs(c)]


__all__ = ["MayAccesses", "data_dependent"]
