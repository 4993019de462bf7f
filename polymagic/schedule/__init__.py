"""Scheduling: the baseline schedule from isl's scheduler (Pluto-style, feautrier fallback).

``compute_schedule`` asks isl for a schedule that respects every dependence
(validity), prefers parallel (coincident) outer members and reuse (proximity),
and returns the schedule tree.  The mapping stage reads its bands: coincident
members become blocks and threads, others stay sequential (seed 004 §4.1: tiling
of the outermost permutable band; seed 003 §4.1 calls this the single-schedule
baseline that superposition improves on).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..deps import Dependences
from ..errors import PolymagicError
from ..helper_process import run_bounded
from ..isl_util import OperationBudget, TimedOut
from ..notes import Note, Stage
from ..options import ScheduleOptions
from ..scop import Scop
from .private import (by_nest, fuse_private, private_groups, private_temps,
                      register_private, source_tree, together, top_level_nests)
from .superposition import SuperPlan
from .isl_config import configure


@dataclass
class ScheduleResult:
    schedule: isl.Schedule
    #: seed 003 superposition plan (block- and thread-level schedules), when asked for
    superposition: SuperPlan | None = None
    #: the plan is legal and is what the mapping emits (else the single mapping is used)
    use_superposition: bool = False
    notes: list[Note] = field(default_factory=list)
    #: expanded local scalars written before read in every instance of their loops
    #: that one register per thread point of their kernel holds
    #: (:func:`.private.private_temps`, :func:`.private.register_private`): the single
    #: mapping keeps them in registers, never in memory
    private_temps: frozenset[str] = frozenset()
    #: statement groups fused into one band around a private scalar (their notes)
    fused: list[list[str]] = field(default_factory=list)

    def describe(self) -> str:
        text = "single schedule (isl scheduler; blocks and threads share it):\n" + \
            str(self.schedule.get_root())
        if self.superposition is not None:
            text += "\n\n" + self.superposition.describe()
        for n in self.notes:
            text += f"\nnote: {n}"
        return text


def compute_schedule(scop: Scop, deps: Dependences, options: ScheduleOptions | None = None
                     ) -> ScheduleResult:
    """isl's schedule, and with ``options.mapping == 'superposition'`` the seed 003
    plan (used by the mapping when legal, see :func:`superposition_choice`).
    Without options: isl's schedule alone (no time tiling, no superposition)."""
    options = options if options is not None else ScheduleOptions(mapping="single")
    notes: list[Note] = []
    result = ScheduleResult(_isl_schedule(scop, deps, notes, options))
    result.notes.extend(notes)
    result.private_temps = private_temps(scop)
    result.schedule, result.fused = fuse_private(scop, deps.validity, result.schedule,
                                                 result.private_temps)
    _keep_private_groups(scop, deps, result, options)
    result.private_temps = register_private(scop, result.schedule, result.private_temps)
    for group in result.fused:
        result.notes.append(Note(Stage.SCHEDULE, f"{', '.join(group)} fused into one band: they "
                                 "share a private local scalar, kept per thread point "
                                 "(seed 004 §4.1-4.2)", kind="decision"))
    if options.time_tiling:
        from .timeblock import time_tiled_schedule
        tiled, why = time_tiled_schedule(scop, deps, options.time_tiling)
        if tiled is not None:
            result.schedule = tiled
            result.notes.append(Note(Stage.SCHEDULE, why, kind="info"))
            return result
        result.notes.append(Note(Stage.SCHEDULE, f"--time-tiling not applied: {why}; the "
                                 "host-loop mapping is used", kind="refusal"))
    if options.mapping == "superposition":
        superposition_choice(scop, deps, result, options)
    return result


