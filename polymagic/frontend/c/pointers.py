"""Pointer parameters: ``double *A``, ``const float *restrict x``.

A pointer to an element type is a one-dimensional array parameter whose extent
is not written in the signature: it is inferred from the accesses, as the
largest subscript any statement instance uses plus one (an isl ``dim_max`` of
the accessed elements over the statements' domains, a parametric expression of
the sizes), the way pet sizes arrays declared without extents (Verdoolaege and
Grosser, "Polyhedral Extraction Tool", IMPACT 2012, section 4: array sizes are
derived from the accesses when the declaration gives none).  The CPU reference
is the user's own code, so the arrays it receives have that extent too.

No aliasing is assumed between pointer parameters, as between arrays: the
runtime refuses NumPy arguments that share memory.  Refused: pointers to
pointers, arrays of pointers, accesses below index 0.
"""
from __future__ import annotations

import dataclasses

import islpy as isl
from pycparser import c_ast

from ... import expr as E
from ...isl_util import pw_aff_to_expr
from ...scop import Array, Param
from .subset import ELEM_TYPES, type_name
from .symbols import BuilderState, Sym


class Pointers(BuilderState):
    """Rules for pointer parameters."""

    pointer_decls: tuple[c_ast.Decl, ...] = ()

    def pointer_param(self, a: c_ast.Decl) -> None:
        """``T *p`` -> a 1-d array parameter (extent set by :meth:`pointer_extents`)."""
        inner = a.type.type
        if not isinstance(inner, c_ast.TypeDecl):
            self.err(f"pointer parameter '{a.name}' points to a pointer or an array, which "
                     f"is not supported: pass a flat buffer (double *{a.name}) or declare "
                     f"the array with its sizes (double {a.name}[n][m])", a)
        tn = type_name(inner)
        ctype = ELEM_TYPES.get(tn or "")
        if ctype is None:
            self.err(f"pointer parameter '{a.name}' has unsupported element type '{tn}' "
                     "(use float, double, int or long)", a)
        quals = set(a.quals or []) | set(inner.quals or [])
        self.params.append(Param(a.name, "array", ctype))
        self.arrays[a.name] = Array(a.name, ctype, (E.Int(1),), "param", a.coord.line)
        self.scopes[0][a.name] = Sym("array", a.name, ctype, rank=1, const="const" in quals)
        self.pointer_decls = self.pointer_decls + (a,)

    def pointer_extents(self) -> None:
        """Each pointer's extent: one past the largest element accessed (at least 1);
        sizes that the extent uses are assumed >= 1, as for declared extents."""
        for a in self.pointer_decls:
            touched = None
            for st in self.statements:
                for acc in st.accesses:
                    if acc.array == a.name:
                        r = acc.relation.intersect_domain(st.domain).range()
                        touched = r if touched is None else touched.union(r)
            if touched is None:
                continue                       # never accessed: extent 1
            touched = touched.intersect_params(self.context)
            ls = isl.LocalSpace.from_space(touched.get_space())
            below = isl.Constraint.inequality_alloc(ls).set_coefficient_val(
                isl.dim_type.set, 0, -1).set_constant_val(-1)          # x <= -1
            if not touched.add_constraint(below).is_empty():
                self.err(f"pointer parameter '{a.name}' is accessed below index 0 for some "
                         "sizes: its extent cannot be inferred", a)
            space = self.context.get_space()
            one = isl.PwAff.val_on_domain(isl.Set.universe(space), 1)
            ext = touched.dim_max(0).add_constant_val(1).union_max(one)
            self.context = self._assume_positive(ext)
            shape = (pw_aff_to_expr(ext, self.context),)
            self.arrays[a.name] = dataclasses.replace(self.arrays[a.name], shape=shape)

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
