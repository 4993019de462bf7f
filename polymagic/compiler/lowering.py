"""Mapping and lowering with the isl-budget fallbacks: mapping -> Kernel IR.

Moved verbatim from the bottom of ``polymagic/mapping.py`` (issue 17): the driver's
ladder of fallbacks (buffers dropped, time tiles unlocalised, localisation dropped)
around :func:`polymagic.mapping.map_schedule` and :func:`polymagic.lower.lower`, and
the ``--tile auto`` search (seed 000 §4.3) before the mapping.
"""
from __future__ import annotations

import islpy as isl

from .. import kir
from ..errors import PolymagicError
from ..mapping import MappingResult, map_schedule
from ..options import Options
from ..schedule import ScheduleResult
from ..scop import Scop

#: isl operations the AST generation with copy code may take before buffers are dropped
LOWER_OPERATIONS = 20_000_000
#: any lowering: past this many isl operations a user error, not a hang
LOWER_LIMIT_OPERATIONS = 40_000_000
#: the same for the AST of skewed time tiles (--time-tiling)
TIME_TILING_OPERATIONS = 3_000_000
#: the budget of localised time tiles, when --localise asks for them, is this many times larger
LOCALISED_TILES_FACTOR = 20


def _lower_bounded(scop: Scop, mapping: MappingResult) -> kir.Program:
    """:func:`.lower.lower` within :data:`LOWER_LIMIT_OPERATIONS` isl operations: a
    user error naming the cause past it instead of a hang (fuzz finding 31: tiles
    33x34 over 3x32 threads on a three-nest time loop ran isl's AST generator for
    minutes)."""
    from ..errors import CompileError
    from ..isl_util import OperationBudget, budget_spent
    from ..lower import lower
    try:
        with OperationBudget(scop.context.get_ctx(), LOWER_LIMIT_OPERATIONS):
            return lower(scop, mapping)
    except isl.Error as e:
        if not budget_spent(e):
            raise CompileError(f"isl failed to generate the code of this mapping ({e}); "
                               "please report the program (try other --tile/--block sizes "
                               "or --mapping single)") from None
        raise CompileError(f"generating the code of this mapping took more than "
                           f"{LOWER_LIMIT_OPERATIONS} isl operations (isl's AST generator "
                           "on these tiles and threads); try other --tile/--block sizes"
                           ) from None



def map_to_kir(scop: Scop, sched: ScheduleResult, options: Options
               ) -> tuple[kir.Program, str, list[str]]:
    """Schedule -> Program, plus a one-line summary and notes for the report."""
    return map_and_lower(scop, sched, options)[:3]


def _lower_mapping(scop: Scop, sched: ScheduleResult, options: Options,
                   mapping: MappingResult) -> tuple[kir.Program, MappingResult, list[str]]:
    """Lower ``mapping`` (buffers dropped past :data:`LOWER_OPERATIONS`, time tiles
    unlocalised past their budget, each with a note); returns the program, the mapping
    it came from and the notes."""
    from ..isl_util import OperationBudget
    from ..lower import lower
    fallback = []
    if options.shared != "none" and mapping.copies:
        try:
            with OperationBudget(scop.context.get_ctx(), LOWER_OPERATIONS):
                program = lower(scop, mapping)
        except isl.Error:
            fallback = [f"shared-memory buffers dropped: generating their copy code took more "
                        f"than {LOWER_OPERATIONS} isl operations"]
            mapping = map_schedule(scop, sched, options.with_(shared="none"))
            program = _lower_bounded(scop, mapping)
    elif options.time_tiling:
        # the tiles themselves stay well inside the budget (each launch's affine set:
        # jacobi-2d 4,32,32 in 0.7 s), the moves of localised 2-d tiles can take minutes;
        # asked for (--localise), the localised tiles get the larger budget
        budget = TIME_TILING_OPERATIONS * (LOCALISED_TILES_FACTOR if options.localise and
                                           mapping.local_copies else 1)
        try:
            with OperationBudget(scop.context.get_ctx(), budget):
                program = lower(scop, mapping)
        except isl.Error:
            program = None
        if program is None and mapping.local_copies:
            # the move-in/move-out sets of skewed 3-d tiles are the costly part: the
            # tiles' threads without localisation
            fallback = [f"time tiling: the tiles' data not localised: generating the code "
                        f"of their moves took more than {budget} isl operations"]
            mapping = map_schedule(scop, sched, options.with_(shared="none"))
            try:
                with OperationBudget(scop.context.get_ctx(), TIME_TILING_OPERATIONS):
                    program = lower(scop, mapping)
            except isl.Error:
                program = None
        if program is None:
            from ..errors import CompileError
            raise CompileError(f"--time-tiling: generating the code of the skewed tiles took "
                               f"more than {TIME_TILING_OPERATIONS} isl operations; use "
                               "--no-time-tiling (the host time loop)") from None
    else:
        program = _lower_bounded(scop, mapping)
    return program, mapping, fallback


def map_and_lower(scop: Scop, sched: ScheduleResult, options: Options
                  ) -> tuple[kir.Program, str, list[str], MappingResult]:
    """:func:`map_to_kir`, also returning the mapping the program was lowered from
    (the pipeline keeps it in ``Compiled.mapping`` for the views)."""
    search_notes: list[str] = []
    if options.tile_auto and options.time_tiling:
        # the time tiles' sizes are --time-tiling's; seed 000 §4.3's model has no
        # time-skewed tiles (fuzz finding 40: a KeyError in the search)
        options = options.with_(tile_auto=False)
        search_notes = ["--tile auto: no search with --time-tiling (its tiles are "
                        "--time-tiling's sizes; other kernels take the default tiles)"]
    if options.tile_auto:
        from ..memory.tile_search import search_schedule
        found = search_schedule(scop, sched, options, options.sizes)
        options = found.options(options)
        search_notes = [found.summary()] + found.notes
    mapping = map_schedule(scop, sched, options)
    try:
        program, mapping, fallback = _lower_mapping(scop, sched, options, mapping)
    except (PolymagicError, isl.Error) as e:
        if not mapping.local_copies:
            raise
        # seed 001 moves that isl could not print (a superposition kernel's, or the
        # single mapping's with a window of 2 over a box placement: fuzz finding 37):
        # the same kernels without localisation (never a crash, never wrong code)
        why = str(e).splitlines()[0][:120]
        options = options.with_(localise=None, localise_auto=False)
        mapping = map_schedule(scop, sched, options)
        program, mapping, fallback = _lower_mapping(scop, sched, options, mapping)
        fallback = [f"localisation dropped: generating the code of its moves failed "
                    f"({why})"] + fallback
    launches = program.launches()
    host = f"host loops: {', '.join(mapping.host_loops)}; " if mapping.host_loops else ""
    blocks = "; ".join(k.summary + f", block {k.block[0]}x{k.block[1]}x{k.block[2]}"
                       for k in program.kernels.values())
    summary = f"{host}{len(program.kernels)} kernel(s), {len(launches)} launch site(s): {blocks}"
    notes = [d for plan in mapping.plans.values() if plan.memory for d in plan.memory.decisions]
    notes = list(getattr(sched, "notes", [])) + notes
    notes += [d for plan in mapping.plans.values() if plan.local for d in plan.local.decisions]
    if options.localise is not None and not any(p.local for p in mapping.plans.values()):
        notes.append(f"--localise {options.localise[0]}: no kernel runs a sequential loop "
                     f"'{options.localise[0]}' inside its threads; nothing was localised")
    return program, summary, search_notes + notes + fallback, mapping
