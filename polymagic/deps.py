"""Dependence analysis with isl's dataflow engine (``UnionAccessInfo.compute_flow``).

Flow (read-after-write) and output (write-after-write) dependences are value-based:
a write kills earlier writes to the same element, so only the last writer before
a read (or write) is a source.  Anti dependences (write-after-read) are
memory-based (every earlier read of the element), a safe over-approximation.
Input dependences (read-after-read) do not constrain the schedule, and the stages
find reuse from the access relations themselves (seed 000 §3.1, seed 001 §4.3): only
the report lists them (``--show deps``), so they are formed when first asked for
(:attr:`Dependences.input`; 13 ms of a 2-d Jacobi's compile, 60 ms of a 3-d heat
stencil's).

Memory-based relations (anti, input) are built directly from the access relations
and the lexicographic order of the schedule: without kills, that is exactly what
``compute_flow`` returns for may-sources, and it takes milliseconds where isl's
dataflow engine can spend minutes on a modulo guard (fuzz finding 11).  The
value-based ones (flow, output) run ``compute_flow`` under an operation budget;
when it is spent they fall back to the memory-based over-approximation (which only
costs parallelism) and say so in a note.

Every relation is simplified by :func:`coalesce_within_hulls`, not plain
``coalesce``: isl merges the constant-distance pieces of a stencil's dependence
(one per neighbour read) into one polyhedron without their equalities (a 3-d
7-point stencil's octahedron of 27 constraints), and isl's scheduler, whose cost
grows with the dimension and constraints of each piece (a Farkas multiplier per
constraint, seed 004 §3), spent 5 s of CPU on that one polyhedron of a 3-d heat
stencil and 0.07 s on the seven pieces (issue 22).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import islpy as isl

from .isl_util import coalesce
from .notes import Note, Stage
from .options import DependenceOptions
from .scop import Scop
from .source_tree import source_tree


@dataclass
class Dependences:
    flow: isl.UnionMap
    anti: isl.UnionMap
    output: isl.UnionMap
    #: what the analysis had to approximate, for the report
    notes: list[Note] = field(default_factory=list)
    #: forms the input dependences (:attr:`input`) when they are first asked for
    input_of: Callable[[], isl.UnionMap] | None = field(default=None, repr=False)

    @cached_property
    def input(self) -> isl.UnionMap:
        """Read-after-read pairs, memory-based (formed on first use: only the report
        lists them)."""
        if self.input_of is None:
            return isl.UnionMap.empty(self.flow.get_space())
        return self.input_of()

    @cached_property
    def validity(self) -> isl.UnionMap:
        """Every dependence a legal schedule must respect (computed once: the
        scheduler, the superposition planner and its legality check all read it)."""
        return coalesce_within_hulls(self.flow.union(self.anti).union(self.output))

    def describe(self) -> str:
        """Readable listing, one relation per line, for ``--show deps``."""
        lines = []
        for kind in ("flow", "anti", "output", "input"):
            um: isl.UnionMap = getattr(self, kind)
            maps: list[isl.Map] = []
            um.foreach_map(maps.append)
            if not maps:
                lines.append(f"{kind:6}: none")
                continue
            for m in maps:
                lines.append(f"{kind:6}: {coalesce(m)}")
        return "\n".join(lines)


def _hull_dimension(b: isl.BasicMap) -> int:
    """Dimension of the affine hull of ``b`` (its variables and parameters less its
    equalities, which isl keeps independent)."""
    n = sum(b.dim(t) for t in (isl.dim_type.param, isl.dim_type.in_, isl.dim_type.out,
                               isl.dim_type.div))
    return n - sum(1 for c in b.get_constraints() if c.is_equality())


#: a merged piece this many times larger (in constraints) than every piece it came
#: from is a stencil's diamond or octahedron (heat-3d: 27 against 12-14)
MERGE_GROWTH = 1.5


def coalesce_within_hulls(um: isl.UnionMap) -> isl.UnionMap:
    """``um`` coalesced map by map, except where coalescing merges pieces into a
    polyhedron of higher affine dimension than every piece had *and* with at least
    :data:`MERGE_GROWTH` times the constraints of the largest piece (the constant
    distance vectors of a stencil's neighbour reads merged into one diamond or
    octahedron): such a map keeps its pieces.  The relation is the same set either
    way; only the constraints later stages (isl's scheduler above all, see the
    module docstring) work through differ.  Merges that do not grow the pieces stay
    (a fuzz regression whose sixteen pieces per map merge into five of no more
    constraints took Feautrier's scheduler 4.8 s unmerged, 1.2 s merged).  Every
    other map is exactly ``coalesce``'s (the schedules and code of the other
    kernels are unchanged)."""
    out = isl.UnionMap.empty(um.get_space())
    maps: list[isl.Map] = []
    um.foreach_map(maps.append)
    for m in maps:
        merged = coalesce(m)
        pieces, parts = m.get_basic_maps(), merged.get_basic_maps()
        if pieces and parts and \
                max(map(_hull_dimension, parts)) > max(map(_hull_dimension, pieces)) and \
                max(b.n_constraint() for b in parts) >= \
                MERGE_GROWTH * max(b.n_constraint() for b in pieces):
            merged = m
        out = out.union(isl.UnionMap.from_map(merged))
    return out


def _flow(sink: isl.UnionMap, must: isl.UnionMap | None, may: isl.UnionMap | None,
          schedule: isl.UnionMap, tree: isl.Schedule | None) -> isl.UnionMap:
    """isl's dataflow analysis in the original order: its tree (:func:`source_tree`,
    twice as fast) or, where the front end's map has no tree form, the map."""
    info = isl.UnionAccessInfo.from_sink(sink)
    if must is not None:
        info = info.set_must_source(must)
    if may is not None:
        info = info.set_may_source(may)
    info = info.set_schedule(tree) if tree is not None else info.set_schedule_map(schedule)
    return coalesce_within_hulls(info.compute_flow().get_may_dependence())


