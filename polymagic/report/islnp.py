"""isl sets and quasi-affine functions evaluated on NumPy grids of integer points.

Pictures need every point of sets of a few thousand elements; isl's
``foreach_point`` costs about 20 µs a point from Python.  Here a parameter-free
set is evaluated on all candidate points of its bounding box at once: each basic
set's integer divisions ``floor(e/d)`` are computed in order (after
``compute_divs`` every existential has an explicit expression), then every
constraint is checked.  Quasi-affine functions (:class:`isl.PwMultiAff`) are
evaluated the same way, piece by piece.  Exact integer arithmetic throughout
(rational coefficients are brought to a common denominator).
"""
from __future__ import annotations

from fractions import Fraction
from math import lcm

import islpy as isl
import numpy as np

#: largest bounding box (points) :func:`set_points` scans
MAX_BOX = 4_000_000


def _frac(v: isl.Val) -> Fraction:
    if v.is_int():
        return Fraction(v.to_python())
    return Fraction(int(v.get_num_si()), int(v.get_den_val().to_python()))


def _aff_numden(aff: isl.Aff, X: np.ndarray, in_type=isl.dim_type.in_) -> tuple[np.ndarray, int]:
    """``aff`` at the rows of X as (numerator array, denominator)."""
    n_in = aff.dim(in_type)
    n_div = aff.dim(isl.dim_type.div)
    coef = [_frac(aff.get_coefficient_val(in_type, i)) for i in range(n_in)]
    dcoef = [_frac(aff.get_coefficient_val(isl.dim_type.div, k)) for k in range(n_div)]
    const = _frac(aff.get_constant_val())
    den = lcm(*(c.denominator for c in coef + dcoef + [const]))
    num = np.full(len(X), const.numerator * (den // const.denominator), dtype=np.int64)
    for i, c in enumerate(coef):
        if c:
            num += (c.numerator * (den // c.denominator)) * X[:, i]
    for k, c in enumerate(dcoef):
        if c:
            num += (c.numerator * (den // c.denominator)) * _floor_aff(aff.get_div(k), X)
    return num, den


def _floor_aff(aff: isl.Aff, X: np.ndarray) -> np.ndarray:
    num, den = _aff_numden(aff, X)
    return np.floor_divide(num, den)


def eval_aff(aff: isl.Aff, X: np.ndarray) -> np.ndarray:
    """An integer-valued quasi-affine function at the rows of X."""
    num, den = _aff_numden(aff, X)
    return np.floor_divide(num, den)


def basic_set_mask(bset: isl.BasicSet, X: np.ndarray) -> np.ndarray:
    """Which rows of X (one column per set dimension) lie in ``bset``."""
    n_div = bset.dim(isl.dim_type.div)
    divs = [_floor_aff(bset.get_div(k), X) for k in range(n_div)]
    n = bset.dim(isl.dim_type.set)
    ok = np.ones(len(X), dtype=bool)
    cons: list[isl.Constraint] = []
    bset.foreach_constraint(cons.append)
    for c in cons:
        v = np.full(len(X), int(c.get_constant_val().to_python()), dtype=np.int64)
        for i in range(n):
            a = int(c.get_coefficient_val(isl.dim_type.set, i).to_python())
            if a:
                v += a * X[:, i]
        for k in range(n_div):
            a = int(c.get_coefficient_val(isl.dim_type.div, k).to_python())
            if a:
                v += a * divs[k]
        ok &= (v == 0) if c.is_equality() else (v >= 0)
    return ok


def set_mask(s: isl.Set, X: np.ndarray) -> np.ndarray:
    """Which rows of X lie in the parameter-free set ``s``."""
    if s.dim(isl.dim_type.param):
        raise ValueError(f"set_mask needs a parameter-free set, got {s}")
    X = np.asarray(X, dtype=np.int64).reshape(len(X), s.dim(isl.dim_type.set))
    s = s.compute_divs()
    ok = np.zeros(len(X), dtype=bool)
    bsets: list[isl.BasicSet] = []
    s.foreach_basic_set(bsets.append)
    for b in bsets:
        rest = ~ok
        if rest.any():
            ok[rest] = basic_set_mask(b, X[rest])
    return ok


def bounds(s: isl.Set) -> list[tuple[int, int]]:
    """Per-dimension [min, max] of a bounded, non-empty, parameter-free set."""
    out = []
    for d in range(s.dim(isl.dim_type.set)):
        lo, hi = s.dim_min_val(d), s.dim_max_val(d)
        if not (lo.is_int() and hi.is_int()):
            raise ValueError(f"dimension {d} of {s} is unbounded")
        out.append((int(lo.to_python()), int(hi.to_python())))
    return out


def set_points(s: isl.Set) -> np.ndarray:
    """Every integer point of a bounded, parameter-free set (rows, lexicographic order)."""
    n = s.dim(isl.dim_type.set)
    if s.is_empty():
        return np.zeros((0, n), dtype=np.int64)
    if n == 0:
        return np.zeros((1, 0), dtype=np.int64)
    b = bounds(s)
    size = 1
    for lo, hi in b:
        size *= hi - lo + 1
    if size > MAX_BOX:
        raise ValueError(f"the set's bounding box has {size} points (more than {MAX_BOX}): "
                         f"choose smaller sizes")
    axes = [np.arange(lo, hi + 1, dtype=np.int64) for lo, hi in b]
    X = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, n)
    return X[set_mask(s, X)]


def eval_pw_multi_aff(pma: isl.PwMultiAff, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pma`` (parameter-free) at the rows of X: (values (len(X), n_out), defined mask)."""
    X = np.asarray(X, dtype=np.int64)
    n_out = pma.dim(isl.dim_type.out)
    out = np.zeros((len(X), n_out), dtype=np.int64)
    done = np.zeros(len(X), dtype=bool)
    pieces: list[tuple[isl.Set, isl.MultiAff]] = []
    pma.foreach_piece(lambda st, ma: pieces.append((st, ma)))
    for st, ma in pieces:
        rest = np.flatnonzero(~done)
        if not len(rest):
            break
        m = set_mask(st, X[rest])
        rows = rest[m]
        for o in range(n_out):
            out[rows, o] = eval_aff(ma.get_at(o), X[rows])
        done[rows] = True
    return out, done


__all__ = ["set_mask", "set_points", "eval_aff", "eval_pw_multi_aff", "bounds"]
