"""Pass ``partner_loads`` (seed 003 §5.3) on hand-built Kernel IR: fused tree
reductions (gesummv's two sums over ``j``) load an element they share once."""
from pass_helpers import acc, compute, context, ir, loop
from polymagic.expr import Access, Binary
from polymagic.lower.passes import partner_loads
from polymagic.mapping import TreeReduction

REDUCTIONS = {"S0": TreeReduction("S0", "+", 1, "pm_acc0", "pm_tree0", partners=("S1",)),
              "S1": TreeReduction("S1", "+", 1, "pm_acc1", "pm_tree1", lead=False)}


def _sums():
    return [compute("S0", Access("pm_acc0", ()), "+=", Binary("*", acc("A", "i", "j"), acc("x", "j"))),
            compute("S1", Access("pm_acc1", ()), "+=", Binary("*", acc("B", "i", "j"), acc("x", "j")))]


def test_the_shared_element_is_loaded_once_before_the_partners():
    out = partner_loads.run(ir([loop("j", 0, 9, _sums())]), context(reductions=REDUCTIONS))
    (reg,) = out.registers
    load, s0, s1 = out.body[0].body
    assert load.assign.value == acc("x", "j") and load.assign.target == Access(reg.name, ())
    assert s0.assign.value.b == Access(reg.name, ()) == s1.assign.value.b


def test_without_partners_nothing_changes():
    alone = {"S0": TreeReduction("S0", "+", 1, "pm_acc0", "pm_tree0")}
    body = [loop("j", 0, 9, _sums())]
    out = partner_loads.run(ir(body), context(reductions=alone))
    assert out.registers == () and out.body == tuple(body)
