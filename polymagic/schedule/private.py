"""Private scalars: local scalars that stay with the thread point owning them.

The C front end expands a scalar declared inside loops into a temp array with one
element per iteration of the enclosing loops (:mod:`polymagic.scop`), so the
dependence analysis sees each instance's own copy: this is scalar expansion, the
privatisation that lets the loops around the declaration run in parallel
(Baskaran, Ramanujam & Sadayappan, CC 2010, seed 004 §4.1: the parallel loops of
the tiled band map to threads; §4.2: data whose accesses vary only with those
loops live in the thread's registers).  Two consequences the stages below rely on:

* :func:`private_temps`: a temp is *private* when every read of an element has an
  earlier write of that element (written before read in every instance of its
  enclosing loops); its values never leave that instance, and the array is dead
  after the function.  Such a temp needs no global memory at all: the mapping
  keeps it in a register of the thread that owns the point
  (:mod:`polymagic.memory.registers`), never loaded, stored, allocated or copied.
* :func:`fuse_private`: isl's scheduler often distributes the statements that
  share a private scalar (``acc = 0``; ``acc += A*B`` over ``k``;
  ``C = alpha*acc + beta*C``) over a sequence of bands, which the single mapping
  turns into one kernel each, with the scalar in global memory between them.  The
  statements are fused again into one band whose outer members are the common
  parallel loops (zero dependence distance among the fused statements: still
  coincident) and, when exactly one of them has deeper band members (the ``k``
  loop), those members too, the other statements placed at the first (before)
  or last (after) ``k`` of their point, with the original sequence below the band
  ordering the instances that meet at one point.  The band stays permutable, so
  seed 000 §4.1's sub-tiles and shared buffers of ``A`` and ``B`` along ``k``
  apply as for a plain gemm; the fused schedule is checked against every validity
  dependence before it replaces isl's.
"""
from __future__ import annotations

import islpy as isl

from ..isl_util import leading_coincident
from ..scop import Scop


def _reads_writes(scop: Scop, name: str, may: bool = False
                  ) -> tuple[isl.UnionMap, isl.UnionMap]:
    """The reads and the (must-)writes of array ``name`` by every statement, on their
    domains (a write under a data-dependent condition may not happen: it covers no
    read); with ``may``, the reads and the may-writes."""
    reads = isl.UnionMap.empty(scop.context.get_space())
    writes = reads
    for s in scop.statements:
        for a in s.accesses:
            if a.array == name:
                rel = isl.UnionMap.from_map(a.relation.intersect_domain(s.domain))
                if a.is_write and a.may == may:
                    writes = writes.union(rel)
                elif not a.is_write:
                    reads = reads.union(rel)
    return reads, writes


def private_temps(scop: Scop) -> frozenset[str]:
    """Temp arrays (expanded local scalars declared inside loops) of which every
    read of an element follows a write of that element in source order."""
    before = None                  # the source order, formed only when a temp needs it
    out = set()
    for name, arr in scop.arrays.items():
        if arr.kind != "temp" or not arr.shape or name in scop.global_only:
            continue
        reads, writes = _reads_writes(scop, name)
        if writes.is_empty():
            continue
        if before is None:
            sched = scop.schedule.intersect_domain(scop.domain)
            before = sched.lex_lt_union_map(sched)
        covered = writes.apply_range(reads.reverse()).intersect(before).range()
        if reads.domain().is_subset(covered):
            out.add(name)
    return frozenset(out)


def _statements(node: isl.ScheduleNode) -> set[str]:
    names: set[str] = set()
    node.get_domain().foreach_set(lambda s: names.add(s.get_tuple_name()))
    return names


def _all_zero(deltas: isl.UnionSet, dims: range | None = None) -> bool:
    """Every vector of ``deltas`` is 0 (in the dimensions ``dims``, default all)."""
    ok = [True]

    def one(s: isl.Set) -> None:
        zero = isl.Set.universe(s.get_space())
        for d in (dims if dims is not None else range(s.dim(isl.dim_type.set))):
            zero = zero.fix_val(isl.dim_type.set, d, isl.Val(0))
        ok[0] = ok[0] and s.is_subset(zero)
    deltas.foreach_set(one)
    return ok[0]