def _isl_schedule(scop: Scop, deps: Dependences, notes: list[Note] | None = None,
                  options: ScheduleOptions = ScheduleOptions()) -> isl.Schedule:
    """isl's schedule of the Scop.  isl's scheduler has been seen to give up with
    "unable to carry dependences" on small programs whose dependences it can carry
    once the parameter context is left out (fuzz finding 9): it is asked again
    without it (legal for every parameter value, so for those of the context too),
    and as a last resort the source order is used (always legal: the dependences
    are those of that order) without parallelism, with a note.

    The scheduler's integer programs do not count against isl's operation budget
    and have run for minutes on a four-deep nest with skewed inner loops (fuzz
    finding 32), so each attempt runs in the helper process, killed after
    :attr:`ScheduleOptions.schedule_seconds`; past it, Feautrier's scheduler (isl's other algorithm,
    one dimension per dependence level: far fewer integer programs) is asked."""
    notes = notes if notes is not None else []
    failure = None
    for context in (scop.context, None):
        try:
            return _bounded_schedule(scop, deps, context, "isl", options)
        except TimedOut:
            failure = f"took more than {options.schedule_seconds:g} s"
            break
        except isl.Error as e:
            if "number of operations exceeded" in str(e):
                raise PolymagicError(
                    "the polyhedral scheduler gave up on this function (too many operations); "
                    f"simplify the loop nest or split it into several cells ({e})") from None
            failure = str(e).split(" in isl_")[0]
    try:
        sched = _bounded_schedule(scop, deps, None, "feautrier", options)
        notes.append(Note(Stage.SCHEDULE, f"isl's scheduler failed ({failure}): Feautrier's "
                          "scheduler used", kind="fallback"))
        return sched
    except (TimedOut, isl.Error):
        pass
    notes.append(Note(Stage.SCHEDULE, f"isl's scheduler failed ({failure}): the loops run in "
                      "source order, without parallelism", kind="fallback"))
    return source_order(scop)


def _keep_private_groups(scop: Scop, deps: Dependences, result: ScheduleResult,
                         options: ScheduleOptions) -> None:
    """When isl's schedule, even fused (:func:`.private.fuse_private`), spreads the
    statements sharing a private local scalar over several parallel bands (isl fuses
    across the source's outermost nests: 2mm's ``tmp = s`` with the second product),
    each outermost nest is scheduled by itself, in source order, and fused again;
    that schedule is kept when it brings more of those groups into one band."""
    groups = private_groups(scop, result.private_temps)
    ok = sum(together(result.schedule, g) for g in groups)
    if ok == len(groups):
        return
    dom = scop.domain.intersect_params(scop.context)
    nests = [n.intersect_params(scop.context) for n in top_level_nests(scop)]
    try:
        parts = [_bounded_schedule(scop, deps, scop.context, "isl", options, domain=d)
                 for d in nests] if len(nests) > 1 else [result.schedule]
        parts = [fuse_private(scop, deps.validity, p, result.private_temps)[0]
                 for p in parts]
        parts = [p if all(together(p, g) for g in groups if g & _names(n)) else
                 source_tree(scop, n, deps.validity) for p, n in zip(parts, nests)]
        sched, fused = fuse_private(scop, deps.validity, by_nest(dom, parts),
                                    result.private_temps)
    except (TimedOut, isl.Error, ValueError):
        return
    if sum(together(sched, g) for g in groups) > ok:
        result.schedule, result.fused = sched, fused
        result.notes.append(Note(Stage.SCHEDULE, "the loop nests holding statements that share "
                                 "a private local scalar scheduled by themselves (isl's "
                                 "schedule of the function splits them; as written where "
                                 "isl's schedule of the nest does too)", kind="decision"))


def _names(domain: isl.UnionSet) -> set[str]:
    out: set[str] = set()
    domain.foreach_set(lambda s: out.add(s.get_tuple_name()))
    return out


def _bounded_schedule(scop: Scop, deps: Dependences, context: isl.Set | None,
                      algorithm: str, options: ScheduleOptions,
                      domain: isl.UnionSet | None = None) -> isl.Schedule:
    """isl's ``compute_schedule`` with ``algorithm`` ('isl' or 'feautrier') under
    ``options.schedule_operations``, in the helper process
    (:func:`polymagic.helper_process.run_bounded`: forked once, not per call), killed
    past ``options.schedule_seconds`` of CPU time (its integer programs ignore the
    operation budget).  The schedule constraints go there as text; the tree's text
    comes back and is rebuilt over this process's own domain object
    (:func:`_rebuilt`), so the scheduler runs once (issue 22: it ran a second time
    here, 4 s of a 3-d heat stencil's 5 s).  Raises :class:`TimedOut` or ``isl.Error``."""
    ctx = scop.context.get_ctx()
    configure(ctx)
    dom = (scop.domain if domain is None else domain).intersect_params(scop.context)
    validity = deps.validity if domain is None else \
        deps.validity.intersect_domain(dom).intersect_range(dom)

    sc = isl.ScheduleConstraints.on_domain(dom)
    if context is not None:
        sc = sc.set_context(context)
    sc = sc.set_validity(validity).set_coincidence(validity).set_proximity(validity)
    text = run_bounded(_scheduled, (sc.to_str(), algorithm, options.schedule_operations),
                       options.schedule_seconds)
    try:
        return _rebuilt(text, dom)
    except (_Unexpected, isl.Error):     # a tree the rebuild does not reproduce: ask isl here
        return _computed(sc, algorithm, options.schedule_operations)


