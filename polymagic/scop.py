"""The static control part (Scop): the polyhedral model of one C (or Python) function.

A front end turns source into a :class:`Scop`; every later stage reads it and none
changes it.  Domains, schedules and access relations are islpy objects; statement
bodies are trees of :mod:`polymagic.expr` nodes.

Naming: statement ``k`` is the isl tuple ``S{k}``; its set dimensions are named
after the source iterators; parameters are the function's ``int`` arguments (the
"size parameters").  Arrays are the function's array arguments (``kind='param'``)
plus scalar temporaries that the front end expanded into arrays (``kind='temp'``):
a scalar declared inside loops gets one element per iteration of the loops that
enclose its declaration (so each statement instance has its own copy), a scalar
declared outside all loops becomes a 0-d array.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import islpy as isl

from .dtypes import DTYPES
from .expr import Assign, Expr, row_major_strides
from .notes import Note, Stage


def buffer_bytes(ctype: str, extents) -> int:
    """Bytes of a dense buffer of C type ``ctype`` with the given extents."""
    import numpy as np
    n = 1
    for e in extents:
        n *= e
    return n * np.dtype(DTYPES[ctype]).itemsize


#: the one-element output array that holds a returned value (``return s;``); in the
#: generated namespace, so no user name clashes with it (:mod:`polymagic.names`)
RETURN = "pm_return"


@dataclass(frozen=True)
class Param:
    """One argument of the C function, in signature order."""
    name: str
    kind: str            # 'size' (int, an isl parameter), 'scalar' (float/double), 'array'
    ctype: str           # element type for arrays, the type otherwise


@dataclass(frozen=True)
class InnerBound:
    """One condition that makes a delinearised access exact (Grosser et al., ICS
    2015, section 5): over the statement's instances, the inner subscript
    ``subscript`` of ``split`` stays in ``0 <= subscript < size``."""
    line: int
    col: int
    written: str                 # the access as written, e.g. "A[i*n + j]"
    split: str                   # as the model reads it, e.g. "A[i][j]"
    subscript: str               # the inner subscript, e.g. "j"
    size: Expr                   # its dimension's size, e.g. n
    values: isl.Set              # [params] -> { [v] }: the subscript's values

    def violation(self, sizes: dict[str, int]) -> int | None:
        """A value of the subscript outside ``[0, size)`` at these sizes (None when
        every value is inside, or when the sizes do not fix every parameter)."""
        from .expr import evaluate
        vals = self.values
        for k in range(vals.dim(isl.dim_type.param)):
            name = vals.get_dim_name(isl.dim_type.param, k)
            if name not in sizes:
                return None
            vals = vals.fix_val(isl.dim_type.param, k,
                                isl.Val.int_from_si(vals.get_ctx(), int(sizes[name])))
        size = int(evaluate(self.size, dict(sizes)))
        hi = vals.lower_bound_val(isl.dim_type.set, 0, isl.Val.int_from_si(vals.get_ctx(), size))
        if not hi.is_empty():
            return int(hi.lexmax().sample_point().get_coordinate_val(isl.dim_type.set, 0)
                       .to_python())
        lo = vals.upper_bound_val(isl.dim_type.set, 0, isl.Val.int_from_si(vals.get_ctx(), -1))
        if not lo.is_empty():
            return int(lo.lexmin().sample_point().get_coordinate_val(isl.dim_type.set, 0)
                       .to_python())
        return None

    def explain(self, sizes: dict[str, int], value: int) -> str:
        """Why the access cannot run at these sizes (``value``: from :meth:`violation`)."""
        from .expr import CPrinter, evaluate
        given = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "its constant sizes"
        size = CPrinter()(self.size)
        return (f"{self.written} was delinearised as {self.split}, which names the same "
                f"element only when 0 <= {self.subscript} < {size}; with {given}, "
                f"{self.subscript} reaches {value} (and {size} = "
                f"{int(evaluate(self.size, dict(sizes)))}). Run it at sizes where each "
                f"inner index stays below its dimension's size, or declare the array with "
                f"its sizes (Grosser et al., ICS 2015, section 5)")


def flat_violation(arrays: dict, sizes: dict[str, int]) -> tuple[InnerBound, int] | None:
    """The first delinearisation condition of ``arrays`` that fails at ``sizes``."""
    for arr in arrays.values():
        for b in (arr.flat.bounds if arr.flat is not None else ()):
            v = b.violation(sizes)
            if v is not None:
                return b, v
    return None


@dataclass(frozen=True)
class FlatLayout:
    """An array parameter the caller passes as a flat (1-d) buffer, seen by the
    model as ``Array.shape`` in row-major order: a pointer parameter ``T *p``
    (the buffer holds at least the shape's product of elements) or a declared 1-d
    array whose subscripts were delinearised (exactly ``declared`` elements)."""
    declared: Expr | None = None         # the declared 1-d extent; None for a pointer
    bounds: tuple[InnerBound, ...] = ()  # what makes the delinearisation exact


@dataclass(frozen=True)
class LocalArray:
    """An array declared in the function body (``double t[N];``,
    :mod:`polymagic.frontend.c.local_arrays`): its name as written and its declared
    rank, the trailing dimensions of the temp (the leading ones are its copies per
    iteration of the loops enclosing the declaration, or an expansion's)."""
    name: str
    rank: int


@dataclass
class Array:
    name: str
    ctype: str                   # 'float', 'double', 'int', ...
    shape: tuple[Expr, ...]      # extents as expressions of the size parameters
    kind: str = "param"          # 'param' (function argument) or 'temp' (expanded scalar)
    line: int = 0                # where it was declared
    flat: FlatLayout | None = None   # a flat buffer behind the shape (pointer, delinearised)
    local: LocalArray | None = None  # declared in the function body (a temp)

    @property
    def dtype(self) -> str:
        """NumPy dtype name."""
        return DTYPES[self.ctype]

    @property
    def strides(self) -> tuple[Expr, ...]:
        return row_major_strides(self.shape)


@dataclass
class Access:
    """One array reference of a statement.

    ``may``: a may-access (pet's approach, Verdoolaege and Grosser, "Polyhedral
    Extraction Tool", IMPACT 2012, section 3: accesses not known exactly are
    over-approximated): a subscript that depends on array values (``x[perm[j]]``)
    relates the instance to every element of the array; a write under a
    data-dependent condition (:attr:`Statement.guard`) may not happen.  A may-write
    never kills an earlier write (:mod:`polymagic.deps`).  ``guard``: a read of the
    statement's data-dependent condition (after the body's accesses)."""
    array: str
    relation: isl.Map            # { S[i] -> A[f(i)] }
    is_write: bool
    may: bool = False
    guard: bool = False


@dataclass
class Statement:
    name: str                    # 'S0', 'S1', ... (the isl tuple name)
    iterators: tuple[str, ...]   # names of the set dimensions, outermost first
    domain: isl.Set              # { S[i] : ... } with the size parameters
    body: Assign                 # in terms of the iterators and parameters
    accesses: list[Access]
    line: int                    # source line of the statement
    text: str                    # the statement as written (for reports)
    #: a data-dependent condition the statement runs under (``A[i][j] > 0``), in
    #: terms of the iterators; its reads are the accesses flagged ``guard``
    guard: Expr | None = None
    #: a commutative, associative update through a data-dependent subscript
    #: (``h[bin[i]] += w[i]``: '+'; ``h[b] = fmax(h[b], v)``: 'max' or 'min'):
    #: instances of such updates of one array commute, and the GPU runs them as
    #: atomic operations
    atomic: str | None = None

    @property
    def reads(self) -> list[Access]:
        return [a for a in self.accesses if not a.is_write]

    @property
    def writes(self) -> list[Access]:
        return [a for a in self.accesses if a.is_write]


@dataclass(frozen=True)
class Expansion:
    """A decision of :mod:`polymagic.frontend.expansion`: ``array`` expanded along
    the loops ``loops`` into the temp ``expanded``; ``copy_out``: the statement that
    writes the last iteration's values back (a parameter), None for a local."""
    array: str
    expanded: str
    loops: tuple[str, ...]
    copy_out: str | None

    def note(self) -> Note:
        """The decision as the user reads it."""
        loops = ", ".join(self.loops)
        back = (f"; the last iteration's values are copied back to {self.array} "
                f"({self.copy_out})" if self.copy_out else "")
        return Note(Stage.PARSE, f"written before read in every iteration of {loops} and "
                    f"reused by each: expanded to {self.expanded} (one copy per iteration "
                    f"of {loops}), so {loops} may run in parallel{back}", subject=self.array)


@dataclass
class Scop:
    name: str                    # the function name
    params: list[Param]          # signature, in order
    arrays: dict[str, Array]
    statements: list[Statement]
    schedule: isl.UnionMap       # original (textual) order, 2d+1 form
    context: isl.Set             # constraints on the size parameters (e.g. N >= 1)
    source: str                  # the source as the user wrote it
    constants: dict[str, int | float] = field(default_factory=dict)  # #define values
    language: str = "c"
    #: a Python function's C translation (``language == "python"``; seed 002 §2: the
    #: Python front end goes through C), which the CPU reference compiles; None for C
    c_source: str | None = None
    iterator_ctypes: dict[str, str] = field(default_factory=dict)  # loop iterator -> C type
    #: scratch arrays expanded along the loops that reuse them
    #: (:mod:`polymagic.frontend.expansion`)
    expansions: tuple[Expansion, ...] = ()
    #: the C type a function that returns a value returns (``double dot(...)``),
    #: None for ``void``: the value is written to the one-element array :data:`RETURN`
    #: (the last parameter, added by the front end), which the CPU reference fills
    #: from the call's result and the callable returns
    returns: str | None = None

    @property
    def size_params(self) -> list[str]:
        return [p.name for p in self.params if p.kind == "size"]

    @property
    def scalar_params(self) -> list[Param]:
        return [p for p in self.params if p.kind == "scalar"]

    @property
    def user_params(self) -> list[Param]:
        """The parameters as the user wrote them (without :data:`RETURN`)."""
        return [p for p in self.params if p.name != RETURN]

    @property
    def array_params(self) -> list[Param]:
        return [p for p in self.params if p.kind == "array"]

    @cached_property
    def domain(self) -> isl.UnionSet:
        u = isl.UnionSet.empty(self.context.get_space())
        for s in self.statements:
            u = u.union(isl.UnionSet.from_set(s.domain))
        return u

    def _union(self, writes: bool, keep=lambda s, a: True) -> isl.UnionMap:
        u = isl.UnionMap.empty(self.context.get_space())
        for s in self.statements:
            for a in s.accesses:
                if a.is_write == writes and keep(s, a):
                    u = u.union(isl.UnionMap.from_map(a.relation.intersect_domain(s.domain)))
        return u

    def accesses_where(self, writes: bool, keep) -> isl.UnionMap:
        """The reads (or writes) ``keep(statement, access)`` selects, on the domains."""
        return self._union(writes, keep)

    @cached_property
    def global_only(self) -> frozenset[str]:
        """Arrays accessed through a data-dependent subscript, written under a
        data-dependent condition or read by one: their elements stay in global memory
        (no shared buffer, register, ``__constant__`` copy or localisation), and the
        transfers move the whole array (the may-access covers it).  A local scalar
        written under a data-dependent condition may stay with its thread (a
        register): it is never copied in or out."""
        return frozenset(a.array for s in self.statements for a in s.accesses
                         if a.guard or (a.may and not (a.is_write and s.guard is not None and
                                                       self.arrays[a.array].kind == "temp")))

    @cached_property
    def has_may(self) -> bool:
        """Whether any access is a may-access or any statement is guarded."""
        return any(s.guard is not None or s.atomic or any(a.may for a in s.accesses)
                   for s in self.statements)

    @cached_property
    def reads(self) -> isl.UnionMap:
        return self._union(False)

    @cached_property
    def writes(self) -> isl.UnionMap:
        return self._union(True)

    def statement(self, name: str) -> Statement:
        return next(s for s in self.statements if s.name == name)

    def written_arrays(self) -> list[str]:
        """Arrays written by some statement, in declaration order."""
        w = {a.array for s in self.statements for a in s.writes}
        return [n for n in self.arrays if n in w]

    def read_arrays(self) -> list[str]:
        r = {a.array for s in self.statements for a in s.reads}
        return [n for n in self.arrays if n in r]