def _nonnegative(deltas: isl.UnionSet) -> bool:
    """No vector of ``deltas`` has a negative component (a permutable band)."""
    ok = [True]

    def one(s: isl.Set) -> None:
        for d in range(s.dim(isl.dim_type.set)):
            ok[0] = ok[0] and s.intersect(_negative(s.get_space(), d)).is_empty()
    deltas.foreach_set(one)
    return ok[0]


def _negative(space: isl.Space, d: int) -> isl.Set:
    """{ x : x_d < 0 } in ``space``."""
    ls = isl.LocalSpace.from_space(space)
    c = isl.Constraint.inequality_alloc(ls).set_coefficient_val(
        isl.dim_type.set, d, -1).set_constant_val(-1)
    return isl.Set.universe(space).add_constraint(c)


def _members(band: isl.ScheduleNode, lo: int, hi: int) -> isl.UnionMap:
    """The band's members ``lo..hi-1`` as ``{ S[i] -> [..] }`` on the band's domain."""
    mupa = band.band_get_partial_schedule()
    n = band.band_n_member()
    if hi < n:
        mupa = mupa.drop_dims(isl.dim_type.set, hi, n - hi)
    if lo > 0:
        mupa = mupa.drop_dims(isl.dim_type.set, 0, lo)
    return isl.UnionMap.from_multi_union_pw_aff(mupa).intersect_domain(band.get_domain())


class _Fusion:
    """How a run of sequence children fuses: the band's schedule and flags, and per
    child the members of its band left below the fused band."""

    def __init__(self, band: isl.MultiUnionPwAff, coincident: list[bool],
                 rest: list[int], children: list[isl.ScheduleNode]):
        self.band, self.coincident, self.rest, self.children = band, coincident, rest, children


def _plan(children: list[isl.ScheduleNode], validity: isl.UnionMap) -> _Fusion | None:
    """The fused band of ``children`` (filter nodes of one sequence, in order), or
    None when they do not fuse without losing parallelism or legality."""
    bands = [c.child(0) for c in children]
    if any(b.get_type() != isl.schedule_node_type.band for b in bands):
        return None
    lcs = [leading_coincident(b) for b in bands]
    m = min(lcs)
    if m == 0 or m < min(max(lcs), 3):
        return None                         # fusing would give up a parallel loop
    dom = children[0].get_domain()
    for c in children[1:]:
        dom = dom.union(c.get_domain())
    deps = validity.intersect_domain(dom).intersect_range(dom)
    outer = [_members(b, 0, m) for b in bands]
    u = outer[0]
    for o in outer[1:]:
        u = u.union(o)
    if not _all_zero(deps.apply_domain(u).apply_range(u).deltas()):
        return None
    deeper = [t for t, b in enumerate(bands) if b.band_n_member() > m]
    full = u
    e = 0
    if len(deeper) == 1 and bands[deeper[0]].band_get_permutable():
        star = deeper[0]
        e = bands[star].band_n_member() - m
        extra = _members(bands[star], m, m + e)
        per_point = outer[star].reverse().apply_range(extra)
        first, last = per_point.lexmin(), per_point.lexmax()
        full = outer[star].flat_range_product(extra)
        for t, o in enumerate(outer):
            if t == star:
                continue
            place = o.apply_range(first if t < star else last)
            rest = o.domain().subtract(place.domain())
            # points where the deeper loop does not run: every other statement at 0
            zeros = isl.UnionMap.from_domain_and_range(
                rest, isl.UnionSet.from_set(_zero_point(_range_space(extra))))
            full = full.union(o.flat_range_product(place.union(zeros)))
        deltas = deps.apply_domain(full).apply_range(full).deltas()
        if not _nonnegative(deltas):
            e, full = 0, u
    if e == 0:
        full = u
    deltas = deps.apply_domain(full).apply_range(full).deltas()
    coincident = [q < m or _all_zero(deltas, range(q, q + 1)) for q in range(m + e)]
    try:
        band = isl.MultiUnionPwAff.from_union_map(full.gist_domain(dom))
    except isl.Error:
        return None
    rest = [m + e if t in deeper and e else m for t in range(len(bands))]
    return _Fusion(band, coincident, rest, children)


