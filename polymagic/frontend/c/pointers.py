"""Pointer parameters: ``double *A``, ``const float *restrict x``.

A pointer to an element type is a one-dimensional array parameter whose extent
is not written in the signature: it is inferred from the accesses, as the
largest subscript any statement instance uses plus one (an isl ``dim_max`` of
the accessed elements over the statements' domains, a parametric expression of
the sizes), the way pet sizes arrays declared without extents (Verdoolaege and
Grosser, "Polyhedral Extraction Tool", IMPACT 2012, section 4: array sizes are
derived from the accesses when the declaration gives none).  The CPU reference
is the user's own code, so the arrays it receives have that extent too.

A 1-d array (pointer or declared) whose flat subscripts :mod:`.delinearise`
split (``A[i*n + k]`` as ``A[i][k]``) gets the split's rank: its inner extents
are the sizes found there and its outermost one is inferred as above.  Each inner
subscript of each access must stay in ``0 <= s < size`` over the statement's
domain (Grosser et al., "Optimistic delinearization of parametrically sized
arrays", ICS 2015, section 5): isl checks it over the sizes the function admits;
a split that is never exact is refused, naming the access; one exact for some
sizes only is recorded (:class:`polymagic.scop.InnerBound`) and checked when the
sizes are known (at run time, or at compile time under ``--size``).

The caller passes a flat NumPy array (:class:`polymagic.scop.FlatLayout`).  No
aliasing is assumed between pointer parameters, as between arrays: the runtime
refuses NumPy arguments whose used elements overlap when one of them is written.
Refused: pointers to pointers, arrays of pointers, accesses below index 0.
"""
from __future__ import annotations

import dataclasses

import islpy as isl
from pycparser import c_ast

from ... import expr as E
from ...errors import UnsupportedError
from ...isl_util import pw_aff_to_expr
from ...scop import Array, FlatLayout, InnerBound, Param
from .delinearise import Split
from .subset import ARRAY_ELEM_TYPES, type_name
from .symbols import BuilderState, Sym


