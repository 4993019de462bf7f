"""The lowering ladder: schedule -> mapping -> Kernel IR within isl's operation budgets.

isl's AST generator has no time limit of its own: some mappings (shared-memory copy
code, skewed time tiles, seed 001's moves) take it minutes.  :func:`map_and_lower`
therefore climbs down a ladder, each rung a smaller program to generate, each step
down reported by a note:

1. :func:`search_tiles` — ``--tile auto``: seed 000 §4.3's tile search picks the tiles;
2. :func:`polymagic.mapping.map_schedule` — the mapping (blocks, threads, memory plan);
3. :func:`lower_within_limit` — the lowering, within :data:`LOWER_LIMIT_OPERATIONS`
   (past it a user error, not a hang); a mapping with the default localisation's
   moves within :attr:`CompileOptions.auto_localised_operations`, past it rung 6;
4. :func:`lower_dropping_buffers` — shared-memory buffers whose copy code takes more
   than :data:`LOWER_OPERATIONS` are dropped;
5. :func:`lower_time_tiles` — time tiles (``--time-tiling``) within their own budget,
   unlocalised past it, past that :class:`TimeTilesOverBudget` (the driver then
   lowers the host time loop);
6. :func:`lower_unlocalised` — kernels whose seed 001 moves isl could not print are
   mapped again without localisation.

The result is a :class:`Lowered`: the program, its summary and notes, the mapping it
came from and the tiles the search chose.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from .. import kir
from ..errors import CompileError, PolymagicError
from ..isl_util import OperationBudget, budget_spent
from ..lower import LowerOptions, LowerResult, lower
from ..lower.passes import PassLog
from ..mapping import MappingResult, map_schedule
from ..tiles.search import search_schedule
from ..notes import Note, Stage
from ..options import CompileOptions
from ..schedule import ScheduleResult
from ..scop import Scop

#: isl operations the AST generation with copy code may take before buffers are dropped
LOWER_OPERATIONS = 20_000_000
#: any lowering: past this many isl operations a user error, not a hang
LOWER_LIMIT_OPERATIONS = 40_000_000
#: the budget of localised time tiles, when --localise asks for them, is this many times
#: larger (:attr:`CompileOptions.time_tiling_operations` is the budget of the tiles themselves)
LOCALISED_TILES_FACTOR = 20


@dataclass(frozen=True)
class Lowered:
    """What the ladder hands to the printers and the report."""
    program: kir.Program
    #: one line: host loops, kernels, launch sites, each kernel's mapping and block
    summary: str
    #: the tile search's, the schedule's, the memory plan's (each register plan's line
    #: the lowering's decision about it) and localisation's notes, then the fallbacks
    #: taken
    notes: tuple[Note, ...]
    #: the mapping the program was lowered from (the last rung's)
    mapping: MappingResult
    #: the tile vector the ``--tile auto`` search chose; None when no search ran
    chosen_tile: tuple[int, ...] | None
    #: each Kernel-IR pass over each kernel (:mod:`polymagic.lower.passes`)
    passes: tuple[PassLog, ...] = ()


def map_and_lower(scop: Scop, sched: ScheduleResult, options: CompileOptions) -> Lowered:
    """Choose the tiles, map the schedule and lower it, down the ladder's rungs as
    isl's budgets require (module docstring)."""
    options, chosen_tile, search_notes = search_tiles(scop, sched, options)
    mapping = map_schedule(scop, sched, options)
    try:
        low, mapping, fallback = lower_mapping(scop, sched, options, mapping)
    except (PolymagicError, isl.Error) as e:
        if not mapping.local_copies:
            raise
        options, low, mapping, fallback = lower_unlocalised(scop, sched, options, e)
    notes = search_notes + _stage_notes(sched, mapping, options, low) + fallback
    return Lowered(low.program, _summary(low.program, mapping), tuple(notes), mapping,
                   chosen_tile, low.passes)


