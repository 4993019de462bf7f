"""Pass ``redundant_loads`` (seed 004 §4.2) on hand-built Kernel IR: an element a
statement reads twice is loaded once, into a register, before it."""
from pass_helpers import acc, compute, context, ir, loop, plus

from polymagic.expr import Access
from polymagic.lower.passes import redundant_loads


def test_a_twice_read_element_is_loaded_once():
    s = compute("S0", acc("C", "i"), "=", plus(acc("A", "i"), acc("A", "i")))
    out = redundant_loads.run(ir([loop("i", 0, 9, [s])]), context())
    (reg,) = out.registers
    assert reg.ctype == "float"
    body = out.body[0].body
    load, stmt = body
    assert load.assign.target == Access(reg.name, ()) and load.assign.value == acc("A", "i")
    assert stmt.assign.value == plus(Access(reg.name, ()), Access(reg.name, ()))


def test_distinct_reads_are_left_alone():
    s = compute("S0", acc("C", "i"), "=", plus(acc("A", "i"), acc("B", "i")))
    out = redundant_loads.run(ir([s]), context())
    assert out.registers == () and out.body == (s,)