def _range_space(um: isl.UnionMap) -> isl.Space:
    spaces: list[isl.Space] = []
    um.range().foreach_set(lambda s: spaces.append(s.get_space()))
    return spaces[0]


def _zero_point(space: isl.Space) -> isl.Set:
    s = isl.Set.universe(space)
    for d in range(s.dim(isl.dim_type.set)):
        s = s.fix_val(isl.dim_type.set, d, isl.Val(0))
    return s


def _runs(children: list[isl.ScheduleNode], users: dict[str, set[str]]
          ) -> list[list[int]]:
    """The children as runs of consecutive indices: each private temp's span (from
    the first child using it to the last) lies in one run; other children alone."""
    temps = [set().union(*(users.get(s, set()) for s in _statements(c))) for c in children]
    reach = list(range(len(children)))        # the last child a run from here must hold
    for t in set().union(*temps):
        at = [i for i, ts in enumerate(temps) if t in ts]
        for i in range(at[0], at[-1] + 1):
            reach[i] = max(reach[i], at[-1])
    runs: list[list[int]] = []
    end = -1
    for i in range(len(children)):
        if i <= end:
            runs[-1].append(i)
        else:
            runs.append([i])
        end = max(end, reach[i])
    return runs


class _Copier:
    """Copies a schedule tree (isl's, as :func:`polymagic.schedule._copy_subtree`),
    fusing the runs of sequence children that share a private temp."""

    def __init__(self, validity: isl.UnionMap, users: dict[str, set[str]]):
        self.validity, self.users = validity, users
        self.fused: list[list[str]] = []

    def copy(self, src: isl.ScheduleNode, dst: isl.ScheduleNode) -> isl.ScheduleNode:
        kind = src.get_type()
        if kind == isl.schedule_node_type.leaf:
            return dst
        if kind == isl.schedule_node_type.band:
            return self.band(src, dst, 0)
        if kind == isl.schedule_node_type.set:
            n = src.n_children()
            dst = dst.insert_set(self._filters([[src.child(i)] for i in range(n)]))
            for i in range(n):
                dst = self.copy(src.child(i).child(0), dst.child(i).child(0)).parent().parent()
            return dst
        if kind == isl.schedule_node_type.sequence:
            return self.sequence(src, dst)
        raise ValueError(str(kind))

    def band(self, src: isl.ScheduleNode, dst: isl.ScheduleNode, lo: int
             ) -> isl.ScheduleNode:
        """Members ``lo..`` of the band ``src`` (none left: its child) at ``dst``."""
        n = src.band_n_member()
        if lo >= n:
            return self.copy(src.child(0), dst)
        mupa = src.band_get_partial_schedule()
        if lo:
            mupa = mupa.drop_dims(isl.dim_type.set, 0, lo)
        dst = dst.insert_partial_schedule(mupa)
        dst = dst.band_set_permutable(src.band_get_permutable())
        for k in range(lo, n):
            dst = dst.band_member_set_coincident(k - lo, src.band_member_get_coincident(k))
        return self.copy(src.child(0), dst.child(0)).parent()

    @staticmethod
    def _filters(groups: list[list[isl.ScheduleNode]]) -> isl.UnionSetList:
        lst = isl.UnionSetList.alloc(groups[0][0].get_ctx(), len(groups))
        for g in groups:
            f = g[0].filter_get_filter()
            for c in g[1:]:
                f = f.union(c.filter_get_filter())
            lst = lst.add(f)
        return lst

    def sequence(self, src: isl.ScheduleNode, dst: isl.ScheduleNode) -> isl.ScheduleNode:
        children = [src.child(i) for i in range(src.n_children())]
        groups: list[list[isl.ScheduleNode]] = []
        plans: list[_Fusion | None] = []
        for run in _runs(children, self.users):
            try:
                fusion = _plan([children[i] for i in run], self.validity) \
                    if len(run) > 1 else None
            except IndexError:               # a statement without instances
                fusion = None
            if fusion is None:
                groups += [[children[i]] for i in run]
                plans += [None] * len(run)
            else:
                groups.append([children[i] for i in run])
                plans.append(fusion)
                self.fused.append(sorted(set().union(*(_statements(children[i])
                                                       for i in run))))
        if len(groups) == 1 and plans[0] is not None:      # the whole sequence fused
            return self.fuse(plans[0], dst)
        dst = dst.insert_sequence(self._filters(groups))
        for i, (g, fusion) in enumerate(zip(groups, plans)):
            at = dst.child(i).child(0)
            at = self.copy(g[0].child(0), at) if fusion is None else self.fuse(fusion, at)
            dst = at.parent().parent()
        return dst

    def fuse(self, f: _Fusion, dst: isl.ScheduleNode) -> isl.ScheduleNode:
        dst = dst.insert_partial_schedule(f.band)
        dst = dst.band_set_permutable(1)
        for k, c in enumerate(f.coincident):
            dst = dst.band_member_set_coincident(k, int(c))
        below = dst.child(0).insert_sequence(self._filters([[c] for c in f.children]))
        for i, (c, lo) in enumerate(zip(f.children, f.rest)):
            below = self.band(c.child(0), below.child(i).child(0), lo).parent().parent()
        return below.parent()


