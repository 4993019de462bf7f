"""Scheduling: the baseline schedule from isl's scheduler (Pluto-style, feautrier fallback).

``compute_schedule`` asks isl for a schedule that respects every dependence
(validity), prefers parallel (coincident) outer members and reuse (proximity),
and returns the schedule tree.  The mapping stage reads its bands: coincident
members become blocks and threads, others stay sequential (seed 004 §4.1: tiling
of the outermost permutable band; seed 003 §4.1 calls this the single-schedule
baseline that superposition improves on).
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..deps import Dependences
from ..errors import PolymagicError
from ..isl_util import OperationBudget
from ..scop import Scop

#: isl operations allowed per scheduling call before we give up (prevents hangs)
MAX_OPERATIONS = 20_000_000


@dataclass
class ScheduleResult:
    schedule: isl.Schedule

    def describe(self) -> str:
        return str(self.schedule.get_root())


def configure(ctx: isl.Context) -> None:
    """Scheduler and tiling options the mapping relies on."""
    ctx.set_schedule_outer_coincidence(1)     # split bands so outer members are parallel
    ctx.set_schedule_maximize_band_depth(1)
    ctx.set_schedule_whole_component(0)
    ctx.set_schedule_serialize_sccs(0)
    ctx.set_schedule_treat_coalescing(1)
    ctx.set_tile_scale_tile_loops(0)          # tile loops count tiles
    ctx.set_tile_shift_point_loops(1)         # point loops run over [0, T)


def compute_schedule(scop: Scop, deps: Dependences) -> ScheduleResult:
    ctx = scop.context.get_ctx()
    configure(ctx)
    dom = scop.domain.intersect_params(scop.context)
    validity = deps.validity
    sc = isl.ScheduleConstraints.on_domain(dom)
    sc = sc.set_context(scop.context)
    sc = sc.set_validity(validity)
    sc = sc.set_coincidence(validity)
    sc = sc.set_proximity(validity)
    try:
        with OperationBudget(ctx, MAX_OPERATIONS):
            sched = sc.compute_schedule()
    except isl.Error as e:
        raise PolymagicError(
            "the polyhedral scheduler gave up on this function (too many operations); "
            f"simplify the loop nest or split it into several cells ({e})") from None
    return ScheduleResult(sched)
