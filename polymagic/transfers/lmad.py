"""Linear memory access descriptors and the access analysis of jit4GPU (seed 002 §4.2–4.3).

Seed 002 (Garg & Amaral, "A compilation framework to execute Python numerical
applications in a hybrid CPU-GPU environment") moves to the GPU only the memory
locations a loop nest may touch and maps them onto compact device buffers.  This
module is that analysis, on plain integers (addresses in elements), so it can be
tested on the paper's worked examples; :mod:`polymagic.transfers.plan` builds the
descriptors from a Scop and NumPy arrays and turns the result into kernel layouts.

Descriptors (§4.2)
    A :class:`CSLMAD` (constant-stride linear memory access descriptor) is the set
    ``M = { f(i) | i ∈ D }`` with ``f(i) = b + Σ_k s_k·i_k`` (eq. 1–2) over the
    normalised rectangular domain ``D = { 0 <= i_k < u_k }``.  The span of
    dimension k is ``σ_k = s_k·u_k``.  :meth:`CSLMAD.canonical` drops dimensions
    that cannot move the address, makes strides positive (a negative stride is the
    same set traversed backwards) and sorts dimensions by descending stride, the
    order in which §4.3.3 states the RCSLMAD condition.

Analysis (§4.3)
    :func:`overlap_components` builds the memory-reference overlap graph (an edge
    when two address intervals ``θ`` intersect) and returns its connected
    components; :func:`analyse_group` handles one component with the paper's cases:

    ``single-1d`` (§4.3.1)
        one one-dimensional CSLMAD: its ``u`` locations map to ``0 .. u-1``
        (``f(i) = 3i + 2`` over ``[0, 5)`` moves 5 elements, Figure 4).
    ``interleaved-1d`` (§4.3.2)
        one-dimensional CSLMADs with one stride ``s``: with ``v_j = ⌊(b_j-b_1)/s⌋``
        and ``r_j = (b_j-b_1) mod s`` (eq. 3–4), ``q`` distinct residues and
        ``u + v_n`` periods, the group needs ``q·(u + v_n)`` locations and
        ``f_j(i) = s·(i+v_j) + r_j + b_1`` maps to ``g_j(i) = q·(i+v_j) + p_j``
        where ``p_j`` is the rank of ``r_j`` (Figure 7).  (Generalised here to
        members with different ``u_j``: ``max_j (u_j + v_j)`` periods.)
    ``rcslmad`` (§4.3.3)
        one multi-dimensional CSLMAD passing the no-overlap test of Definition 1,
        ``s_k > Σ_{p>k} s_p·(u_p - 1)``: by Theorem 1 the address is strictly
        increasing in lexicographic order, so it accesses ``|D|`` distinct
        locations, packed densely in that order.
    ``rcslmad-group`` (§4.3.4)
        RCSLMADs with equal strides.  First case (Theorem 2, constraints 14–15):
        ``n·|D|`` locations.  Second case: the integer linear program of
        eq. 29–34 (solved exactly with isl) finds ``b'``, residues ``r_m``, shifts
        ``t_mk`` and a stretched domain ``u'`` covering every member; addresses
        follow Algorithm 1, ``p_m + q·Σ_k (i_k + t_mk)·Π_{l>k} u'_l`` (with the rank
        ``p_m`` of ``r_m`` as in §4.3.2, so residues that are not consecutive
        cannot collide).
    ``bounding-interval``
        anything else: the interval from the lowest to the highest address (the
        conservative estimate §4.3 describes but jit4GPU left unimplemented).

Each member's device address comes out as an affine function of its own counters
(:meth:`GroupPlacement.affine`), which is what a kernel needs.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from typing import Iterable, Sequence

from ..notes import Note, Stage

#: the ILP of §4.3.4 is abandoned beyond this many unknowns ("to constrain the JIT
#: compilation time, the compiler aborts ... if the number of unknown variables
#: exceeds a threshold")
ILP_MAX_UNKNOWNS = 80


# ---- descriptors ------------------------------------------------------------------

@dataclass(frozen=True)
class CSLMAD:
    """``f(i) = base + Σ_k strides[k]·i_k`` over ``0 <= i_k < bounds[k]`` (§4.2, eq. 1)."""
    base: int
    strides: tuple[int, ...]
    bounds: tuple[int, ...]

    def __post_init__(self):
        if len(self.strides) != len(self.bounds):
            raise ValueError("a CSLMAD needs one bound per stride")
        if any(int(u) < 1 for u in self.bounds):
            raise ValueError(f"CSLMAD bounds must be >= 1, got {self.bounds}")

    @property
    def dimension(self) -> int:
        """Loop variables that move the address (§4.2: 'the number of loop variables
        occurring in the memory address expression')."""
        return sum(1 for s, u in zip(self.strides, self.bounds) if s != 0 and u > 1)

    def spans(self) -> tuple[int, ...]:
        """``σ_k = s_k·u_k`` (§4.2)."""
        return tuple(s * u for s, u in zip(self.strides, self.bounds))

    def interval(self) -> tuple[int, int]:
        """``θ``: the lowest and highest address (inclusive)."""
        lo = self.base + sum(min(0, s * (u - 1)) for s, u in zip(self.strides, self.bounds))
        hi = self.base + sum(max(0, s * (u - 1)) for s, u in zip(self.strides, self.bounds))
        return lo, hi

    def at(self, counters: Sequence[int]) -> int:
        return self.base + sum(s * i for s, i in zip(self.strides, counters))

    def addresses(self):
        """Every address, sorted and unique (NumPy; for tests and small checks)."""
        import numpy as np
        a = np.array([self.base], dtype=np.int64)
        for s, u in zip(self.strides, self.bounds):
            a = (a[:, None] + s * np.arange(u, dtype=np.int64)[None, :]).ravel()
        return np.unique(a)

    def canonical(self, keep: Iterable[int] = ()) -> "Canonical":
        """Dimensions with ``u = 1`` (unless in ``keep``) or stride 0 dropped, strides
        made positive (base moved to the lowest address, the counter reversed), then
        sorted by descending stride (ties: original order)."""
        keep = set(keep)
        dims = [k for k, (s, u) in enumerate(zip(self.strides, self.bounds))
                if s != 0 and (u > 1 or k in keep)]
        dims.sort(key=lambda k: (-abs(self.strides[k]), k))
        lo, _ = self.interval()
        return Canonical(lo, tuple(abs(self.strides[k]) for k in dims),
                         tuple(self.bounds[k] for k in dims), tuple(dims),
                         tuple(self.strides[k] < 0 for k in dims), len(self.strides))


@dataclass(frozen=True)
class Canonical:
    """A CSLMAD in the form §4.3.3 reasons about: positive strides in descending
    order, base = lowest address.  ``dims[k]`` is the original dimension of
    canonical dimension k and ``flips[k]`` whether its counter runs backwards
    (``i_k = u - 1 - t``), so results map back to the original counters."""
    base: int
    strides: tuple[int, ...]
    bounds: tuple[int, ...]
    dims: tuple[int, ...]
    flips: tuple[bool, ...]
    ndim: int                       # dimensions of the original CSLMAD

    @property
    def d(self) -> int:
        return len(self.strides)

    def size(self) -> int:
        return prod(self.bounds)

    def is_restricted(self) -> bool:
        return is_restricted(self.strides, self.bounds)

    def key(self) -> tuple:
        return (self.base, self.strides, self.bounds)


def is_restricted(strides: Sequence[int], bounds: Sequence[int]) -> bool:
    """Definition 1 (the "no overlap test"): with strides in descending order,
    ``s_k > Σ_{p>k} s_p·(u_p - 1)`` for every k < d.  By Theorem 1 such an RCSLMAD's
    addresses increase strictly in lexicographic order, so all are distinct."""
    tail = 0
    for k in range(len(strides) - 1, -1, -1):
        if k < len(strides) - 1 and not strides[k] > tail:
            return False
        tail += strides[k] * (bounds[k] - 1)
    return True


def is_rcslmad(f: CSLMAD) -> bool:
    """Whether ``f`` is an RCSLMAD (Definition 1), after sorting its dimensions."""
    c = f.canonical()
    return c.is_restricted()


# ---- overlap graph ----------------------------------------------------------------

def overlap_components(intervals: Sequence[tuple[int, int]],
                       links: Iterable[tuple[int, int]] = ()) -> list[list[int]]:
    """Connected components of the memory-reference overlap graph (§4.3): vertices
    are references, an edge joins two whose address intervals intersect; ``links``
    adds edges the caller needs (references through one kernel pointer).  Returns
    lists of vertex indices, each sorted, ordered by their lowest address."""
    n = len(intervals)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    order = sorted(range(n), key=lambda i: intervals[i])
    reach_hi, reach_v = None, None       # sweep: a vertex overlaps the running maximum
    for i in order:
        lo, hi = intervals[i]
        if reach_hi is not None and lo <= reach_hi:
            union(i, reach_v)
        if reach_hi is None or hi > reach_hi:
            reach_hi, reach_v = hi, i
    for a, b in links:
        union(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    comps = [sorted(g) for g in groups.values()]
    comps.sort(key=lambda g: min(intervals[i][0] for i in g))
    return comps


# ---- placements -------------------------------------------------------------------

@dataclass
class MemberPlacement:
    """Where one member lands: device offset = ``const + Σ_k coeffs[k]·i_k`` over its
    canonical counters ``i`` (see :meth:`GroupPlacement.affine` for the original
    counters).  For the packed cases ``const = rank + q·Σ_k shift_k·W_k`` and
    ``coeffs[k] = q·W_k`` with ``W_k = Π_{l>k} periods_l``."""
    canonical: Canonical
    const: int
    coeffs: tuple[int, ...]
    rank: int = 0
    shifts: tuple[int, ...] = ()


@dataclass
class GroupPlacement:
    """One connected component mapped onto a compact device buffer of ``size``
    elements.  ``q``/``periods`` describe the packed layout (``q`` residues times
    the box ``periods``); for ``bounding-interval`` ``periods == (size,)``."""
    case: str
    size: int
    members: list[MemberPlacement]
    q: int = 1
    periods: tuple[int, ...] = ()
    origin: int = 0                  # lowest host address of the group
    notes: list[Note] = field(default_factory=list)

    def affine(self, m: int) -> tuple[int, tuple[int, ...]]:
        """Member ``m``'s device offset as ``(c, e)``: ``c + Σ_j e_j·t_j`` over the
        member's *original* counters ``t`` (reversed counters undone)."""
        mp = self.members[m]
        c = mp.canonical
        const = mp.const
        e = [0] * c.ndim
        for k, (j, flip) in enumerate(zip(c.dims, c.flips)):
            if flip:                 # i_k = u_k - 1 - t_j
                const += mp.coeffs[k] * (c.bounds[k] - 1)
                e[j] -= mp.coeffs[k]
            else:
                e[j] += mp.coeffs[k]
        return const, tuple(e)

    def device_offset(self, m: int, counters: Sequence[int]) -> int:
        c, e = self.affine(m)
        return c + sum(x * y for x, y in zip(e, counters))

    def reflected(self, k: int | None) -> "GroupPlacement":
        """The same buffer with canonical dimension ``k`` laid out backwards
        (``c_k -> periods_k - 1 - c_k``), or the whole buffer reversed when ``k`` is
        None.  Still a bijection onto ``[0, size)``; used to give every kernel
        subscript a non-negative device stride when host strides are negative."""
        out = []
        for mp in self.members:
            if k is None:
                out.append(replace(mp, const=self.size - 1 - mp.const,
                                   coeffs=tuple(-x for x in mp.coeffs)))
                continue
            w = self.q * prod(self.periods[k + 1:])
            t = mp.shifts[k] if mp.shifts else 0
            coeffs = list(mp.coeffs)
            if k < len(coeffs):
                coeffs[k] = -coeffs[k]
            out.append(replace(mp, const=mp.const + w * (self.periods[k] - 1 - 2 * t),
                               coeffs=tuple(coeffs)))
        return replace(self, members=out)

    @property
    def packed(self) -> bool:
        return self.case != "bounding-interval"


def _packed(case: str, cans: list[Canonical], q: int, periods: tuple[int, ...],
            ranks: list[int], shifts: list[tuple[int, ...]], origin: int) -> GroupPlacement:
    d = len(periods)
    w = [q * prod(periods[k + 1:]) for k in range(d)]
    members = []
    for c, p, t in zip(cans, ranks, shifts):
        const = p + sum(tk * wk for tk, wk in zip(t, w))
        members.append(MemberPlacement(c, const, tuple(w[:c.d]), p, tuple(t)))
    return GroupPlacement(case, q * prod(periods), members, q, tuple(periods), origin)


def _ranks(residues: Sequence[int]) -> tuple[int, list[int]]:
    """q and the rank of each residue among the distinct ones (§4.3.2: sort, remove
    duplicates, ``V[p_j] = r_j``)."""
    v = sorted(set(residues))
    pos = {r: i for i, r in enumerate(v)}
    return len(v), [pos[r] for r in residues]


def bounding_interval(cans: list[Canonical], note: str = "") -> GroupPlacement:
    """The interval from the lowest to the highest address: member offsets are
    host address minus the lowest."""
    lo = min(c.base for c in cans)
    hi = max(c.base + sum(s * (u - 1) for s, u in zip(c.strides, c.bounds)) for c in cans)
    size = hi - lo + 1
    members = [MemberPlacement(c, c.base - lo, tuple(c.strides)) for c in cans]
    g = GroupPlacement("bounding-interval", size, members, 1, (size,), lo)
    if note:
        g.notes.append(Note(Stage.TRANSFERS, note, kind="fallback"))
    return g


def single_1d(c: Canonical) -> GroupPlacement:
    """§4.3.1: ``s·i + b`` over ``[0, u)`` -> ``i`` (``u`` locations)."""
    u = c.bounds[0] if c.d else 1
    return _packed("single-1d", [c], 1, (u,), [0], [(0,) * c.d], c.base)


def interleaved_1d(cans: list[Canonical]) -> GroupPlacement:
    """§4.3.2: one-dimensional CSLMADs with one stride ``s`` (members that touch a
    single location count as ``u = 1``): ``q·(u + v_n)`` locations,
    ``g_j(i) = q·(i + v_j) + p_j``."""
    s = next(c.strides[0] for c in cans if c.d)
    b1 = min(c.base for c in cans)
    v = [(c.base - b1) // s for c in cans]                       # eq. 3
    r = [(c.base - b1) % s for c in cans]                        # eq. 4
    q, ranks = _ranks(r)
    us = [c.bounds[0] if c.d else 1 for c in cans]
    periods = max(vj + uj for vj, uj in zip(v, us))              # u + v_n
    shifts = [(vj,) for vj in v]
    return _packed("interleaved-1d", cans, q, (periods,), ranks, shifts, b1)


def rcslmad(c: Canonical) -> GroupPlacement:
    """§4.3.3: an RCSLMAD accesses ``|D|`` distinct locations (Corollary 1), packed
    in lexicographic order (which Theorem 1 shows is address order)."""
    return _packed("rcslmad", [c], 1, tuple(c.bounds), [0], [(0,) * c.d], c.base)


def _theorem2(cans: list[Canonical]) -> bool:
    """Constraints 14 and 15 of Theorem 2 (equal strides and domains assumed)."""
    s, u = cans[0].strides, cans[0].bounds
    d = len(s)
    for k in range(d - 1):
        if not s[k] > s[d - 1] - 1 + sum(s[p] * (u[p] - 1) for p in range(k + 1, d)):
            return False
    b1 = min(c.base for c in cans)
    return all(c.base - b1 < s[d - 1] for c in cans)


def rcslmad_group(cans: list[Canonical], hint=None) -> GroupPlacement | None:
    """§4.3.4: RCSLMADs with equal strides.  First case (Theorem 2): ``n·|D|``
    locations; second case: the ILP of eq. 29–34.  ``hint(cans)`` may propose a
    solution ``(b', r, t, u')`` of the ILP's constraints (the caller knows the
    references' boxes); it is used, once checked against eq. 29–32, when the ILP
    has too many unknowns or finds nothing better.  None when nothing applies."""
    s = cans[0].strides
    d = len(s)
    b1 = min(c.base for c in cans)
    if all(c.bounds == cans[0].bounds for c in cans) and _theorem2(cans):
        q, ranks = _ranks([c.base - b1 for c in cans])
        return _packed("rcslmad-group", cans, q, tuple(cans[0].bounds), ranks,
                       [(0,) * d for _ in cans], b1)
    sol, how = _ilp(cans), "ILP of §4.3.4"
    alt = hint(cans) if hint is not None else None
    if alt is not None and not _feasible(cans, alt):
        alt = None
    if alt is not None and (sol is None or _cost(alt) < _cost(sol)):
        sol, how = alt, "the references' covering box, checked against eq. 29-32 of §4.3.4"
    if sol is None:
        return None
    bp, r, t, up = sol
    q, ranks = _ranks(r)
    g = _packed("rcslmad-group", cans, q, tuple(up), ranks, [tuple(x) for x in t], bp)
    g.notes.append(Note(Stage.TRANSFERS, f"stretched domain u'={tuple(up)}, b'={bp} ({how})",
                        kind="info"))
    return g


def _cost(sol) -> int:
    bp, r, t, up = sol
    return len(set(r)) * prod(up)


def _feasible(cans: list[Canonical], sol) -> bool:
    """Constraints 29–32 of §4.3.4 for a proposed ``(b', r, t, u')``: then the
    stretched group G' satisfies Theorem 2 and covers every member."""
    bp, r, t, up = sol
    s = cans[0].strides
    d = len(s)
    if len(up) != d or len(r) != len(cans) or any(len(x) != d for x in t):
        return False
    for m, c in enumerate(cans):
        if not 0 <= r[m] < s[d - 1]:                                              # (29)
            return False
        if sum(s[k] * t[m][k] for k in range(d)) + r[m] + bp != c.base:           # (30)
            return False
        if any(t[m][k] < 0 or c.bounds[k] + t[m][k] > up[k] for k in range(d)):  # (31)
            return False
    for k in range(d - 1):                                                        # (32)
        if not s[k] > s[d - 1] - 1 + sum(s[p] * (up[p] - 1) for p in range(k + 1, d)):
            return False
    return True


def _ilp(cans: list[Canonical]):
    """Second case of §4.3.4, solved exactly with isl: find ``b'``, ``0 <= r_m < s_d``
    (29), ``t_mk >= 0`` with ``Σ_k s_k·t_mk + r_m + b' = b_m`` (30),
    ``u_mk + t_mk <= u'_k`` (31), ``s_k > s_d - 1 + Σ_{p>k} s_p·(u'_p - 1)`` (32)
    and ``b_1 - s_1 < b' <= b_1`` (34), minimising ``Σ_k u'_k`` (33).  Returns
    ``(b', r, t, u')`` or None (infeasible, or too many unknowns)."""
    import islpy as isl
    n, s = len(cans), cans[0].strides
    d = len(s)
    if 1 + n + n * d + d + 1 > ILP_MAX_UNKNOWNS:
        return None
    b1 = min(c.base for c in cans)
    names = (["obj", "bp"] + [f"r{m}" for m in range(n)]
             + [f"t{m}_{k}" for m in range(n) for k in range(d)] + [f"u{k}" for k in range(d)])
    cons = [f"obj = {' + '.join(f'u{k}' for k in range(d))}",
            f"{b1 - s[0]} < bp <= {b1}"]
    for m, c in enumerate(cans):
        cons.append(f"0 <= r{m} < {s[d - 1]}")                                   # (29)
        lhs = " + ".join(f"{s[k]}*t{m}_{k}" for k in range(d))
        cons.append(f"{lhs} + r{m} + bp = {c.base}")                             # (30)
        for k in range(d):
            cons.append(f"t{m}_{k} >= 0")
            cons.append(f"{c.bounds[k]} + t{m}_{k} <= u{k}")                     # (31)
    for k in range(d - 1):
        tail = " + ".join(f"{s[p]}*u{p}" for p in range(k + 1, d))
        const = s[d - 1] - 1 - sum(s[p] for p in range(k + 1, d))
        cons.append(f"{s[k]} > {const} + {tail}")                                # (32)
    text = "{ [" + ", ".join(names) + "] : " + " and ".join(cons) + " }"
    try:
        st = isl.Set(text)
        if st.is_empty():
            return None
        # min of (33), then any point at that minimum: isl's ILP answers in
        # milliseconds where the lexmin of all unknowns (a parametric integer
        # program) took up to 10 s a call (fuzz finding 34)
        obj = isl.Aff.var_on_domain(isl.LocalSpace.from_space(st.get_space()),
                                    isl.dim_type.set, 0)
        best = st.min_val(obj)
        if not best.is_int():
            return None
        pt = st.fix_val(isl.dim_type.set, 0, best).sample_point()
        if pt.is_void():
            return None
    except isl.Error:
        return None
    vals = [int(pt.get_coordinate_val(isl.dim_type.set, i).to_python())
            for i in range(len(names))]
    v = dict(zip(names, vals))
    r = [v[f"r{m}"] for m in range(n)]
    t = [[v[f"t{m}_{k}"] for k in range(d)] for m in range(n)]
    up = [v[f"u{k}"] for k in range(d)]
    return v["bp"], r, t, up


def analyse_group(members: Sequence[CSLMAD],
                  keep: Sequence[Iterable[int]] | None = None, hint=None) -> GroupPlacement:
    """The §4.3 case analysis of one connected component.  ``keep[m]`` lists
    dimensions of member m to keep in the canonical form even where ``u = 1``
    (so references of one array compare on the array's dimensions).

    Identical members (same canonical base, strides and bounds) share one
    placement; the returned placement has one :class:`MemberPlacement` per input.
    ``hint`` is passed to :func:`rcslmad_group`; it receives the distinct members'
    canonical forms.
    """
    if not members:
        raise ValueError("analyse_group needs at least one CSLMAD")
    cans_all = [f.canonical(keep[m] if keep else ()) for m, f in enumerate(members)]
    uniq: dict[tuple, int] = {}
    index = []
    for c in cans_all:
        index.append(uniq.setdefault(c.key(), len(uniq)))
    cans = [None] * len(uniq)
    for c, i in zip(cans_all, index):
        if cans[i] is None:
            cans[i] = c
    g = _analyse_unique(cans, hint)
    # expand back to one member per input (duplicates share the representative's map,
    # re-expressed through their own canonical dims, which are identical)
    out = []
    for c, i in zip(cans_all, index):
        rep = g.members[i]
        out.append(replace(rep, canonical=c))
    return replace(g, members=out)


def _analyse_unique(cans: list[Canonical], hint=None) -> GroupPlacement:
    if len(cans) == 1:
        c = cans[0]
        if c.d <= 1:
            return single_1d(c)
        if c.is_restricted():
            return rcslmad(c)
        return bounding_interval(cans, "the CSLMAD fails the no-overlap test "
                                       "(Definition 1): its accesses may repeat")
    ds = {c.d for c in cans}
    nonzero = {c.strides for c in cans if c.d}
    if ds <= {0, 1}:
        if len(nonzero) == 1:
            return interleaved_1d(cans)
        if not nonzero:        # single locations only
            return bounding_interval(cans)
        return bounding_interval(cans, "one-dimensional references with different strides")
    if len(ds) == 1 and len(nonzero) == 1:
        if all(c.is_restricted() for c in cans):
            g = rcslmad_group(cans, hint)
            if g is not None:
                return g
            return bounding_interval(cans, "no stretched RCSLMAD group covers these "
                                           "references (the ILP of §4.3.4 is infeasible)")
        return bounding_interval(cans, "a reference fails the no-overlap test (Definition 1)")
    return bounding_interval(cans, "references with different strides")


__all__ = ["CSLMAD", "Canonical", "GroupPlacement", "MemberPlacement", "is_restricted",
           "is_rcslmad", "overlap_components", "analyse_group", "bounding_interval",
           "ILP_MAX_UNKNOWNS"]
