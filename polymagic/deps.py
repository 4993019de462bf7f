"""Dependence analysis with isl's dataflow engine (``UnionAccessInfo.compute_flow``).

Flow (read-after-write) and output (write-after-write) dependences are value-based:
a write kills earlier writes to the same element, so only the last writer before
a read (or write) is a source.  Anti dependences (write-after-read) are
memory-based (every earlier read of the element), a safe over-approximation.
Input dependences (read-after-read) do not constrain the schedule; later stages
use them to find reuse (seed 000 §3.1, seed 001 §4.3).
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from .isl_util import coalesce
from .scop import Scop


@dataclass
class Dependences:
    flow: isl.UnionMap
    anti: isl.UnionMap
    output: isl.UnionMap
    input: isl.UnionMap

    @property
    def validity(self) -> isl.UnionMap:
        """Every dependence a legal schedule must respect."""
        return coalesce(self.flow.union(self.anti).union(self.output))

    def describe(self) -> str:
        """Readable listing, one relation per line, for ``--show deps``."""
        lines = []
        for kind in ("flow", "anti", "output", "input"):
            um: isl.UnionMap = getattr(self, kind)
            maps: list[isl.Map] = []
            um.foreach_map(maps.append)
            if not maps:
                lines.append(f"{kind:6}: none")
                continue
            for m in maps:
                lines.append(f"{kind:6}: {coalesce(m)}")
        return "\n".join(lines)


def _flow(sink: isl.UnionMap, must: isl.UnionMap | None, may: isl.UnionMap | None,
          schedule: isl.UnionMap) -> isl.UnionMap:
    info = isl.UnionAccessInfo.from_sink(sink)
    if must is not None:
        info = info.set_must_source(must)
    if may is not None:
        info = info.set_may_source(may)
    info = info.set_schedule_map(schedule)
    return coalesce(info.compute_flow().get_may_dependence())


#: isl operations the dependence analysis may take (a pathological nest gets an error,
#: not a hang)
MAX_OPERATIONS = 50_000_000


def compute_dependences(scop: Scop) -> Dependences:
    """Flow, anti, output and input dependences of the Scop in its original order."""
    from .errors import PolymagicError
    from .isl_util import OperationBudget
    try:
        with OperationBudget(scop.context.get_ctx(), MAX_OPERATIONS):
            return _compute(scop)
    except isl.Error as e:
        raise PolymagicError(
            "the dependence analysis gave up on this function (more than "
            f"{MAX_OPERATIONS} isl operations); simplify the loop nest or split it "
            f"into several cells ({e})") from None


def _compute(scop: Scop) -> Dependences:
    sched = scop.schedule.intersect_domain(scop.domain)
    reads, writes = scop.reads, scop.writes
    flow = _flow(reads, writes, None, sched)
    output = _flow(writes, writes, None, sched)
    anti = _flow(writes, None, reads, sched)
    inp = _flow(reads, None, reads, sched)
    return Dependences(flow=flow, anti=anti, output=output, input=inp)
