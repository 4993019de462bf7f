"""Refuse, before anything runs, the faults that the sizes alone decide.

Two checks at the run's sizes, both cheap (isl on the statement domains):

* an integer ``/`` or ``%`` whose divisor depends on the sizes only (``A[i] / M``
  with ``--size M=0``) and is 0 in a statement that runs at least once: the run
  would stop on SIGFPE (:mod:`polymagic.runtime.guard` catches it, but naming the
  statement beforehand is clearer and spares the OpenMP target, whose worker
  threads the guard cannot recover);
* a loop iterator that leaves its C type (an ``int`` loop whose bound exceeds
  ``INT_MAX`` at the given sizes): the C loop would overflow (undefined
  behaviour, in practice a loop that never ends).
"""
from __future__ import annotations

from typing import Mapping

import islpy as isl

from .. import expr as E
from ..errors import InputError
from ..scop import Scop, Statement
from .guard import integer_divisions

#: the range of each iterator type, by C type
ITERATOR_RANGES = {"int": (-2**31, 2**31 - 1), "short": (-2**15, 2**15 - 1),
                   "char": (-2**7, 2**7 - 1), "unsigned": (0, 2**32 - 1),
                   "long": (-2**63, 2**63 - 1), "long long": (-2**63, 2**63 - 1)}


def fixed_sizes(domain: isl.Set, sizes: Mapping[str, int]) -> isl.Set:
    """``domain`` with its parameters set to ``sizes``."""
    d = domain
    for k in range(d.dim(isl.dim_type.param)):
        name = d.get_dim_name(isl.dim_type.param, k)
        if name in sizes:
            d = d.fix_val(isl.dim_type.param, k, isl.Val(str(int(sizes[name])), d.get_ctx()))
    return d


def _runs(s: Statement, sizes: Mapping[str, int]) -> bool:
    try:
        return not fixed_sizes(s.domain, sizes).is_empty()
    except isl.Error:
        return True


def check_divisors(scop: Scop, sizes: Mapping[str, int]) -> None:
    """InputError naming the statement when a size-only divisor is 0 at ``sizes``."""
    env = {k: int(v) for k, v in sizes.items()}
    env.update({k: v for k, v in scop.constants.items() if isinstance(v, int)})
    for s, node in integer_divisions(scop):
        names = {v.name for v in E.walk(node.b) if isinstance(v, E.Var)}
        if any(isinstance(v, (E.Access, E.Call)) for v in E.walk(node.b)) \
                or not names <= set(env):
            continue
        try:
            value = E.evaluate(node.b, env)
        except (ZeroDivisionError, KeyError, TypeError, ValueError):
            continue
        if value == 0 and _runs(s, env):
            at = ", ".join(f"{k}={env[k]}" for k in sorted(names))
            raise InputError(
                f"integer division by zero in {s.name}, line {s.line}: {s.text.strip()} "
                f"divides by {E.CPrinter().expr(node.b)}, which is 0 at {at}: choose another size")


def check_iterators(scop: Scop, sizes: Mapping[str, int]) -> None:
    """InputError when a loop iterator's values leave its C type at ``sizes``."""
    types = scop.iterator_ctypes
    if not types:
        return
    env = {k: int(v) for k, v in sizes.items()}
    for s in scop.statements:
        try:
            d = fixed_sizes(s.domain, env)
            if d.is_empty():
                continue
        except isl.Error:
            continue
        for k, it in enumerate(s.iterators):
            ctype = types.get(it)
            lo, hi = ITERATOR_RANGES.get(ctype or "", (None, None))
            if lo is None:
                continue
            try:
                top = d.dim_max_val(k).to_python()
                bottom = d.dim_min_val(k).to_python()
            except (isl.Error, AttributeError, ValueError):
                continue
            if top >= hi or bottom <= lo:
                raise InputError(
                    f"the {ctype} loop iterator '{it}' of {s.name} (line {s.line}) reaches "
                    f"{top if top >= hi else bottom} at "
                    + (", ".join(f"{k2}={v}" for k2, v in env.items()) or "its constant sizes")
                    + f", beyond what {ctype} holds ({lo}..{hi}): the C loop would "
                    "overflow; choose smaller sizes or a wider iterator type (long)")


def check(scop: Scop, sizes: Mapping[str, int]) -> None:
    """Both checks (see the module docstring)."""
    check_divisors(scop, sizes)
    check_iterators(scop, sizes)


__all__ = ["check", "check_divisors", "check_iterators"]
