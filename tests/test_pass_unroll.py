"""Pass ``unroll`` (seed 004 §4.3) on hand-built Kernel IR."""
from pass_helpers import acc, compute, context, ir, loop

from polymagic import kir
from polymagic.lower.passes import unroll


def test_a_short_constant_inner_loop_is_marked_and_a_long_one_is_not():
    short = loop("k", 0, 7, [compute("S0", acc("C", "k"), "+=", acc("A", "k"))])
    long = loop("j", 0, 99, [compute("S1", acc("B", "j"), "=", acc("A", "j"))])
    out = unroll.run(ir([short, long]), context())
    assert [s.unroll for s in out.body] == [True, False]


def test_a_loop_with_a_barrier_inside_is_not_marked():
    body = [loop("k", 0, 3, [kir.Barrier(0), compute("S0", acc("C", "k"), "=", acc("A", "k"))])]
    out = unroll.run(ir(body), context())
    assert out.body[0].unroll is False