def _memory_based(sink: isl.UnionMap, source: isl.UnionMap, before: isl.UnionMap
                  ) -> isl.UnionMap:
    """Every earlier ``source`` instance touching the element a ``sink`` instance
    touches: source instance → sink instance."""
    return coalesce_within_hulls(source.apply_range(sink.reverse()).intersect(before))


def compute_dependences(scop: Scop, options: DependenceOptions = DependenceOptions()
                        ) -> Dependences:
    """Flow, anti, output and input dependences of the Scop in its original order,
    within the isl operation budgets of ``options`` (a pathological nest gets an
    error, not a hang)."""
    from .errors import PolymagicError
    try:
        return _compute(scop, options)
    except isl.Error as e:
        raise PolymagicError(
            "the dependence analysis gave up on this function (more than "
            f"{options.dependence_operations} isl operations); simplify the loop nest or "
            f"split it into several cells ({e})") from None


def _atomic_target(s, a) -> bool:
    """An access of an atomic statement to the element it updates."""
    return s.atomic is not None and a.array == s.body.target.array


def _compute(scop: Scop, options: DependenceOptions) -> Dependences:
    from .isl_util import OperationBudget
    ctx = scop.context.get_ctx()
    sched = scop.schedule.intersect_domain(scop.domain)
    reads, writes = scop.reads, scop.writes
    must, may = writes, None
    if scop.has_may:                 # may-accesses (frontend/c/mayaccess.py)
        reads = scop.accesses_where(False, lambda s, a: not _atomic_target(s, a))
        writes = scop.accesses_where(True, lambda s, a: not _atomic_target(s, a))
        must = scop.accesses_where(True, lambda s, a: not a.may)
        may = scop.accesses_where(True, lambda s, a: a.may and not _atomic_target(s, a))
    with OperationBudget(ctx, options.dependence_operations):
        before = sched.lex_lt_union_map(sched)
        anti = _memory_based(writes, reads, before)
        tree = source_tree(sched)

    def input_of() -> isl.UnionMap:
        with OperationBudget(ctx, options.dependence_operations):
            return _memory_based(scop.reads, scop.reads, before)
    notes: list[Note] = []

    def value_based(kind: str, sink: isl.UnionMap) -> isl.UnionMap:
        try:
            with OperationBudget(ctx, options.value_based_operations):
                return _flow(sink, must, may, sched, tree)
        except isl.Error:
            notes.append(Note(Stage.DEPENDENCES, f"{kind} dependences: isl's dataflow "
                              f"analysis took more than {options.value_based_operations:,} "
                              "operations; every earlier write of an element counts as a "
                              "source instead (safe, may cost parallelism)", kind="fallback"))
        with OperationBudget(ctx, options.dependence_operations):
            return _memory_based(sink, writes, before)

    flow, output = value_based("flow", reads), value_based("output", writes)
    if any(st.atomic for st in scop.statements):
        with OperationBudget(ctx, options.dependence_operations):
            flow, anti, output = _with_atomics(scop, before, reads, writes, flow, anti, output)
    return Dependences(flow=flow, output=output, anti=anti, notes=notes, input_of=input_of)


def _with_atomics(scop: Scop, before: isl.UnionMap, reads: isl.UnionMap,
                  writes: isl.UnionMap, flow: isl.UnionMap, anti: isl.UnionMap,
                  output: isl.UnionMap) -> tuple[isl.UnionMap, isl.UnionMap, isl.UnionMap]:
    """Add the dependences of atomic updates (``h[bin[i]] += w[i]``): their instances
    commute with each other when they apply the same operator (the order of the
    additions into an element does not matter, up to floating-point rounding, as with
    any parallel reduction), so they get none among themselves; every other access to
    the element orders against them, memory-based (an atomic update is a read and a
    may-write of its whole array)."""
    ops = sorted({st.atomic for st in scop.statements if st.atomic})
    upd = {op: scop.accesses_where(True, lambda s, a, op=op: _atomic_target(s, a)
                                   and s.atomic == op) for op in ops}
    for u in upd.values():
        flow = flow.union(_memory_based(u, writes, before)).union(
            _memory_based(reads, u, before))
        anti = anti.union(_memory_based(u, reads, before))
        output = output.union(_memory_based(writes, u, before)).union(
            _memory_based(u, writes, before))
    for a in ops:                     # different operators on one element do not commute
        for b in ops:
            if a != b:
                output = output.union(_memory_based(upd[b], upd[a], before))
    return flow, anti, output
