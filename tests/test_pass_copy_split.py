"""Pass ``copy_split`` (seed 002 §3.4) on hand-built Kernel IR: the lane and group
values of 16-byte copies, from the thread ids, before the body that reads them."""
from pass_helpers import acc, compute, context, ir

from polymagic import kir
from polymagic.expr import Var
from polymagic.lower.passes import copy_split


def test_the_split_values_the_body_reads_come_first():
    group = kir.COPY_GROUP + "4"
    body = [compute("pm_copy", acc("sh0_A", group), "=", acc("A", group))]
    out = copy_split.run(ir(body), context(block=(8, 4, 1)))
    first, rest = out.body[0], out.body[1:]
    assert isinstance(first, kir.Let) and first.var == group
    assert first.value == kir.copy_split_value(group, (8, 4, 1))
    assert rest == tuple(body)


def test_a_body_without_copies_is_unchanged():
    body = [compute("S0", acc("C", "i"), "=", Var("x"))]
    assert copy_split.run(ir(body), context()).body == tuple(body)
