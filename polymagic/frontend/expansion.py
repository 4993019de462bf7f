"""Array expansion of a scratch array reused by every iteration of outer loops.

PolyBench's doitgen computes ``sum[p]`` afresh in every ``(r, q)`` iteration and
copies it out before the next one overwrites it.  The dependences through ``sum``
from one iteration to the next are false (output and anti): no value flows between
iterations, yet they serialise ``r`` and ``q`` (the first H100 run: 4000 launches
of one block).  Expanding the array by the outer loops' iterators (Feautrier,
"Array expansion", ICS 1988; PPCG gets the same freedom from pet's treatment of
such temporaries, seed 001 §3's localisation for values that stay inside a tile)
gives every iteration its own copy, so the outer loops become parallel.  This is
the front end's scalar expansion of a local declared inside loops
(:mod:`polymagic.scop`), extended to an array declared outside them.

The rule (:func:`expand_scratch`), for an array ``X`` (a parameter or a local)
whose every access is exact and sits in one loop nest:

* ``d`` = the loops that enclose every access of ``X`` (the common prefix of the
  source schedule); ``d >= 1``;
* ``X`` is read, and in every iteration of those loops every read of an element
  of ``X`` follows a write of that element in the same iteration (written before
  read: no value enters an iteration; an array only written is no scratch, and
  its expansion would cost memory for each iteration of, say, a time loop);
* some element is accessed by two different iterations (else nothing is gained);
* the outer loops' lower bounds are constants (the expanded index is
  ``iterator - lower``);
* for a parameter, whose final values the caller sees, every iteration writes
  the same elements, so the last iteration of the outer loops holds every final
  value: a copy-out statement after the nest writes them back to ``X`` (lastprivate).

``X[f]`` becomes ``pm_x_X[o_1 - l_1, ..., o_d - l_d, f]`` in every statement (a
temp array, allocated per run), and the decision travels as
:class:`Expansion` records in ``Scop.expansions``.
"""
from __future__ import annotations

from dataclasses import replace

import islpy as isl

from .. import expr as E
from ..isl_util import OperationBudget, pw_aff_to_expr
from ..scop import Access, Array, Expansion, Scop, Statement


#: isl operations the analysis of one array may take (a nest isl finds hard to
#: analyse keeps its array as written: the expansion only adds parallelism)
EXPANSION_OPERATIONS = 2_000_000


def expand_scratch(scop: Scop) -> Scop:
    """``scop`` with every array the module docstring's rule allows expanded."""
    done: list[Expansion] = []
    ctx = scop.context.get_ctx()
    for name in list(scop.arrays):
        try:
            with OperationBudget(ctx, EXPANSION_OPERATIONS):
                out = _expand(scop, name)
        except isl.Error:               # the budget is spent, or isl refuses a step
            out = None
        if out is not None:
            scop, exp = out
            done.append(exp)
    if not done:
        return scop
    return replace(scop, expansions=tuple(scop.expansions) + tuple(done))


def _users(scop: Scop, name: str) -> list[Statement]:
    return [s for s in scop.statements if any(a.array == name for a in s.accesses)]


def _prefix(scop: Scop, users: list[Statement]) -> int:
    """How many loops enclose every statement of ``users`` (the same loops)."""
    maps = {s.name: isl.Map.from_union_map(scop.schedule.intersect_domain(
        isl.UnionSet.from_set(s.domain))) for s in users}

    def constant(s: Statement, pos: int) -> int:
        m = maps[s.name]
        r = m.range().project_out(isl.dim_type.set, pos + 1, m.dim(isl.dim_type.out) - pos - 1)
        r = r.project_out(isl.dim_type.set, 0, pos)
        return int(r.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python())

    d = 0
    while all(len(s.iterators) > d for s in users):
        cs = {constant(s, 2 * d) for s in users}
        if len(cs) != 1 or len({s.iterators[d] for s in users}) != 1:
            break
        d += 1
    return d