def _scheduled(constraints: str, algorithm: str, operations: int) -> str:
    """:func:`_computed` on the schedule constraints printed as ``constraints``, as
    text (the helper process's call, :mod:`polymagic.helper_process`)."""
    ctx = isl.DEFAULT_CONTEXT
    return _computed(isl.ScheduleConstraints.read_from_str(ctx, constraints), algorithm,
                     operations).to_str()


def _computed(sc: isl.ScheduleConstraints, algorithm: str, operations: int) -> isl.Schedule:
    """isl's schedule (``algorithm`` 'isl' or 'feautrier') for ``sc`` within
    ``operations`` isl operations."""
    ctx = sc.get_ctx()
    configure(ctx)
    if algorithm == "feautrier":
        ctx.set_schedule_algorithm(isl.schedule_algorithm.FEAUTRIER)
    try:
        with OperationBudget(ctx, operations):
            return sc.compute_schedule()
    finally:
        ctx.set_schedule_algorithm(isl.schedule_algorithm.ISL)


class _Unexpected(Exception):
    """A schedule tree that :func:`_rebuilt` does not copy."""


def _rebuilt(text: str, dom: isl.UnionSet) -> isl.Schedule:
    """The schedule tree that isl's scheduler printed as ``text`` (in the child
    process) over the parent's own domain object ``dom``.

    Parsing the text gives an equal tree (``plain_is_equal``) but not the same
    domain object: it drops the domain's redundant constraints (``N > 0`` of the
    context), which the AST generator sees.  So the tree is rebuilt below
    ``Schedule.from_domain(dom)`` with the node insertions the scheduler makes
    (bands with their permutable and coincident flags, sequences, sets and their
    filters, taken from the parsed tree).  The pieces of a band's or a filter's
    union may iterate in another order than in the scheduler's own objects (isl
    hash tables; a band's schedule is re-inserted when isl floors it); the
    generated code of the examples and fuzz regressions is the same
    (``scripts/codegen_snapshot.py``).  Raises :class:`_Unexpected` on a node the
    scheduler does not make or a copy that differs from the parsed tree."""
    parsed = isl.Schedule.read_from_str(dom.get_ctx(), text)
    node = _copy_subtree(parsed.get_root().child(0),
                         isl.Schedule.from_domain(dom).get_root().child(0))
    out = node.get_schedule()
    if not out.plain_is_equal(parsed):
        raise _Unexpected("the copy differs from the parsed tree")
    return out


def _copy_subtree(src: isl.ScheduleNode, dst: isl.ScheduleNode) -> isl.ScheduleNode:
    """Insert a copy of the subtree at ``src`` at the leaf ``dst``; returns the node
    at ``dst``'s position."""
    kind = src.get_type()
    if kind == isl.schedule_node_type.leaf:
        return dst
    if kind == isl.schedule_node_type.band:
        dst = dst.insert_partial_schedule(src.band_get_partial_schedule())
        dst = dst.band_set_permutable(src.band_get_permutable())
        for k in range(src.band_n_member()):
            dst = dst.band_member_set_coincident(k, src.band_member_get_coincident(k))
        return _copy_subtree(src.child(0), dst.child(0)).parent()
    if kind in (isl.schedule_node_type.sequence, isl.schedule_node_type.set):
        n = src.n_children()
        filters = isl.UnionSetList.alloc(src.get_ctx(), n)
        for i in range(n):
            filters = filters.add(src.child(i).filter_get_filter())
        dst = dst.insert_sequence(filters) if kind == isl.schedule_node_type.sequence \
            else dst.insert_set(filters)
        for i in range(n):
            dst = _copy_subtree(src.child(i).child(0), dst.child(i).child(0)).parent().parent()
        return dst
    raise _Unexpected(str(kind))


