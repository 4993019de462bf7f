"""Out-of-range index values of gathers and scatters, found before anything runs.

A data-dependent subscript (``x[perm[j]]``, ``h[bin[i]] += w[i]``: pet's
may-accesses, :mod:`polymagic.frontend.c.mayaccess`) is only known at run time,
so :mod:`polymagic.runtime.bounds` cannot check it from the sizes.  When it is an
index array read directly (``perm[j]``) that the function does not write, its
values are known before the run: the elements the statement reads of it (isl, at
the run's sizes: a box) are checked against the extent of the array they index, and
a value outside is refused with the reference at its line and column, the
iteration and the value, before the CPU reference (which would read or write
outside the array) or any target runs.  Other forms (an index computed from
several values, one under a data-dependent condition or ``?:`` that may guard it,
an index array the function writes) are left to the emulator's bounds check,
which names the access too.
"""
from __future__ import annotations

from typing import Mapping

import islpy as isl
import numpy as np

from .. import expr as E
from ..errors import BoundsError
from ..isl_util import OperationBudget
from ..scop import Scop, Statement
from .bounds import BOUNDS_OPERATIONS, column_of, fixed_map, sample_values, sizes_text
from .faults import fixed_sizes


def _gathers(st: Statement) -> list[tuple[E.Access, int, E.Access]]:
    """(gathering reference, dimension, index array read) of ``st`` outside any
    ``?:`` (which may guard the index)."""
    out = []

    def visit(e: E.Expr) -> None:
        if isinstance(e, E.Cond):
            return
        if isinstance(e, E.Access):
            for d, x in enumerate(e.index):
                if isinstance(x, E.Access):
                    out.append((e, d, x))
        for c in e.children():
            visit(c)
    visit(st.body.target)
    visit(st.body.value)
    return out


def check_gathers(scop: Scop, sizes: Mapping[str, int], arrays: Mapping[str, np.ndarray]
                  ) -> None:
    """:class:`BoundsError` at the first gather whose index array holds a value
    outside the extent it indexes (see the module docstring)."""
    if not scop.has_may:
        return
    env = {k: int(v) for k, v in sizes.items()}
    env.update({k: v for k, v in scop.constants.items() if isinstance(v, int)})
    written = set(scop.written_arrays())
    ctx = isl.DEFAULT_CONTEXT
    for st in scop.statements:
        if st.guard is not None:
            continue
        for ref, d, idx in _gathers(st):
            if idx.array in written or idx.array not in arrays or \
                    any(isinstance(x, E.Access) for i in idx.index for x in E.walk(i)):
                continue
            try:
                ext = int(E.evaluate(scop.arrays[ref.array].shape[d], env))
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                continue
            rel = next((a.relation for a in st.accesses
                        if a.array == idx.array and not a.is_write), None)
            if rel is None:
                continue
            try:
                with OperationBudget(ctx, BOUNDS_OPERATIONS):
                    rel = fixed_map(rel, env).intersect_domain(fixed_sizes(st.domain, env))
                    bad = _first_bad(rel, np.asarray(arrays[idx.array]), ext)
            except isl.Error:
                continue
            if bad is None:
                continue
            point, value = bad
            pr = E.CPrinter()
            text = pr.expr(ref)
            at = ", ".join(f"{k} = {v}" for k, v in point.items() if k in st.iterators)
            nth = sum(1 for r, _, _ in _gathers(st)[:_gathers(st).index((ref, d, idx))]
                      if r.array == ref.array)
            line, col = column_of(scop, st, ref.array, nth)
            raise BoundsError(
                f"out-of-range index in {st.name}: {text} uses {pr.expr(idx)} = {value}"
                + (f" at {at}" if at else "") + f" as index {d} of {ref.array}, which must lie "
                f"in 0..{ext - 1} at {sizes_text(scop, env)}: fix the values of "
                f"'{idx.array}' (nothing ran; the arrays are unchanged)", line, col, scop.source)


def index_high(scop: Scop, name: str, sizes: Mapping[str, int]) -> int | None:
    """For an int array read directly as a data-dependent subscript, the smallest
    extent it indexes at ``sizes`` (generated values stay below it); else None."""
    if not scop.has_may:
        return None
    env = {k: int(v) for k, v in sizes.items()}
    env.update({k: v for k, v in scop.constants.items() if isinstance(v, int)})
    highs = []
    for st in scop.statements:
        for ref, d, idx in _gathers(st):
            if idx.array == name:
                try:
                    highs.append(int(E.evaluate(scop.arrays[ref.array].shape[d], env)))
                except (KeyError, TypeError, ValueError, ZeroDivisionError):
                    continue
    return min(highs) if highs else None


def _first_bad(rel: isl.Map, values: np.ndarray, ext: int
               ) -> tuple[dict[str, int], int] | None:
    """An iteration of ``rel`` (instances -> index array elements, one statement at
    fixed sizes) whose element of ``values`` is outside ``0..ext-1``, with the
    value; None when all are inside or the elements read are not a box."""
    read = rel.range()
    if read.is_empty():
        return None
    n = read.dim(isl.dim_type.set)
    box = isl.Set.universe(read.get_space()).intersect_params(read.params())
    lo = [int(read.dim_min_val(k).to_python()) for k in range(n)]
    hi = [int(read.dim_max_val(k).to_python()) for k in range(n)]
    for k in range(n):
        box = box.lower_bound_val(isl.dim_type.set, k, lo[k]).upper_bound_val(
            isl.dim_type.set, k, hi[k])
    if not box.is_subset(read) or values.ndim != n:
        return None
    part = values[tuple(slice(a, b + 1) for a, b in zip(lo, hi))]
    bad = np.argwhere((part < 0) | (part >= ext))
    if bad.size == 0:
        return None
    elem = [int(x) + a for x, a in zip(bad[0], lo)]
    one = isl.Set.universe(read.get_space())
    for k, v in enumerate(elem):
        one = one.fix_val(isl.dim_type.set, k, isl.Val(str(v), read.get_ctx()))
    inst = rel.intersect_range(one).domain()
    return sample_values(inst), int(values[tuple(elem)])


__all__ = ["check_gathers", "index_high"]
