"""The original (textual) order as a schedule tree, for isl's dataflow analysis.

The front end writes the original order in 2d+1 form (``S[i, j] -> [b0, i, b1, j,
b2]``: constant textual positions between the loop iterators).  isl's dataflow
analysis (``isl_union_access_info_compute_flow``) given that order as a schedule
tree splits its work at the sequence nodes, statements in different children being
ordered by their position alone; given the same order as one map it compares every
pair of statements through all dimensions.  The dependences are the same (the 33
benchmark kernels: the same text), found in half the time on gauss-seidel-2d.
"""
from __future__ import annotations

import islpy as isl


def source_tree(schedule: isl.UnionMap) -> isl.Schedule | None:
    """The schedule tree of the 2d+1 ``schedule`` (its domain that of the tree): a
    sequence node where statements part at a constant dimension, a band per loop
    dimension they share, one band with the remaining loop dimensions of a single
    statement.  None when ``schedule`` is not of that form (a dimension that is
    neither constant where they part nor shared)."""
    rows: dict[str, list[isl.PwAff]] = {}
    maps: list[isl.Map] = []
    schedule.foreach_map(maps.append)
    for m in maps:
        if m.dim(isl.dim_type.out) != maps[0].dim(isl.dim_type.out):
            return None
        try:
            pma = isl.PwMultiAff.from_map(m)
        except isl.Error:
            return None
        rows[m.get_tuple_name(isl.dim_type.in_)] = [
            pma.get_pw_aff(d) for d in range(m.dim(isl.dim_type.out))]
    if not rows:
        return None
    root = isl.Schedule.from_domain(schedule.domain()).get_root().child(0)
    node = _build(root, sorted(rows), rows, 0)
    return None if node is None else node.get_schedule()


def _constant(f: isl.PwAff) -> int | None:
    pieces: list[isl.Aff] = []
    f.foreach_piece(lambda _s, a: pieces.append(a))
    if len(pieces) != 1 or not pieces[0].is_cst():
        return None
    return pieces[0].get_constant_val().to_python()


def _build(node: isl.ScheduleNode, stmts: list[str], rows: dict[str, list[isl.PwAff]],
           d: int) -> isl.ScheduleNode | None:
    """The order of ``stmts`` from dimension ``d`` on, below the leaf ``node``;
    returns the node at ``node``'s position."""
    width = len(rows[stmts[0]])
    if len(stmts) == 1:
        loops = [rows[stmts[0]][k] for k in range(d, width) if _constant(rows[stmts[0]][k]) is None]
        return node.insert_partial_schedule(_band(loops, stmts)) if loops else node
    if d >= width:
        return None
    if d % 2 == 0:
        values = {s: _constant(rows[s][d]) for s in stmts}
        if None in values.values():
            return None
        keys = sorted(set(values.values()))
        if len(keys) == 1:
            return _build(node, stmts, rows, d + 1)
        groups = [[s for s in stmts if values[s] == k] for k in keys]
        filters = isl.UnionSetList.alloc(node.get_ctx(), len(groups))
        for g in groups:
            filters = filters.add(_filter(g, rows))
        node = node.insert_sequence(filters)
        for i, g in enumerate(groups):
            child = _build(node.child(i).child(0), g, rows, d + 1)
            if child is None:
                return None
            node = child.parent().parent()
        return node
    child = _build(node.insert_partial_schedule(_band([rows[s][d] for s in stmts], stmts))
                   .child(0), stmts, rows, d + 1)
    return None if child is None else child.parent()


def _band(loops: list[isl.PwAff], stmts: list[str]) -> isl.MultiUnionPwAff:
    """A band: one member per entry of ``loops`` for one statement, or one member
    (the statements' ``loops``, one each) for several."""
    if len(stmts) == 1:
        members = [isl.UnionPwAff.from_pw_aff(f) for f in loops]
    else:
        upa = isl.UnionPwAff.from_pw_aff(loops[0])
        for f in loops[1:]:
            upa = upa.union_add(isl.UnionPwAff.from_pw_aff(f))
        members = [upa]
    lst = isl.UnionPwAffList.alloc(members[0].get_ctx(), len(members))
    for m in members:
        lst = lst.add(m)
    space = isl.Space.set_alloc(members[0].get_ctx(), 0, len(members))
    return isl.MultiUnionPwAff.from_union_pw_aff_list(
        space.align_params(members[0].get_space()), lst)


def _filter(stmts: list[str], rows: dict[str, list[isl.PwAff]]) -> isl.UnionSet:
    out = isl.UnionSet.from_set(rows[stmts[0]][0].domain())
    for s in stmts[1:]:
        out = out.union(isl.UnionSet.from_set(rows[s][0].domain()))
    return out
