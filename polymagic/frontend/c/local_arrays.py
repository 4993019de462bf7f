"""Arrays declared in the function body: scratch storage with C's meaning.

``double z[N];`` declared in the body (a ``#define`` size or an expression of
the int size parameters declared before it) is storage of the function: never
copied from or to the caller, never a parameter of the bound callable.  It
takes the path of a local scalar (:mod:`.declarations`): a ``temp`` array with
one copy per iteration of the loops enclosing its declaration (index
``iterator - min``, as C gives every iteration a fresh array) followed by the
declared dimensions.  Declared outside all loops it has the declared shape, and
:func:`polymagic.frontend.expansion.expand_scratch` expands it along the loops
that become parallel when every iteration writes what it reads; otherwise it
stays one temporary buffer (device memory on the GPU, ``calloc`` in the OpenMP
C), allocated per run and never transferred.

C gives an element no value until it is written: reading it first is undefined,
and the check against the CPU reference would compare garbage.  So a read of a
local array element that may not have been written before (isl's dataflow: a
read with no source among the array's writes, a write under a data-dependent
condition counting as one that may not happen) is refused, with the read's line
and column (:meth:`LocalArrays.check_local_reads`).  Initialiser lists and
data-dependent subscripts on local arrays are refused too.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl
from pycparser import c_ast

from ... import expr as E
from ...isl_util import OperationBudget
from ...scop import Array, LocalArray
from .subset import ELEM_TYPES, is_struct, type_name
from .symbols import BuilderState, NonAffine, Sym

#: isl operations the read-before-write check of one local array may take
CHECK_OPERATIONS = 2_000_000


@dataclass(frozen=True)
class LocalRef:
    """One subscripted use of a local array, kept for the read-before-write check."""
    statement: int               # index of the statement being built
    relation: isl.Map            # { [iters] -> array[...] } (statement name unset)
    node: c_ast.Node
    pure_write: bool             # the target of a plain ``=`` (not a read)
    user: str                    # the name as declared
    rank: int                    # declared dimensions (after the loop copies)


class LocalArrays(BuilderState):
    """Rules for arrays declared in the function body."""

    def local_array(self, d: c_ast.Decl) -> None:
        """``double t[N][M];`` in the body -> a temp array (loop copies + declared
        dimensions) and a symbol of kind ``array`` that carries its :class:`Temp`."""
        dims, t = [], d.type
        while isinstance(t, c_ast.ArrayDecl):
            if t.dim is None:
                self.err(f"local array '{d.name}' needs an extent in every dimension, "
                         f"e.g. double {d.name}[N]", t)
            dims.append(self.extent(t.dim))
            t = t.type
        if isinstance(t, c_ast.PtrDecl):
            self.err(f"arrays of pointers are not supported ('{d.name}')", d)
        if is_struct(t) or isinstance(t, (c_ast.Struct, c_ast.Union)):
            self.err("struct/union types are not supported", d)
        if set(d.storage or []) & {"static", "extern"}:
            self.err(f"{d.storage[0]} local arrays are not supported ('{d.name}'): a local "
                     "array is scratch storage of one call", d)
        tn = type_name(t)
        ctype = ELEM_TYPES.get(tn or "")
        if ctype is None:
            self.err(f"local array '{d.name}' has unsupported element type '{tn}' "
                     "(use float, double, int or long)", d)
        if d.init is not None:
            self.err(f"initialisers of local arrays are not supported ('{d.name}'): assign "
                     f"the elements in a loop, e.g. for (i = 0; i < N; i++) {d.name}[i] = 0;",
                     d)
        temp = self.new_temp(d.name, ctype, d)
        loops = self.arrays[temp.array].shape
        self.arrays[temp.array] = Array(temp.array, ctype, tuple(loops) + tuple(dims), "temp",
                                        d.coord.line, local=LocalArray(d.name, len(dims)))
        sym = Sym("array", d.name, ctype, rank=len(dims), temp=temp)
        self.declare(sym, d)
        if temp.array != d.name:       # renamed (a clash): found by its temp's name too
            self.scopes[-1][temp.array] = sym

    def local_array_ref(self, node: c_ast.ArrayRef, sym: Sym, subs: list[c_ast.Node]
                        ) -> tuple[E.Access, isl.Map]:
        """``t[e]`` of a local array: its temp at (the declaration's loop copies, e)."""
        if len(subs) != sym.rank:
            self.err(f"array '{sym.name}' has {sym.rank} dimension(s) but is used with "
                     f"{len(subs)} subscript(s)", node)
        space = self.dom.get_space()
        ls = isl.LocalSpace.from_space(space)
        try:
            pas = [self.aff_rec(s, ls) for s in subs]
        except NonAffine as e:
            self.err(f"non-affine subscript of local array '{sym.name}': {e.reason} "
                     "(local arrays take affine subscripts only)", e.node)
        head, head_rel = self.temp_access(sym, node)
        rel = head_rel.flat_range_product(self.relation(pas, space, sym.temp.array))
        rel = rel.set_tuple_name(isl.dim_type.out, sym.temp.array)
        index = head.index + tuple(self.value(s) for s in subs)
        self.ref_may = False
        stmt = self.node
        pure = (isinstance(stmt, c_ast.Assignment) and stmt.op == "=" and stmt.lvalue is node)
        self.local_refs().append(LocalRef(len(self.statements), rel, node, pure, sym.name,
                                          sym.rank))
        return E.Access(sym.temp.array, index), rel

    def local_refs(self) -> list[LocalRef]:
        """The subscripted uses of local arrays so far (created on first use)."""
        if "_local_refs" not in self.__dict__:
            self._local_refs: list[LocalRef] = []
        return self._local_refs

    # -- reads before writes --

    def check_local_reads(self) -> None:
        """Refuse the first read (in source order) of a local array element that may
        not have been written before it (see the module docstring)."""
        refs = self.local_refs()
        if not refs:
            return
        schedule = self.schedule()                  # frontend/c/control.py
        for name in dict.fromkeys(r.relation.get_tuple_name(isl.dim_type.out) for r in refs):
            try:
                with OperationBudget(self.ctx, CHECK_OPERATIONS):
                    unwritten = self._unwritten(name, schedule)
            except isl.Error:         # a nest isl finds too hard: left unchecked
                continue
            if unwritten.is_empty():
                continue
            for r in refs:
                if r.pure_write or r.relation.get_tuple_name(isl.dim_type.out) != name:
                    continue
                st = self.statements[r.statement]
                rel = isl.UnionMap.from_map(r.relation.set_tuple_name(
                    isl.dim_type.in_, st.name).intersect_domain(st.domain))
                bad = rel.intersect(unwritten)
                if not bad.is_empty():
                    self._uninitialised(name, r, bad)
            self._uninitialised(name, None, unwritten)

    def _unwritten(self, name: str, schedule: isl.UnionMap) -> isl.UnionMap:
        """``{ S[i] -> t[e] }``: the reads of ``name`` no earlier write may have set."""
        space = self.context.get_space()
        reads = must = may = isl.UnionMap.empty(space)
        for s in self.statements:
            for a in s.accesses:
                if a.array != name:
                    continue
                rel = isl.UnionMap.from_map(a.relation.intersect_domain(s.domain))
                if not a.is_write:
                    reads = reads.union(rel)
                elif a.may:
                    may = may.union(rel)
                else:
                    must = must.union(rel)
        info = isl.UnionAccessInfo.from_sink(reads).set_must_source(must)
        info = info.set_may_source(may).set_schedule_map(schedule)
        return info.compute_flow().get_may_no_source().intersect_params(self.context)

    def _uninitialised(self, name: str, ref: LocalRef | None, bad: isl.UnionMap) -> None:
        """The error for a read of an element of local array ``name`` before any write."""
        first = next(r for r in self.local_refs()
                     if r.relation.get_tuple_name(isl.dim_type.out) == name)
        user, rank = first.user, first.rank
        example = ""
        if bad.n_map() == 1:
            pt = isl.Map.from_union_map(bad).wrap().sample_point()
            n_all = pt.get_space().dim(isl.dim_type.set)
            elem = [str(pt.get_coordinate_val(isl.dim_type.set, k).to_python())
                    for k in range(n_all - rank, n_all)]
            sizes = [f"{p} = {pt.get_coordinate_val(isl.dim_type.param, k).to_python()}"
                     for k, p in enumerate(self.size_params)]
            example = (f" (e.g. {user}[{']['.join(elem)}]"
                       + (f" when {', '.join(sizes)}" if sizes else "") + ")")
        self.err(f"local array '{user}' is read before it is written{example}: C leaves "
                 "its elements without a value until they are assigned, so the result would "
                 "be undefined; write every element the function reads before reading it",
                 ref.node if ref is not None else None)
