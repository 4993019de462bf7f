"""Hand-built Kernel IR for the pass tests (tests/test_pass_*.py): small kernels
written directly as :mod:`polymagic.kir` statements, no compile involved."""
from __future__ import annotations

from polymagic import kir
from polymagic.expr import Access, Assign, Binary, Int, Var
from polymagic.lower.passes import KernelIR, PassContext
from polymagic.mapping import KernelPlan


def acc(array: str, *index) -> Access:
    return Access(array, tuple(Var(i) if isinstance(i, str) else Int(i) for i in index))


def compute(stmt: str, target: Access, op: str, value) -> kir.Compute:
    return kir.Compute(stmt, Assign(target, op, value))


def loop(var: str, lo: int, hi: int, body: list, step: int = 1) -> kir.Loop:
    return kir.Loop(var, Int(lo), Int(hi), step, body)


def context(plan: KernelPlan | None = None, block=(32, 1, 1), **kw) -> PassContext:
    plan = plan or KernelPlan("pm_kernel0", [])
    ctypes = kw.pop("ctypes", {"A": "float", "B": "float", "C": "float", "x": "float"})
    return PassContext("kernel0", plan, block, ctypes, **kw)


def ir(body: list, **kw) -> KernelIR:
    return KernelIR(tuple(body), **kw)


def plus(a, b) -> Binary:
    return Binary("+", a, b)
