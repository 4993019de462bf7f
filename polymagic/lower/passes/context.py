"""What the Kernel-IR passes read and return (:mod:`polymagic.lower.passes`)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ... import kir
from ...expr import Expr
from ...mapping import KernelPlan, TreeReduction
from ...memory.localcode import LocalBuffer
from ...memory.plan import BufferPlan
from ...memory.registers import RegisterOutcome
from ..reductions import TreeBuffer

#: a buffer in shared memory a kernel may use: seed 000's per tile, seed 001's
#: localised window, a tree reduction's
Buffer = BufferPlan | LocalBuffer | TreeBuffer


@dataclass(frozen=True)
class KernelIR:
    """One kernel's body on its way through the passes: the statements, the
    registers declared so far, the shared and tree buffers it uses (by name), and
    what became of each register plan (:class:`RegisterOutcome`, by array)."""
    body: tuple[kir.Stmt, ...]
    registers: tuple[kir.RegisterDecl, ...] = ()
    buffers: Mapping[str, Buffer] = field(default_factory=dict)
    outcomes: Mapping[str, RegisterOutcome] = field(default_factory=dict)

    def change(self, after: "KernelIR") -> str:
        """One line: what a pass changed between ``self`` and ``after``."""
        parts = []
        a, b = _count(self.body), _count(after.body)
        if a != b:
            parts.append(f"statements {a} -> {b}")
        if len(after.registers) != len(self.registers):
            parts.append(f"registers {len(self.registers)} -> {len(after.registers)}")
        if len(after.buffers) != len(self.buffers):
            parts.append(f"buffers {len(self.buffers)} -> {len(after.buffers)}")
        marks = _unrolled(after.body) - _unrolled(self.body)
        if marks:
            parts.append(f"{marks} loop(s) marked unroll")
        if not parts and after.body != self.body:
            parts.append("statements rewritten")
        return ", ".join(parts) or "no change"


@dataclass(frozen=True)
class PassContext:
    """What the passes read of the kernel's plan and the function (read-only)."""
    kernel: str                                  # the kernel's name (``pm_kernel0``)
    plan: KernelPlan
    block: tuple[int, int, int]
    ctypes: Mapping[str, str]                    # array -> C element type
    reductions: Mapping[str, TreeReduction] = field(default_factory=dict)
    #: each host condition the block's instances are under (their conjunction)
    guards: tuple[Expr, ...] = ()
    #: the target arrays' C types of the tree reductions' statements, by statement
    reduction_ctypes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PassLog:
    """One pass over one kernel: its time, what it changed, the body after it."""
    kernel: str
    name: str
    seconds: float
    change: str
    body: tuple[kir.Stmt, ...]
    registers: tuple[kir.RegisterDecl, ...]

    def line(self) -> str:
        return f"{self.name:<24} {self.seconds * 1e3:7.2f} ms  {self.change}"


def _count(body) -> int:
    return sum(1 for _ in kir.walk(list(body)))


def _unrolled(body) -> int:
    return sum(1 for s in kir.walk(list(body)) if isinstance(s, kir.Loop) and s.unroll)
