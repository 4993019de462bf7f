"""Kernel-level optimisations: ``#pragma unroll`` on inner loops with constant trip
counts (seed 004 §4.3), dynamic shared memory past 48 KB per block with the opt-in
attribute set at launch, and redundant-load elimination of repeated identical global
reads in one statement.  Emulator == CPU, NVRTC compiles, the GPU runtime launches
with the opt-in (stand-in CuPy)."""
from __future__ import annotations

import pathlib
import sys

import numpy as np

from polymagic import kir
from polymagic.expr import Int
from polymagic.codegen.nvrtc import compile_cuda
from polymagic.options import Options, parse_options
from polymagic.compiler import compile_source
from polymagic.runtime import gpu
from polymagic.runtime import run as rt
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
GEMM = (EXAMPLES / "gemm.c").read_text()
COULOMB = (EXAMPLES / "coulomb.c").read_text()

POLY = """
void poly(int N, float x[N], float c[8], float y[N]) {
  for (int i = 0; i < N; i++)
    for (int k = 0; k < 8; k++)
      y[i] += c[k] * x[i] * x[i];
}
"""


def _run(src, **kw):
    o = Options(target="emulator", **kw)
    c = compile_source(src, o)
    r = run(c, o)
    assert r.ok, r.message
    return c, r


def _loops(c):
    return [s for k in c.program.kernels.values() for s in kir.walk(k.body)
            if isinstance(s, kir.Loop)]


# ---- #pragma unroll --------------------------------------------------------------------

def test_constant_trip_inner_loop_is_unrolled():
    c, _ = _run(POLY, sizes={"N": 45}, shared="none")
    (k_loop,) = [lp for lp in _loops(c) if lp.lower == Int(0) and lp.upper == Int(7)]
    assert k_loop.unroll and "#pragma unroll" in c.cuda
    # loops bounded by the problem size are left alone
    assert not any(lp.unroll for lp in _loops(c) if lp is not k_loop)
    assert b".entry" in compile_cuda(c.cuda, "sm_90")


# ---- dynamic shared memory ---------------------------------------------------------------

def test_buffers_over_48kb_use_dynamic_shared_memory():
    # registers off: C keeps its 32 KB shared buffer (with registers it has none)
    c, r = _run(GEMM, sizes={"N": 70}, tile=(128, 64, 32), shared_mem=100 * 1024,
                registers=False)
    k = c.program.kernels["kernel0"]
    assert k.dynamic_shared == 128 * 64 * 4 + 32 * 64 * 4 + 128 * 32 * 4 == 57344
    assert "extern __shared__ __align__(16) unsigned char pm_dyn_shared[];" in c.cuda
    assert "float (*sh0_C)[64] = (float (*)[64])(pm_dyn_shared + 0);" in c.cuda
    assert "__shared__ float sh0_C" not in c.cuda
    assert "57344 B of dynamic shared memory" in c.summary
    assert r.counters["loads"] > 0
    assert b".entry kernel0" in compile_cuda(c.cuda, "sm_90")


def test_default_limit_keeps_static_buffers():
    c = compile_source(GEMM, Options(sizes={"N": 70}, tile=(128, 64, 32)))
    assert all(k.dynamic_shared == 0 for k in c.program.kernels.values())
    assert "extern __shared__" not in c.cuda
    assert sum(kir.shared_offsets(k.shared)[1] for k in c.program.kernels.values()) <= 48 * 1024


def test_shared_mem_is_capped_at_227kb():
    o = parse_options("--shared-mem 300KB --size N=64")
    c = compile_source(GEMM, o)
    assert any("--shared-mem 300 KB capped at 227 KB" in n for n in c.note_lines)


def test_gpu_runtime_opts_in_to_dynamic_shared_memory(monkeypatch):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from test_runtime import fake_cupy
    calls: list = []
    cp = fake_cupy(lambda grid, block, args: None, [])

    class Fn:
        max_dynamic_shared_size_bytes = 0

        def __call__(self, grid, block, args, shared_mem=0):
            calls.append((self.max_dynamic_shared_size_bytes, shared_mem))

    class RawModule(cp.RawModule):
        def get_function(self, name):
            return Fn()
    cp.RawModule = RawModule
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(gpu, "_AVAILABLE", None)
    monkeypatch.setattr(gpu, "_RAW_MODULES", {})
    monkeypatch.setattr(rt, "_MODULES", {})
    c = compile_source(GEMM, Options(sizes={"N": 40}, tile=(128, 64, 32),
                                     shared_mem=100 * 1024, registers=False))
    m = gpu.GpuModule(c)
    a = np.ones((40, 40), np.float32)
    m.run({"A": a, "B": a.copy(), "C": a.copy()}, {"N": 40}, {"alpha": 1.0})
    assert calls == [(57344, 57344)]


# ---- redundant-load elimination ------------------------------------------------------------

def test_repeated_reads_in_one_statement_are_loaded_once():
    sizes = {"NY": 9, "NX": 37, "NA": 5}
    c, r = _run(COULOMB, sizes=sizes, shared="none")
    k = c.program.kernels["kernel0"]
    assert [d.name for d in k.registers] == ["pm_r0_energy", "pm_l0_atoms", "pm_l1_atoms",
                                             "pm_l2_atoms"]
    # per instance: atoms[n][0..3] once each (7 reads in the source statement)
    points = sizes["NY"] * sizes["NX"]
    assert r.counters["loads"] == points * sizes["NA"] * 4 + points
    # x[i] read twice per statement is thread-only: a register across k, not reloaded
    c2, _ = _run(POLY, sizes={"N": 45}, shared="none")
    assert "pm_r0_x * pm_r0_x" in c2.cuda
