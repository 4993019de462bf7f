"""Full tiles apart from partial ones, in the lowering (issue 16 item 1, issue 22).

A kernel whose mapping split off its full block tiles (:attr:`KernelPlan.full_instances`,
:mod:`polymagic.mapping.full_tiles`) gets two pieces of code, as PPCG's and Polly's
full/partial tile separation (Verdoolaege et al., TACO 2013, §4.6):

* the *full* piece: isl's AST of the kernel's tree restricted to one launch, built
  in a context where the block's tile is full (:func:`full_tile_schedule`), so isl
  knows every tile coordinate is full (constant point loops, no guards);
* the *generic* piece: the kernel's code for every tile, as isl generates it without
  the split;

and the kernel runs ``if (F) full else generic``, ``F`` the block's tile being full
(:func:`full_condition`: this launch and block hold an instance of a full tile; all
instances of a block share its tile, so then all are full-tile instances).

Why not isl's ``isolate`` AST option, which gives the same code: isl then generates
the partial tiles over the complement of the full ones, a union its AST generator
takes 3-4 times longer on than on all tiles (gemm 0.50 s against 0.14 s; 3mm's
lowering 2.9 s with it, 1.5 s without).  The generic piece covers
the full tiles too, so its domain stays the plain one; it runs only for the partial
ones.
"""
from __future__ import annotations

import islpy as isl

from .. import kir
from ..expr import Expr
from ..mapping import HOST_PARAM, KernelPlan
from .per_kernel import kernel_marks, kernel_schedule


def full_tile_schedule(schedule: isl.Schedule, mark: str, plan: KernelPlan
                       ) -> tuple[isl.Schedule, isl.Set, int]:
    """Kernel ``mark``'s tree at one launch (:func:`.per_kernel.kernel_schedule`, host
    loop values as ``pm_h<k>``), the condition ``F`` under which its block's
    instances are in full tiles (:func:`full_condition`), and the number of host
    loops.  The full piece is that tree generated in a context where ``F`` holds: the
    block's instances are then those of the full-tile filter, and isl knows the tile's
    bounds from parameters alone (gemm's full piece: 14 % fewer instructions in isl's
    AST generator than under the filter, the same code)."""
    tree, depth = kernel_schedule(schedule, mark, plan)
    return tree, full_condition(schedule, tree, mark, plan.full_instances), depth


def launch_values(schedule: isl.Schedule, mark: str) -> isl.Set | None:
    """The host loop values ``pm_h<k>`` kernel ``mark`` is launched at, as a set of
    parameters (the host runs it there only: the full piece's build may assume them);
    None without host loops."""
    node = kernel_marks(schedule)[mark]
    depth = node.get_schedule_depth()
    if not depth:
        return None
    values = node.get_prefix_schedule_union_map().intersect_domain(node.get_domain()).range()
    values = isl.Set.from_union_set(values)
    npar = values.dim(isl.dim_type.param)
    values = values.move_dims(isl.dim_type.param, npar, isl.dim_type.set, 0, depth)
    for k in range(depth):
        values = values.set_dim_id(isl.dim_type.param, npar + k, isl.Id(f"{HOST_PARAM}{k}"))
    return values.params()


def full_condition(schedule: isl.Schedule, tree: isl.Schedule, mark: str,
                   full_instances: isl.UnionSet) -> isl.Set:
    """``F``: the parameters (sizes, block ids, ``pm_h<k>``) for which the launch's
    block holds an instance of a full tile: the instances of the kernel's tree at one
    launch (``tree``, :func:`.per_kernel.kernel_schedule`) in ``full_instances`` and
    under the kernel's block filter (the filter right below its mark), projected onto
    the parameters.  The instances are read below every context and filter node at
    the top of ``tree``, so the launch's filter (``pm_h<k>``) applies: a block whose
    tile is full at one launch only (a triangular domain: ``j <= i`` with ``i`` a host
    loop) runs the generic piece at the others (fuzz program 13301000011: ``F``
    without the launch filter ran neither piece there)."""
    node = tree.get_root().child(0)
    while node.get_type() in (isl.schedule_node_type.context, isl.schedule_node_type.filter):
        node = node.child(0)
    domain = node.get_domain()
    domain = domain.intersect(full_instances.align_params(domain.get_space()))
    node = kernel_marks(schedule)[mark].child(0)
    if node.get_type() == isl.schedule_node_type.filter:
        domain = domain.intersect(node.filter_get_filter().align_params(domain.get_space()))
    return domain.params()


def merge_pieces(full: list[kir.Stmt], generic: list[kir.Stmt], cond: Expr
                 ) -> list[kir.Stmt]:
    """``if (cond) full else generic``, shaped as isl prints its isolated pieces: the
    generic piece's outer guard outside (when it fails, the thread runs no instance
    of the block, in either piece), and in the full piece that guard and the guard
    ``cond`` itself dropped where isl printed them."""
    guard = generic[0] if len(generic) == 1 and isinstance(generic[0], kir.If) and \
        not generic[0].orelse else None
    if guard is not None:
        full = _inside(full, guard.cond)
    full = _inside(full, cond)
    if guard is not None:
        return [kir.If(guard.cond, [kir.If(cond, full, guard.then)])]
    return [kir.If(cond, full, generic)]


def _inside(body: list[kir.Stmt], cond: Expr) -> list[kir.Stmt]:
    """The body of ``if (cond) { .. }`` when ``body`` is just that, else ``body``."""
    if len(body) == 1 and isinstance(body[0], kir.If) and not body[0].orelse and \
            body[0].cond == cond:
        return body[0].then
    return body