def _outer(scop: Scop, s: Statement, d: int, keep: tuple[int, ...] | None = None
           ) -> isl.Map:
    """``{ S[i] -> [i_0, ..., i_{d-1}] }`` on the statement's domain (only the loops
    ``keep`` when given)."""
    m = isl.Map.from_union_map(scop.schedule.intersect_domain(isl.UnionSet.from_set(s.domain)))
    m = m.project_out(isl.dim_type.out, 2 * d, m.dim(isl.dim_type.out) - 2 * d)
    for k in reversed(range(d)):          # the constants between the loops
        m = m.project_out(isl.dim_type.out, 2 * k, 1)
        if keep is not None and k not in keep:     # the loop, now at 2k
            m = m.project_out(isl.dim_type.out, 2 * k, 1)
    return m


def _in_nest(scop: Scop, s: Statement, users: list[Statement], d: int) -> bool:
    """Whether ``s`` runs inside the ``d`` loops that enclose ``users``."""
    if len(s.iterators) < d or s.iterators[:d] != users[0].iterators[:d]:
        return False
    return _prefix(scop, [users[0], s]) >= d


def _freed(scop: Scop, name: str, users: list[Statement], d: int) -> tuple[int, ...]:
    """The loops among the ``d`` whose iterations no other array links (no element of
    another array written in one iteration and accessed in another, the loops
    outside them equal): the loops the expansion of ``name`` can make parallel."""
    nest = [s for s in scop.statements if _in_nest(scop, s, users, d)]
    space = scop.context.get_space()
    conflicts = isl.UnionMap.empty(space)
    arrays = {a.array for s in nest for a in s.accesses} - {name}
    for y in arrays:
        w = a_ = isl.UnionMap.empty(space)
        for s in nest:
            for a in s.accesses:
                if a.array == y:
                    rel = isl.UnionMap.from_map(a.relation.intersect_domain(s.domain))
                    a_ = a_.union(rel)
                    if a.is_write:
                        w = w.union(rel)
        c = w.apply_range(a_.reverse())
        conflicts = conflicts.union(c).union(c.reverse())
    if any(s.atomic for s in nest):
        return ()
    out = []
    for j in range(d):
        upto = [isl.UnionMap.empty(space), isl.UnionMap.empty(space)]
        for s in nest:
            for i, n in enumerate((j, j + 1)):
                m = isl.UnionMap.from_map(_outer(scop, s, d, tuple(range(n))))
                upto[i] = upto[i].union(m)
        eq_outer = upto[0].apply_range(upto[0].reverse())
        eq_here = upto[1].apply_range(upto[1].reverse())
        if conflicts.intersect(eq_outer).subtract(eq_here).is_empty():
            out.append(j)
    return tuple(out)


