"""The original order as a schedule tree (:mod:`polymagic.source_tree`): the same
order as the front end's 2d+1 map, and isl's dataflow analysis on it gives the same
dependences as on the map (it is only faster)."""
from __future__ import annotations

import pathlib

import islpy as isl
import pytest

from polymagic import deps
from polymagic.frontend import parse
from polymagic.source_tree import source_tree

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "examples").glob("*.c")) + \
    sorted((ROOT / "benchmarks" / "kernels").glob("*.c"))


def _order(sched: isl.UnionMap) -> isl.UnionMap:
    return sched.lex_lt_union_map(sched)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_tree_orders_as_the_map_and_gives_the_same_dataflow(path):
    scop = parse(path.read_text(), "c")
    sched = scop.schedule.intersect_domain(scop.domain)
    tree = source_tree(sched)
    assert tree is not None
    assert tree.get_domain().is_equal(sched.domain())
    assert _order(tree.get_map()).is_equal(_order(sched))
    for sink in (scop.reads, scop.writes):
        assert deps._flow(sink, scop.writes, None, sched, tree).is_equal(
            deps._flow(sink, scop.writes, None, sched, None))


def test_a_sequence_node_where_statements_part():
    sched = isl.UnionMap("[n] -> { S0[i] -> [0, i, 0, 0, 0]; S1[i, j] -> [0, i, 1, j, 0]; "
                         "S2[i] -> [1, i, 0, 0, 0] }")
    sched = sched.intersect_domain(isl.UnionSet(
        "[n] -> { S0[i] : 0 <= i < n; S1[i, j] : 0 <= i, j < n; S2[i] : 0 <= i < n }"))
    tree = source_tree(sched)
    assert tree is not None
    root = tree.get_root().child(0)
    assert root.get_type() == isl.schedule_node_type.sequence and root.n_children() == 2
    assert _order(tree.get_map()).is_equal(_order(sched))


def test_not_2d_plus_1_gives_none():
    """A textual position that is not constant (or schedules of different lengths)
    has no tree form here: the dataflow analysis then takes the map."""
    sched = isl.UnionMap("[n] -> { S0[i] -> [i, 0]; S1[i] -> [i, 1] }").intersect_domain(
        isl.UnionSet("[n] -> { S0[i] : 0 <= i < n; S1[i] : 0 <= i < n }"))
    assert source_tree(sched) is None
    assert source_tree(isl.UnionMap("{ S0[i] -> [0, i, 0]; S1[i] -> [1, i] }")) is None