def fuse_private(scop: Scop, validity: isl.UnionMap, schedule: isl.Schedule,
                 private: frozenset[str]) -> tuple[isl.Schedule, list[list[str]]]:
    """``schedule`` with the sequence children that share a private temp fused into
    one band (module docstring), and the statement groups fused; ``schedule`` itself
    when nothing fuses or the fused tree fails the validity check."""
    if not private:
        return schedule, []
    users: dict[str, set[str]] = {}
    for s in scop.statements:
        for a in s.accesses:
            if a.array in private:
                users.setdefault(s.name, set()).add(a.array)
    root = schedule.get_root()
    if root.n_children() == 0:
        return schedule, []
    copier = _Copier(validity, users)
    try:
        new = copier.copy(root.child(0), isl.Schedule.from_domain(
            schedule.get_domain()).get_root().child(0)).get_schedule()
    except (isl.Error, ValueError):
        return schedule, []
    if not copier.fused or not _respects(new, validity):
        return schedule, []
    return new, copier.fused


def _respects(schedule: isl.Schedule, validity: isl.UnionMap) -> bool:
    """Every validity dependence goes forward in ``schedule``'s order."""
    smap = schedule.get_map()
    dom = schedule.get_domain()
    d = validity.intersect_domain(dom).intersect_range(dom).apply_domain(smap).apply_range(smap)
    if d.is_empty():
        return True
    space = _range_space(smap)
    return d.is_subset(isl.UnionMap.from_map(isl.Map.lex_lt(space)))


def private_groups(scop: Scop, private: frozenset[str]) -> list[set[str]]:
    """The statements linked by private temps (connected components: statements
    that share one), one set per component."""
    groups: list[set[str]] = []
    for t in sorted(private):
        users = {s.name for s in scop.statements if any(a.array == t for a in s.accesses)}
        linked = [g for g in groups if g & users]
        for g in linked:
            groups.remove(g)
            users |= g
        groups.append(users)
    return groups


def together(schedule: isl.Schedule, group: set[str]) -> bool:
    """Whether the first band with a parallel (coincident) leading member above any
    statement of ``group`` holds all of them (the single mapping makes it one
    kernel)."""
    found: list[bool] = []

    def visit(n: isl.ScheduleNode) -> bool:
        if found or n.get_type() != isl.schedule_node_type.band or \
                leading_coincident(n) == 0:
            return not found
        names = _statements(n)
        if names & group:
            found.append(group <= names)
            return False
        return True
    schedule.get_root().foreach_descendant_top_down(visit)
    return bool(found) and found[0]


