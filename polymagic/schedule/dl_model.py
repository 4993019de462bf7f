"""The Distinct-Lines (DL) model extended to coalesced GPU accesses (seed 003 §5.2).

For a loop nest tiled with sizes ``t_1..t_d``, a reference touches
``DL_ref(t) = ⌈t_c·s_c / L⌉ · Π_{k ∈ R, k ≠ c} t_k`` distinct lines: ``R`` are the loops
its address depends on, ``c`` the one with the smallest element stride ``s_c``
(the contiguous one), ``L`` the warp size in elements (32: a warp reading 32
consecutive elements is one transaction).  When even the smallest stride is ``L``
or more, every loop of ``R`` counts fully.  References to one array with the same
linear part (``A[i][j-1]``, ``A[i][j]``, ``A[i][j+1]``) share their lines and count
once.  Figure 8: ``A[i1][i2]`` and ``B[i3][i1]`` give
``DL = t1⌈t2/L⌉ + t3⌈t1/L⌉``.

The per-iteration cost is ``mem_cost(t) = DL(t) / Π t_k`` (``Cost_trans`` = 1), and
``∂mem_cost/∂t_i`` ranks the loops: the most negative derivative is the loop whose
enlargement saves the most transactions; among parallel loops it goes to
``threadIdx.x`` (coalescing parallelism).  The derivative is taken on the
continuous relaxation ``⌈x⌉ → max(1, x)`` by central differences at ``t_k = T0``.

Strides are element strides, by default the row-major strides of the Scop's array
declarations with symbolic extents at :data:`SAMPLE_EXTENT`; callers may pass the
real strides (e.g. a NumPy view's) instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import islpy as isl

from ..expr import Int, substitute
from ..scop import Scop, Statement

#: warp size L: elements one coalesced transaction serves
WARP = 32
#: tile size at which the derivatives are evaluated
T0 = 16
#: value given to size parameters when a stride is symbolic (only "large" matters)
SAMPLE_EXTENT = 1024


@dataclass(frozen=True)
class Reference:
    """A group of references with one linear address part: ``coeffs[k]`` is the
    address change (in elements) when loop k advances by one."""
    array: str
    coeffs: tuple[int, ...]

    def loops(self) -> list[int]:
        return [k for k, c in enumerate(self.coeffs) if c != 0]

    def contiguous(self, line: int = WARP) -> int | None:
        """The loop with the smallest stride, if that stride is below a line."""
        ks = self.loops()
        if not ks:
            return None
        c = min(ks, key=lambda k: (abs(self.coeffs[k]), -k))
        return c if abs(self.coeffs[c]) < line else None


def array_strides(scop: Scop, sample: int = SAMPLE_EXTENT) -> dict[str, tuple[int, ...]]:
    """Element strides of every array from its declaration (symbolic extents are
    evaluated at ``sample``)."""
    from ..expr import CPrinter
    env = {p: Int(sample) for p in scop.size_params}
    out = {}
    for name, arr in scop.arrays.items():
        vals = []
        for e in arr.strides:
            try:
                vals.append(int(eval(CPrinter()(substitute(e, env)), {}, {})))  # noqa: S307
            except Exception:
                vals.append(sample)
        out[name] = tuple(vals)
    return out


def _linear_part(rel: isl.Map, n_in: int) -> list[list[int]] | None:
    """Coefficients of the loop iterators in each subscript of an access."""
    try:
        pma = isl.PwMultiAff.from_map(rel)
    except isl.Error:
        return None
    rows = []
    for d in range(pma.dim(isl.dim_type.out)):
        affs: list[isl.Aff] = []
        pma.get_pw_aff(d).foreach_piece(lambda _s, a: affs.append(a))
        if not affs:
            return None
        rows.append([int(affs[0].get_coefficient_val(isl.dim_type.in_, k).to_python())
                     for k in range(n_in)])
    return rows


def references(st: Statement, strides: dict[str, tuple[int, ...]]) -> list[Reference]:
    """The statement's references grouped by (array, linear address part)."""
    out: list[Reference] = []
    n = len(st.iterators)
    for acc in st.accesses:
        rows = _linear_part(acc.relation, n)
        st_ = strides.get(acc.array, ())
        if rows is None or len(st_) != len(rows):
            continue
        coeffs = tuple(sum(s * r[k] for s, r in zip(st_, rows)) for k in range(n))
        ref = Reference(acc.array, coeffs)
        if ref not in out:
            out.append(ref)
    return out


def _lines(ref: Reference, tiles, line: int, relax: bool) -> float:
    c = ref.contiguous(line)
    out = 1.0
    for k in ref.loops():
        if k == c:
            x = tiles[k] * abs(ref.coeffs[k]) / line
            out *= max(1.0, x) if relax else math.ceil(x)
        else:
            out *= tiles[k]
    return out


def distinct_lines(refs: list[Reference], tiles, line: int = WARP) -> int:
    """``DL(t)``: distinct lines (transactions) of a tile ``tiles`` (exact, with ⌈⌉)."""
    return int(sum(_lines(r, tiles, line, False) for r in refs))


def formula(refs: list[Reference], names: list[str], line: int = WARP) -> str:
    """``DL`` as text, e.g. ``t1*ceil(t2/L) + t3*ceil(t1/L)``."""
    terms = []
    for r in refs:
        c = r.contiguous(line)
        fs = [names[k] for k in r.loops() if k != c]
        if c is not None:
            s = abs(r.coeffs[c])
            fs.append(f"ceil({'' if s == 1 else f'{s}*'}{names[c]}/L)")
        terms.append("*".join(fs) or "1")
    return " + ".join(terms) or "0"


def mem_cost(refs: list[Reference], tiles, line: int = WARP, relax: bool = False) -> float:
    """Per-iteration transactions ``DL(t) / Π t``."""
    vol = 1.0
    for t in tiles:
        vol *= t
    return sum(_lines(r, tiles, line, relax) for r in refs) / vol


def derivatives(refs: list[Reference], n_loops: int, t0: float = T0, line: int = WARP
                ) -> list[float]:
    """``∂mem_cost/∂t_i`` at ``t = (t0, ..., t0)`` for every loop i (relaxed model)."""
    out = []
    for i in range(n_loops):
        hi = [t0] * n_loops
        lo = [t0] * n_loops
        hi[i] += 1
        lo[i] -= 1
        out.append((mem_cost(refs, hi, line, True) - mem_cost(refs, lo, line, True)) / 2)
    return out


@dataclass
class StatementCost:
    """DL view of one statement's loop nest."""
    statement: str
    iterators: tuple[str, ...]
    refs: list[Reference]
    derivative: list[float]          # ∂mem_cost/∂t_i, i over the iterators

    def coalesces(self, k: int, line: int = WARP) -> bool:
        """Loop k is the contiguous loop of some reference (a warp along it coalesces)."""
        return any(r.contiguous(line) == k for r in self.refs)


def statement_costs(scop: Scop, strides: dict[str, tuple[int, ...]] | None = None
                    ) -> dict[str, StatementCost]:
    """The DL derivatives of every statement, with the Scop's strides unless given."""
    strides = strides or array_strides(scop)
    out = {}
    for st in scop.statements:
        refs = references(st, strides)
        out[st.name] = StatementCost(st.name, st.iterators, refs,
                                     derivatives(refs, len(st.iterators)))
    return out