def source_order(scop: Scop) -> isl.Schedule:
    """The source order (the Scop's 2d+1 schedule) as a schedule tree: one band, no
    member marked coincident."""
    dom = scop.domain.intersect_params(scop.context)
    mupa = isl.MultiUnionPwAff.from_union_map(scop.schedule.intersect_domain(dom))
    return isl.Schedule.from_domain(dom).insert_partial_schedule(mupa)


def _strides(scop: Scop, options: ScheduleOptions) -> dict[str, tuple[int, ...]] | None:
    """The arrays' element strides for the DL model (seed 003 §5.2): the declared
    row-major ones, overridden by the real strides of NumPy views passed in
    (``options.layout``, seed 002 §2.3: layouts are discovered at call time)."""
    layout = dict(options.layout)
    if not layout:
        return None
    from .dl_model import array_strides
    return {**array_strides(scop), **layout}


def superposition_choice(scop: Scop, deps: Dependences, result: ScheduleResult,
                         options: ScheduleOptions) -> None:
    """Plan the superposition (seed 003 §4-5) and decide whether the mapping uses it:
    only when the plan passes the isl legality check (Lemma 1) and every statement
    that isl's schedule runs in parallel also gets block parallelism from it (the
    restricted forms of §5.1 have no skewing: wavefronts stay with the single
    mapping).  Otherwise the single mapping is used and a note says why.
    ``--localise LOOP`` keeps the superposition (seed 001 works inside its kernels:
    :class:`polymagic.mapping.superposition.SuperMapper`), except where LOOP is one of its host
    loops: the single mapping then runs that loop inside one block (seed 001 §5)."""
    from .superposition import plan_superposition
    if scop.domain.intersect_params(scop.context).is_empty():
        result.notes.append(_superposition_note("no statement instance runs (empty iteration "
                                                "domains): single mapping used", "info"))
        return
    ctx = scop.context.get_ctx()
    try:
        with OperationBudget(ctx, options.super_operations):
            plan = plan_superposition(scop, deps.validity, _strides(scop, options),
                                      reductions=options.reductions)
    except isl.Error:
        result.notes.append(_superposition_note(
            f"superposition: planning took more than {options.super_operations} isl "
            "operations: single mapping used", "fallback"))
        return
    result.superposition = plan
    host = _host_step_loops(plan)
    loop = options.localise_loop
    if loop is not None and loop in host:
        result.notes.append(_superposition_note(
            f"--localise {loop} names a host loop of the superposition: the single mapping "
            "runs it inside one block (seed 001 time loop)"))
        return
    if not plan.legal:
        result.notes.append(_superposition_note(
            "superposition not legal (" + "; ".join(plan.problems[:3]) + "): single mapping used"))
        return
    parallel = _parallel_statements(result.schedule)
    lost = sorted((s for k in plan.kernels() if not k.block for s in k.statements
                   if s in parallel), key=lambda n: int(n[1:]) if n[1:].isdigit() else 0)
    if lost:
        result.notes.append(_superposition_note(
            f"superposition finds no synchronisation-free loop for {', '.join(lost)} "
            "without skewing (seed 003 §5.1 forms) while isl's schedule has parallel "
            "loops there: single mapping used"))
        return
    split = _split_private(plan, [g for g in private_groups(scop, result.private_temps)
                                  if together(result.schedule, g)])
    if split:
        result.notes.append(_superposition_note(
            f"superposition puts {', '.join(split)} in separate kernels, which share a "
            "private local scalar kept per thread point in the single schedule: single "
            "mapping used"))
        return
    gains = _coalescing_gains(plan, result.schedule)
    if not gains and options.require_gain:
        result.notes.append(_superposition_note(
            "single mapping used: the superposition would put the same loops on "
            "threadIdx.x, so its accesses would be no better coalesced (DL model)"))
        return
    result.use_superposition = True
    if gains:
        result.notes.append(_superposition_note(
            "superposition: better coalescing (DL model) for " + ", ".join(gains)))


