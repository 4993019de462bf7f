"""Per-kernel code generation's schedule trees (PPCG's split of host and kernel code).

When isl's AST of the whole mapped tree would let the host part depend on block or
thread ids (:func:`host_depends_on_ids`; fuzz findings 19, 20), the host AST comes
from the tree with each kernel's subtree grouped by its host loop values and cut
(:func:`group_and_cut`), and each kernel's body from the tree restricted to one
launch (:func:`kernel_schedule`).  Time tiles also scan a box of wavefronts
(:func:`boxed_launches`).  These functions only build and inspect trees; the
lowerer (:mod:`.lowerer`) generates and lowers their ASTs.
"""
from __future__ import annotations

import islpy as isl

from .. import kir
from ..expr import Expr, Int, Var
from ..expr import walk as walk_expr
from ..isl_util import ast_expr_to_expr
from ..mapping import HOST_PARAM, MARK_PREFIX, KernelPlan, kernel_mark
from ..thread_space import thread_bounds_in

#: names of the launch statements of the host tree in per-kernel mode
GROUP_PREFIX = "pm_group_"


def mentions_mapped_ids(e: Expr) -> bool:
    """Whether ``e`` reads a block or thread id (or a 16-byte copy's lane variable)."""
    return any(isinstance(x, Var) and (x.name in kir.MAPPED_IDS or kir.copy_split_var(x.name) is not None)
               for x in walk_expr(e))


def rename_vars(body: list[kir.Stmt], names: dict[str, Expr]) -> list[kir.Stmt]:
    """``body`` with the variables of ``names`` replaced by their expressions."""
    if not names:
        return body
    return kir.map_body(body, lambda e: names.get(e.name) if isinstance(e, Var) else None)


def drop_fixed_host_loops(body: list[kir.Stmt]) -> list[kir.Stmt]:
    """``if (1) { v = pm_h<k>; ... }`` (a host loop fixed to the launch's value) ->
    ``...`` with ``v`` read as ``pm_h<k>``."""
    out: list[kir.Stmt] = []
    for s in body:
        if isinstance(s, kir.If) and s.cond == Int(1) and not s.orelse and s.then and \
                isinstance(s.then[0], kir.Let) and isinstance(s.then[0].value, Var) and \
                s.then[0].value.name.startswith(HOST_PARAM):
            rest = rename_vars(s.then[1:], {s.then[0].var: s.then[0].value})
            out.extend(drop_fixed_host_loops(rest))
        elif isinstance(s, kir.If):
            out.append(kir.If(s.cond, drop_fixed_host_loops(s.then),
                              drop_fixed_host_loops(s.orelse)))
        else:
            out.append(s)
    return out


def kernel_marks(schedule: isl.Schedule) -> dict[str, isl.ScheduleNode]:
    """The kernel marks of the mapped tree by name, in its (depth-first) order."""
    out: dict[str, isl.ScheduleNode] = {}

    def visit(node: isl.ScheduleNode) -> None:
        name = kernel_mark(node)
        if name:
            out[name] = node
            return
        for i in range(node.n_children()):
            visit(node.child(i))
    visit(schedule.get_root())
    return out


def host_depends_on_ids(ast: isl.AstNode, order: list[str]) -> bool:
    """Whether isl's AST lets the host part depend on block/thread ids in a way the
    host cannot honour: a host loop bounded by ids, a host ``if`` on ids with an else
    branch, or kernels launched out of the tree's order (isl treats the ids as
    parameters of one thread, for which kernels with disjoint guards commute; on the
    GPU every launch runs all threads)."""
    seen: list[str] = []
    bad = False

    def visit(node: isl.AstNode) -> None:
        nonlocal bad
        t = node.get_type()
        if t == isl.ast_node_type.block:
            children = node.block_get_children()
            for i in range(children.n_ast_node()):
                visit(children.get_at(i))
        elif t == isl.ast_node_type.mark:
            name = node.mark_get_id().get_name()
            if name.startswith(MARK_PREFIX):
                if name not in seen:
                    seen.append(name)
            else:
                visit(node.mark_get_node())
        elif t == isl.ast_node_type.for_:
            if any(mentions_mapped_ids(ast_expr_to_expr(e))
                   for e in (node.for_get_init(), node.for_get_cond())):
                bad = True
            visit(node.for_get_body())
        elif t == isl.ast_node_type.if_:
            ids = mentions_mapped_ids(ast_expr_to_expr(node.if_get_cond()))
            if ids and node.if_has_else_node():
                bad = True
            visit(node.if_get_then_node())
            if node.if_has_else_node():
                visit(node.if_get_else_node())

    visit(ast)
    return bad or seen != [m for m in order if m in seen]


def group_and_cut(schedule: isl.Schedule) -> isl.Schedule:
    """The host tree: each kernel mark's subtree grouped by its host loop values
    (``isl_schedule_node_group``, one ``pm_group_<mark>`` instance per launch) and
    cut, so no block/thread id reaches the host loops."""
    def visit(node: isl.ScheduleNode) -> isl.ScheduleNode:
        name = kernel_mark(node)
        if name:
            # group() leaves the node below the new expansion node; cut that one
            grouped = node.child(0).group(isl.Id(f"{GROUP_PREFIX}{name}"))
            return grouped.parent().cut().parent()
        for i in range(node.n_children()):
            node = visit(node.child(i)).parent()
        return node
    return visit(schedule.get_root()).get_schedule()