def search_tiles(scop: Scop, sched: ScheduleResult, options: CompileOptions
                 ) -> tuple[CompileOptions, tuple[int, ...] | None, list[Note]]:
    """Rung 1, ``--tile auto``: seed 000 §4.3's search; returns the options with the
    chosen tiles, those tiles (None without a search) and the search's notes."""
    if options.tile_auto and options.time_tiling:
        # the time tiles' sizes are --time-tiling's; seed 000 §4.3's model has no
        # time-skewed tiles (fuzz finding 40: a KeyError in the search)
        return options.with_(tile_auto=False), None, [Note(
            Stage.TILES, "--tile auto: no search with --time-tiling (its tiles are "
            "--time-tiling's sizes; other kernels take the default tiles)", kind="refusal")]
    if not options.tile_auto:
        return options, None, []
    found = search_schedule(scop, sched, options, options.sizes)
    return found.options(options), found.tile, [Note(Stage.TILES, found.summary())] + found.notes


def lower_mapping(scop: Scop, sched: ScheduleResult, options: CompileOptions,
                  mapping: MappingResult) -> tuple[LowerResult, MappingResult, list[Note]]:
    """Rungs 3-5: lower ``mapping`` under the budget its kind needs; returns the
    lowering (:class:`LowerResult`), the mapping it came from (another one after a fallback) and the
    fallbacks' notes."""
    if _auto_localised(options, mapping):
        budget = options.auto_localised_operations
        low = _lower_within(scop, mapping, options, budget)
        if low is None:          # lower_unlocalised's rung: the same without the moves
            raise CompileError(f"more than {budget} isl operations, or an isl failure")
        return low, mapping, []
    if options.shared != "none" and mapping.copies:
        return lower_dropping_buffers(scop, sched, options, mapping)
    if options.time_tiling:
        return lower_time_tiles(scop, sched, options, mapping)
    return lower_within_limit(scop, mapping, options), mapping, []


def _auto_localised(options: CompileOptions, mapping: MappingResult) -> bool:
    """Whether ``mapping`` holds seed 001 moves nobody asked for: the default
    localisation (no ``--localise``, no host loop in one block, no time tiles)."""
    return bool(mapping.local_copies) and options.localise is None and \
        options.localise_auto and options.time_block is None and not options.time_tiling


def lower_within_limit(scop: Scop, mapping: MappingResult, options: CompileOptions
                       ) -> LowerResult:
    """Rung 3: :func:`polymagic.lower.lower` within :data:`LOWER_LIMIT_OPERATIONS` isl
    operations: a user error naming the cause past it instead of a hang (fuzz finding
    31: tiles 33x34 over 3x32 threads on a three-nest time loop ran isl's AST
    generator for minutes)."""
    try:
        with OperationBudget(scop.context.get_ctx(), LOWER_LIMIT_OPERATIONS):
            return lower(scop, mapping, lower_options(options))
    except isl.Error as e:
        if not budget_spent(e):
            raise CompileError(f"isl failed to generate the code of this mapping ({e}); "
                               "please report the program (try other --tile/--block sizes "
                               "or --mapping single)") from None
        raise CompileError(f"generating the code of this mapping took more than "
                           f"{LOWER_LIMIT_OPERATIONS} isl operations (isl's AST generator "
                           "on these tiles and threads); try other --tile/--block sizes"
                           ) from None


def lower_dropping_buffers(scop: Scop, sched: ScheduleResult, options: CompileOptions,
                           mapping: MappingResult
                           ) -> tuple[LowerResult, MappingResult, list[Note]]:
    """Rung 4: a mapping with shared-memory copies within :data:`LOWER_OPERATIONS`;
    past it (or on any isl failure) the mapping again without buffers, lowered by
    :func:`lower_within_limit`."""
    low = _lower_within(scop, mapping, options, LOWER_OPERATIONS)
    if low is not None:
        return low, mapping, []
    mapping = map_schedule(scop, sched, options.with_(shared="none"))
    return lower_within_limit(scop, mapping, options), mapping, [_fallback(
        f"shared-memory buffers dropped: generating their copy code took more than "
        f"{LOWER_OPERATIONS} isl operations")]


