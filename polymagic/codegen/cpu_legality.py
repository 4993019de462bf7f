"""The OpenMP target's last word on its pragmas: every marked loop of the tree that is
printed carries no dependence (issue 32).

:mod:`.cpu_tiles` decides each ``omp parallel for`` and ``omp simd`` on the band it
is transforming; later steps (the point band's reordering, the bands below, the
untiled fallback) change the tree around it.  Before the tree goes to isl's AST
generator, :func:`verify_marks` walks it once more and checks every mark against
the dependences on the final tree, as PPCG checks coincidence on the schedule it
prints (Verdoolaege et al., TACO 2013, §5): a mark whose loop carries a dependence
is removed, its loop runs serially, and a note says so.  A removal is a bug of the
tiler, never of the user's code, so the note says that too; the fuzz campaign of
``--target openmp`` (docs/fuzz-findings.md) is there to find them.

Why the check is worth its cost: a wrong pragma is wrong code that the run's check
may miss at small sizes (a race shows only under some interleavings), while a
dropped pragma costs only speed.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..notes import Note, Stage
from .cpu_tiles import PARALLEL_MARK, SIMD_MARK, carries_nothing


@dataclass(frozen=True)
class MarkCheck:
    """One pragma's verdict on the final tree."""
    mark: str               # the mark's name (``pm_omp_parallel_<depth>``)
    statements: tuple[str, ...]
    legal: bool

    @property
    def pragma(self) -> str:
        return "parallel for" if self.mark.startswith(PARALLEL_MARK) else "simd"


def _is_pragma(mark: str) -> bool:
    return mark.startswith((PARALLEL_MARK + "_", SIMD_MARK + "_"))


def _statements(node: isl.ScheduleNode) -> tuple[str, ...]:
    names: set[str] = set()
    node.get_domain().foreach_set(lambda s: names.add(s.get_tuple_name()))
    return tuple(sorted(names))


def _check(node: isl.ScheduleNode, validity: isl.UnionMap) -> MarkCheck:
    """The verdict on the mark ``node``: its child must be a one-member band that
    carries no dependence (:func:`~.cpu_tiles.carries_nothing`)."""
    name = node.mark_get_id().get_name()
    child = node.child(0)
    legal = (child.get_type() == isl.schedule_node_type.band
             and child.band_n_member() == 1 and carries_nothing(child, validity))
    return MarkCheck(name, _statements(node), legal)


def _walk(node: isl.ScheduleNode, validity: isl.UnionMap, checks: list[MarkCheck]
          ) -> isl.ScheduleNode:
    """``node``'s subtree with every illegal pragma mark deleted (``checks`` gets a
    verdict per pragma mark); returns the node at the same position."""
    if node.get_type() == isl.schedule_node_type.mark and _is_pragma(
            node.mark_get_id().get_name()):
        verdict = _check(node, validity)
        checks.append(verdict)
        if not verdict.legal:
            return _walk(node.delete(), validity, checks)
    for i in range(node.n_children()):
        node = _walk(node.child(i), validity, checks).parent()
    return node


def verify_marks(tree: isl.Schedule, validity: isl.UnionMap
                 ) -> tuple[isl.Schedule, tuple[MarkCheck, ...], tuple[Note, ...]]:
    """``tree`` with only the pragma marks that carry no dependence, every verdict,
    and a fallback note per mark removed (module docstring)."""
    checks: list[MarkCheck] = []
    root = _walk(tree.get_root(), validity, checks)
    notes = tuple(
        Note(Stage.CPU, f"omp {c.pragma} dropped on the loop of {', '.join(c.statements)}: it "
             "carries a dependence in the final loop order (a bug of the tiler, not of your "
             "code: the loop runs serially)", kind="fallback")
        for c in checks if not c.legal)
    return root.get_schedule(), tuple(checks), notes


__all__ = ["MarkCheck", "verify_marks"]