def kernel_schedule(schedule: isl.Schedule, mark: str, plan: KernelPlan | None = None
                     ) -> tuple[isl.Schedule, int]:
    """The mapped tree restricted to the instances of kernel ``mark`` at one launch:
    host loop values fixed to parameters ``pm_h0, pm_h1, ...`` (the kernel's int
    parameters); returns it and the number of host loops.  The plan's
    ``launch_domain`` (time tiles), an affine description of the same instances, is
    intersected in: with it isl's AST generator need not project the floors of the
    prefix (jacobi-2d, tiles 4,32,32: 0.3 s instead of over 3,000,000 operations)."""
    node = kernel_marks(schedule)[mark]
    domain = node.get_domain()
    depth = node.get_schedule_depth()
    prefix = node.get_prefix_schedule_union_map().intersect_domain(domain)
    if depth:
        names = [f"{HOST_PARAM}{k}" for k in range(depth)]
        fixed = isl.Set(f"[{', '.join(names)}] -> {{ [{', '.join(f'x{k}' for k in range(depth))}]"
                        f" : {' and '.join(f'x{k} = {n}' for k, n in enumerate(names))} }}")
        domain = prefix.intersect_range(isl.UnionSet.from_set(fixed)).domain()
    if plan is not None and plan.launch_domain is not None:
        # the same instances, with affine constraints isl's AST generator projects
        # cheaply instead of the prefix's floors alone (time tiles)
        domain = domain.intersect(plan.launch_domain.align_params(domain.get_space()))
    root = schedule.get_root().child(0)
    if depth:       # a context node may introduce the parameters (a filter may not)
        root = root.insert_context(isl.Set(f"[{', '.join(names)}] -> {{ [] }}")).child(0)
    return root.insert_filter(domain).get_schedule(), depth



def pieces_bound(f: isl.PwAff, upper: bool) -> isl.PwAff:
    """``f`` when it has one piece, else the maximum (``upper``) or minimum of its
    pieces' expressions on all parameters: a bound as loose as the worst piece, with
    no piece conditions for the host loop (seidel-2d, tiles 4,32,32: the exact
    maximum's piece conditions cost isl's AST generator 1 s, the bound nothing)."""
    pieces: list[isl.Aff] = []
    f.foreach_piece(lambda _s, a: pieces.append(a))
    if len(pieces) <= 1:
        return f
    out = isl.PwAff.from_aff(pieces[0])
    for a in pieces[1:]:
        out = out.max(isl.PwAff.from_aff(a)) if upper else out.min(isl.PwAff.from_aff(a))
    return out.coalesce()


def boxed_launches(host: isl.Schedule, groups: list[str]) -> isl.Schedule:
    """The host tree with the launch sets of ``groups`` (``pm_group_<mark>[w..]``)
    replaced by their bounding boxes, when the tree is one chain of bands down to one
    kernel mark (a time-tiled program); else ``host``.  The exact set of wavefronts
    is the image of the skewed domain under sums of floors, which isl's AST generator
    projects at great cost (jacobi-2d, tiles 4,32,32: over 3,000,000 operations); its
    per-dimension minimum and maximum are cheap.  A launch of an empty wavefront
    inside the box would run no instance (each launch's instances are the mapper's
    exact ``launch_domain``)."""
    dom = host.get_domain()
    sets: list[isl.Set] = []
    dom.foreach_set(sets.append)
    if len(sets) != 1 or sets[0].get_tuple_name() not in groups:
        return host
    node, chain = host.get_root().child(0), []
    while node.get_type() == isl.schedule_node_type.band:
        chain.append(node.band_get_partial_schedule())
        node = node.child(0)
    if node.get_type() != isl.schedule_node_type.mark or node.child(0).n_children():
        return host
    group = sets[0]
    box = isl.Set.universe(group.get_space())
    for k in range(group.dim(isl.dim_type.set)):
        x = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(group.get_space()),
                                    isl.dim_type.set, k)
        lo = pieces_bound(group.dim_min(k), False).insert_dims(
            isl.dim_type.in_, 0, group.dim(isl.dim_type.set))
        hi = pieces_bound(group.dim_max(k), True).insert_dims(
            isl.dim_type.in_, 0, group.dim(isl.dim_type.set))
        lo = lo.set_tuple_id(isl.dim_type.in_, group.get_tuple_id())
        hi = hi.set_tuple_id(isl.dim_type.in_, group.get_tuple_id())
        box = box.intersect(lo.le_set(x)).intersect(x.le_set(hi))
    out = isl.Schedule.from_domain(isl.UnionSet(box)).get_root().child(0)
    for band in chain:
        out = out.insert_partial_schedule(band.intersect_domain(isl.UnionSet(box))).child(0)
    return out.insert_mark(node.mark_get_id()).get_schedule()


def with_thread_contexts(schedule: isl.Schedule, plans: dict[str, KernelPlan]
                         ) -> isl.Schedule:
    """``schedule`` with a context node above each kernel mark holding its block's
    thread-id bounds (:func:`.thread_space.thread_bounds_in`; seed 004 §4.1: each
    thread of a block has ``0 <= threadIdx.a < blockDim.a``).  isl's AST generator
    takes a context node's constraints as known, not as guards: fewer guards in the
    kernels, and 6-7 % less of its time over the 33 benchmark kernels (8.18 -> 7.60 s,
    measured)."""
    params = schedule.get_domain().get_space()
    for name in kernel_marks(schedule):
        node = kernel_marks(schedule)[name]
        bounds = thread_bounds_in(plans[name].block, params)
        prefix = node.get_prefix_schedule_multi_union_pw_aff().get_space()
        space = prefix.params().set_from_params().add_dims(
            isl.dim_type.set, prefix.dim(isl.dim_type.set))
        schedule = node.insert_context(isl.Set.universe(space).intersect_params(
            bounds.align_params(space))).get_schedule()
    return schedule
