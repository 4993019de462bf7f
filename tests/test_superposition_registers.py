"""Registers and ``__constant__`` memory on the superposition's kernels (seed 004 §4.2
composed with seed 003's tree, issue 4: the superposition composes with every other
stage).  An array whose subscripts vary only with a kernel's thread points (host
loops, block loops, the thread group's loops on x/y/z) is planned into a per-thread
register and kept there across the thread's sequential loop (gemm's ``C[i][j]``
across ``k``, doitgen's ``sum[p]`` across ``s``): the plan and the Kernel IR say so,
the emulator matches the CPU, and the global loads and stores drop by the number of
iterations of that loop saved per thread point.  Tree reductions keep their own
accumulator.  Small read-only arrays the same for every thread (the Coulombic
kernel's atoms) are read from ``__constant__`` memory.  NVRTC compiles the CUDA."""
from __future__ import annotations

import pytest

from polymagic.codegen.nvrtc import compile_cuda
from polymagic.memory.counts import predict_for
from polymagic.compiler import compile_source
from polymagic.runtime.run import run
from test_superposition_shared import Options, _src   # superposition forced


def _run(name: str, sizes: dict, **kw):
    opts = Options(sizes=sizes, target="emulator", **kw)
    c = compile_source(_src(name), opts)
    assert c.schedule.use_superposition
    r = run(c, opts)
    assert r.ok, f"{name}: {r.message}"
    return c, r, opts


def _registers(c) -> dict[str, list[str]]:
    """Kernel -> arrays planned into registers."""
    return {k[3:]: [r.array for r in p.memory.registers] for k, p in c.mapping.plans.items()
            if p.memory and p.memory.registers}


# ---- the accumulator in a register ------------------------------------------------------

def test_gemm_accumulator_in_a_register_replaces_its_buffer():
    """gemm under the superposition (i→block.y/thread.y, j→block.x/thread.x, k in the
    thread): C[i][j] is planned into a register, the Kernel IR keeps it across the k
    tiles (loaded once and stored once per thread point), and its block buffer is
    dropped (the register duplicates it); A and B keep their thread-tile buffers."""
    sizes = {"N": 37}
    c, r, opts = _run("gemm", sizes)
    assert _registers(c) == {"kernel0": ["C"]}
    k = c.program.kernels["kernel0"]
    (reg,) = [d for d in k.registers if d.name.startswith("pm_r")]
    assert (reg.name, reg.array, reg.once_per_point) == ("pm_r0_C", "C", True)
    assert sorted(d.name for d in k.shared) == ["sh0t1_A", "sh0t1_B"]
    assert any(n.startswith("kernel0: C: register pm_r0_C per thread") and "reused across k"
               in n for n in c.note_lines)
    assert any(n.startswith("kernel0: C: not buffered (kept in registers") for n in c.note_lines)
    # the counts model predicts the emulator's figures exactly (C: once per point)
    pred = predict_for(c, opts.sizes)
    assert sum(p.loads for p in pred.values()) == r.counters["loads"]
    assert sum(p.stores for p in pred.values()) == r.counters["stores"]
    assert r.counters["stores"] == 37 * 37
    for order in ("reverse", "shuffle"):
        assert run(c, opts.with_(emu_order=order)).ok


@pytest.mark.parametrize("sizes", [{"N": 37}, {"N": 64}])
def test_gemm_global_loads_drop_by_the_k_loop(sizes):
    """Without shared memory (``--shared none``) every k iteration read and wrote
    C[i][j] in global memory; with the register it is read and written once per
    thread point: N³ - N² fewer loads and stores (reduction-free kernel).  The
    baseline also turns seed 001's default localisation off (without the register it
    keeps C[i][j] along k in L, test_superposition_localise)."""
    n = sizes["N"]
    on, r_on, opts = _run("gemm", sizes, shared="none")
    off, r_off, _ = _run("gemm", sizes, shared="none", registers=False, localise_auto=False)
    assert _registers(on) == {"kernel0": ["C"]} and not _registers(off)
    assert r_off.counters["loads"] - r_on.counters["loads"] == n ** 3 - n ** 2
    assert r_off.counters["stores"] - r_on.counters["stores"] == n ** 3 - n ** 2
    pred = predict_for(on, opts.sizes)
    assert sum(p.loads for p in pred.values()) == r_on.counters["loads"]
    assert sum(p.stores for p in pred.values()) == r_on.counters["stores"]


@pytest.mark.parametrize("name", ["doitgen", "doitgen3"])
def test_doitgen_sum_in_a_register_across_s(name):
    """doitgen (seed 003's running example): sum[p] (sum[r][q][p]) accumulates over s
    inside the thread of point p: a register across the s loop, so each thread
    point loads it once and stores it once instead of np times (the initialisation
    S0 and the copy S2 still access it: nr·nq·np·(np - 1) fewer loads and stores).
    examples/doitgen.c's sum[p], reused by every (r, q), is the front end's
    pm_x_sum[r][q][p] (polymagic/frontend/expansion.py): the paper's form."""
    sizes = {"nr": 4, "nq": 3, "np": 26}
    arr = "pm_x_sum" if name == "doitgen" else "sum"
    on, r_on, _ = _run(name, sizes, shared="none")
    # the baseline without the register nor seed 001's default localisation (which
    # would keep sum[p] along s in L instead)
    off, r_off, _ = _run(name, sizes, shared="none", registers=False, localise_auto=False)
    assert _registers(on)["kernel0"] == [arr]
    k = on.program.kernels["kernel0"]
    assert any(d.name == f"pm_r0_{arr}" for d in k.registers)
    assert any(n.startswith(f"kernel0: {arr}: register pm_r0_{arr} per thread") and
               n.endswith("reused across s)") for n in on.note_lines)
    saved = 4 * 3 * 26 * 25
    assert r_off.counters["loads"] - r_on.counters["loads"] == saved
    assert r_off.counters["stores"] - r_on.counters["stores"] == saved