def _expand(scop: Scop, name: str) -> tuple[Scop, Expansion] | None:
    arr = scop.arrays[name]
    if name in scop.global_only or arr.kind not in ("param", "temp") or arr.flat is not None:
        return None                       # (a flat buffer's extents are the caller's)
    users = _users(scop, name)
    if not users or any(a.may or a.guard for s in users for a in s.accesses
                        if a.array == name) or any(s.atomic for s in users):
        return None
    d = _prefix(scop, users)
    if d == 0:
        return None
    space = scop.context.get_space()
    outer = isl.UnionMap.empty(space)
    reads = writes = isl.UnionMap.empty(space)
    for s in users:
        outer = outer.union(isl.UnionMap.from_map(_outer(scop, s, d)))
        for a in s.accesses:
            if a.array == name:
                rel = isl.UnionMap.from_map(a.relation.intersect_domain(s.domain))
                if a.is_write:
                    writes = writes.union(rel)
                else:
                    reads = reads.union(rel)
    if writes.is_empty() or reads.is_empty():
        return None                       # not a scratch array: only written (or read)
    same = outer.apply_range(outer.reverse())
    sched = scop.schedule.intersect_domain(outer.domain())
    before = sched.lex_lt_union_map(sched)
    covered = writes.apply_range(reads.reverse()).intersect(before).intersect(same).range()
    if not reads.domain().is_subset(covered):
        return None                       # a value enters some iteration
    accesses = writes.union(reads)
    if writes.apply_range(accesses.reverse()).subtract(same).is_empty():
        return None                       # no element is shared by two iterations
    keep = _freed(scop, name, users, d)
    if not keep:
        return None                       # other arrays keep every loop sequential
    per_iter = isl.Map.from_union_map(outer.reverse().apply_range(writes)).intersect_params(
        scop.context)
    all_written = isl.Set.from_union_set(writes.range())
    copy = arr.kind == "param"
    odom = isl.Set.from_union_set(outer.range()).intersect_params(scop.context)
    if copy and not per_iter.is_equal(isl.Map.from_domain_and_range(odom, all_written)):
        return None                       # the final values are not all in one iteration
    last = odom.lexmax()
    outer = isl.UnionMap.empty(space)
    for s in users:
        outer = outer.union(isl.UnionMap.from_map(_outer(scop, s, d, keep)))
    odom = isl.Set.from_union_set(outer.range()).intersect_params(scop.context)
    last = isl.Set.from_union_set(isl.UnionSet.from_set(last).apply(
        isl.UnionMap.from_map(_keep_dims(last.get_space(), keep))))
    lows = []
    for k in range(len(keep)):
        lo = odom.dim_min(k)
        if not lo.is_cst() or lo.n_piece() != 1:
            return None
        vals: list[int] = []
        lo.foreach_piece(lambda s, a: vals.append(int(a.get_constant_val().to_python())))
        lows.append(vals[0])
    loops = tuple(users[0].iterators[k] for k in keep)
    xname = f"pm_x_{name}"
    extents = tuple(pw_aff_to_expr(odom.dim_max(k).add_constant_val(isl.Val(1 - lows[k])),
                                   scop.context) for k in range(len(keep)))
    shift = isl.Map.from_multi_aff(isl.MultiAff.identity(
        isl.Space.map_from_set(odom.get_space())))
    for k, lo in enumerate(lows):
        if lo:
            shift = shift.apply_range(_translate(odom.get_space(), k, -lo))

    def rewrite(e: E.Expr, vals: tuple[E.Expr, ...]) -> E.Expr:
        return E.map_expr(e, lambda x: E.Access(xname, vals + tuple(rewrite(i, vals)
                                                                     for i in x.index))
                          if isinstance(x, E.Access) and x.array == name else None)

    def relation(s_outer: isl.Map, rel: isl.Map) -> isl.Map:
        m = s_outer.apply_range(shift).range_product(rel).flatten_range()
        return m.set_tuple_name(isl.dim_type.out, xname)

    idx = tuple(E.Binary("-", E.Var(it), E.Int(lo)) if lo else E.Var(it)
                for it, lo in zip(loops, lows))
    statements = []
    for s in scop.statements:
        if s not in users:
            statements.append(s)
            continue
        so = _outer(scop, s, d, keep)
        acc = [Access(xname, relation(so, a.relation), a.is_write, a.may, a.guard)
               if a.array == name else a for a in s.accesses]
        body = E.Assign(rewrite(s.body.target, idx), s.body.op, rewrite(s.body.value, idx))
        statements.append(replace(s, body=body, accesses=acc))
    arrays = dict(scop.arrays)
    arrays[xname] = Array(xname, arr.ctype, extents + tuple(arr.shape), "temp", arr.line,
                          local=arr.local)
    schedule = scop.schedule
    copy_name = None
    if copy:
        copy_name = f"S{len(scop.statements)}"
        made = _copy_out(scop, name, xname, copy_name, last, lows, all_written, shift)
        if made is None:
            return None
        stmt, smap = made
        statements.append(stmt)
        schedule = schedule.union(isl.UnionMap.from_map(smap))
    new = replace(scop, arrays=arrays, statements=statements, schedule=schedule)
    return new, Expansion(name, xname, tuple(loops), copy_name)