def top_level_nests(scop: Scop) -> list[isl.UnionSet]:
    """The statement instances of each outermost loop nest (or statement) of the
    source, in source order: the first dimension of the 2d+1 source schedule."""
    nests: dict[int, isl.UnionSet] = {}
    for s in scop.statements:
        um = scop.schedule.intersect_domain(isl.UnionSet.from_set(
            isl.Set.universe(s.domain.get_space())))
        if um.is_empty():       # a statement that never runs (``i % 2 == 1 && i % 2 == 0``)
            continue
        m = isl.Map.from_union_map(um)
        first = m.range().project_out(isl.dim_type.set, 1, m.dim(isl.dim_type.out) - 1)
        c0 = int(first.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python())
        d = isl.UnionSet.from_set(s.domain)
        nests[c0] = nests[c0].union(d) if c0 in nests else d
    return [nests[k] for k in sorted(nests)]


def by_nest(domain: isl.UnionSet, parts: list[isl.Schedule]) -> isl.Schedule:
    """One schedule running ``parts`` (schedules of the source's outermost nests,
    :func:`top_level_nests`) one after the other, in source order: legal, since
    the source order between the nests is kept and each part respects the
    dependences inside its nest."""
    root = isl.Schedule.from_domain(domain).get_root().child(0)
    lst = isl.UnionSetList.alloc(domain.get_ctx(), len(parts))
    for p in parts:
        lst = lst.add(p.get_domain())
    node = root.insert_sequence(lst)
    copier = _Copier(isl.UnionMap.empty(domain.get_space()), {})
    for i, p in enumerate(parts):
        top = p.get_root()
        if top.n_children():
            node = copier.copy(top.child(0), node.child(i).child(0)).parent().parent()
    return node.get_schedule()


def _kernel_point(schedule: isl.Schedule, group: set[str]) -> isl.UnionMap | None:
    """The thread point of the instances of ``group`` when the first band with a
    parallel leading member above them holds them all (their kernel in the single
    mapping): host loops above the band, then its first (at most three) parallel
    members."""
    found: list[isl.UnionMap | None] = []

    def visit(n: isl.ScheduleNode) -> bool:
        if found or n.get_type() != isl.schedule_node_type.band or \
                leading_coincident(n) == 0:
            return not found
        names = _statements(n)
        if names & group:
            m = min(leading_coincident(n), 3)
            found.append(n.get_prefix_schedule_union_map().flat_range_product(
                _members(n, 0, m)).intersect_domain(n.get_domain())
                if group <= names else None)
            return False
        return True
    schedule.get_root().foreach_descendant_top_down(visit)
    return found[0] if found else None


def register_private(scop: Scop, schedule: isl.Schedule, private: frozenset[str]
                     ) -> frozenset[str]:
    """The private temps one register per thread point can hold in ``schedule``.

    The thread point of an instance is what the single mapping gives it (seed 004
    §4.1): the host loops above the temp's kernel band and the band's first (at most
    three) parallel members.  With every element of the temp in the one register
    of its point, a read must still see the element it reads in the source: isl's
    dataflow over the *collapsed* accesses (instance -> its point), in the
    schedule's order, must find for every read a last write of the same point that
    wrote the same element.  Gemm's ``acc`` (one element per point) passes; so does
    a scalar declared inside the ``k`` loop (``float p = A*B; acc += p;``: one
    element per ``k`` at a point, each read right after its write).  A local array
    (``double t[2];`` in the loop body) qualifies only with one element per point:
    the check above does not tell its elements apart within one statement."""
    out = set()
    full = schedule.get_map()
    for t in sorted(private):
        users = {s.name for s in scop.statements if any(a.array == t for a in s.accesses)}
        point = _kernel_point(schedule, users)
        if point is None:
            continue
        reads, writes = _reads_writes(scop, t)
        may = _reads_writes(scop, t, may=True)[1]
        if scop.arrays[t].local is not None and not point.reverse().apply_range(
                reads.union(writes).union(may)).is_single_valued():
            continue       # a local array with several elements at a point: not one register
        info = isl.UnionAccessInfo.from_sink(point.intersect_domain(reads.domain()))
        info = info.set_must_source(point.intersect_domain(writes.domain()))
        if not may.is_empty():      # writes under data-dependent conditions
            info = info.set_may_source(point.intersect_domain(may.domain()))
        info = info.set_schedule_map(full)
        flow = info.compute_flow().get_may_dependence()
        same = writes.union(may).apply_range(reads.reverse())
        if flow.is_subset(same) and \
                reads.domain().intersect_params(scop.context).is_subset(flow.range()):
            out.add(t)
    return frozenset(out)


