"""Out-of-bounds references of the user's code, found before anything runs and
named in the user's terms.

An access ``A[i - 2]`` of a statement whose loop starts at ``i = 0`` reads before
``A``; the generated kernel would fault on it too, but the emulator can only
name what the kernel does (a shared buffer ``sh0_A`` read before it was filled, a
thread of a block): issue 18 asks for ``A[i - 2]`` at its line and column, the
iteration that leaves the array and the array's real extents.  At the run's sizes
every statement's domain and access relation are concrete, so isl decides
exactly whether an access leaves its array's box (one subtraction per access) and
gives an iteration that does.  The refusal comes before the CPU reference, the
emulator or the GPU run, so the user's arrays are untouched.
"""
from __future__ import annotations

import re
from typing import Mapping

import islpy as isl

from .. import expr as E
from ..errors import BoundsError
from ..scop import Access, Array, Scop, Statement
from ..isl_util import OperationBudget
from .faults import fixed_sizes

#: isl operations one statement's bounds check may take (a pathological domain
#: gives up the static check; the emulator still catches the access)
BOUNDS_OPERATIONS = 2_000_000


def _box(acc: Access, extents: list[int]) -> isl.Set:
    """``{ A[o] : 0 <= o_d < extent_d }`` in the space of the access's range."""
    space = acc.relation.get_space().range()
    box = isl.Set.universe(space)
    ls = isl.LocalSpace.from_space(space)
    for d, ext in enumerate(extents):
        lo = isl.Constraint.inequality_alloc(ls).set_coefficient_val(isl.dim_type.set, d, 1)
        hi = isl.Constraint.inequality_alloc(ls).set_coefficient_val(
            isl.dim_type.set, d, -1).set_constant_val(isl.Val(str(ext - 1), space.get_ctx()))
        box = box.add_constraint(lo).add_constraint(hi)
    return box


def sample_values(s: isl.Set) -> dict[str, int]:
    """A point of the non-empty set ``s``, by dimension name."""
    p = s.sample_point()
    return {s.get_dim_name(isl.dim_type.set, k):
            int(p.get_coordinate_val(isl.dim_type.set, k).to_python())
            for k in range(s.dim(isl.dim_type.set))}


def column_of(scop: Scop, st: Statement, array: str, nth: int) -> tuple[int, int]:
    """Line and column of the ``nth`` reference to ``array`` on the statement's
    line (source order), else of the statement's first character."""
    lines = scop.source.splitlines()
    text = lines[st.line - 1] if 1 <= st.line <= len(lines) else ""
    hits = [m.start() + 1 for m in re.finditer(rf"\b{re.escape(array)}\s*\[", text)]
    if hits:
        return st.line, hits[min(nth, len(hits) - 1)]
    return st.line, len(text) - len(text.lstrip()) + 1


def _culprit(st: Statement, array: str, env: Mapping[str, int], extents: list[int]
             ) -> tuple[E.Access, int, tuple[int, ...]] | None:
    """The reference of ``st`` to ``array`` that leaves ``extents`` at ``env``: the
    expression, its rank among the statement's references to ``array`` (source
    order: the target first) and the index it computes."""
    refs = [a for a in [st.body.target, *E.accesses(st.body.value)] if a.array == array]
    for nth, ref in enumerate(refs):
        try:
            index = tuple(int(E.evaluate(x, env)) for x in ref.index)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            continue
        if any(not 0 <= i < n for i, n in zip(index, extents)):
            return ref, nth, index
    return None


