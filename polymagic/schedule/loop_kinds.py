"""Loop-kind detection (seed 003 §5.3): forall, reduction, sequential or illegal.

For a set of statements enclosed by a loop at some level, each statement ``S``
chooses one of its iterators for that loop (a *combo*, seed 003 Algorithm 2 line 6:
``Θ_k^S(i) = ±i_j``).  With the dependence polyhedra ``D^{S→T}`` that the outer
levels leave active (not carried by them), the distances
``Δ = Θ_k^T(i') - Θ_k^S(i)`` classify the loop::

    ∀Δ ∈ ActSet: Δ = 0            ⇒ forall
    ∀Δ ∈ ActSet: Δ = 0 ∨ Δ ∈ RedSet ⇒ reduction
    ∀Δ ∈ ActSet: Δ ≥ 0            ⇒ sequential
    otherwise                      ⇒ illegal

``RedSet`` holds the distances of the dependences of an associative-commutative
update (``+=``, ``*=``, ``x = x + e``, ``x = max(x, e)``...) on its own accumulator
element: the only dependences a reduction loop may carry.

Everything is computed with isl on the dependence maps of :mod:`polymagic.deps`,
one map per statement pair, so a combo is tested in Python from per-pair tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import islpy as isl

from ..expr import Access, Assign, Binary, Call, Expr
from ..expr import walk as walk_expr
from ..scop import Scop, Statement


class LoopKind(str, Enum):
    FORALL = "forall"
    REDUCTION = "reduction"
    SEQUENTIAL = "sequential"
    ILLEGAL = "illegal"


#: a loop of one statement: (iterator position, direction +1 / -1)
Loop = tuple[int, int]
#: a loop level over several statements: statement name -> its loop
Combo = dict[str, Loop]


# ---- the original loop structure (2d+1 schedule of the front end) -------------------

@dataclass(frozen=True)
class OriginalNest:
    """One statement's place in the source: ``betas[k]`` is the textual position at
    depth k, ``loops[k]`` the iterator (and direction) of its k-th enclosing loop."""
    betas: tuple[int, ...]
    loops: tuple[Loop, ...]

    def shares_loop(self, other: "OriginalNest", k: int) -> bool:
        """Both statements are inside the same source loop at depth ``k``."""
        return (len(self.loops) > k and len(other.loops) > k
                and self.betas[:k + 1] == other.betas[:k + 1])


def original_nests(scop: Scop) -> dict[str, OriginalNest]:
    """Read the 2d+1 schedule ``[β0, ±i0, β1, ±i1, ...]`` of every statement."""
    out: dict[str, OriginalNest] = {}
    for st in scop.statements:
        maps: list[isl.Map] = []
        scop.schedule.foreach_map(
            lambda m: maps.append(m) if m.get_tuple_name(isl.dim_type.in_) == st.name else None)
        if not maps:                  # no instance (e.g. a branch that never runs)
            continue
        pma = isl.PwMultiAff.from_map(maps[0])
        n = len(st.iterators)
        betas, loops = [], []
        for k in range(pma.dim(isl.dim_type.out)):
            affs: list[isl.Aff] = []
            pma.get_pw_aff(k).foreach_piece(lambda _s, a: affs.append(a))
            aff = affs[0]
            coeffs = [int(aff.get_coefficient_val(isl.dim_type.in_, j).to_python())
                      for j in range(n)]
            if k % 2 == 0:
                betas.append(int(aff.get_constant_val().to_python()))
            elif any(coeffs):
                j = next(j for j, c in enumerate(coeffs) if c)
                loops.append((j, 1 if coeffs[j] > 0 else -1))
        out[st.name] = OriginalNest(tuple(betas[:len(loops) + 1]), tuple(loops))
    return out


# ---- reductions ---------------------------------------------------------------------

_ASSOC = {"+", "*"}
_MINMAX = {"max", "min", "fmax", "fmin", "fmaxf", "fminf"}


def reduction_operator(body: Assign) -> str | None:
    """The associative-commutative operator of ``x op= e`` / ``x = x op e`` /
    ``x = max(x, e)`` (``e`` not reading ``x``'s array), or None."""
    tgt = body.target
    if body.op in ("+=", "*="):
        rest: list[Expr] = [body.value]
        op = body.op[0]
    elif body.op == "=" and isinstance(body.value, Binary) and body.value.op in _ASSOC:
        v = body.value
        if v.a == tgt:
            rest, op = [v.b], v.op
        elif v.b == tgt:
            rest, op = [v.a], v.op
        else:
            return None
    elif body.op == "=" and isinstance(body.value, Call) and body.value.func in _MINMAX \
            and len(body.value.args) == 2 and tgt in body.value.args:
        rest = [a for a in body.value.args if a != tgt][:1] or [tgt]
        op = body.value.func
    else:
        return None
    for e in rest:
        if any(isinstance(x, Access) and x.array == tgt.array for x in walk_expr(e)):
            return None
    return op


def accumulator_pairs(st: Statement) -> isl.Map | None:
    """``{ S[i] -> S[i'] : W(i) = W(i') }`` for a reduction statement (pairs that update
    the same accumulator element), None for any other statement."""
    if reduction_operator(st.body) is None or len(st.writes) != 1 or \
            st.guard is not None or st.writes[0].may:   # may-writes: frontend/c/mayaccess
        return None
    w = st.writes[0].relation.intersect_domain(st.domain)
    return w.apply_range(w.reverse())


def target_invariant(st: Statement, j: int) -> bool:
    """Every instance of ``st`` that differs from another only in iterator ``j``
    updates the same element: a loop over ``j`` accumulates into one element, which a
    tree reduction (seed 003 §5.3) needs.  ``A[i][k - j] += ...`` carries its updates
    across ``j`` and ``k`` (a reduction by the dependences) but writes a new element
    for each ``k`` (fuzz finding 28)."""
    acc = accumulator_pairs(st)
    if acc is None:
        return False
    n = len(st.iterators)
    xs = [f"x{d}" for d in range(n)]
    ys = [x if d != j else "y" for d, x in enumerate(xs)]
    same = isl.Map(f"{{ {st.name}[{', '.join(xs)}] -> {st.name}[{', '.join(ys)}] }}")
    same = same.align_params(st.domain.get_space()).intersect_domain(st.domain) \
        .intersect_range(st.domain)
    return same.align_params(acc.get_space()).is_subset(acc.align_params(same.get_space()))


# ---- per-pair dependence tables ---------------------------------------------------------

def dependence_pairs(validity: isl.UnionMap, statements: set[str] | None = None
                     ) -> dict[tuple[str, str], isl.Map]:
    """Split the dependences into one map per (source, sink) statement pair."""
    out: dict[tuple[str, str], isl.Map] = {}

    def add(m: isl.Map):
        s, t = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
        if statements is not None and (s not in statements or t not in statements):
            return
        if m.is_empty():
            return
        key = (s, t)
        out[key] = out[key].union(m) if key in out else m
    validity.foreach_map(add)
    return out


def _delta_constraint(m: isl.Map, a: Loop, b: Loop, lower: int) -> isl.Map:
    """``m ∩ {Θ^T(i') - Θ^S(i) >= lower}``, Θ the loops a (source) and b (sink)."""
    ls = isl.LocalSpace.from_space(m.get_space())
    c = isl.Constraint.inequality_alloc(ls)
    c = c.set_coefficient_val(isl.dim_type.out, b[0], b[1])
    c = c.set_coefficient_val(isl.dim_type.in_, a[0], -a[1])
    c = c.set_constant_val(-lower)
    return m.add_constraint(c)


def _neg(m: isl.Map, a: Loop, b: Loop) -> isl.Map:
    """``m ∩ {Δ <= -1}``."""
    return _delta_constraint(m, (a[0], -a[1]), (b[0], -b[1]), 1)


def equal_on(m: isl.Map, a: Loop, b: Loop) -> isl.Map:
    """The pairs of ``m`` with Δ = 0 on the loop (those it does not carry)."""
    ls = isl.LocalSpace.from_space(m.get_space())
    c = isl.Constraint.equality_alloc(ls)
    c = c.set_coefficient_val(isl.dim_type.out, b[0], b[1])
    c = c.set_coefficient_val(isl.dim_type.in_, a[0], -a[1])
    return m.add_constraint(c)


@dataclass
class DependenceTable:
    """The active dependences of a set of statements, with memoised distance tests."""
    pairs: dict[tuple[str, str], isl.Map]
    accumulators: dict[str, isl.Map | None] = field(default_factory=dict)
    _memo: dict = field(default_factory=dict)

    def restrict(self, combo: Combo) -> "DependenceTable":
        """The dependences not carried by ``combo`` (Δ = 0 on it): those still active
        inside that loop.  Pairs with a statement outside the combo are dropped
        (they are ordered by the sequence around the loop)."""
        pairs = {}
        for (s, t), m in self.pairs.items():
            if s in combo and t in combo:
                r = equal_on(m, combo[s], combo[t])
                if not r.is_empty():
                    pairs[(s, t)] = r
        return DependenceTable(pairs, self.accumulators)

    def subset(self, statements: set[str]) -> "DependenceTable":
        return DependenceTable({k: m for k, m in self.pairs.items()
                                if k[0] in statements and k[1] in statements},
                               self.accumulators)

    def signs(self, s: str, t: str, a: Loop, b: Loop) -> tuple[bool, bool, bool]:
        """(has Δ < 0, has Δ > 0, every Δ ≠ 0 pair is a reduction on S's accumulator)."""
        key = (s, t, a, b)
        if key not in self._memo:
            m = self.pairs[(s, t)]
            neg = not _neg(m, a, b).is_empty()
            pos = not _delta_constraint(m, a, b, 1).is_empty()
            red = False
            acc = self.accumulators.get(s) if s == t else None
            if (neg or pos) and acc is not None:
                carried = m.subtract(equal_on(m, a, b))
                red = carried.is_subset(acc)
            self._memo[key] = (neg, pos, red)
        return self._memo[key]

    def edges(self) -> set[tuple[str, str]]:
        return set(self.pairs)


def make_table(scop: Scop, validity: isl.UnionMap, statements: set[str]) -> DependenceTable:
    accs = {s.name: accumulator_pairs(s) for s in scop.statements if s.name in statements}
    return DependenceTable(dependence_pairs(validity, statements), accs)


def classify(table: DependenceTable, combo: Combo) -> LoopKind:
    """The kind of the loop ``combo`` over the statements it names (seed 003 §5.3)."""
    kind = LoopKind.FORALL
    for (s, t) in table.pairs:
        if s not in combo or t not in combo:
            continue
        neg, pos, red = table.signs(s, t, combo[s], combo[t])
        if not neg and not pos:
            continue
        if red:
            kind = LoopKind.REDUCTION if kind == LoopKind.FORALL else kind
            continue
        if neg:
            return LoopKind.ILLEGAL
        kind = LoopKind.SEQUENTIAL
    return kind


def strongly_connected(statements: list[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """SCCs of the dependence graph, in a topological order that keeps the textual
    order where the dependences allow it (Tarjan, then a stable topological sort)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    succ = {s: [t for (a, t) in sorted(edges) if a == s and t in statements] for s in statements}

    def visit(v: str):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp, key=statements.index))
    for s in statements:
        if s not in index:
            visit(s)
    of = {s: i for i, c in enumerate(comps) for s in c}
    preds = {i: {of[a] for (a, b) in edges if a in of and b in of and of[b] == i and of[a] != i}
             for i in range(len(comps))}
    order: list[int] = []
    left = sorted(range(len(comps)), key=lambda i: statements.index(comps[i][0]))
    while left:
        i = next(i for i in left if preds[i] <= set(order))
        order.append(i)
        left.remove(i)
    return [comps[i] for i in order]
