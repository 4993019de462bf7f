"""The C front end: the text of one ``%%polycuda`` cell -> :class:`polymagic.scop.Scop`.

The cell holds optional preprocessor lines, loop-free helper functions (inlined
by :mod:`.inline`) and one ``void`` kernel function whose body is a static
control part: ``for`` loops with affine bounds, ``if``
statements with affine conditions, and assignments to array elements or local
scalars.  pycparser parses the C; this module walks its AST and builds the
polyhedral model with islpy.

Decisions other stages rely on
------------------------------
* Statements are ``S0, S1, ...`` in textual order; their set dimensions are named
  after the loop iterators and their parameters are all ``int``/``long`` arguments
  in signature order.
* A local scalar becomes an ``Array(kind='temp')`` named after the variable when that
  name is unique in the function (else ``name_1``, ``name_2``, ...).  Declared inside
  loops it has one element per iteration of the loops enclosing its declaration
  (index ``iterator - min``); declared outside all loops it is 0-d (shape ``()``).
* An array declared in the body (``double t[N];``) is a temp array too: a copy per
  iteration of the loops enclosing its declaration, then the declared shape
  (``Array.local``); a read of an element no earlier write may have set is refused
  (:mod:`.local_arrays`).
* ``#define NAME value`` constants are substituted by value (``Int``/``Float`` as
  written); ``min``/``max`` are :class:`~polymagic.expr.Call` nodes whether they come
  from a macro ``#define min(a,b) ...`` or are used without one.
* ``a += b`` is an :class:`~polymagic.expr.Assign` with op ``'+='``; its target is
  both read (first access) and written (last access).  ``A[i]++`` is ``A[i] += 1``.
* ``const`` and ``restrict`` qualifiers on array parameters are accepted and
  ignored (a ``const`` array may not be written); a pointer parameter is a 1-d array
  whose extent is inferred from the accesses (:mod:`.pointers`).
* A 1-d array (pointer or declared) indexed ``A[i*n + j]`` with a size parameter
  ``n`` is delinearised into ``A[i][j]`` of a 2-d array ``[?][n]``
  (:mod:`.delinearise`); its ``Array.flat`` says the caller passes a flat buffer.

The front end is split along the walk's seams: :mod:`.source` (text to AST,
positions kept), :mod:`.typedefs` (the cell's typedefs replaced by their types),
:mod:`.inline` (the kernel and its inlined helpers), :mod:`.views`
(local pointers into arrays), :mod:`.delinearise` (flat subscripts split into
dimensions), :mod:`.subset` (the accepted C by name), :mod:`.symbols` (names,
scopes and the walk's state), :mod:`.declarations` (signature and locals),
:mod:`.local_arrays` (arrays declared in the body),
:mod:`.statements` (dispatch and assignments), :mod:`.control` (loops, ifs and
the schedule), :mod:`.affine` (isl expressions) and :mod:`.values` (right-hand
sides); :class:`Builder` puts the rules together.
"""
from __future__ import annotations

from ...errors import SourceError
from ...names import isl_keyword_reason, reserved_reason
from ...scop import Scop
from .affine import Affine
from .control import ControlFlow
from .declarations import Declarations
from .delinearise import delinearise
from .inline import split_kernel
from .limits import check_limits
from .local_arrays import LocalArrays
from .mayaccess import MayAccesses
from .pointers import Pointers
from .source import blank_comments, clean_source, parse, preprocess
from .statements import Statements
from .typedefs import resolve_typedefs
from .values import Values
from .views import local_pointers


class Builder(Declarations, LocalArrays, Pointers, Statements, ControlFlow, Affine, Values,
              MayAccesses):
    """Walks one function and accumulates the Scop's pieces (every rule is a
    method of one of the mixins; they share :class:`~.symbols.BuilderState`)."""


def parse_c(source: str) -> Scop:
    """Parse one cell of C (defines + one void function) into a :class:`Scop`.

    Raises :class:`SourceError` for syntax errors and :class:`UnsupportedError` for
    C outside the affine subset, both located at the user's line and column.
    """
    source = clean_source(source)          # the reference compiles this text too
    check_limits(blank_comments(source), source)
    pre = preprocess(source)
    check_limits(pre.text, source)          # what macros expanded to
    try:
        return _build(source, pre)
    except SourceError as e:
        col = pre.user_column(e.line, e.col)
        if col == e.col:
            raise
        raise type(e)(e.reason, e.line, col, source) from None
    except RecursionError:
        raise SourceError("the function is nested too deeply to analyse (resource limit: "
                          "nesting depth); simplify its expressions or blocks") from None


def _build(source: str, pre) -> Scop:
    """The Scop of the preprocessed cell (see :func:`parse_c`)."""
    ast = resolve_typedefs(parse(pre.text, source), source)
    ast = local_pointers(split_kernel(ast, source, pre.constants), source)
    ast, splits = delinearise(ast, source, pre.constants,
                              lambda line, col: pre.user_column(line, col) or col)
    b = Builder(source, pre)
    b.splits = splits
    fd = b.function(ast)
    b.names.visit(fd)
    for name, decl in b.names.declared.items():     # hygiene: polymagic.names
        why = reserved_reason(name)
        if why:
            b.err(why, decl)
    b.signature(fd)
    for name in (*b.size_params, *sorted(b.names.loop_declared | b.names.loop_assigned)):
        why = isl_keyword_reason(name)
        if why:
            b.err(why, b.names.declared.get(name))
    b.body(fd)
    b.pointer_extents()
    b.check_local_reads()      # frontend/c/local_arrays.py
    return Scop(name=fd.decl.name, params=b.params, arrays=b.arrays, statements=b.statements,
                schedule=b.schedule(), context=b.context, source=source,
                constants=dict(pre.values), language="c",
                iterator_ctypes=dict(b.iterator_ctypes), returns=b.returns)


__all__ = ["parse_c", "preprocess", "Builder"]