class Pointers(BuilderState):
    """Rules for pointer parameters and delinearised arrays."""

    pointer_decls: tuple[c_ast.Decl, ...] = ()
    splits: dict[str, Split] = {}
    #: (split array, access node id, inner dimension, the subscript's values)
    pending: tuple[tuple[str, int, int, isl.Set], ...] = ()

    def pointer_param(self, a: c_ast.Decl) -> None:
        """``T *p`` -> a 1-d array parameter (extent set by :meth:`pointer_extents`)."""
        inner = a.type.type
        if not isinstance(inner, c_ast.TypeDecl):
            self.err(f"pointer parameter '{a.name}' points to a pointer or an array, which "
                     f"is not supported: pass a flat buffer (double *{a.name}) or declare "
                     f"the array with its sizes (double {a.name}[n][m])", a)
        tn = type_name(inner)
        ctype = ARRAY_ELEM_TYPES.get(tn or "")
        if ctype is None:
            self.err(f"pointer parameter '{a.name}' has unsupported element type '{tn}' "
                     "(use float, double, int, long or char)", a)
        quals = set(a.quals or []) | set(inner.quals or [])
        self.params.append(Param(a.name, "array", ctype))
        self.arrays[a.name] = Array(a.name, ctype, (E.Int(1),), "param", a.coord.line,
                                    flat=FlatLayout())
        self.scopes[0][a.name] = Sym("array", a.name, ctype, rank=self.flat_rank(a.name),
                                     const="const" in quals)
        self.pointer_decls = self.pointer_decls + (a,)

    def flat_rank(self, name: str) -> int:
        """1, or the number of dimensions a delinearised array's subscripts were split
        into."""
        split = self.splits.get(name)
        return 1 if split is None else 1 + len(split.sizes)

    def inner_bounds(self, node: c_ast.ArrayRef, name: str, pas: list[isl.PwAff]) -> None:
        """Record the values of a delinearised access's inner subscripts over the
        enclosing domain (checked in :meth:`pointer_extents`)."""
        for k in range(1, len(pas)):
            vals = isl.Map.from_pw_aff(pas[k]).intersect_domain(self.dom).range()
            self.pending = self.pending + ((name, id(node), k, vals),)

    def pointer_extents(self) -> None:
        """Each pointer's (or delinearised array's outermost) extent: one past the
        largest element accessed (at least 1); sizes that the extent uses are
        assumed >= 1, as for declared extents.  Then the delinearisation conditions."""
        names = [a.name for a in self.pointer_decls]
        names += [n for n in self.splits if n not in names]
        for name in names:
            decl = next((a for a in self.pointer_decls if a.name == name), None)
            arr = self.arrays[name]
            split = self.splits.get(name)
            touched = None
            for st in self.statements:
                for acc in st.accesses:
                    if acc.array == name:
                        r = acc.relation.intersect_domain(st.domain).range()
                        if not r.is_bounded():     # a data-dependent subscript
                            continue
                        touched = r if touched is None else touched.union(r)
            if touched is None and name in self.unsized:
                self.err(f"pointer parameter '{name}' is accessed only through "
                         "data-dependent subscripts, so its extent cannot be inferred "
                         "from the accesses; declare it with its size "
                         f"({arr.ctype} {name}[n]), or access it with an affine subscript "
                         "elsewhere in the function (a loop that sets or reads every "
                         "element sizes it)", self.unsized[name])
            inner = split.size_exprs if split is not None else ()
            layout = arr.flat if arr.flat is not None else FlatLayout(declared=arr.shape[0])
            if touched is None:                # never accessed: extent 1
                self.arrays[name] = dataclasses.replace(arr, shape=(E.Int(1), *inner),
                                                        flat=layout)
                continue
            # the sizes the subscripts use are assumed >= 1, as declared extents' are
            self.context = self._assume_positive_names(
                {touched.get_dim_name(isl.dim_type.param, k)
                 for k in range(touched.dim(isl.dim_type.param))
                 if touched.involves_dims(isl.dim_type.param, k, 1)})
            touched = touched.intersect_params(self.context)
            ls = isl.LocalSpace.from_space(touched.get_space())
            below = isl.Constraint.inequality_alloc(ls).set_coefficient_val(
                isl.dim_type.set, 0, -1).set_constant_val(-1)          # x <= -1
            if not touched.add_constraint(below).is_empty():
                what = "pointer parameter" if decl is not None else "array"
                self.err(f"{what} '{name}' is accessed below index 0 for some "
                         "sizes: its extent cannot be inferred", decl)
            space = self.context.get_space()
            one = isl.PwAff.val_on_domain(isl.Set.universe(space), 1)
            ext = touched.dim_max(0).add_constant_val(1).union_max(one)
            self.context = self._assume_positive(ext)
            for size in inner:
                self.context = self._assume_positive_names(
                    {v.name for v in E.walk(size) if isinstance(v, E.Var)})
            shape = (pw_aff_to_expr(ext, self.context), *inner)
            bounds = self.delinearisation_bounds(name) if split is not None else ()
            self.arrays[name] = dataclasses.replace(
                arr, shape=shape, flat=dataclasses.replace(layout, bounds=bounds))
            if name in self.unsized:
                self.bound_may_accesses(name)

    def bound_may_accesses(self, name: str) -> None:
        """Bound the data-dependent accesses of pointer ``name`` by the extent just
        inferred (every element, as for a declared array)."""
        box = self.element_box(name, self.unsized[name])
        for st in self.statements:
            for k, acc in enumerate(st.accesses):
                if acc.array == name and acc.may:
                    rel = acc.relation.intersect_range(box.align_params(
                        acc.relation.get_space()))
                    st.accesses[k] = dataclasses.replace(acc, relation=rel)

    def delinearisation_bounds(self, name: str) -> tuple[InnerBound, ...]:
        """The conditions of ``name``'s split that isl cannot prove over the sizes the
        function admits (refusing a split that holds for no size)."""
        split = self.splits[name]
        out = []
        for arr, node_id, k, vals in self.pending:
            if arr != name:
                continue
            written, shown, line, col, subs = split.texts[node_id]
            size, sub = split.size_exprs[k - 1], subs[k]
            vals = vals.intersect_params(self.context)
            runs = vals.params()
            if runs.is_empty():
                continue
            bad = self._outside(vals, size)
            if bad is not None and bad.is_empty():
                continue                   # exact for every size
            if bad is not None and runs.is_subset(bad.params()):
                lo = pw_aff_to_expr(vals.dim_min(0), self.context)
                hi = pw_aff_to_expr(vals.dim_max(0), self.context)
                pr = E.CPrinter()
                raise UnsupportedError(
                    f"{written} cannot be delinearised: read as {shown}, it names the "
                    f"element the flat subscript names only when 0 <= {sub} < {pr(size)} "
                    f"over every iteration, but {sub} ranges from {pr(lo)} to {pr(hi)} for "
                    f"every size (Grosser et al. 2015, section 5); keep each inner index "
                    f"below its dimension's size, or declare the array with its sizes",
                    line, col, self.source)
            out.append(InnerBound(line, col, written, shown, sub, size, vals))
        return tuple(out)

    def _outside(self, vals: isl.Set, size: E.Expr) -> isl.Set | None:
        """The subscript values outside ``[0, size)``; None when the size is not
        affine (a product of parameters: only the run time can check it)."""
        params = [vals.get_dim_name(isl.dim_type.param, k)
                  for k in range(vals.dim(isl.dim_type.param))]
        try:
            text = E.CPrinter()(size)
            out = isl.Set(f"[{', '.join(params)}] -> {{ [v] : v < 0 or v >= {text} }}",
                          context=vals.get_ctx())
        except isl.Error:
            return None
        return vals.intersect(out.align_params(vals.get_space()))

    def _assume_positive_names(self, names: set[str]) -> isl.Set:
        """The context with ``p >= 1`` for each named size parameter."""
        ctx = self.context
        ls = isl.LocalSpace.from_space(ctx.get_space())
        for name in names:
            pos = ctx.find_dim_by_name(isl.dim_type.param, name)
            if pos >= 0:
                c = isl.Constraint.inequality_alloc(ls).set_coefficient_val(
                    isl.dim_type.param, pos, 1).set_constant_val(-1)
                ctx = ctx.add_constraint(c)
        return ctx

    def _assume_positive(self, ext: isl.PwAff) -> isl.Set:
        """The context with ``p >= 1`` for each size parameter ``ext`` involves."""
        ctx = self.context
        ls = isl.LocalSpace.from_space(ctx.get_space())
        for k in range(ext.dim(isl.dim_type.param)):
            if ext.involves_dims(isl.dim_type.param, k, 1):
                name = ext.get_dim_name(isl.dim_type.param, k)
                pos = ctx.find_dim_by_name(isl.dim_type.param, name)
                c = isl.Constraint.inequality_alloc(ls).set_coefficient_val(
                    isl.dim_type.param, pos, 1).set_constant_val(-1)
                ctx = ctx.add_constraint(c)
        return ctx
