"""isl settings every schedule computation shares: the scheduler's and tiler's options
and the operation budget of one scheduling call.

Both the single schedule (:mod:`polymagic.schedule`) and the time-tiled one
(:mod:`polymagic.schedule.timeblock`) ask isl's scheduler; they configure it here, below both.
"""
from __future__ import annotations

import islpy as isl

#: isl operations allowed per scheduling call before we give up (prevents hangs)
MAX_OPERATIONS = 20_000_000


def configure(ctx: isl.Context) -> None:
    """Scheduler and tiling options the mapping relies on."""
    ctx.set_schedule_outer_coincidence(1)     # split bands so outer members are parallel
    ctx.set_schedule_maximize_band_depth(1)
    ctx.set_schedule_whole_component(0)
    ctx.set_schedule_serialize_sccs(0)
    ctx.set_schedule_treat_coalescing(1)
    ctx.set_tile_scale_tile_loops(0)          # tile loops count tiles
    ctx.set_tile_shift_point_loops(1)         # point loops run over [0, T)
