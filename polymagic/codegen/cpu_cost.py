"""Whether a parallel loop pays for its fork (issue 32 item 6): a small cost model.

Entering ``#pragma omp parallel for`` wakes the other threads and joins them at the
end.  With the target's settings (``OMP_WAIT_POLICY=passive`` and OpenMP's dynamic
thread count, :mod:`polymagic.runtime.openmp`, :data:`.cpu_c.DYNAMIC`) one fork/join
costs :data:`FORK_COST_US` on the 2-core development machine, so a loop entered once
per time step over a few hundred points (jacobi-1d, trisolv's columns) ran 4-200
times slower than the serial C.  The model, per marked loop:

* ``total``: statement instances under the loop over the whole call, ``forks``: how
  many times the loop is entered (the number of distinct values of the enclosing
  loops), both counted with barvinok as C expressions of the size parameters
  (isl's C printer of piecewise quasi-polynomials, in ``long`` arithmetic);
* work per fork ``W = total / forks`` instances at :data:`INSTANCE_NS` each;
* on ``p = 2`` threads the loop pays when ``W·c / p + F < W·c``, i.e. ``W ≥ 2F/c``
  = :data:`MIN_WORK` instances (40 µs / 0.8 ns · 2 = 100,000).

The printer (:mod:`.cpu_c`) prints the marked loop twice, ``if (W ≥ MIN_WORK)`` the
parallel one, else the same loop serial (``omp parallel for if(...)`` would still
enter the runtime, 0.3 µs a time, as much as jacobi-1d's whole sweep), and when no
loop pays and no band was tiled, the source's own loop order serially (a parallel
schedule's order can be slower on one core: floyd-warshall's wavefront, trisolv's
columns).  The function records each loop's ``W`` in ``pm_cpu_work`` for the report.

Measured (``/tmp``-built C, an empty-bodied ``parallel for`` over 1,000 doubles,
2,000 forks, gcc 12 -O3 -fopenmp, 2 cores, load < 1): passive + dynamic 31-53 µs per
fork (7 µs on a quiet moment), active waiting 1.5 µs, ``if(0)`` 0.3 µs; jacobi-2d's
serial sweep costs 0.7 ns per point, gemm's -O2 inner statement 0.4 ns.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import islpy as isl

#: one fork/join of a 2-thread parallel loop with passive waits and dynamic threads (µs)
FORK_COST_US = 40.0
#: serial time of one statement instance (ns): jacobi-2d's 0.7, gemm's 0.4 at -O2
INSTANCE_NS = 0.8
#: instances per fork from which a parallel loop pays on 2 threads: 2 F / c
MIN_WORK = int(2 * FORK_COST_US * 1000 / INSTANCE_NS)
#: CPU seconds barvinok may spend counting one function's loops
COUNT_SECONDS = 5.0


@dataclass(frozen=True)
class ForkWork:
    """One parallel loop's counts as C expressions of the size parameters."""
    depth: int                         # the loop's schedule depth (``c<depth>``)
    statements: frozenset[str]         # the statements under it (its key in the C)
    total: str                         # instances under the loop over the whole call
    forks: str                         # times the loop is entered

    def work(self) -> str:
        """C: the instances per fork, as a double."""
        return f"((double) ({self.total}) / pm_max((double) ({self.forks}), 1.0))"


def _sum(q: isl.UnionPwQPolynomial) -> isl.PwQPolynomial | None:
    parts: list[isl.PwQPolynomial] = []
    q.foreach_pw_qpolynomial(parts.append)
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out.add(p)
    return out


def _c(q: isl.PwQPolynomial | None, params: list[str]) -> str:
    """``q`` as C in ``long`` arithmetic (0 when there is nothing to count)."""
    if q is None:
        return "0"
    text = isl.Printer.to_str(q.get_ctx()).set_output_format(isl.format.C) \
        .print_pw_qpolynomial(q).get_str()
    if not params:
        return f"({text})"
    names = re.compile(r"\b(" + "|".join(map(re.escape, params)) + r")\b")
    return "(" + names.sub(lambda m: f"((long) {m.group(1)})", text) + ")"


def _marks(node: isl.ScheduleNode, prefix: str, out: list[isl.ScheduleNode]) -> None:
    if node.get_type() == isl.schedule_node_type.mark and \
            node.mark_get_id().get_name().startswith(prefix):
        out.append(node)
    for i in range(node.n_children()):
        _marks(node.child(i), prefix, out)


def _count(tree: isl.Schedule, mark: str, context: isl.Set, params: list[str]
           ) -> list[tuple[int, list[str], str, str]]:
    nodes: list[isl.ScheduleNode] = []
    _marks(tree.get_root(), mark, nodes)
    out = []
    for node in nodes:
        depth = int(node.mark_get_id().get_name().rsplit("_", 1)[1])
        dom = node.get_domain().intersect_params(context)
        outer = node.get_prefix_schedule_union_map().intersect_domain(dom).range()
        names: list[str] = []
        dom.foreach_set(lambda s: names.append(s.get_tuple_name()))
        out.append((depth, sorted(names), _c(_sum(dom.card()), params),
                    _c(_sum(outer.card()), params)))
    return out


def fork_work(tree: isl.Schedule, mark: str, context: isl.Set, params: list[str]
              ) -> tuple[ForkWork, ...] | None:
    """Per loop marked ``mark`` in ``tree``: its counts (module docstring); None when
    barvinok gave up within :data:`COUNT_SECONDS` (the loops then stay parallel)."""
    from ..isl_util import TimedOut, in_child
    text = (tree.to_str(), context.to_str())

    def count() -> list[tuple[int, list[str], str, str]]:
        ctx = isl.Context()
        return _count(isl.Schedule.read_from_str(ctx, text[0]), mark,
                      isl.Set.read_from_str(ctx, text[1]), params)
    try:
        rows = in_child(count, COUNT_SECONDS)
    except (TimedOut, isl.Error):
        return None
    return tuple(ForkWork(d, frozenset(s), t, f) for d, s, t, f in rows)


__all__ = ["ForkWork", "fork_work", "MIN_WORK", "FORK_COST_US", "INSTANCE_NS"]