def _translate(space: isl.Space, k: int, by: int) -> isl.Map:
    """``{ [o] -> [o'] : o'_k = o_k + by, o'_j = o_j }`` in ``space``."""
    ma = isl.MultiAff.identity(isl.Space.map_from_set(space))
    aff = ma.get_aff(k).add_constant_val(isl.Val(by))
    return isl.Map.from_multi_aff(ma.set_aff(k, aff))


def _keep_dims(space: isl.Space, keep: tuple[int, ...]) -> isl.Map:
    """``{ [o] -> [o_keep] }`` on ``space``."""
    m = isl.Map.identity(isl.Space.map_from_set(space))
    for k in reversed(range(space.dim(isl.dim_type.set))):
        if k not in keep:
            m = m.project_out(isl.dim_type.out, k, 1)
    return m


def _copy_out(scop: Scop, name: str, xname: str, sname: str, last: isl.Set,
              lows: list[int], written: isl.Set, shift: isl.Map
              ) -> tuple[Statement, isl.Map] | None:
    """The statement ``X[e] = pm_x_X[last - low, e]`` over the written elements,
    after every other statement, and its source-schedule map (``last``: the last
    iteration of the expanded loops)."""
    rank = written.dim(isl.dim_type.set)
    maps: list[isl.Map] = []
    scop.schedule.foreach_map(maps.append)
    width = maps[0].dim(isl.dim_type.out)
    if 2 * rank + 1 > width:
        return None
    its = tuple(f"pm_e{k}" for k in range(rank))
    dom = written.set_tuple_name(sname).intersect_params(last.params())
    for k, it in enumerate(its):
        dom = dom.set_dim_name(isl.dim_type.set, k, it)
    ident = isl.Map.identity(isl.Space.map_from_set(dom.get_space())).intersect_domain(dom)
    write = ident.set_tuple_name(isl.dim_type.out, name)
    at = isl.Map.from_domain_and_range(dom, last).apply_range(shift)
    read = at.range_product(write).flatten_range().set_tuple_name(isl.dim_type.out, xname)
    pma = last.lexmin_pw_multi_aff()
    lastidx = []
    for k, lo in enumerate(lows):
        v = pw_aff_to_expr(pma.get_pw_aff(k).add_constant_val(isl.Val(-lo)), scop.context)
        lastidx.append(v)
    vars_ = tuple(E.Var(i) for i in its)
    body = E.Assign(E.Access(name, vars_), "=", E.Access(xname, tuple(lastidx) + vars_))
    firsts: list[int] = []
    for m in maps:
        p = m.range().project_out(isl.dim_type.set, 1, width - 1).sample_point()
        firsts.append(int(p.get_coordinate_val(isl.dim_type.set, 0).to_python()))
    top = max(firsts) + 1
    out = isl.Space.set_alloc(dom.get_ctx(), 0, width)
    sm = isl.Map.from_domain_and_range(dom, isl.Set.universe(out))
    sm = sm.fix_val(isl.dim_type.out, 0, isl.Val(top))
    for k in range(1, width):
        if k % 2 == 1 and k // 2 < rank:
            sm = sm.equate(isl.dim_type.in_, k // 2, isl.dim_type.out, k)
        else:
            sm = sm.fix_val(isl.dim_type.out, k, isl.Val(0))
    sm = sm.intersect_domain(dom)
    text = f"{name}[...] = {xname}[last iteration][...];"
    stmt = Statement(sname, its, dom, body, [Access(xname, read, False),
                                             Access(name, write, True)],
                     scop.arrays[name].line, text)
    return stmt, sm