def source_tree(scop: Scop, domain: isl.UnionSet, validity: isl.UnionMap) -> isl.Schedule:
    """The source's own loop structure over ``domain`` as a schedule tree: one
    single-member band per loop, sequences in textual order, each member marked
    coincident when no dependence between instances of one iteration of the outer
    loops crosses its iterations (seed 004 §4.1 then maps the outermost parallel
    loop).  The fallback for statements sharing a private scalar that isl's
    schedule spreads over several parallel bands: the scalar's loop nest as
    written keeps them in one kernel."""
    depth = {s.name: len(s.iterators) for s in scop.statements}
    maps: dict[str, isl.Map] = {}
    scop.schedule.intersect_domain(domain).foreach_map(
        lambda m: maps.__setitem__(m.get_tuple_name(isl.dim_type.in_), m))
    deps = validity.intersect_domain(domain).intersect_range(domain)

    def constant(name: str, pos: int) -> int:
        m = maps[name]
        r = m.range().project_out(isl.dim_type.set, pos + 1, m.dim(isl.dim_type.out) - pos - 1)
        r = r.project_out(isl.dim_type.set, 0, pos)
        return int(r.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python())

    def member(names: list[str], pos: int) -> isl.MultiUnionPwAff:
        um = None
        for n in names:
            m = maps[n]
            m = m.project_out(isl.dim_type.out, pos + 1, m.dim(isl.dim_type.out) - pos - 1)
            m = m.project_out(isl.dim_type.out, 0, pos)
            um = isl.UnionMap.from_map(m) if um is None else um.union(isl.UnionMap.from_map(m))
        return isl.MultiUnionPwAff.from_union_map(um)

    def filt(names: list[str]) -> isl.UnionSet:
        out = None
        for n in names:
            d = isl.UnionSet.from_set(maps[n].domain())
            out = d if out is None else out.union(d)
        return out

    def build(node: isl.ScheduleNode, names: list[str], pos: int) -> isl.ScheduleNode:
        if pos % 2 == 1:                     # the loop at depth pos // 2
            node = node.insert_partial_schedule(member(names, pos))
            same = node.get_prefix_schedule_union_map()
            same = same.apply_range(same.reverse())
            d = deps.intersect(same).intersect_domain(filt(names)).intersect_range(filt(names))
            f = isl.UnionMap.from_multi_union_pw_aff(node.band_get_partial_schedule())
            node = node.band_set_permutable(1)
            node = node.band_member_set_coincident(
                0, int(d.is_empty() or _all_zero(d.apply_domain(f).apply_range(f).deltas())))
            return build(node.child(0), names, pos + 1).parent()
        groups: dict[int, list[str]] = {}
        for n in names:
            groups.setdefault(constant(n, pos), []).append(n)
        for grp in groups.values():
            if len({2 * depth[n] == pos for n in grp}) > 1:
                raise ValueError("a statement and a loop at one textual position")
        keys = sorted(groups)
        if len(keys) == 1:
            grp = groups[keys[0]]
            return node if 2 * depth[grp[0]] == pos else build(node, grp, pos + 1)
        lst = isl.UnionSetList.alloc(node.get_ctx(), len(keys))
        for k in keys:
            lst = lst.add(filt(groups[k]))
        node = node.insert_sequence(lst)
        for i, k in enumerate(keys):
            grp = groups[k]
            at = node.child(i).child(0)
            if 2 * depth[grp[0]] != pos:
                at = build(at, grp, pos + 1)
            node = at.parent().parent()
        return node

    names = sorted(maps, key=lambda n: int(n[1:]) if n[1:].isdigit() else 0)
    root = isl.Schedule.from_domain(domain).get_root().child(0)
    return build(root, names, 0).get_schedule()