def _message(scop: Scop, st: Statement, arr: Array, write: bool, ref: E.Access,
             index: tuple[int, ...], point: Mapping[str, int], extents: list[int]) -> str:
    """The refusal: the reference as written, the element it computes, the
    iteration, the array's shape and element count, the sizes."""
    pr = E.CPrinter()
    text = f"{arr.name}" + "".join(f"[{pr.expr(x)}]" for x in ref.index)
    at = ", ".join(f"{k} = {v}" for k, v in point.items() if k in st.iterators)
    shape = "".join(f"[{n}]" for n in extents)
    total = 1
    for n in extents:
        total *= n
    dims = [f"index {d} must lie in 0..{n - 1}" for d, (i, n) in enumerate(zip(index, extents))
            if not 0 <= i < n]
    return (f"out-of-bounds {'write' if write else 'read'} in {st.name}: {text} "
            f"{'writes' if write else 'reads'} {arr.name}"
            + "".join(f"[{i}]" for i in index)
            + (f" at {at}" if at else "")
            + f", outside {arr.name}{shape} ({total} elements; {', '.join(dims)}) at "
            + sizes_text(scop, point)
            + ": fix the subscript or the loop bounds (nothing ran; the arrays are unchanged)")


def sizes_text(scop: Scop, env: Mapping[str, int]) -> str:
    """``n=100, m=20`` for the size parameters given in ``env`` (for messages)."""
    given = [f"{p}={env[p]}" for p in (p.name for p in scop.params if p.kind == "size")
             if p in env]
    return ", ".join(given) if given else "its constant sizes"


def check_bounds(scop: Scop, sizes: Mapping[str, int]) -> None:
    """:class:`BoundsError` at the first reference of the user's code that leaves
    its array at ``sizes`` (arrays that are parameters or declared in the function
    body; expanded local scalars are sized by their references)."""
    env = {k: int(v) for k, v in sizes.items()}
    env.update({k: v for k, v in scop.constants.items() if isinstance(v, int)})
    ctx = isl.DEFAULT_CONTEXT
    for st in scop.statements:
        for acc in st.accesses:
            arr = scop.arrays.get(acc.array)
            if arr is None or (arr.kind != "param" and arr.local is None) or not arr.shape:
                continue
            try:
                extents = [int(E.evaluate(e, env)) for e in arr.shape]
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                continue
            try:
                with OperationBudget(ctx, BOUNDS_OPERATIONS):
                    dom = fixed_sizes(st.domain, env)
                    rel = fixed_map(acc.relation, env).intersect_domain(dom)
                    bad = rel.range().subtract(_box(acc, extents))
                    if bad.is_empty():
                        continue
                    point = sample_values(rel.intersect_range(bad).domain())
            except isl.Error:
                continue
            full = {**env, **point}
            found = _culprit(st, acc.array, full, extents)
            if found is None:
                continue
            ref, nth, index = found
            write = ref is st.body.target
            arr, ref, index, extents = _as_declared(arr, ref, index, extents)
            line, col = column_of(scop, st, arr.name, nth)
            raise BoundsError(_message(scop, st, arr, write, ref, index, full, extents),
                              line, col, scop.source)


def _as_declared(arr: Array, ref: E.Access, index: tuple[int, ...], extents: list[int]
                 ) -> tuple[Array, E.Access, tuple[int, ...], list[int]]:
    """A local array (declared in the function body) as the user declared it: its
    name and its declared dimensions, without the copies per loop iteration."""
    if arr.local is None:
        return arr, ref, index, extents
    k = len(arr.shape) - arr.local.rank
    shown = Array(arr.local.name, arr.ctype, arr.shape[k:], arr.kind, arr.line)
    return shown, E.Access(arr.local.name, ref.index[k:]), index[k:], extents[k:]


def fixed_map(m: isl.Map, sizes: Mapping[str, int]) -> isl.Map:
    """``m`` with its parameters set to ``sizes``."""
    for k in range(m.dim(isl.dim_type.param)):
        name = m.get_dim_name(isl.dim_type.param, k)
        if name in sizes:
            m = m.fix_val(isl.dim_type.param, k, isl.Val(str(int(sizes[name])), m.get_ctx()))
    return m


__all__ = ["check_bounds", "BOUNDS_OPERATIONS"]