def lower_time_tiles(scop: Scop, sched: ScheduleResult, options: CompileOptions,
                     mapping: MappingResult) -> tuple[LowerResult, MappingResult, list[Note]]:
    """Rung 5: skewed time tiles within :attr:`CompileOptions.time_tiling_operations`.  The
    tiles themselves stay well inside it (each launch's affine set: jacobi-2d 4,32,32
    in 0.7 s); the moves of localised 2-d tiles can take minutes, so asked for
    (``--localise``) localised tiles get :data:`LOCALISED_TILES_FACTOR` times the
    budget, and past theirs the tiles' threads run without localisation (the
    move-in/move-out sets of skewed 3-d tiles are the costly part).  Past the budget
    without localisation: a user error naming ``--no-time-tiling``."""
    limit = options.time_tiling_operations
    budget = limit * (LOCALISED_TILES_FACTOR if options.localise and mapping.local_copies
                      else 1)
    low = _lower_within(scop, mapping, options, budget)
    fallback: list[Note] = []
    if low is None and mapping.local_copies:
        fallback = [_fallback(f"time tiling: the tiles' data not localised: generating the "
                              f"code of their moves took more than {budget} isl operations")]
        mapping = map_schedule(scop, sched, options.with_(shared="none"))
        low = _lower_within(scop, mapping, options, limit)
    if low is None:
        raise TimeTilesOverBudget(f"generating the code of the skewed tiles took more than "
                                  f"{limit} isl operations") from None
    return low, mapping, fallback


class TimeTilesOverBudget(CompileError):
    """Rung 5 past its budget without localisation: the driver runs the steps in the
    host time loop instead (the schedule without ``--time-tiling``), with a note."""


def lower_unlocalised(scop: Scop, sched: ScheduleResult, options: CompileOptions, error: Exception
                      ) -> tuple[CompileOptions, LowerResult, MappingResult, list[Note]]:
    """Rung 6: seed 001 moves that isl could not print (a superposition kernel's, or
    the single mapping's with a window of 2 over a box placement: fuzz finding 37):
    the same kernels without localisation (never a crash, never wrong code).  Returns
    the options without localisation, then what :func:`lower_mapping` returns."""
    why = str(error).splitlines()[0][:120]
    block = options.time_block
    options = options.with_(localise=None, localise_auto=False,
                            time_block=(block[0], False) if block else None)
    mapping = map_schedule(scop, sched, options)
    low, mapping, fallback = lower_mapping(scop, sched, options, mapping)
    return options, low, mapping, [_fallback(
        f"localisation dropped: generating the code of its moves failed ({why})")] + fallback


def _fallback(text: str) -> Note:
    """A note of a rung of the ladder taken."""
    return Note(Stage.LOWERING, text, kind="fallback")


def lower_options(options: CompileOptions) -> LowerOptions:
    """The lowering's settings among the compile options."""
    return LowerOptions(per_kernel=options.per_kernel,
                        exact_subscripts=options.exact_subscripts)


def _lower_within(scop: Scop, mapping: MappingResult, options: CompileOptions, budget: int
                  ) -> LowerResult | None:
    """The lowering of ``mapping`` within ``budget`` isl operations; None when isl
    fails (past the budget or otherwise)."""
    try:
        with OperationBudget(scop.context.get_ctx(), budget):
            return lower(scop, mapping, lower_options(options))
    except isl.Error:
        return None


def _summary(program: kir.Program, mapping: MappingResult) -> str:
    """One line: host loops, kernels and launch sites, each kernel's summary and block."""
    host = f"host loops: {', '.join(mapping.host_loops)}; " if mapping.host_loops else ""
    blocks = "; ".join(k.summary + f", block {k.block[0]}x{k.block[1]}x{k.block[2]}"
                       for k in program.kernels.values())
    return (f"{host}{len(program.kernels)} kernel(s), {len(program.launches())} launch "
            f"site(s): {blocks}")


def _stage_notes(sched: ScheduleResult, mapping: MappingResult, options: CompileOptions,
                 low: LowerResult) -> list[Note]:
    """The schedule's notes, the memory plans' decisions (with what the lowering made
    of each register plan), localisation's, and a note when ``--localise`` named a
    loop no kernel runs inside its threads."""
    notes = list(sched.notes)
    notes += [d for plan in mapping.plans.values() if plan.memory
              for d in low.decisions(plan.memory)]
    notes += [d for plan in mapping.plans.values() if plan.local for d in plan.local.decisions]
    if options.localise is not None and not any(p.local for p in mapping.plans.values()):
        notes.append(Note(Stage.LOWERING, f"--localise {options.localise[0]}: no kernel runs a "
                          f"sequential loop '{options.localise[0]}' inside its threads; "
                          "nothing was localised", kind="refusal"))
    return notes
