"""Localisation along a sequential loop: seed 001 §4 (Größlinger, CC 2009).

Seed 000's buffers (:mod:`.scratchpad`) are filled and emptied for every tile; this
module keeps what one iteration of a *sequential* loop ``t`` (a time loop, gemm's
``k`` loop, the ``i`` loop of 1d-SOR) reuses from the previous one, and moves only
the difference.  Everything is parametric in the *prefix* ``p = (outer..., t)``: the
schedule values of the loops enclosing the statements down to ``t`` (outer loops,
block and thread ids for a loop inside a kernel).  For one array:

* §4.2 the cached set ``C(p) = ∪_j ∪_{τ<w} C_j(p + τ)`` with ``C_j(p)`` the elements
  reference ``j`` touches at ``p`` and ``w`` the localisation window; move-in
  ``I(p) = C(p) − C(p−1)``, move-out ``O(p) = C(p) − C(p+1)``, kept
  ``G(p) = C(p) ∩ C(p+1)`` (``±1`` on the last prefix dimension, ``t``).  All are
  isl maps ``{ [p] -> A[x] }``; ``C`` only exists at prefixes with instances, so the
  first step of every outer iteration loads all of ``C`` and the last stores it.
* §4.1 the placement ``ρ(x, p) = |{ y ∈ C(p) : y ≺ x }|``, counted with barvinok
  (``Map.card()`` of islpy-barvinok returns a piecewise quasi-polynomial); when
  every piece is (quasi-)affine it becomes an :class:`isl.PwAff` that isl prints as
  code and whose pieces split the statement domains (§4.5).  Otherwise a
  bounding-box layout ``x − lo(p)`` is used and :attr:`Localisation.notes` says so.
  The storage is ``max_p |C(p)|`` (an isl bound over every prefix and parameter).
* §4.4 the drift ``δ(x, p) = ρ(x, p+1) − ρ(x, p)`` on ``G``; the reorganisation is
  an in-situ two-pass move (ascending over ``δ < 0``, descending over ``δ > 0``) or,
  when ``δ`` is one constant, modulo addressing ``(ρ − δ·t) mod s`` with no moves.
* §4.3 dependence-based sets from access-level (tagged) dataflow restricted to the
  window: global/local writes ``W_g``, ``W_l`` and reads ``R_l``, ``R_g``, ``R_gl``
  (:func:`dependence_sets`), and the liveness refinement of the move-out: only
  elements written while they are held in ``L`` are stored back (:func:`live_move_out`).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import islpy as isl

from ..isl_util import OperationBudget, TimedOut, budget_spent, in_child
from ..notes import Note, Stage
from ..scop import Scop
from .scratchpad import data_spaces


#: isl operations each step of a localisation may take (its access sets, the count of
#: ρ, the bounding box, the drift): past it, the box layout or no localisation
COUNT_OPERATIONS = 3_000_000
#: seconds a barvinok count may take (it ignores the operation budget)
COUNT_SECONDS = 10.0
#: a compact placement ρ with more pieces than this is not printed: the bounding-box
#: layout is used (each piece is a case of the generated subscript, seed 001 §4.5)
MAX_RHO_PIECES = 4


class LocaliseError(ValueError):
    """The chosen loop cannot be localised (reason in the message)."""


@dataclass(frozen=True)
class Localisation:
    """Seed 001 §4 for one array along the last dimension of a prefix."""
    array: str
    window: int
    refs: list[tuple[str, int]]       # (statement, access index) served from L
    cached: isl.Map                   # C: { [p] -> A[x] }
    move_in: isl.Map                  # I
    move_out: isl.Map                 # O (every element leaving L)
    kept: isl.Map                     # G
    count: isl.PwQPolynomial | None   # ρ as counted by barvinok, on { [[p] -> A[x]] }
    index: list[isl.PwAff]            # L's subscripts on { [[p] -> A[x]] }: [ρ], or the box's
    extents: list[int | None]         # L's extents (None: grows with the sizes)
    layout: str                       # 'compact' (§4.1) or 'box' (fallback)
    drifts: list[isl.PwAff]           # δ per subscript on { [[p] -> A[x]] : x ∈ G(p) } ([]: unknown)
    constant_drift: tuple[int, ...] | None   # δ when it is one constant per subscript
    written: bool                     # some served reference writes the array
    notes: list[Note] = field(default_factory=list)

    @property
    def rho(self) -> isl.PwAff:
        """ρ(x, p) of §4.1 (the first subscript of a box layout)."""
        return self.index[0]

    @property
    def storage(self) -> int | None:
        """Elements of L (§4.1: ``max_p |C(p)|`` for the compact placement)."""
        n = 1
        for e in self.extents:
            if e is None:
                return None
            n *= e
        return n

    @property
    def drift(self) -> isl.PwAff:
        """δ of §4.4 (the first subscript of a box layout)."""
        return self.drifts[0]

    @property
    def reorg(self) -> str:
        """Default reorganisation (§4.4): nothing to do when nothing moves,
        modulo addressing when the drift is constant, else the two-pass move."""
        if self.kept.is_empty() or (self.constant_drift is not None
                                    and not any(self.constant_drift)):
            return "none"
        if self.constant_drift is not None:
            return "modulo"
        return "move" if self.drifts else "unknown"

    def moves(self, sign: int) -> isl.Map:
        """Elements of ``G(p)`` whose drift has the given sign (a pass of §4.4)."""
        lin = self.drifts[0]
        for d, e in zip(self.drifts[1:], self.extents[1:]):   # row-major order of a box
            lin = lin.scale_val(isl.Val(e or 1 << 20)).add(d)
        zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(lin.get_domain_space()))
        sel = lin.gt_set(zero) if sign > 0 else lin.lt_set(zero)
        return self.kept.intersect(sel.unwrap())


# ---- prefixes -------------------------------------------------------------------------

def shift(prefix_space: isl.Space, tau: int) -> isl.Map:
    """``{ [p..., t] -> [p..., t + tau] }`` on a prefix (set) space."""
    ma = isl.MultiAff.identity(isl.Space.map_from_set(prefix_space))
    d = prefix_space.dim(isl.dim_type.set)
    return isl.Map.from_multi_aff(ma.set_at(d - 1, ma.get_at(d - 1).add_constant_val(
        isl.Val(tau))))


def time_prefix(scop: Scop, loop: str) -> isl.UnionMap:
    """The original-order prefix ``S[i] -> [outer..., loop]`` of every statement
    inside the loop named ``loop`` (the statements must share its outer loops)."""
    out = None
    outer: tuple[str, ...] | None = None
    for s in scop.statements:
        if loop not in s.iterators:
            continue
        names = s.iterators[:s.iterators.index(loop) + 1]
        if outer is not None and names != outer:
            raise LocaliseError(f"statements inside '{loop}' have different outer loops "
                                f"({', '.join(outer)} / {', '.join(names)})")
        outer = names
        m = isl.Map(f"[{', '.join(scop.size_params)}] -> {{ {s.name}[{', '.join(s.iterators)}]"
                    f" -> [{', '.join(names)}] }}").intersect_domain(s.domain)
        um = isl.UnionMap.from_map(m)
        out = um if out is None else out.union(um)
    if out is None:
        raise LocaliseError(f"no loop named '{loop}' encloses a statement")
    return out


# ---- §4.2: cached, move-in, move-out, kept ------------------------------------------

def _union(maps: list[isl.Map]) -> isl.Map | None:
    out = None
    for m in maps:
        out = m if out is None else out.union(m)
    return out.coalesce() if out is not None else None


def access_sets(cj: isl.Map, window: int) -> tuple[isl.Map, isl.Map, isl.Map, isl.Map]:
    """(C, I, O, G) of §4.2 from the union of the ``C_j`` (``{ [p] -> A[x] }``)."""
    if window < 1:
        raise LocaliseError(f"the localisation window must be at least 1, got {window}")
    steps = cj.domain()
    space = steps.get_space()
    c = cj
    for tau in range(1, window):
        c = c.union(shift(space, tau).apply_range(cj))     # C_j(p + tau) seen from p
    c = c.intersect_domain(steps).coalesce()
    prev = shift(space, -1).apply_range(c)                 # p -> C(p - 1)
    nxt = shift(space, 1).apply_range(c)                   # p -> C(p + 1)
    return (c, c.subtract(prev).coalesce(), c.subtract(nxt).coalesce(),
            c.intersect(nxt).coalesce())


# ---- §4.1: placement --------------------------------------------------------------------

def rank_count(c: isl.Map) -> isl.PwQPolynomial:
    """``ρ(x, p) = |{ y ∈ C(p) : y ≺ x }|`` on ``{ [[p] -> A[x]] : x ∈ C(p) }``,
    counted by barvinok (zero where isl leaves no piece)."""
    before = isl.Map.lex_gt(c.get_space().range())         # x -> y with y ≺ x
    m = c.domain_map().apply_range(c)                      # [p -> x] -> y ∈ C(p)
    m = m.intersect(c.range_map().apply_range(before)).intersect_domain(c.wrap())
    return m.card()


def bounded_rank_count(c: isl.Map, seconds: float | None = None) -> isl.PwQPolynomial:
    """:func:`rank_count` in a child process that is killed after ``seconds``
    (:data:`COUNT_SECONDS`): barvinok ignores isl's operation budget.  Raises
    :class:`TimedOut` then (the caller falls back to the bounding-box layout)."""
    text = in_child(lambda: str(rank_count(c)), COUNT_SECONDS if seconds is None else seconds)
    return isl.PwQPolynomial.read_from_str(c.get_ctx(), text)


@contextmanager
def trial_limits(seconds: float, operations: int):
    """Bound every barvinok count below to ``seconds`` and every step to
    ``operations`` isl operations (the default localisation tries loops nobody asked
    for: it must stay quick)."""
    global COUNT_SECONDS, COUNT_OPERATIONS
    saved = COUNT_SECONDS, COUNT_OPERATIONS
    COUNT_SECONDS, COUNT_OPERATIONS = min(COUNT_SECONDS, seconds), min(COUNT_OPERATIONS,
                                                                       operations)
    try:
        yield
    finally:
        COUNT_SECONDS, COUNT_OPERATIONS = saved


def qpoly_to_pw_aff(q: isl.PwQPolynomial, domain: isl.Set) -> isl.PwAff | None:
    """The count as a PwAff on ``domain`` (zero outside its pieces), or None when a
    piece is not quasi-affine (it could not be printed as integer code)."""
    out = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(domain.get_space()))
    out = out.intersect_domain(domain)
    pieces: list[tuple[isl.Set, isl.QPolynomial]] = []
    q.foreach_piece(lambda s, p: pieces.append((s, p)))
    for s, p in pieces:
        if not p.isa_aff():
            return None
        aff = isl.PwAff.from_aff(p.as_aff()).intersect_domain(s.intersect(domain))
        out = out.subtract_domain(aff.domain()).union_add(aff)
    return _one_piece(out.coalesce(), domain)


def _one_piece(rho: isl.PwAff, domain: isl.Set) -> isl.PwAff:
    """ρ as a single affine expression when one of its pieces' formulas holds on the
    whole domain (1d-SOR: the count is 0 at ``x = i − 1`` and ``x − i + 1`` elsewhere,
    both ``x − i + 1``): fewer domain splits in the generated code (§4.5)."""
    pieces: list[isl.Aff] = []
    rho.foreach_piece(lambda _s, a: pieces.append(a))
    if len(pieces) < 2:
        return rho
    for a in pieces:
        cand = isl.PwAff.from_aff(a).intersect_domain(domain)
        if cand.eq_set(rho).is_equal(domain):
            return cand
    return rho


def box_index(c: isl.Map) -> tuple[list[isl.PwAff], list[int | None]]:
    """Bounding-box layout (the fallback): subscripts ``x_d − lo_d(p)`` and the
    largest extent of each dimension (None if it grows with the sizes).  Bounded
    by isl's operation budget (a skewed cached set's lexmin ran for minutes, fuzz
    finding 30): :class:`LocaliseError` past it."""
    try:
        with OperationBudget(c.get_ctx(), COUNT_OPERATIONS):
            return _box_index_unbounded(c)
    except isl.Error as e:
        raise LocaliseError("its bounding box took too many isl operations") from e


def _box_index_unbounded(c: isl.Map) -> tuple[list[isl.PwAff], list[int | None]]:
    n = c.dim(isl.dim_type.out)
    wrapped = c.wrap()
    sp = wrapped.get_space()
    lexp = isl.LocalSpace.from_space(sp)
    index, extents = [], []
    for d in range(n):
        cd = c.project_out(isl.dim_type.out, d + 1, n - d - 1).project_out(
            isl.dim_type.out, 0, d)                        # p -> x_d
        lo = cd.lexmin_pw_multi_aff().get_pw_aff(0)
        hi = cd.lexmax_pw_multi_aff().get_pw_aff(0)
        extents.append(constant_bound(hi.sub(lo).add_constant_val(isl.Val(1))))
        xd = isl.PwAff.var_on_domain(lexp, isl.dim_type.set, c.dim(isl.dim_type.in_) + d)
        lo_w = lo.pullback_multi_aff(isl.MultiAff.domain_map(sp.unwrap()))
        index.append(xd.intersect_domain(wrapped).sub(lo_w).coalesce())
    return index, extents


def constant_bound(pa: isl.PwAff) -> int | None:
    """Largest value of a PwAff over its domain and every parameter, if finite."""
    try:
        v = pa.max_val()
    except isl.Error:
        return None
    if v.is_infty() or v.is_nan() or v.is_neginfty():
        return None
    return int(v.to_python())


def storage(c: isl.Map) -> int | None:
    """``max_p |C(p)|`` (§4.1), as a constant over every size; None if it grows."""
    best: list[int | None] = [0]

    def piece(dom: isl.Set, fold: isl.QPolynomialFold):
        def qp(q: isl.QPolynomial):
            if best[0] is None:
                return
            if not q.isa_aff():
                best[0] = None
                return
            v = constant_bound(isl.PwAff.from_aff(q.as_aff()).intersect_domain(dom))
            best[0] = None if v is None else max(best[0], v)
        fold.foreach_qpolynomial(qp)
    storage_bound(c).foreach_piece(piece)
    return best[0]


def storage_bound(c: isl.Map) -> isl.PwQPolynomialFold:
    """``max_p |C(p)|`` as a function of the size parameters (barvinok bound)."""
    bound, _tight = c.card().bound(isl.fold.max)
    return bound


def drift(index: list[isl.PwAff], kept: isl.Map
          ) -> tuple[list[isl.PwAff], tuple[int, ...] | None]:
    """``δ(x, p) = ρ(x, p+1) − ρ(x, p)`` on ``G`` (§4.4, Definition 4), per subscript,
    and its values when each is one constant."""
    wrapped = kept.wrap()
    out, consts = [], []
    for rho in index:
        if wrapped.is_empty():
            out.append(rho.intersect_domain(wrapped))
            consts.append(0)
            continue
        nxt = rho.pullback_multi_aff(_wrapped_shift(kept.get_space()))
        d = nxt.intersect_domain(wrapped).sub(rho.intersect_domain(wrapped)).coalesce()
        out.append(d)
        lo, hi = constant_bound(d.neg()), constant_bound(d)
        consts.append(hi if lo is not None and hi is not None and -lo == hi else None)
    return out, (None if None in consts else tuple(consts))


def _wrapped_shift(sp: isl.Space) -> isl.MultiAff:
    """``[[p..., t] -> A[x]] -> [[p..., t + 1] -> A[x]]``."""
    np_ = sp.dim(isl.dim_type.in_)
    w = sp.wrap()
    ma = isl.MultiAff.identity(isl.Space.map_from_set(w))
    last = ma.get_at(np_ - 1).add_constant_val(isl.Val(1))
    return ma.set_at(np_ - 1, last)


def localise(scop: Scop, prefix: isl.UnionMap, array: str, window: int = 1,
             refs: list[tuple[str, int]] | None = None, require_reuse: bool = False
             ) -> Localisation:
    """Seed 001 §4.1, §4.2 and §4.4 for ``array`` along the last dimension of
    ``prefix`` (statement instances -> ``[outer..., t]``).  ``require_reuse``: raise
    :class:`LocaliseError` before counting when nothing is kept from one step to the
    next (G empty), the cheap answer the planner needs."""
    if array in scop.global_only:
        raise LocaliseError(f"{array} is read or written through a data-dependent subscript "
                            "or condition (global memory only)")
    spaces = [d for d in data_spaces(scop, prefix, {array})
              if refs is None or (d.stmt, d.ref) in refs]
    if not spaces:
        raise LocaliseError(f"{array} is not accessed inside the loop")
    cj = _union([d.relation for d in spaces])
    try:
        with OperationBudget(cj.get_ctx(), COUNT_OPERATIONS):
            c, i, o, g = access_sets(cj, window)
    except isl.Error as e:
        if not budget_spent(e):
            raise
        raise LocaliseError(f"its access sets took more than {COUNT_OPERATIONS} isl "
                            "operations") from None
    if require_reuse and g.is_empty():
        raise LocaliseError("no reuse from one step to the next: G is empty")
    notes = []
    count, rho, why = None, None, "counting it took too long"
    try:
        with OperationBudget(c.get_ctx(), COUNT_OPERATIONS):
            count = bounded_rank_count(c)
            rho = qpoly_to_pw_aff(count, c.wrap())
            why = "the rank count is not quasi-affine, so it cannot be printed as integer code"
            extents = [in_child(lambda: storage(c), COUNT_SECONDS)] if rho is not None else []
    except (isl.Error, TimedOut):
        rho = None
    if rho is not None and rho.n_piece() > MAX_RHO_PIECES:
        why = f"ρ has {rho.n_piece()} pieces; at most {MAX_RHO_PIECES} are printed per access"
        rho = None
    if rho is not None:
        index, layout = [rho], "compact"
    else:
        index, extents = box_index(c)
        layout = "box"
        notes.append(Note(Stage.LOCALISE, f"bounding-box layout instead of the compact placement "
                          f"({why})", subject=array, kind="fallback"))
    if None in extents:
        notes.append(Note(Stage.LOCALISE, "the cached set grows with the problem size",
                          subject=array, kind="info"))
    try:
        with OperationBudget(c.get_ctx(), COUNT_OPERATIONS):
            drifts, const = drift(index, g)
    except isl.Error:
        drifts, const = [], None
        notes.append(Note(Stage.LOCALISE, "the drift was not computed (too many isl operations); "
                          "no reorganisation is generated", subject=array, kind="fallback"))
    return Localisation(array, window, [(d.stmt, d.ref) for d in spaces], c, i, o, g,
                        count, index, extents, layout, drifts, const,
                        any(d.is_write for d in spaces), notes)


def total(m: isl.Map | isl.Set, sizes: dict[str, int]) -> int:
    """Number of ``(p, x)`` pairs of a relation (or points of a set) at given sizes,
    by barvinok: the element moves of a move-in or move-out summed over the loop."""
    s = m.wrap() if isinstance(m, isl.Map) else m
    q = s.card()
    pt = isl.Point.zero(q.get_domain_space())
    for k, name in enumerate(q.get_domain_space().get_var_names(isl.dim_type.param)):
        pt = pt.set_coordinate_val(isl.dim_type.param, k, isl.Val(int(sizes[name])))
    return int(q.eval(pt).to_python())


# ---- §4.3: dependence-based localisation ------------------------------------------------

@dataclass(frozen=True)
class DependenceSets:
    """Access instances ``{ [S[i] -> R<k>[]] }`` (``k`` = access index) by kind (§4.3)."""
    writes_global: isl.UnionSet       # W_g: not overwritten inside the window
    writes_local: isl.UnionSet        # W_l: read again inside the window
    reads_local: isl.UnionSet         # R_l: value already in L
    reads_global: isl.UnionSet        # R_g: from global memory, not reused
    reads_global_local: isl.UnionSet  # R_gl: from global memory, kept for a later read
    cached: isl.Map                   # C(p) from R_l ∪ R_gl ∪ W_l


def tagged_accesses(scop: Scop, array: str, writes: bool, prefix: isl.UnionMap) -> isl.UnionMap:
    """The reads (or writes) of ``array`` by the statement instances in ``prefix``'s
    domain, each tagged by its access: ``[S[i] -> R<k>[]] -> A[f(i)]`` (seed 001 §4.3:
    the dependence sets are formed per access instance)."""
    out = isl.UnionMap.empty(scop.context.get_space())
    dom = prefix.domain()
    for s in scop.statements:
        d = dom.extract_set(s.domain.get_space())
        if d.is_empty():
            continue
        for k, a in enumerate(s.accesses):
            if a.array != array or a.is_write != writes:
                continue
            tag = isl.Map(f"{{ {s.name}[{', '.join(s.iterators)}] -> R{k}[] }}")
            rel = a.relation.intersect_domain(d)
            # [S[i] -> R<k>[]] -> A[f(i)]
            t = tag.intersect_domain(d).align_params(rel.get_space()).domain_map() \
                .apply_range(rel)
            out = out.union(isl.UnionMap.from_map(t))
    return out


def dependence_sets(scop: Scop, prefix: isl.UnionMap, array: str,
                    window: int = 1) -> DependenceSets:
    """Seed 001 §4.3: classify the access instances of ``array`` inside the loop.

    Dependences are access-level (tagged: two references of one statement are
    different accesses) and computed on the original execution order; ``win(a, b)``
    holds when ``b`` runs in the same outer iteration at most ``window`` steps of the
    last prefix dimension after ``a`` (1d-SOR: the write of ``A[i]`` at step ``i`` is
    read at ``i + 1``, inside a window of 1)."""
    reads = tagged_accesses(scop, array, False, prefix)
    writes = tagged_accesses(scop, array, True, prefix)
    sched = scop.schedule.intersect_domain(prefix.domain())
    tsched = reads.domain().union(writes.domain()).unwrap().domain_map().apply_range(sched)
    tprefix = reads.domain().union(writes.domain()).unwrap().domain_map().apply_range(prefix)

    def flow(sink, src):
        info = isl.UnionAccessInfo.from_sink(sink).set_must_source(src)
        return info.set_schedule_map(tsched).compute_flow().get_may_dependence()

    flow_d = flow(reads, writes)                    # write -> read
    out_d = flow(writes, writes)                    # write -> later write
    in_d = flow(reads, reads)                       # read -> later read
    maps: list[isl.Map] = []
    tprefix.foreach_map(maps.append)
    pspace = maps[0].get_space().range()
    d = pspace.dim(isl.dim_type.set)
    names = ", ".join(f"p{k}" for k in range(d - 1))
    lead = f"{names}, " if names else ""
    win_p = isl.Map(f"{{ [{lead}t] -> [{lead}u] : t <= u <= t + {window} }}")
    win = tprefix.apply_range(isl.UnionMap.from_map(win_p)).apply_range(tprefix.reverse())
    in_win = lambda dep: dep.intersect(win)         # noqa: E731
    all_w, all_r = writes.domain(), reads.domain()
    w_l = in_win(flow_d).domain()
    w_g = all_w.subtract(in_win(out_d).domain())
    r_l = in_win(flow_d).range().union(in_win(in_d).range())
    reused = in_win(in_d).domain()
    r_g = all_r.subtract(reused).subtract(r_l)
    r_gl = reused.subtract(r_l)
    acc = reads.union(writes)
    # elements of the local accesses at p ≤ time(a) ≤ p + w
    cwin = isl.Map(f"{{ [{lead}t] -> [{lead}u] : t <= u <= t + {window} }}")
    local = acc.intersect_domain(r_l.union(r_gl).union(w_l))
    at = tprefix.reverse().apply_range(local)       # time(a) -> accelem(a)
    cached = isl.UnionMap.from_map(cwin).apply_range(at)
    cm: list[isl.Map] = []
    cached.foreach_map(cm.append)
    arr = isl.Set(f"{{ {array}[{', '.join(f'x{k}' for k in range(len(scop.arrays[array].shape)))}] }}")
    c = cm[0] if cm else isl.Map.empty(isl.Space.map_from_domain_and_range(
        pspace, arr.get_space()))
    sm: list[isl.Set] = []
    tprefix.range().foreach_set(sm.append)
    if sm:
        c = c.intersect_domain(sm[0])
    return DependenceSets(w_g.coalesce(), w_l.coalesce(), r_l.coalesce(), r_g.coalesce(),
                          r_gl.coalesce(), c.coalesce())


def live_move_out(loc: Localisation, scop: Scop, prefix: isl.UnionMap) -> isl.Map:
    """The move-out restricted to live values (§4.3's liveness, access-based form):
    ``x ∈ O(p)`` is stored back only if a served reference wrote ``x`` at a step
    ``q ≤ p`` of the same outer iteration while ``x`` stayed in ``L`` from ``q`` to
    ``p`` (no move-in of ``x`` in ``(q, p]``).  Elements only read since their
    move-in still equal the global copy."""
    if not loc.written:
        return loc.move_out.subtract(loc.move_out)
    try:
        with OperationBudget(loc.cached.get_ctx(), COUNT_OPERATIONS):
            return _live_move_out(loc, scop, prefix)
    except isl.Error:
        return loc.move_out          # every leaving element: correct, if not minimal


def _live_move_out(loc: Localisation, scop: Scop, prefix: isl.UnionMap) -> isl.Map:
    wr = [d.relation for d in data_spaces(scop, prefix, {loc.array})
          if d.is_write and (d.stmt, d.ref) in loc.refs]
    w = _union(wr)                                   # q -> x written at q
    sp = w.get_space().domain()
    d = sp.dim(isl.dim_type.set)
    names = ", ".join(f"o{k}" for k in range(d - 1))
    lead = f"{names}, " if names else ""
    later = isl.Map(f"{{ [{lead}q] -> [{lead}p] : q <= p }}")      # q -> p ≥ q
    later = later.intersect_domain(loc.cached.domain()).intersect_range(loc.cached.domain())
    qp_x = later.domain_map().apply_range(w)         # [q -> p] -> x written at q
    # a move-in of x at some r with q < r <= p breaks the residency
    between = isl.Map(f"{{ [[{lead}q] -> [{lead}p]] -> [{lead}r] : q < r <= p }}")
    moved = between.apply_range(loc.move_in).intersect(qp_x)
    held = qp_x.subtract(moved)                      # [q -> p] -> x, resident since q
    px = held.apply_domain(later.range_map())        # p -> x
    return loc.move_out.intersect(px).coalesce()


def traffic_change(scop: Scop, prefix: isl.UnionMap, loc: Localisation,
                   sizes: dict[str, int]) -> tuple[int, int]:
    """The analytic model: (Δ global loads, Δ global stores) of localising ``loc``
    at the given sizes.  Every served access instance leaves global memory; the
    move-ins ``Σ_p |I(p)|`` and the live move-outs ``Σ_p |O_live(p)|`` are added."""
    dom = prefix.domain()
    loads = stores = 0
    for stmt, k in loc.refs:
        s = scop.statement(stmt)
        n = total(dom.extract_set(s.domain.get_space()), sizes)
        if s.accesses[k].is_write:
            stores -= n
        else:
            loads -= n
    loads += total(loc.move_in, sizes)
    stores += total(live_move_out(loc, scop, prefix), sizes)
    return loads, stores