def test_several_points_per_thread_keep_the_buffer():
    """Tiles larger than the block (8x8 tiles over 4x4 threads): a thread runs
    several points of the block tile, so C keeps its shared buffer (the register is
    kept inside each point's loop) and the emulator still matches the CPU."""
    c, r, _ = _run("gemm", {"N": 37}, tile=(8, 8), block=(4, 4, 2), emu_order="reverse")
    assert _registers(c) == {"kernel0": ["C"]}
    assert "sh0_C" in {d.name for d in c.program.kernels["kernel0"].shared}


# a time loop inside one kernel (a step loop: every thread runs it, a barrier per step)
STEPS = """
void steps(int T, int n, float x[n], float y[n], float w[8]) {
  for (int t = 0; t < T; t++) {
    for (int i = 0; i < n; i++)
      x[i] = x[i] * w[t % 8] + y[i];
    for (int i = 0; i < n; i++)
      y[i] = y[i] + x[i] * 0.25f;
  }
}
"""


def test_registers_across_a_step_loop_and_constant_weights():
    """i is a block and thread loop, t a step loop inside the kernel: x[i] and y[i]
    stay in registers across all the steps (2·n loads instead of 4·T·n without shared
    memory), w (read-only, indexed by t only) is read from ``__constant__`` memory,
    and the decision line of its dropped block buffer says so."""
    T, n = 5, 70
    opts = Options(sizes={"T": T, "n": n}, target="emulator", shared="none")
    on = compile_source(STEPS, opts)
    off = compile_source(STEPS, opts.with_(registers=False, localise_auto=False))
    assert on.schedule.use_superposition
    assert _registers(on) == {"kernel0": ["x", "y"]}
    assert set(on.program.constants) == {"w"}
    r_on, r_off = run(on, opts), run(off, opts.with_(registers=False, localise_auto=False))
    assert r_on.ok and r_off.ok, (r_on.message, r_off.message)
    assert r_off.counters["loads"] - r_on.counters["loads"] == 4 * T * n - 2 * n
    assert r_off.counters["stores"] - r_on.counters["stores"] == 2 * T * n - 2 * n
    for order in ("reverse", "shuffle"):
        assert run(on, opts.with_(emu_order=order)).ok
    c = compile_source(STEPS, Options(sizes={"T": T, "n": n}))
    assert "kernel0: w: not buffered (read from __constant__ memory)" in c.note_lines
    assert not any(n.startswith("kernel0: w: sh0_w") for n in c.note_lines)
    assert b".entry kernel0" in compile_cuda(c.cuda, "sm_90")


# ---- tree reductions keep their own mechanism ------------------------------------------

@pytest.mark.parametrize("name, sizes", [("atax", {"m": 41, "n": 35}),
                                         ("gemver", {"n": 37}),
                                         ("bicg", {"m": 33, "n": 45})])
def test_tree_reductions_keep_their_accumulator(name, sizes):
    """Kernels with tree reductions: the reduced statement accumulates in its
    ``pm_acc`` register and combines through shared memory as before; no array it
    accesses is planned into a register, while reduction-free groups' accumulators
    are (atax's y[j] across i)."""
    c, r, opts = _run(name, sizes)
    trees = {t.stmt for t in c.mapping.reductions.values()}
    assert trees
    reduced = {a.array for s in trees for a in c.scop.statement(s).accesses}
    for p in c.mapping.plans.values():
        if p.memory and set(p.statements) & trees:
            assert not {x.array for x in p.memory.registers} & reduced
    assert any(d.name.startswith("pm_acc_") for k in c.program.kernels.values()
               for d in k.registers)
    if name == "atax":
        assert _registers(c) == {"kernel1": ["y"]}   # kernel0: the fused reduction
    assert run(c, opts.with_(emu_order="shuffle")).ok
    assert b".entry" in compile_cuda(c.cuda, "sm_90")


# ---- __constant__ memory --------------------------------------------------------------

@pytest.mark.parametrize("shared", ["auto", "none"])
def test_coulomb_superposed_reads_atoms_from_constant_memory(shared):
    """The Coulombic potential under the superposition: atoms (read-only, indexed
    only by the sequential loop n) is read from ``__constant__`` memory instead of a
    thread-tile shared buffer, energy[i][j] is kept in a register across n."""
    c, r, opts = _run("coulomb", {"NY": 19, "NX": 37, "NA": 21}, shared=shared)
    assert set(c.program.constants) == {"atoms"}
    kernel = c.cuda[c.cuda.index("__global__"):]
    assert "pm_const_atoms[" in kernel and " atoms[" not in kernel
    assert not any(d.name.endswith("_atoms") for k in c.program.kernels.values()
                   for d in k.shared)
    assert any(n.startswith("kernel0: atoms: __constant__ pm_const_atoms") for n in c.note_lines)
    assert _registers(c) == {"kernel0": ["energy"]}
    assert b".entry kernel0" in compile_cuda(c.cuda, "sm_90")


# ---- NVRTC -----------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"shared": "none"}, {"tile": (8, 8), "block": (4, 4, 2)}],
                         ids=["default", "no-shared", "small-tiles"])
@pytest.mark.parametrize("name", ["gemm", "doitgen", "2mm", "mvt", "syrk", "covariance"])
def test_superposed_register_code_compiles_with_nvrtc(name, kw):
    c = compile_source(_src(name), Options(**kw))
    assert c.schedule.use_superposition
    assert any(d.name.startswith("pm_r") for k in c.program.kernels.values()
               for d in k.registers)
    assert b".entry" in compile_cuda(c.cuda, "sm_90")
