"""Planted faults in *generated* kernels (not hand-written KIR): the emulator must
catch each one.  gemm and jacobi-2d are compiled with shared-memory buffers, then the
Kernel IR is damaged the way a compiler bug would damage it: a barrier dropped, a
copy loop's bound off by one, a thread distribution that makes two threads write one
element.  The undamaged program must pass, so the failures are the faults' doing.
Element copies (``vector=False``): a vector copy statement has no copy loop of its
own (each thread copies one 16-byte chunk per round), so "the loop around the copy"
would be the sub-tile loop.
"""
from __future__ import annotations

import copy
import pathlib

import numpy as np
import pytest

from polymagic import kir
from polymagic.errors import EmulatorError
from polymagic.expr import Binary, Int, Var
from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime.emulator import build

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
CASES = {"gemm": {"N": 45}, "jacobi-2d": {"n": 45, "tsteps": 2}}


def _program(name, **options):
    return compile_source((EXAMPLES / f"{name}.c").read_text(),
                          Options(tile=(16, 16, 8), vector=False, **options)).program


def _inputs(program, sizes):
    rng = np.random.default_rng(0)
    arrays = {}
    for n, d in program.arrays.items():
        if d.kind != "param":
            continue
        from polymagic.expr import evaluate
        shape = tuple(int(evaluate(e, sizes)) for e in d.shape)
        arrays[n] = rng.uniform(0.5, 1.5, shape).astype(np.float32 if d.ctype == "float" else np.float64)
    scalars = {s: 1.25 for s in program.scalars}
    return arrays, scalars


def _run(program, sizes, order="shuffle"):
    arrays, scalars = _inputs(program, sizes)
    return build(program).run(arrays, sizes, scalars, seed=1, order=order)


def _bodies(program):
    for k in program.kernels.values():
        yield k.body


def _find(body, pred, parents=()):
    """(statement, its list, index) for the first statement matching pred."""
    for i, s in enumerate(body):
        if pred(s):
            return s, body, i
        for child in ([s.body] if isinstance(s, kir.Loop) else
                      [s.then, s.orelse] if isinstance(s, kir.If) else []):
            hit = _find(child, pred)
            if hit:
                return hit
    return None


def _copy_loop(body, direction):
    """The innermost loop around a copy statement of the given direction."""
    def is_copy_loop(s):
        return isinstance(s, kir.Loop) and any(
            isinstance(c, kir.Compute) and c.stmt.startswith(f"pm_{direction}_") for c in s.body)
    return _find(body, is_copy_loop)


@pytest.mark.parametrize("name", sorted(CASES))
def test_undamaged_generated_kernels_pass(name):
    program = _program(name)
    assert any(k.shared for k in program.kernels.values())
    for order in ("shuffle", "reverse", "forward"):
        _run(program, CASES[name], order)


@pytest.mark.parametrize("name", sorted(CASES))
def test_dropped_barrier_after_copy_in_is_a_race(name):
    program = copy.deepcopy(_program(name))
    for body in _bodies(program):
        # the last barrier before the first computation: the one between the copy-in
        # code and the statements that read the buffers
        last = None
        for s in kir.walk(body):
            if isinstance(s, kir.Barrier):
                last = s
            elif isinstance(s, kir.Compute) and not s.stmt.startswith("pm_"):
                break
        if last is not None:
            _, lst, i = _find(body, lambda s: s is last)
            del lst[i]
            break
    with pytest.raises(EmulatorError, match="race|uninitiali"):
        _run(program, CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_off_by_one_copy_in_bound_is_caught(name):
    program = copy.deepcopy(_program(name))
    for body in _bodies(program):
        hit = _copy_loop(body, "in")
        if hit:
            loop, _, _ = hit
            loop.upper = Binary("-", loop.upper, Int(1))
            break
    with pytest.raises(EmulatorError, match="uninitiali|race"):
        _run(program, CASES[name])


def test_racy_thread_distribution_is_caught():
    """The copy-out ignores threadIdx.y: the threads of one column write the same
    global elements in one barrier phase.  Registers off: with them gemm's C goes
    from registers to global memory and has no copy-out loop."""
    program = copy.deepcopy(_program("gemm", registers=False))
    body = next(iter(_bodies(program)))
    loop, _, _ = _copy_loop(body, "out")
    ty = kir.THREAD_IDS["y"]
    loop.body = kir.map_body(loop.body, lambda e: Int(0) if isinstance(e, Var) and e.name == ty
                             else None)
    with pytest.raises(EmulatorError, match="race"):
        _run(program, CASES["gemm"])
