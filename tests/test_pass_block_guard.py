"""Pass ``block_guard`` on hand-built Kernel IR: the host conditions of the block's
instances around the body, less those its dimensions imply."""
from pass_helpers import acc, compute, context, ir

from polymagic import kir
from polymagic.expr import Binary, Int, Var


def _body():
    return [compute("S0", acc("C", "pm_tx"), "=", acc("A", "pm_tx"))]


def test_conditions_the_block_implies_are_dropped():
    from polymagic.lower.passes import block_guard
    always = Binary("<=", Var(kir.THREAD_IDS["x"]), Int(31))      # blockDim.x = 32
    out = block_guard.run(ir(_body()), context(guards=(always,)))
    assert out.body == tuple(_body())


def test_other_conditions_wrap_the_body_in_one_if():
    from polymagic.lower.passes import block_guard
    a = Binary(">=", Var("n"), Int(2))
    b = Binary("<=", Var(kir.THREAD_IDS["x"]), Int(7))
    out = block_guard.run(ir(_body()), context(guards=(a, b)))
    (guard,) = out.body
    assert isinstance(guard, kir.If) and guard.cond == Binary("&&", a, b)
    assert guard.then == _body()
