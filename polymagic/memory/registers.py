"""Registers for data indexed only by the thread loops (seed 004 §4.2).

Baskaran et al. (CC 2010, §4.2) keep in registers the arrays whose accesses vary
only with the loops mapped to threads: every thread point then touches its own
element, so the element can live in a per-thread local across the sequential loops
(gemm's accumulator ``C[i][j]`` across the ``k`` loop) and global (or shared) memory
is read once before those loops and written once after them.

Two steps:

* :func:`plan_kernel_registers` decides per array, with isl, on the kernel's statement
  instances: the relation ``{ thread point -> A[a] }`` (thread point = host loops and
  the band members mapped to blocks/threads) must be single-valued (the subscripts
  depend only on the thread loops) and injective (no two thread points share an
  element), and some thread point must run several instances (reuse across a
  sequential loop).  One decision line per array goes to the report.
* :func:`promote_registers` applies the decision in the Kernel IR, so the emulator
  checks exactly what the GPU runs: the outermost loop ``L`` around the references
  whose subscripts are invariant in ``L`` gets a load before it and a store after
  it, the references inside become the register.  When the subscripts depend on
  thread point loops inside ``L`` (a thread owning several points of the tile, the
  cyclic distribution of §4.3), one register per point is kept: the point loops are
  rewritten with constant trip counts (``for (u = 0; u < T/B; u++)``, unrolled, so
  the register index is a compile-time constant), and skipped, with a reason, when
  the trip count is not known.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import islpy as isl

from .. import kir
from ..expr import Access, Assign, Binary, Expr, Int, Var, accesses, map_expr
from ..expr import walk as walk_expr
from ..names import is_generated
from ..notes import Note, Stage
from ..scop import Scop

#: Most registers one array may take per thread (one per point a thread owns): an
#: 8 x 8 register tile (issue 16), 64 of the 255 registers a thread may have.
MAX_REGISTERS = 64


@dataclass(frozen=True)
class RegisterPlan:
    """An array whose references of this kernel go to per-thread registers (the
    mapping's plan; what the lowering made of it is a :class:`RegisterOutcome`)."""
    array: str
    ctype: str
    statements: tuple[str, ...]
    reason: str
    #: its "register planned" line among the kernel's decisions
    #: (:attr:`.plan.KernelMemory.decisions`), which the lowering's decision replaces
    #: in the report (:func:`decision_line`)
    note: Note
    points: isl.Set | None = None    # thread points (host loops, mapped members) touching it
    # a private local scalar (written before read at every thread point, dead after):
    # the register is never loaded nor stored (memory.plan.keep_private_in_registers)
    private: bool = False


@dataclass(frozen=True)
class RegisterOutcome:
    """What the lowering's promotion (:func:`promote_registers`) made of one
    :class:`RegisterPlan` in one kernel: the registers made, why sites kept memory."""
    registers: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()

    def __add__(self, other: "RegisterOutcome") -> "RegisterOutcome":
        return RegisterOutcome(self.registers + other.registers, self.skipped + other.skipped)


def _texts(names: list[str]) -> str:
    return ", ".join(names) if names else "none"


def _private(per_point: isl.UnionMap, n_host: int) -> bool:
    """No two thread points of one launch (same host loop values, the first
    ``n_host`` dims) touch one element."""
    pairs = per_point.apply_range(per_point.reverse())
    if pairs.is_empty():
        return True
    deltas = isl.Set.from_union_set(pairs.deltas())
    n = deltas.dim(isl.dim_type.set)
    same_launch = deltas
    for d in range(n_host):
        same_launch = same_launch.fix_val(isl.dim_type.set, d, isl.Val(0))
    zero = deltas
    for d in range(n):
        zero = zero.fix_val(isl.dim_type.set, d, isl.Val(0))
    return same_launch.is_subset(zero)


#: isl operations the register planning of one kernel may take (then: no registers)
PLAN_OPERATIONS = 2_000_000


def plan_kernel_registers(scop: Scop, domain: isl.UnionSet, point: isl.UnionMap,
                          kernel: str, thread_loops: list[str], seq_loops: list[str],
                          n_host: int = 0, private: frozenset[str] = frozenset(),
                          elsewhere: Mapping[str, str] = {}
                          ) -> tuple[tuple[RegisterPlan, ...], tuple[Note, ...]]:
    """Seed 004 §4.2: the register plans of one kernel and one decision line per array
    it accesses, within an isl operation budget (past it: no registers, a note).  The
    one entry point of both mappers (:mod:`polymagic.mapping.single`,
    :mod:`polymagic.mapping.super_memory`).

    ``domain`` holds the kernel's statement instances, ``point`` maps each to its
    thread point (the ``n_host`` host loops, then the mapped band members).  Filters:
    ``private``, the private local scalars one register per thread point holds whole
    (:func:`polymagic.schedule.private.register_private`), planned even when their
    subscripts vary with the sequential loops (a scalar declared inside them);
    ``elsewhere``, arrays the caller keeps by other means, each with why: not planned,
    their line saying ``not in a register (why)``."""
    from ..isl_util import OperationBudget
    try:
        with OperationBudget(scop.context.get_ctx(), PLAN_OPERATIONS):
            plans, lines = _plan_registers(scop, domain, point, kernel, thread_loops,
                                           seq_loops, n_host, private, elsewhere)
            return tuple(plans), tuple(lines)
    except isl.Error:
        return (), (Note(Stage.REGISTERS, f"no registers: planning them took more than "
                         f"{PLAN_OPERATIONS} isl operations", kernel=kernel, kind="fallback"),)


def _sorted_statements(refs: list) -> tuple[str, ...]:
    return tuple(sorted({s.name for s, _ in refs},
                        key=lambda n: int(n[1:]) if n[1:].isdigit() else 0))


def _touching(domain: isl.UnionSet, refs: list) -> isl.UnionSet:
    """The instances of ``domain`` of the statements of ``refs``."""
    touching = isl.UnionSet.empty(domain.get_space())
    for s, _ in refs:
        touching = touching.union(domain.intersect(isl.UnionSet.from_set(s.domain)))
    return touching


def _plan_registers(scop: Scop, domain: isl.UnionSet, point: isl.UnionMap,
                    kernel: str, thread_loops: list[str], seq_loops: list[str],
                    n_host: int, private: frozenset[str], elsewhere: Mapping[str, str]
                    ) -> tuple[list[RegisterPlan], list[Note]]:
    """:func:`plan_kernel_registers` without the budget."""
    point = point.intersect_domain(domain)
    plans: list[RegisterPlan] = []
    lines: list[Note] = []
    arrays: dict[str, list] = {}
    for s in scop.statements:
        if domain.extract_set(s.domain.get_space()).is_empty():
            continue
        for a in s.accesses:
            arrays.setdefault(a.array, []).append((s, a))
    for array in [a for a in scop.arrays if a in arrays]:
        refs = arrays[array]
        rel = isl.UnionMap.empty(point.get_space())
        for s, a in refs:
            rel = rel.union(isl.UnionMap.from_map(a.relation).intersect_domain(domain))
        if rel.is_empty():
            continue
        per_point = point.reverse().apply_range(rel)
        def head(text: str, array: str = array) -> Note:
            return Note(Stage.REGISTERS, text, kernel=kernel, subject=array)

        def planned(reason: str, points: isl.UnionSet, private: bool = False,
                    array: str = array) -> None:
            if array in elsewhere:
                lines.append(head(f"not in a register ({elsewhere[array]})"))
                return
            note = head(f"register planned ({reason})")
            plans.append(RegisterPlan(array, scop.arrays[array].ctype, _sorted_statements(refs),
                                      reason, note, isl.Set.from_union_set(points.range()),
                                      private=private))
            lines.append(note)
        if not scop.arrays[array].shape:
            lines.append(head("not in a register (a scalar shared by every thread)"))
            continue
        if array in scop.global_only:
            lines.append(head("not in a register (read or written through a data-dependent "
                              "subscript or condition: global memory only)"))
            continue
        if array in private and _private(per_point, n_host):
            planned("a private local scalar, one register per thread point of the thread "
                    f"loops {_texts(thread_loops)}",
                    point.intersect_domain(_touching(domain, refs)), private=True)
            continue
        if not per_point.is_single_valued():
            lines.append(head("not in a register (its subscripts vary with loops other "
                         f"than the thread loops {_texts(thread_loops)})"))
            continue
        if not _private(per_point, n_host):
            lines.append(head("not in a register (several thread points of a launch touch "
                         "one element)"))
            continue
        touching = _touching(domain, refs)
        if point.intersect_domain(touching).is_injective():
            lines.append(head("not in a register (one access per thread point: no reuse)"))
            continue
        planned(f"subscripts vary only with the thread loops {_texts(thread_loops)}; "
                f"reused across {_texts(seq_loops) if seq_loops else 'the loops inside'}",
                point.intersect_domain(touching))
    return plans, lines


def decision_line(kernel: str, plan: RegisterPlan, made: RegisterOutcome) -> Note:
    """The report line of a register plan after :func:`promote_registers`: the line
    that stands for the plan's own (:attr:`RegisterPlan.note`) once the kernel is
    lowered."""
    if made.registers:
        text = f"register {', '.join(made.registers)} per thread ({plan.reason})"
    else:
        why = "; ".join(sorted(set(made.skipped))) or "no loop to hoist the accesses out of"
        text = f"not in a register ({why})"
    return Note(Stage.REGISTERS, text, kernel=kernel, subject=plan.array)


# ---- the Kernel IR pass ----------------------------------------------------------------

def _vars(e: Expr) -> set[str]:
    return {x.name for x in walk_expr(e) if isinstance(x, Var)}


def _header_vars(s: kir.Stmt) -> set[str]:
    if isinstance(s, kir.Loop):
        return _vars(s.lower) | _vars(s.upper)
    if isinstance(s, kir.Let):
        return _vars(s.value)
    if isinstance(s, kir.If):
        return _vars(s.cond)
    return set()


def _bound(body: list[kir.Stmt]) -> set[str]:
    return {s.var for s in kir.walk(body) if isinstance(s, (kir.Loop, kir.Let))}


def _names_in(c: kir.Compute, name: str) -> list[Access]:
    return [a for a in accesses(c.assign.target) + accesses(c.assign.value) if a.array == name]


def _converted(loop: kir.Loop) -> bool:
    """A thread point loop an earlier register of the kernel made constant-trip
    (``for (p_u = 0; p_u <= t - 1; p_u++)``, see ``RegisterPromoter.hoist``)."""
    return loop.unroll and loop.var.endswith("_u") and loop.step == 1 and \
        loop.lower == Int(0) and isinstance(loop.upper, Int)


def _on_steps_only(names: set[str], steps: set[str]) -> bool:
    """A condition that picks steps of a loop's body alone: its variables are the
    body's loop variables ``steps`` (not the thread point's), block ids and the
    kernel's parameters (generated names start with ``pm_``), never thread ids: the
    same for every point a thread owns in the block."""
    blocks = set(kir.BLOCK_IDS.values())
    return all(v in steps or v in blocks or not is_generated(v) for v in names)


def _same(a: kir.Stmt, b: kir.Stmt) -> bool:
    """Two statements around references alike as headers (bodies aside): the thread
    point loops of a statement split off the reduction (an initialisation, isl's
    separate point loops) and those of the reduction share one register per point."""
    if a is b:
        return True
    if isinstance(a, kir.Loop) and isinstance(b, kir.Loop):
        return (a.var, a.lower, a.upper, a.step) == (b.var, b.lower, b.upper, b.step)
    if isinstance(a, kir.If) and isinstance(b, kir.If):
        return a.cond == b.cond
    if isinstance(a, kir.Let) and isinstance(b, kir.Let):
        return (a.var, a.value) == (b.var, b.value)
    return False


class _Else:
    """Path marker: the reference lies in the else branch of ``stmt``."""

    def __init__(self, stmt: kir.If):
        self.stmt = stmt


def _sites(body: list[kir.Stmt], name: str, path: list
           ) -> list[tuple[list, kir.Compute]]:
    """Computes under ``body`` that access ``name``, with the statements around each
    (loops, ifs, and the lets before it), outermost first."""
    out = []
    cur = list(path)
    for s in body:
        if isinstance(s, kir.Let):
            cur = cur + [s]
        elif isinstance(s, kir.Compute):
            if _names_in(s, name):
                out.append((cur, s))
        elif isinstance(s, kir.Loop):
            out += _sites(s.body, name, cur + [s])
        elif isinstance(s, kir.If):
            out += _sites(s.then, name, cur + [s]) + _sites(s.orelse, name, cur + [_Else(s)])
    return out


def _overwrites(c: kir.Compute, name: str) -> bool:
    """A plain write of the element that reads no element of ``name``."""
    return c.assign.op == "=" and c.assign.target.array == name and \
        not any(a.array == name for a in accesses(c.assign.value))


def _first_iteration(path: list, loops: list[kir.Loop]) -> bool:
    """Whether a reference is reached in the hoisted loop's first iteration wherever
    the register's guards hold: only guards, lets and the thread point loops around
    it.  Then a first reference that overwrites the element needs no load before
    the loop (the load would read a value nobody uses and, with copy minimisation,
    a shared element never copied in)."""
    return all(isinstance(s, (kir.If, kir.Let)) or any(s is lp for lp in loops) for s in path)


class RegisterPromoter:
    """Applies register plans to one kernel body (seed 004 §4.2)."""

    def __init__(self, members, counter_start: int = 0, pieces: bool = False):
        # members: (axis, tile, threads) of the mapped band members
        self.members = list(members)
        self.decls: list[kir.RegisterDecl] = []
        self.reasons: list[str] = []
        self.n = counter_start
        self.enclosing: list[kir.Loop] = []
        self.hoists: list[bool] = []    # per hoist: only thread point loops around it
        self.pieces = pieces            # see promote_registers
        self.first = 0                  # the first declaration of the name being promoted

    def trips(self, loop: kir.Loop) -> int | None:
        """Constant trip count bound of a thread point loop (``ceil(T/B)``), or None."""
        lv = _vars(loop.lower)
        for axis, tile, threads in self.members:
            if threads < tile and loop.step == threads and kir.THREAD_IDS[axis] in lv:
                return -(-tile // threads)
        return None

    def whole_tile(self, loop: kir.Loop, trips: int) -> bool:
        """Whether isl printed the thread point loop ``for (p = t; p <= U; p += B)``
        over a whole tile: ``t`` the thread id alone, ``U`` a constant at least the
        tile's last point ``B (trips - 1) + B - 1`` (a full tile isolated by
        :mod:`polymagic.mapping.full_tiles`, where isl knows the tile is full); then
        every one of the ``trips`` points is in the loop and needs no guard."""
        tids = set(kir.THREAD_IDS.values())
        return isinstance(loop.lower, Var) and loop.lower.name in tids and \
            isinstance(loop.upper, Int) and loop.upper.value >= loop.step * trips - 1

    def run(self, body: list[kir.Stmt], name: str, ctype: str) -> list[kir.Stmt]:
        out: list[kir.Stmt] = []
        for s in body:
            if isinstance(s, kir.Loop) and _sites(s.body, name, []):
                hoisted = self.hoist(s, name, ctype)
                if isinstance(hoisted, list):
                    self.hoists.append(all(self.trips(lp) is not None for lp in self.enclosing))
                    out += hoisted
                    continue
                self.reasons.append(hoisted)
                self.enclosing.append(s)
                body_ = self.run(s.body, name, ctype)
                self.enclosing.pop()
                out.append(kir.Loop(s.var, s.lower, s.upper, s.step, body_, s.unroll))
            elif isinstance(s, kir.If):
                out.append(kir.If(s.cond, self.run(s.then, name, ctype),
                                  self.run(s.orelse, name, ctype)))
            else:
                out.append(s)
        return out

    def hoist(self, L: kir.Loop, name: str, ctype: str, private: bool = False
              ) -> list[kir.Stmt] | str:
        """Load before ``L``, store after it, the register inside; or why not.
        ``private``: a private local scalar, never loaded nor stored, so the guards
        around its references and the loops that may not run do not matter; only the
        thread point loops around them index the register."""
        sites = _sites(L.body, name, [])
        inner = _bound(L.body) | {L.var}
        index = None
        keep: list[kir.Stmt] | None = None
        reps: list[list[kir.Stmt]] = []
        stepwise: set[int] = set()      # references guarded by a condition on L's steps
        written = False
        for path, c in sites:
            idx = {a.index for a in _names_in(c, name)}
            if len(idx) != 1 or (index is not None and idx != {index}):
                return f"references with different subscripts in one loop ({L.var})"
            index = idx.pop()
            written |= c.assign.target.array == name
            needed = set().union(*(_vars(e) for e in index)) & inner
            if L.var in needed:
                return f"subscripts vary with loop {L.var}"
            chosen: list[kir.Stmt] = []
            for s in reversed(path):
                if isinstance(s, (kir.Loop, kir.Let)) and s.var in needed:
                    chosen.append(s)
                    needed |= _header_vars(s) & inner
                    needed.discard(s.var)
            if needed:
                return f"subscripts depend on {', '.join(sorted(needed))} inside loop {L.var}"
            pvars = {s.var for s in chosen}
            rep = []
            for s in path:
                if private:
                    if any(s is x for x in chosen):
                        rep.append(s)
                    continue
                if isinstance(s, _Else):
                    return "the reference is in an else branch"
                if isinstance(s, kir.If):
                    on_body = _header_vars(s) & inner - pvars
                    if on_body and _on_steps_only(_header_vars(s), inner - pvars):
                        # a step of the loop's body chosen, not the thread point (an
                        # initialisation at k = 0 fused into the band): the register
                        # serves it there, loaded and stored around the loop as for
                        # the other references
                        stepwise.add(id(c))
                        continue
                    if on_body:
                        return f"the reference is guarded by a condition on loop {L.var}'s body"
                    rep.append(s)
                elif any(s is x for x in chosen):
                    rep.append(s)
                elif isinstance(s, kir.Loop) and \
                        _header_vars(s) & (pvars | set(kir.THREAD_IDS.values())):
                    return (f"loop {s.var} inside loop {L.var} has bounds that depend on the "
                            "thread's point (a point may have no iterations: its register "
                            "would load an element nobody reads)")
            if keep is None:
                keep = rep
            elif len(keep) != len(rep) or any(not _same(a, b) for a, b in zip(keep, rep)):
                return f"references under different loops inside loop {L.var}"
            reps.append(rep)
        assert keep is not None and index is not None
        loops = [s for s in keep if isinstance(s, kir.Loop)]
        # the thread point loops of every reference (each nest alike: :func:`_same`)
        # by their place in ``loops``
        at: dict[int, int] = {}
        for r in reps:
            for pos, lp in enumerate(x for x in r if isinstance(x, kir.Loop)):
                at[id(lp)] = pos
        trips = []
        for lp in loops:
            t = self.trips(lp) if not (private and _converted(lp)) else lp.upper.value + 1
            if t is None:
                return (f"the thread point loop {lp.var} has no constant trip count "
                        "(one register per point needs one)")
            trips.append(t)
        overwrites = private or _overwrites(sites[0][1], name)
        if any(_overwrites(c, name) for _p, c in sites if id(c) in stepwise):
            return (f"a reference inside loop {L.var} overwrites the element under a "
                    f"condition on loop {L.var}'s steps (the register's load before the "
                    "loop would read an element nobody may have written)")
        if overwrites and not private and not _first_iteration(
                sites[0][0], [x for x in reps[0] if isinstance(x, kir.Loop)]):
            return (f"its first reference inside loop {L.var} overwrites the element under "
                    "a loop that may not run (the register's load would be needed and "
                    "read an undefined value)")
        nregs = math.prod(trips)
        if nregs > MAX_REGISTERS:
            return f"{nregs} points per thread need more than {MAX_REGISTERS} registers"
        shape = (nregs,) if loops else ()
        # pieces isl generated apart for disjoint block tiles share one register array
        same = [d for d in self.decls[self.first:] if self.pieces and d.shape == shape
                and d.name.endswith(f"_{name}") and d.ctype == ctype]
        if same:
            rname = same[0].name
        else:
            rname = f"pm_r{self.n}_{name}"
            self.n += 1
            self.decls.append(kir.RegisterDecl(rname, ctype, shape))
        # a point loop an earlier private register made constant-trip keeps its variable
        uvar = [lp.var if private and _converted(lp) else f"{lp.var}_u" for lp in loops]
        reg_idx: Expr | None = None
        for pos, t in enumerate(trips):
            reg_idx = Var(uvar[pos]) if reg_idx is None else \
                Binary("+", Binary("*", reg_idx, Int(t)), Var(uvar[pos]))
        reg = Access(rname, (reg_idx,) if reg_idx is not None else ())
        glob = Access(name, index)

        def const_trip(lp: kir.Loop, pos: int, body: list[kir.Stmt]) -> kir.Loop:
            t = trips[pos]
            u = uvar[pos]
            if u == lp.var:                  # made constant-trip by an earlier register
                return kir.Loop(u, lp.lower, lp.upper, 1, body, unroll=True)
            first = Binary("+", lp.lower, Binary("*", Int(lp.step), Var(u)))
            inner = body if self.whole_tile(lp, t) else \
                [kir.If(Binary("<=", Var(lp.var), lp.upper), body)]
            return kir.Loop(u, Int(0), Int(t - 1), 1, [kir.Let(lp.var, first)] + inner,
                            unroll=True)

        def nest(stmt: kir.Stmt) -> list[kir.Stmt]:
            body: list[kir.Stmt] = [stmt]
            for s in reversed(keep):
                if isinstance(s, kir.If):
                    body = [kir.If(s.cond, body)]
                elif isinstance(s, kir.Let):
                    body = [s] + body
                else:
                    body = [const_trip(s, loops.index(s), body)]
            return body

        def rewrite(body: list[kir.Stmt]) -> list[kir.Stmt]:
            out: list[kir.Stmt] = []
            for s in body:
                if isinstance(s, kir.Loop):
                    nb = rewrite(s.body)
                    if id(s) in at:
                        out.append(const_trip(s, at[id(s)], nb))
                    else:
                        out.append(kir.Loop(s.var, s.lower, s.upper, s.step, nb, s.unroll))
                elif isinstance(s, kir.If):
                    out.append(kir.If(s.cond, rewrite(s.then), rewrite(s.orelse)))
                elif isinstance(s, kir.Compute) and _names_in(s, name):
                    out.append(_to_register(s, name, reg))
                else:
                    out.append(s)
            return out

        new_L = kir.Loop(L.var, L.lower, L.upper, L.step, rewrite(L.body), L.unroll)
        block = [] if overwrites else \
            nest(kir.Compute(f"pm_rin_{rname}", Assign(reg, "=", glob)))
        block += [new_L]
        if written and not private:
            block += nest(kir.Compute(f"pm_rout_{rname}", Assign(glob, "=", reg)))
        if isinstance(L.lower, Int) and isinstance(L.upper, Int) and \
                L.lower.value <= L.upper.value:
            return block
        return [kir.If(Binary("<=", L.lower, L.upper), block)]


def promote_registers(body: list[kir.Stmt], targets: dict[str, str], members,
                      private: frozenset[str] = frozenset(), pieces: bool = False
                      ) -> tuple[list[kir.Stmt], list[kir.RegisterDecl],
                                 dict[str, tuple[list[str], list[str], bool]]]:
    """Apply register plans to a kernel body.

    ``targets`` maps each access name to promote (an array, or its shared buffer) to
    its C type; ``members`` lists ``(axis, tile, threads)`` of the mapped band
    members; ``private`` names the private local scalars among them
    (:func:`_promote_private`).  Returns the new body, the register declarations, and per name the
    registers made, the reasons sites were skipped, and whether every access now
    goes through one hoist around which only thread point loops lie (one load and
    one store per thread point).  ``pieces``: the body holds pieces isl generated
    apart for disjoint sets of block tiles (full tiles isolated on the block tile band,
    :mod:`polymagic.mapping.full_tiles`), so a thread point runs one hoist of each
    piece's: one hoist per piece still loads and stores once per point."""
    pr = RegisterPromoter(members, pieces=pieces)
    result: dict[str, tuple[list[str], list[str], bool]] = {}
    for name, ctype in targets.items():
        before = pr.first = len(pr.decls)
        pr.reasons, pr.hoists, pr.enclosing = [], [], []
        if name in private:
            body = _promote_private(pr, body, name, ctype)
        else:
            body = pr.run(body, name, ctype)
        made = [d.name + "".join(f"[{n}]" for n in d.shape) for d in pr.decls[before:]]
        left = [s for s, _ in _sites(body, name, [])
                if not _s_is_register_copy(_, pr.decls[before:])] if made else []
        once = (len(pr.hoists) == 1 or pieces and len(pr.hoists) > 1) and \
            all(pr.hoists) and not left
        result[name] = (made, [] if made else list(pr.reasons), once)
    return body, pr.decls, result


def _promote_private(pr: RegisterPromoter, body: list[kir.Stmt], name: str, ctype: str
                     ) -> list[kir.Stmt]:
    """A private local scalar (:attr:`RegisterPlan.private`) in a register for the
    whole kernel, or not at all: every reference goes to the register of its thread
    point, none is loaded or stored.  The point is what the thread point loops
    around the reference say (the cyclic ``for (p = t; ...; p += B)`` of each axis
    where a thread owns several points, made constant-trip and unrolled so the
    register index is a compile-time constant), whatever its subscripts (the
    schedule stage checked that one register per point holds every value read:
    :func:`polymagic.schedule.private.register_private`).  Promoting only some
    references would lose the values flowing between them, so a body where one
    reference lies outside a point loop of some axis (isl unrolled or specialised
    it) is returned unchanged (the array stays in global memory), with the reason
    in ``pr.reasons``."""
    axes = [(a, -(-tile // threads), threads) for a, tile, threads in pr.members
            if threads < tile]
    sites = _sites(body, name, [])
    if not sites:
        return body

    def axis_of(lp: kir.Loop) -> str | None:
        for a, _t, threads in axes:
            tid = Var(kir.THREAD_IDS[a])
            if lp.step == threads and not lp.unroll and tid.name in _vars(lp.lower):
                return a
            if _converted(lp) and lp.body and isinstance(lp.body[0], kir.Let) and \
                    lp.body[0].value == Binary("+", tid, Binary("*", Int(threads),
                                                                Var(lp.var))):
                return a
        return None

    convert: dict[int, kir.Loop] = {}
    for path, _c in sites:
        seen = {}
        for s in path:
            if isinstance(s, kir.Loop) and axis_of(s) is not None:
                seen.setdefault(axis_of(s), s)
        if sorted(seen) != sorted(a for a, _t, _b in axes):
            pr.reasons.append("a reference outside the thread point loops of its axes")
            return body
        convert.update({id(lp): lp for lp in seen.values()})
    nregs = math.prod(t for _a, t, _b in axes)
    if nregs > MAX_REGISTERS:
        pr.reasons.append(f"{nregs} points per thread need more than {MAX_REGISTERS} "
                          "registers")
        return body
    rname = f"pm_r{pr.n}_{name}"
    pr.n += 1
    pr.decls.append(kir.RegisterDecl(rname, ctype, (nregs,) if axes else ()))
    pr.hoists.append(False)

    def rewrite(stmts: list[kir.Stmt], us: dict[str, str]) -> list[kir.Stmt]:
        out: list[kir.Stmt] = []
        for s in stmts:
            if isinstance(s, kir.Loop) and id(s) in convert:
                a = axis_of(s)
                t, threads = next((t, b) for x, t, b in axes if x == a)
                if _converted(s):
                    out.append(kir.Loop(s.var, s.lower, s.upper, 1,
                                        rewrite(s.body, {**us, a: s.var}), True))
                    continue
                # the canonical form p = t + B*u, so that u names the same point in
                # every loop of the axis whatever its lower bound (isl's lower bound
                # of a cyclic loop is congruent to t mod B; a triangular tile's is
                # max(t, ...))
                u = f"{s.var}_u"
                tid = Var(kir.THREAD_IDS[a])
                first = Binary("+", tid, Binary("*", Int(threads), Var(u)))
                inside = Binary("<=", Var(s.var), s.upper)
                if s.lower != tid:
                    inside = Binary("&&", Binary(">=", Var(s.var), s.lower), inside)
                inner = rewrite(s.body, {**us, a: u})
                if s.lower != tid or not pr.whole_tile(s, t):
                    inner = [kir.If(inside, inner)]
                out.append(kir.Loop(u, Int(0), Int(t - 1), 1, [kir.Let(s.var, first)] + inner,
                                    unroll=True))
            elif isinstance(s, kir.Loop):
                out.append(kir.Loop(s.var, s.lower, s.upper, s.step, rewrite(s.body, us),
                                    s.unroll))
            elif isinstance(s, kir.If):
                out.append(kir.If(s.cond, rewrite(s.then, us), rewrite(s.orelse, us)))
            elif isinstance(s, kir.Compute) and _names_in(s, name):
                idx: Expr | None = None
                for a, t, _b in axes:
                    idx = Var(us[a]) if idx is None else \
                        Binary("+", Binary("*", idx, Int(t)), Var(us[a]))
                out.append(_to_register(s, name, Access(rname, (idx,) if idx is not None
                                                        else ())))
            else:
                out.append(s)
        return out
    return rewrite(body, {})


def _to_register(c: kir.Compute, name: str, reg: Access) -> kir.Compute:
    """Statement ``c`` with every access to array ``name`` replaced by ``reg``."""
    f = (lambda e: reg if isinstance(e, Access) and e.array == name else None)
    target = reg if c.assign.target.array == name else map_expr(c.assign.target, f)
    return kir.Compute(c.stmt, Assign(target, c.assign.op, map_expr(c.assign.value, f)),
                       atomic=c.atomic)


def _s_is_register_copy(c: kir.Compute, decls: list[kir.RegisterDecl]) -> bool:
    names = {d.name for d in decls}
    return any(a.array in names for a in accesses(c.assign.target) + accesses(c.assign.value))


# ---- redundant-load elimination ------------------------------------------------------

def eliminate_redundant_loads(body: list[kir.Stmt], ctypes: dict[str, str]
                              ) -> tuple[list[kir.Stmt], list[kir.RegisterDecl]]:
    """A global element read several times by one statement is loaded once into a
    register before it (``ctypes``: the global arrays, by name, with their C types).
    The statement reads every value before it writes its target, so the load may
    move to just before it."""
    decls: list[kir.RegisterDecl] = []

    def visit(stmts: list[kir.Stmt]) -> list[kir.Stmt]:
        out: list[kir.Stmt] = []
        for s in stmts:
            if isinstance(s, kir.Loop):
                out.append(kir.Loop(s.var, s.lower, s.upper, s.step, visit(s.body), s.unroll))
            elif isinstance(s, kir.If):
                out.append(kir.If(s.cond, visit(s.then), visit(s.orelse)))
            elif isinstance(s, kir.Compute):
                out += _dedupe(s)
            else:
                out.append(s)
        return out

    def _dedupe(c: kir.Compute) -> list[kir.Stmt]:
        reads = [a for a in accesses(c.assign.value) if a.array in ctypes]
        if c.assign.op != "=":
            reads.append(c.assign.target)
        seen: dict[Access, int] = {}
        for a in reads:
            seen[a] = seen.get(a, 0) + 1
        dups = [a for a, n in seen.items() if n > 1 and a.array in ctypes]
        if not dups or c.atomic:
            return [c]
        loads: list[kir.Stmt] = []
        repl: dict[Access, Access] = {}
        for a in dups:
            reg = kir.RegisterDecl(f"pm_l{len(decls)}_{a.array}", ctypes[a.array])
            decls.append(reg)
            repl[a] = Access(reg.name, ())
            loads.append(kir.Compute(f"pm_load_{reg.name}", Assign(repl[a], "=", a)))
        value = map_expr(c.assign.value, lambda e: repl.get(e) if isinstance(e, Access) else None)
        target = c.assign.target
        if c.assign.op != "=" and target in repl:      # x op= v  ->  x = r op v
            op = c.assign.op[:-1]
            return loads + [kir.Compute(c.stmt, Assign(target, "=",
                                                       Binary(op, repl[target], value)))]
        return loads + [kir.Compute(c.stmt, Assign(target, c.assign.op, value))]

    return visit(body), decls
