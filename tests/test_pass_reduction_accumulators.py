"""Pass ``reduction_accumulators`` (seed 003 §5.3) on hand-built Kernel IR: the
accumulator register and the tree buffer (one element per thread) of each tree
reduction whose accumulator the body uses."""
from pass_helpers import acc, compute, context, ir, loop
from polymagic.expr import Access
from polymagic.lower.passes import reduction_accumulators
from polymagic.mapping import TreeReduction


def test_a_used_accumulator_gets_its_register_and_buffer():
    reds = {"S0": TreeReduction("S0", "+", 1, "pm_acc0", "pm_tree0"),
            "S5": TreeReduction("S5", "max", 0, "pm_acc5", "pm_tree5")}
    body = [loop("j", 0, 9, [compute("S0", Access("pm_acc0", ()), "+=", acc("A", "j"))])]
    out = reduction_accumulators.run(
        ir(body), context(block=(64, 2, 1), reductions=reds,
                          reduction_ctypes={"S0": "double", "S5": "float"}))
    (reg,) = out.registers
    assert (reg.name, reg.ctype) == ("pm_acc0", "double")
    buf = out.buffers["pm_tree0"]
    assert (buf.ctype, buf.extents) == ("double", (128,)) and "pm_tree5" not in out.buffers
    assert out.body == tuple(body)
