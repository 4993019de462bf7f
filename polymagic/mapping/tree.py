"""Schedule-tree helpers shared by the single mapper (seed 004 §4.1) and the
superposition mapper (seed 003 §4): band members as source text, statement names,
the block/thread-id constraints, guards over grafted copies, and the walk over a
superposition plan's items."""
from __future__ import annotations

from typing import Iterator

import islpy as isl

from .. import kir
from ..isl_util import coalesce, tree_params
from ..schedule.superposition import Kernel, StepLoop, ThreadGroup
from ..scop import Scop


def member_text(mupa: isl.MultiUnionPwAff, i: int) -> str:
    """A band member as source text, e.g. 'i' or 'i + j' (first statement's piece)."""
    upa = mupa.get_at(i)
    texts: list[str] = []

    def piece(pa: isl.PwAff):
        s = pa.to_str()
        if "[(" in s:
            texts.append(s[s.index("[(") + 2: s.rindex(")]")])
    upa.foreach_pw_aff(piece)
    uniq = sorted(set(texts))
    if len(uniq) > 1:
        uniq = [u for u in uniq if not u.lstrip("-").isdigit()] or uniq
    return uniq[0] if len(uniq) == 1 else "/".join(uniq) if uniq else "?"


def is_rectangular(mupa: isl.MultiUnionPwAff) -> bool:
    """Every band member is one source iterator (plus a constant) in every statement:
    tiles are rectangles of the original iteration space."""
    ok = [True]

    def piece(_s: isl.Set, aff: isl.Aff):
        n = aff.dim(isl.dim_type.in_)
        coeffs = [aff.get_coefficient_val(isl.dim_type.in_, i).to_python() for i in range(n)]
        nz = [c for c in coeffs if c != 0]
        if len(nz) > 1 or any(abs(c) != 1 for c in nz) or aff.dim(isl.dim_type.div) > 0:
            ok[0] = False
    for i in range(mupa.dim(isl.dim_type.set)):
        mupa.get_at(i).foreach_pw_aff(lambda pa: pa.foreach_piece(piece))
    return ok[0]


def statement_names(node: isl.ScheduleNode) -> list[str]:
    """The statements below ``node``, in source order (S0, S1, ...)."""
    names: list[str] = []
    node.get_domain().foreach_set(lambda s: names.append(s.get_tuple_name()))
    return sorted(names, key=lambda n: int(n[1:]) if n[1:].isdigit() else 0)


def loop_names(node: isl.ScheduleNode) -> list[str]:
    """The band members below ``node`` that are one source loop each (their text is
    an iterator name), outermost first: where ``--localise`` can name a loop."""
    out: list[str] = []
    if node.get_type() == isl.schedule_node_type.band:
        mupa = node.band_get_partial_schedule()
        out += [t for t in (member_text(mupa, j) for j in range(node.band_n_member()))
                if t.isidentifier()]
    for c in range(node.n_children()):
        out += [t for t in loop_names(node.child(c)) if t not in out]
    return out


def guard_grafts(node: isl.ScheduleNode) -> isl.ScheduleNode:
    """A guard node at ``node`` (right below the block's tile band): the tile values
    this block's statement instances reach.  Copy and barrier statements are grafted
    with extension nodes, which isl instantiates for every tile value the enclosing
    loops scan; where a band is skewed or its block offset piecewise, a block's tile
    loop scans neighbours' tiles too, and their copies raced with the blocks owning
    them (fuzz finding 22).  Returns the guard node."""
    reached = node.get_prefix_schedule_union_map().intersect_domain(node.get_domain()).range()
    if reached.is_empty():
        return node
    return node.insert_guard(coalesce(isl.Set.from_union_set(reached)))


def single_piece(f: isl.PwAff) -> isl.PwAff:
    """``f`` on the whole parameter space when it has one piece (its domain, where
    some tile exists, only adds existentially quantified constraints that isl's AST
    generator would carry everywhere), else ``f``."""
    pieces: list[isl.Aff] = []
    f.foreach_piece(lambda _s, a: pieces.append(a))
    return isl.PwAff.from_aff(pieces[0]) if len(pieces) == 1 else f


def with_id_params(schedule: isl.Schedule, scop: Scop) -> isl.Schedule:
    """The mapped ``schedule`` with every parameter its nodes introduce declared on
    all of them, the sizes first, then the block/thread ids in :data:`kir.ISL_IDS`
    order (isl's AST build must know each; the order fixes the order of terms in the
    printed code)."""
    named = tree_params(schedule)
    names = scop.size_params + [i for i in kir.ISL_IDS if i in named]
    return schedule.align_params(isl.Set(f"[{', '.join(names)}] -> {{ : }}").get_space())


def val_list(vals) -> isl.ValList:
    """An isl value list of the integers ``vals`` (tile sizes)."""
    lst = isl.ValList.alloc(isl.DEFAULT_CONTEXT, len(vals))
    for v in vals:
        lst = lst.add(isl.Val(v))
    return lst


def size_param_space(scop: Scop) -> isl.Space:
    """Parameter space of the size parameters, the mapped tree's to start with (a
    block/thread id joins where a constraint mentions it: :func:`kir.ids_in`)."""
    return isl.Set(f"[{', '.join(scop.size_params)}] -> {{ : }}").get_space()


def walk_items(items) -> Iterator:
    """Every item of a superposition plan (seed 003 §4.2: kernels, step loops,
    thread groups), depth first."""
    for it in items:
        yield it
        if isinstance(it, (StepLoop, Kernel)):
            yield from walk_items(it.body)


def thread_dims(k: Kernel) -> bool:
    """Whether a thread group of superposition kernel ``k`` maps a loop to threads."""
    return any(isinstance(g, ThreadGroup) and g.dims for g in walk_items(k.body))
