"""Registers for data indexed only by the thread loops (seed 004 §4.2).

gemm's accumulator ``C[i][j]`` is planned into a register (asserted on the plan), the
KIR keeps it in a per-thread local across the k loop (one per point when a thread
owns several points of the tile), the emulator's global-load count falls by the
predicted amount, and every example gives emulator == CPU with registers on and off.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic import kir
from polymagic.codegen.nvrtc import compile_cuda
from polymagic.options import Options, parse_options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

# small sizes (not multiples of the tiles), as in test_end_to_end
SIZES = {
    "gemm": {"N": 21}, "gemm-polybench": {"ni": 19, "nj": 13, "nk": 11},
    "2mm": {"ni": 11, "nj": 9, "nk": 13, "nl": 10}, "atax": {"m": 13, "n": 11},
    "bicg": {"m": 11, "n": 15}, "mvt": {"n": 13}, "gesummv": {"n": 15},
    "syrk": {"n": 11, "m": 9}, "doitgen": {"nr": 7, "nq": 5, "np": 9},
    "covariance": {"m": 9, "n": 11}, "jacobi-1d": {"tsteps": 3, "n": 30},
    "jacobi-2d": {"tsteps": 2, "n": 13}, "fdtd-2d": {"tmax": 2, "nx": 9, "ny": 11},
    "seidel-2d": {"tsteps": 2, "n": 9}, "lu": {"n": 11},
}


def _src(name: str) -> str:
    return (EXAMPLES / f"{name}.c").read_text()


def _compile(name: str, **kw):
    # device_sms=0: the register tiles at these small sizes (mapping.grid_fill would
    # trade them for smaller tiles that fill the grid; tests/test_grid_fill.py)
    opts = Options(sizes=SIZES.get(name, {}), target="emulator", device_sms=0, **kw)
    return compile_source(_src(name), opts), opts


def _run(name: str, **kw):
    c, opts = _compile(name, **kw)
    r = run(c, opts)
    assert r.ok, f"{name} {kw}: {r.message}"
    return c, r


def _plan(c):
    from polymagic.mapping import map_schedule
    return map_schedule(c.scop, c.schedule, Options(sizes={"N": 21}, device_sms=0).compile).plans


def _registers(c) -> dict[str, list[kir.RegisterDecl]]:
    return {k.name: k.registers for k in c.program.kernels.values()}


def test_gemm_accumulator_is_planned_into_a_register():
    c, _ = _compile("gemm", shared="none")
    (plan,) = _plan(c).values()
    (reg,) = plan.memory.registers
    assert reg.array == "C" and reg.statements == ("S0",)
    assert "thread loops i, j" in reg.reason and "reused across k" in reg.reason
    lines = [d for d in c.note_lines if d.startswith("kernel0: ")]
    assert "kernel0: C: register pm_r0_C per thread (subscripts vary only with the thread " \
           "loops i, j; reused across k)" in lines
    assert any(d.startswith("kernel0: A: not in a register") for d in lines)
    assert any(d.startswith("kernel0: B: not in a register") for d in lines)
    # one register line per array
    assert len([d for d in lines if "register" in d]) == 3


def test_gemm_register_in_the_kir_and_cuda():
    c, _ = _compile("gemm", shared="none")
    assert _registers(c) == {"kernel0": [kir.RegisterDecl("pm_r0_C", "float", (), "C", True)]}
    assert "float pm_r0_C = 0;" in c.cuda
    assert "pm_r0_C += alpha * A[" in c.cuda
    # the sequential k loop holds no global access to C
    k = c.program.kernels["kernel0"]
    for s in kir.walk(k.body):
        if isinstance(s, kir.Loop) and s.var == "pm_c4":
            assert "C[" not in repr(s.body).replace("Access(array='pm_r0_C'", "")


def test_cyclic_threads_get_one_register_per_point():
    """Tile 32 over 8 threads in y: each thread owns 4 points of i, so 4 registers,
    held across the k sub-tile loop with unrolled constant-trip point loops (the
    32 x 32 tile given: by default gemm gets an 8 x 8 register tile)."""
    c, _ = _compile("gemm", tile=(32, 32, 16))
    (decl,) = c.program.kernels["kernel0"].registers
    assert decl.shape == (4,)
    assert "#pragma unroll" in c.cuda and f"{decl.name}[pm_c3_u] +=" in c.cuda
    assert any("register pm_r0_C[4] per thread" in n for n in c.note_lines)


def test_register_array_gets_no_duplicate_shared_buffer():
    """C lives in registers across the k sub-tile loop: no sh0_C buffer (4 KB saved),
    the registers load from and store to global memory directly, once per point."""
    c, _ = _compile("gemm")
    (plan,) = _plan(c).values()
    assert {b.array for b in plan.memory.buffers} == {"A", "B"}
    assert plan.memory.shared_bytes == 2 * 128 * 16 * 4      # the default register tile
    assert "sh0_C" not in c.cuda
    # (at the default 128 x 128 tile C's buffer would not fit shared memory anyway: its
    # note says so; at 32 x 32 it is dropped for the registers)
    c32, _ = _compile("gemm", tile=(32, 32, 16))
    assert "kernel0: C: not buffered (kept in registers across the sequential loops: " \
        "loaded from and stored to global memory once per thread point)" in c32.note_lines
    (decl,) = c.program.kernels["kernel0"].registers
    assert decl.array == "C" and decl.once_per_point
    # --shared all keeps every buffer (the scratchpad-only machines of seed 000 §3)
    c_all, _ = _compile("gemm", shared="all", tile=(32, 32, 16))
    assert "sh0_C[32][32]" in c_all.cuda


def test_no_registers_option():
    c, _ = _compile("gemm", shared="none", registers=False)
    assert _registers(c) == {"kernel0": []}
    assert not any(": register " in n or "not in a register" in n for n in c.note_lines)
    assert parse_options("--no-registers").registers is False


@pytest.mark.parametrize("shared", ["auto", "none"])
def test_gemm_global_loads_fall_with_registers(shared):
    n = 21
    _, on = _run("gemm", shared=shared)
    # registers off, and no localisation of C along k instead (issue 5's default)
    _, off = _run("gemm", shared=shared, registers=False, localise_auto=False)
    if shared == "none":
        # C[i][j] read once per (i, j) instead of once per (i, j, k); stored once
        assert off.counters["loads"] == 3 * n ** 3
        assert on.counters["loads"] == 2 * n ** 3 + n ** 2
        assert (off.counters["stores"], on.counters["stores"]) == (n ** 3, n ** 2)
    else:  # C's buffer (registers off) and C's registers (on) both read it once per point
        assert on.counters["loads"] == off.counters["loads"]
        assert on.counters["stores"] == off.counters["stores"] == n ** 2


@pytest.mark.parametrize("name", sorted(SIZES))
@pytest.mark.parametrize("shared", ["auto", "none"])
def test_examples_match_cpu_with_registers_on_and_off(name, shared):
    _, on = _run(name, shared=shared)
    # registers off and no default localisation in their place (it can do better:
    # 2mm with --shared none localises C along k, 4763 loads against 4873)
    _, off = _run(name, shared=shared, registers=False, localise_auto=False)
    assert on.counters["loads"] <= off.counters["loads"]


def test_small_tiles_several_points_per_thread():
    _run("gemm", tile=(8, 8, 4), block=(4, 2))
    _run("gemm", tile=(8, 8), block=(4, 2), shared="none")


@pytest.mark.parametrize("shared", ["auto", "none"])
@pytest.mark.parametrize("name", ["gemm", "2mm", "syrk", "doitgen", "covariance"])
def test_register_code_compiles_with_nvrtc(name, shared):
    c, _ = _compile(name, shared=shared)
    assert any(k.registers for k in c.program.kernels.values())
    assert b".entry" in compile_cuda(c.cuda, "sm_90")