def _split_private(plan, groups: list[set[str]]) -> list[str]:
    """The first group of statements sharing a private local scalar, kept in one
    parallel band by the single schedule, that the superposition spreads over
    several kernels (with the scalar in global memory between them), or []."""
    for group in groups:
        kernels = {i for i, k in enumerate(plan.kernels()) for s in k.statements if s in group}
        if len(kernels) > 1:
            return sorted(group, key=lambda n: int(n[1:]) if n[1:].isdigit() else 0)
    return []


def _superposition_note(text: str, kind: str = "decision") -> Note:
    """A note of the choice between the superposition and the single mapping."""
    return Note(Stage.SCHEDULE, text, subject=None, kind=kind)


def _host_step_loops(plan) -> set[str]:
    """Source names of the superposition's step loops outside every kernel (host loops:
    one launch per iteration)."""
    from .superposition import StepLoop
    out: set[str] = set()

    def walk(items):
        for it in items:
            if isinstance(it, StepLoop):
                out.update(plan.iterators[s][j] for s, (j, _d) in it.loop.items())
                walk(it.body)
    walk(plan.items)
    return out


def _coalescing_gains(plan, sched: isl.Schedule) -> list[str]:
    """Statements whose thread.x loop in the superposition has a more negative
    ∂mem_cost/∂t than the one the single mapping gives them (or that get thread
    parallelism the single mapping does not give), as 'S0 (j for i)'."""
    from .superposition import ThreadGroup
    single = _single_thread_x(sched)
    out = []
    for k in plan.kernels():
        stack = list(k.body)
        while stack:
            it = stack.pop(0)
            if not isinstance(it, ThreadGroup):
                stack.extend(getattr(it, "body", []))
                continue
            if not it.dims:
                continue
            for s in it.statements:
                j = it.dims[0][s][0]
                cost = plan.costs[s]
                old = single.get(s)
                name = plan.iterators[s][j]
                if old is None:
                    out.append(f"{s} ({name}, none before)")
                elif cost.derivative[j] < cost.derivative[old] - 1e-12 and \
                        cost.coalesces(j) and (not cost.coalesces(old) or it.reduction):
                    # a tree reduction is chosen only for a more negative ∂ than every
                    # parallel loop's: the DL model's gain over the single mapping
                    out.append(f"{s} ({name} for {plan.iterators[s][old]}"
                               + (", tree reduction)" if it.reduction else ")"))
    return out


def _single_thread_x(sched: isl.Schedule) -> dict[str, int | None]:
    """Per statement, the iterator the single mapping puts on threadIdx.x (the
    innermost of the first three leading coincident members of the first parallel
    band above it), None when that member is not one plain iterator."""
    out: dict[str, int | None] = {}

    def visit(n: isl.ScheduleNode) -> bool:
        if n.get_type() != isl.schedule_node_type.band:
            return True
        k = 0
        while k < n.band_n_member() and n.band_member_get_coincident(k):
            k += 1
        if k == 0:
            return True
        upa = n.band_get_partial_schedule().get_at(min(k, 3) - 1)

        def piece(pa: isl.PwAff):
            affs: list[isl.Aff] = []
            pa.foreach_piece(lambda _s, a: affs.append(a))
            name = pa.get_domain_space().get_tuple_name(isl.dim_type.set)
            it = None
            if len(affs) == 1 and affs[0].dim(isl.dim_type.div) == 0:
                a = affs[0]
                cs = [int(a.get_coefficient_val(isl.dim_type.in_, j).to_python())
                      for j in range(a.dim(isl.dim_type.in_))]
                nz = [j for j, c in enumerate(cs) if c]
                if len(nz) == 1 and abs(cs[nz[0]]) == 1:
                    it = nz[0]
            out[name] = it
        upa.foreach_pw_aff(piece)
        return False
    sched.get_root().foreach_descendant_top_down(visit)
    return out


def _parallel_statements(sched: isl.Schedule) -> set[str]:
    """Statements below a band with a coincident member in isl's schedule."""
    out: set[str] = set()

    def visit(n: isl.ScheduleNode) -> bool:
        if n.get_type() == isl.schedule_node_type.band and any(
                n.band_member_get_coincident(k) for k in range(n.band_n_member())):
            n.get_domain().foreach_set(lambda s: out.add(s.get_tuple_name()))
            return False
        return True
    sched.get_root().foreach_descendant_top_down(visit)
    return out
