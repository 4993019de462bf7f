"""Pass ``promote_registers`` (seed 004 §4.2) on hand-built Kernel IR: a planned
array read and written across a sequential loop lives in a register there, loaded
before the loop and stored after it."""
from pass_helpers import acc, compute, context, ir, loop, plus

from polymagic import kir
from polymagic.lower.passes import promote_registers
from polymagic.mapping import KernelPlan
from polymagic.memory.plan import KernelMemory
from polymagic.memory.registers import RegisterPlan
from polymagic.notes import Note, Stage


def _plan(*arrays: str) -> KernelPlan:
    regs = tuple(RegisterPlan(a, "float", ("S0",), "reused along k",
                              Note(Stage.REGISTERS, "register planned", subject=a))
                 for a in arrays)
    return KernelPlan("pm_kernel0", [], memory=KernelMemory(registers=regs))


def _sum():
    return [loop("k", 0, 63, [compute("S0", acc("C", 0), "+=", plus(acc("A", "k"), acc("C", 0)))])]


def test_the_planned_array_goes_to_a_register_around_the_loop():
    out = promote_registers.run(ir(_sum()), context(plan=_plan("C")))
    (reg,) = out.registers
    assert reg.array == "C" and reg.ctype == "float"
    arrays = {a.array for s in kir.walk(list(out.body)) if isinstance(s, kir.Compute)
              for a in (s.assign.target,)}
    assert reg.name in arrays
    loads = [s for s in out.body if isinstance(s, kir.Compute)]
    assert loads and any(s.assign.value == acc("C", 0) for s in loads)      # loaded
    assert any(s.assign.target == acc("C", 0) for s in loads)               # stored
    assert out.outcomes["C"].registers


def test_without_a_plan_the_body_is_unchanged():
    out = promote_registers.run(ir(_sum()), context())
    assert out.body == tuple(_sum()) and out.registers == () and out.outcomes == {}
