"""The emulator on hand-built KIR programs (no front end needed).

Correct kernels must give NumPy's result in every block/thread order and in the
OpenMP mode; planted faults (a dropped barrier, an off-by-one copy loop, racy
writes, a barrier under divergent control, out-of-bounds reads) must each be
caught with the right kind of error; counters must be exact.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from polymagic import kir
from polymagic.codegen.c_like import CLikePrinter
from polymagic.codegen.emulator import print_emulator_c
from polymagic.errors import CompileError, EmulatorError, InputError
from polymagic.expr import Access, Assign, Binary, Call, Cast, Float, Int, Var
from polymagic.runtime.emulator import build
from cpu_clock import cpu_seconds

ORDERS = ("forward", "reverse", "shuffle")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("POLYMAGIC_CACHE", str(tmp_path_factory.getbasetemp() / "pmcache"))


# ---- little KIR builders ----------------------------------------------------------

def V(n):
    return Var(n)


def add(a, b):
    return Binary("+", a, b)


def sub(a, b):
    return Binary("-", a, b)


def mul(a, b):
    return Binary("*", a, b)


def le(a, b):
    return Binary("<=", a, b)


def lt(a, b):
    return Binary("<", a, b)


def eq(a, b):
    return Binary("==", a, b)


def land(a, b):
    return Binary("&&", a, b)


def I(v):
    return Int(v)


def comp(target, op, value, name="S0"):
    return kir.Compute(name, Assign(target, op, value))


def A_(name, *idx):
    return Access(name, tuple(idx))


N, M = V("N"), V("M")


# ---- (a) element-wise, 2-D tiles, cyclic thread loops, partial tiles --------------

TILE = 32
BLOCK = (16, 8, 1)


def elementwise_program(T: int = 3) -> kir.Program:
    """for t < T: C[i][j] += alpha * A[i][j] + (float)t * B[i][j], 32x32 tiles
    over 16x8 threads with cyclic thread loops and guards for partial tiles."""
    arrays = {n: kir.ArrayDecl(n, "float", (N, M)) for n in "ABC"}
    i = add(mul(I(TILE), V("pm_by")), V("c0"))
    j = add(mul(I(TILE), V("pm_bx")), V("c1"))
    body = [kir.Loop("c0", V("pm_ty"), I(TILE - 1), BLOCK[1], [
        kir.Loop("c1", V("pm_tx"), I(TILE - 1), BLOCK[0], [
            kir.If(land(le(i, sub(N, I(1))), le(j, sub(M, I(1)))), [
                comp(A_("C", i, j), "+=",
                     add(mul(V("alpha"), A_("A", i, j)),
                         mul(Cast("float", V("t")), A_("B", i, j))))])])])]
    k = kir.Kernel("ew", body, BLOCK, ["A", "B", "C"], ["alpha"], ["N", "M", "t"],
                   summary="c0,c1 tiles -> blocks; intra-tile -> threads (cyclic)")
    grid = (Call("floord", (add(M, I(TILE - 1)), I(TILE))),
            Call("floord", (add(N, I(TILE - 1)), I(TILE))), I(1))
    host = [kir.Loop("t", I(0), I(T - 1), 1, [kir.Launch("ew", grid)])]
    return kir.Program("ew", arrays, ["N", "M"], {"alpha": "float"}, host, {"ew": k})


def elementwise_data(n=70, m=45, T=3, seed=0):
    rng = np.random.default_rng(seed)
    a, b, c = (rng.random((n, m), dtype=np.float32) for _ in range(3))
    want = c.copy()
    alpha = np.float32(1.5)
    for t in range(T):
        want = want + (alpha * a + np.float32(t) * b)
    return a, b, c, want


@pytest.mark.parametrize("mode", ["emulate", "openmp"])
@pytest.mark.parametrize("order", ORDERS)
def test_elementwise_matches_numpy(mode, order):
    prog = elementwise_program()
    mod = build(prog, mode)
    a, b, c, want = elementwise_data()
    for seed in (0, 1, 7):
        cc = c.copy()
        mod.run({"A": a, "B": b, "C": cc}, {"N": 70, "M": 45}, {"alpha": 1.5},
                seed=seed, order=order)
        np.testing.assert_array_equal(cc, want)


def test_elementwise_counters_exact():
    """(h): C[i][j] += alpha*A + t*B is 3 loads (A, B, and C for +=) and 1 store per
    element per launch; 3 launches (the host loop)."""
    n, m, T = 70, 45, 3
    mod = build(elementwise_program(T), "emulate")
    a, b, c, _ = elementwise_data(n, m, T)
    r = mod.run({"A": a, "B": b, "C": c}, {"N": n, "M": m}, {"alpha": 1.5})
    assert r.counters == {"ew": {"loads": 3 * n * m * T, "stores": n * m * T, "launches": T}}
    assert (r.loads, r.stores, r.launches) == (3 * n * m * T, n * m * T, T)
    assert r.seconds > 0
    # openmp: launches only
    r = build(elementwise_program(T), "openmp").run(
        {"A": a, "B": b, "C": c.copy()}, {"N": n, "M": m}, {"alpha": 1.5})
    assert r.launches == T and r.loads == 0


def test_empty_launch_is_skipped():
    """A launch with a zero grid dimension is not a CUDA launch (the GPU runtime skips it)."""
    mod = build(elementwise_program(1), "emulate")
    r = mod.run({"A": np.zeros((0, 5), np.float32), "B": np.zeros((0, 5), np.float32),
                 "C": np.zeros((0, 5), np.float32)}, {"N": 0, "M": 5}, {"alpha": 1.0})
    assert r.launches == 0


# ---- (b) shared-memory stencil ----------------------------------------------------

ST = 16               # output tile
SB = (16, 8, 1)       # threads


def stencil_program(copy_hi=ST + 1, barrier=True, comp_hi=ST - 1) -> kir.Program:
    """Out[i][j] = 0.2f*(In[i-1][j] + In[i+1][j] + In[i][j-1] + In[i][j+1] + In[i][j])
    for 1 <= i < N-1, 1 <= j < M-1; a block copies its (ST+2)^2 tile + halo of In into
    the shared buffer S with cyclic copy loops, syncs, computes from S."""
    arrays = {"In": kir.ArrayDecl("In", "float", (N, M)),
              "Out": kir.ArrayDecl("Out", "float", (N, M))}
    r0 = mul(I(ST), V("pm_by"))
    c0 = mul(I(ST), V("pm_bx"))
    a, b = V("a"), V("b")
    copy = kir.Loop("a", V("pm_ty"), I(copy_hi), SB[1], [
        kir.Loop("b", V("pm_tx"), I(ST + 1), SB[0], [
            kir.If(land(le(add(r0, a), sub(N, I(1))), le(add(c0, b), sub(M, I(1)))), [
                comp(A_("S", a, b), "=", A_("In", add(r0, a), add(c0, b)), "copy_in")])])])
    s = lambda da, db: A_("S", add(a, I(da)), add(b, I(db)))  # noqa: E731
    val = mul(Float("0.2f"), add(add(add(add(s(0, 1), s(2, 1)), s(1, 0)), s(1, 2)), s(1, 1)))
    compute = kir.Loop("a", V("pm_ty"), I(comp_hi), SB[1], [
        kir.Loop("b", V("pm_tx"), I(ST - 1), SB[0], [
            kir.If(land(le(add(add(r0, a), I(1)), sub(N, I(2))),
                        le(add(add(c0, b), I(1)), sub(M, I(2)))), [
                comp(A_("Out", add(add(r0, a), I(1)), add(add(c0, b), I(1))), "=", val)])])])
    body = [copy] + ([kir.Barrier(0)] if barrier else []) + [compute]
    k = kir.Kernel("stencil", body, SB, ["In", "Out"], [], ["N", "M"],
                   shared=[kir.SharedDecl("S", "float", (ST + 2, ST + 2))])
    grid = (Call("floord", (add(M, I(ST - 3)), I(ST))),
            Call("floord", (add(N, I(ST - 3)), I(ST))), I(1))
    return kir.Program("stencil", arrays, ["N", "M"], {}, [kir.Launch("stencil", grid)],
                       {"stencil": k})


def stencil_data(n=50, m=37, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((n, m), dtype=np.float32)
    out = rng.random((n, m), dtype=np.float32)
    want = out.copy()
    want[1:-1, 1:-1] = np.float32(0.2) * ((((x[:-2, 1:-1] + x[2:, 1:-1]) + x[1:-1, :-2])
                                          + x[1:-1, 2:]) + x[1:-1, 1:-1])
    return x, out, want


@pytest.mark.parametrize("mode", ["emulate", "openmp"])
@pytest.mark.parametrize("order", ORDERS)
def test_shared_stencil_matches_numpy(mode, order):
    mod = build(stencil_program(), mode)
    x, out, want = stencil_data()
    for seed in (0, 3):
        o = out.copy()
        r = mod.run({"In": x, "Out": o}, {"N": 50, "M": 37}, seed=seed, order=order)
        np.testing.assert_array_equal(o, want)
        assert r.launches == 1


def test_shared_stencil_counters():
    n, m = 50, 37
    r = build(stencil_program(), "emulate").run(
        {"In": stencil_data(n, m)[0], "Out": np.zeros((n, m), np.float32)}, {"N": n, "M": m})
    gy, gx = -(-(n - 2) // ST), -(-(m - 2) // ST)
    # every block loads its clipped (ST+2)^2 window of In; stores are the interior of Out
    loads = sum(min(ST + 2, n - ST * by) * min(ST + 2, m - ST * bx)
                for by in range(gy) for bx in range(gx))
    assert r.counters["stencil"] == {"loads": loads, "stores": (n - 2) * (m - 2), "launches": 1}


# ---- planted faults ---------------------------------------------------------------

def run_stencil(prog, order="shuffle", seed=0):
    x, out, _ = stencil_data()
    return build(prog, "emulate").run({"In": x, "Out": out}, {"N": 50, "M": 37},
                                      seed=seed, order=order)


@pytest.mark.parametrize("order", ORDERS)
def test_dropped_barrier_is_a_race(order):
    """(c): without __syncthreads() a thread reads S elements another thread writes."""
    with pytest.raises(EmulatorError) as e:
        run_stencil(stencil_program(barrier=False), order)
    msg = str(e.value)
    assert "data race" in msg and "shared buffer S" in msg, msg
    assert "kernel stencil" in msg and "same barrier phase" in msg, msg
    assert msg.count("thread (") == 2, msg


@pytest.mark.parametrize("order", ORDERS)
def test_off_by_one_copy_in_is_an_uninitialised_read(order):
    """(d): the copy-in loop stops one row short: row ST+1 of S is never written."""
    with pytest.raises(EmulatorError) as e:
        run_stencil(stencil_program(copy_hi=ST), order)
    msg = str(e.value)
    assert "uninitialised shared memory" in msg and f"S[{ST + 1}]" in msg, msg


def test_off_by_one_copy_in_past_the_buffer_is_out_of_bounds():
    with pytest.raises(EmulatorError) as e:
        run_stencil(stencil_program(copy_hi=ST + 2))
    msg = str(e.value)
    assert "out-of-bounds write of shared buffer S" in msg and f"S[{ST + 2}]" in msg, msg


def test_compute_loop_one_row_too_many_is_caught():
    with pytest.raises(EmulatorError) as e:
        run_stencil(stencil_program(comp_hi=ST))
    assert "out-of-bounds read of shared buffer S" in str(e.value)


def single_kernel(body, grid=(1, 1, 1), block=(8, 1, 1), arrays=None, ints=(),
                  name="k", shared=()):
    arrays = arrays or {"G": kir.ArrayDecl("G", "float", (N,)),
                        "T": kir.ArrayDecl("T", "float", (N,))}
    k = kir.Kernel(name, body, block, list(arrays), [], list(ints), shared=list(shared))
    return kir.Program(name, arrays, ["N"], {}, [kir.Launch(name, tuple(I(g) for g in grid))],
                       {name: k})


def run_g(prog, order="shuffle", n=64, seed=0):
    g = np.arange(n, dtype=np.float32)
    t = np.zeros(n, np.float32)
    build(prog, "emulate").run({"G": g, "T": t}, {"N": n}, seed=seed, order=order)
    return g, t


@pytest.mark.parametrize("order", ORDERS)
def test_threads_writing_one_element_race(order):
    """(e): every thread of one block writes G[0]."""
    prog = single_kernel([comp(A_("G", I(0)), "=", A_("T", V("pm_tx")))])
    with pytest.raises(EmulatorError) as e:
        run_g(prog, order)
    msg = str(e.value)
    assert "data race on global array G, element 0" in msg and "same barrier phase" in msg, msg


@pytest.mark.parametrize("order", ORDERS)
def test_blocks_updating_one_element_race(order):
    """(e): two blocks (one thread each) do G[0] += ...; barriers do not order blocks."""
    prog = single_kernel([kir.Barrier(0), comp(A_("G", I(0)), "+=", A_("T", V("pm_bx")))],
                         grid=(2, 1, 1), block=(1, 1, 1))
    with pytest.raises(EmulatorError) as e:
        run_g(prog, order)
    msg = str(e.value)
    assert "data race on global array G" in msg and "blocks of one launch" in msg, msg
    assert "block (0,0,0)" in msg and "block (1,0,0)" in msg, msg


@pytest.mark.parametrize("order", ORDERS)
def test_in_place_shift_across_blocks_race(order):
    """Block b reads G[b+1] and writes G[b]: a read/write race between blocks."""
    prog = single_kernel([comp(A_("G", V("pm_bx")), "=", A_("G", add(V("pm_bx"), I(1))))],
                         grid=(8, 1, 1), block=(1, 1, 1))
    with pytest.raises(EmulatorError, match="data race on global array G"):
        run_g(prog, order)


def test_reader_set_is_kept_for_threads():
    """Threads 3,2,1 read G[0] then thread 0 reads and writes it in the same phase:
    the last reader is the writer itself, the earlier readers must still count."""
    body = [comp(A_("T", V("pm_tx")), "=", A_("G", I(0))),
            kir.If(eq(V("pm_tx"), I(0)), [comp(A_("G", I(0)), "=", Float("1.0f"))])]
    with pytest.raises(EmulatorError, match="data race on global array G, element 0"):
        run_g(single_kernel(body, block=(4, 1, 1)), "reverse")


def test_reader_set_is_kept_for_blocks():
    """Blocks 0 and 1 read G[0], then block 1 writes it: block 0's read must count."""
    body = [comp(A_("T", V("pm_bx")), "=", A_("G", I(0))),
            kir.If(eq(V("pm_bx"), I(1)), [comp(A_("G", I(0)), "=", Float("1.0f"))])]
    with pytest.raises(EmulatorError) as e:
        run_g(single_kernel(body, grid=(3, 1, 1), block=(1, 1, 1)), "forward")
    assert "block (0,0,0)" in str(e.value) and "block (1,0,0)" in str(e.value)


def test_barrier_separated_phases_are_not_races():
    """Thread t writes G[t], barrier, thread t reads G[(t+1) % 8] and writes T; then a
    second launch writes G again: no race anywhere."""
    body = [comp(A_("G", V("pm_tx")), "=", Cast("float", V("pm_tx"))),
            kir.Barrier(0),
            comp(A_("T", V("pm_tx")), "=",
                 A_("G", Call("pm_mod", (add(V("pm_tx"), I(1)), I(8)))))]
    for order in ORDERS:
        for seed in range(3):
            g, t = run_g(single_kernel(body, block=(8, 1, 1)), order, seed=seed)
            np.testing.assert_array_equal(t[:8], np.roll(np.arange(8, dtype=np.float32), -1))


def test_broadcast_reads_are_not_races():
    """Every thread of every block reads G[0]: reads never race."""
    body = [comp(A_("T", add(mul(V("pm_bx"), I(8)), V("pm_tx"))), "=", A_("G", I(0)))]
    run_g(single_kernel(body, grid=(8, 1, 1), block=(8, 1, 1)), "shuffle")


@pytest.mark.parametrize("order", ORDERS)
def test_barrier_under_divergent_control(order):
    """(f): __syncthreads() inside if (pm_tx < 5)."""
    body = [kir.If(lt(V("pm_tx"), I(5)), [kir.Barrier(0)]),
            comp(A_("T", V("pm_tx")), "=", Float("1.0f"))]
    with pytest.raises(EmulatorError) as e:
        run_g(single_kernel(body, block=(8, 1, 1)), order)
    assert "barrier reached under divergent control" in str(e.value)


def test_divergent_barrier_in_openmp_mode():
    body = [kir.If(lt(V("pm_tx"), I(5)), [kir.Barrier(0)]),
            comp(A_("T", V("pm_tx")), "=", Float("1.0f"))]
    prog = single_kernel(body, grid=(4, 1, 1), block=(8, 1, 1))
    with pytest.raises(EmulatorError, match="barrier reached under divergent control"):
        build(prog, "openmp").run({"G": np.zeros(8, np.float32), "T": np.zeros(8, np.float32)},
                                  {"N": 8})


def test_block_uniform_conditional_barrier_is_fine():
    """A barrier under a condition on blockIdx only is not divergent within a block."""
    body = [kir.If(lt(V("pm_bx"), I(2)), [
        comp(A_("G", add(mul(V("pm_bx"), I(4)), V("pm_tx"))), "=", Float("2.0f")),
        kir.Barrier(0),
        comp(A_("T", add(mul(V("pm_bx"), I(4)), V("pm_tx"))), "=",
             A_("G", add(mul(V("pm_bx"), I(4)), Binary("-", I(3), V("pm_tx")))))])]
    for mode in ("emulate", "openmp"):
        g, t = np.zeros(16, np.float32), np.zeros(16, np.float32)
        build(single_kernel(body, grid=(4, 1, 1), block=(4, 1, 1)), mode).run(
            {"G": g, "T": t}, {"N": 16}, order="shuffle", seed=5)
        np.testing.assert_array_equal(t, [2.0] * 8 + [0.0] * 8)


def test_host_control_flow():
    """Host Let/If/else and loops with non-unit steps drive the launches."""
    arrays = {"G": kir.ArrayDecl("G", "float", (N,))}
    k = kir.Kernel("k", [comp(A_("G", V("s")), "+=", Float("1.0f"))], (1, 1, 1), ["G"], [], ["s"])
    host = [kir.Let("h", Call("floord", (N, I(2)))),
            kir.Loop("s", I(0), sub(N, I(1)), 3, [
                kir.If(lt(V("s"), V("h")), [kir.Launch("k", (I(1), I(1), I(1)))],
                       [kir.Launch("k", (I(1), I(1), I(1))), kir.Launch("k", (I(1), I(1), I(1)))])])]
    prog = kir.Program("h", arrays, ["N"], {}, host, {"k": k})
    g = np.zeros(10, np.float32)
    r = build(prog).run({"G": g}, {"N": 10})
    want = np.zeros(10, np.float32)
    for s in range(0, 10, 3):
        want[s] += 1 if s < 5 else 2
    np.testing.assert_array_equal(g, want)
    assert r.launches == int(want.sum())


def test_threads_at_different_barriers_diverge():
    body = [kir.If(lt(V("pm_tx"), I(5)), [kir.Barrier(1)], [kir.Barrier(2)])]
    with pytest.raises(EmulatorError, match="divergent control.*#[12].*#[12]"):
        run_g(single_kernel(body, block=(8, 1, 1)))


@pytest.mark.parametrize("order", ORDERS)
def test_out_of_bounds_global_read(order):
    """(g): T[i] = G[i + 1] for i < N reads G[N]."""
    body = [kir.Loop("i", add(mul(V("pm_bx"), I(8)), V("pm_tx")), sub(N, I(1)), 16, [
        comp(A_("T", V("i")), "=", A_("G", add(V("i"), I(1))))])]
    prog = single_kernel(body, grid=(2, 1, 1), ints=["N"])
    with pytest.raises(EmulatorError) as e:
        run_g(prog, order)
    msg = str(e.value)
    assert "out-of-bounds read of global array G: index G[64]" in msg, msg
    assert "G[64] (64 elements)" in msg, msg


def test_out_of_bounds_in_one_dimension_only():
    """A[i][M] stays inside the allocation for i < N-1 but is outside the shape."""
    arrays = {"G": kir.ArrayDecl("G", "float", (N, N)), "T": kir.ArrayDecl("T", "float", (N,))}
    body = [comp(A_("T", V("pm_tx")), "=", A_("G", V("pm_tx"), N))]
    k = kir.Kernel("k", body, (4, 1, 1), ["G", "T"], [], ["N"])
    prog = kir.Program("k", arrays, ["N"], {}, [kir.Launch("k", (I(1), I(1), I(1)))], {"k": k})
    with pytest.raises(EmulatorError, match=r"out-of-bounds read of global array G: index G\[\d\]\[8\]") as e:
        build(prog).run({"G": np.zeros((8, 8), np.float32), "T": np.zeros(8, np.float32)},
                        {"N": 8})
    assert "outside the shape G[8][8] (64 elements)" in str(e.value)   # the shape's count


def test_too_many_barrier_phases_fail_loudly():
    body = [kir.Loop("s", I(0), I(99), 1, [kir.Barrier(0)])]
    prog = single_kernel(body, block=(2, 1, 1))
    mod = build(prog, "emulate", extra_cflags=("-DPM_MAX_PHASES=50",))
    with pytest.raises(EmulatorError, match="barrier phases"):
        mod.run({"G": np.zeros(4, np.float32), "T": np.zeros(4, np.float32)}, {"N": 4})
    run_g(prog)   # the default bound is far away


# ---- helpers of the prelude ---------------------------------------------------------

def test_floord_mod_min_max_match_python():
    """floord/pm_mod with negative numerators, min/max: as isl means them."""
    n = 40
    arrays = {"R": kir.ArrayDecl("R", "int", (I(4), N))}
    x = sub(V("pm_tx"), I(20))
    body = [comp(A_("R", I(0), V("pm_tx")), "=", Call("floord", (x, I(3)))),
            comp(A_("R", I(1), V("pm_tx")), "=", Call("pm_mod", (x, I(7)))),
            comp(A_("R", I(2), V("pm_tx")), "=", Call("min", (x, Call("max", (I(-5), mul(x, I(2))))))),
            comp(A_("R", I(3), V("pm_tx")), "=", Call("floord", (x, I(-4))))]
    k = kir.Kernel("k", body, (n, 1, 1), ["R"], [], ["N"])
    prog = kir.Program("k", arrays, ["N"], {}, [kir.Launch("k", (I(1), I(1), I(1)))], {"k": k})
    r = np.zeros((4, n), np.int32)
    build(prog).run({"R": r}, {"N": n})
    xs = np.arange(n) - 20
    np.testing.assert_array_equal(r[0], xs // 3)
    np.testing.assert_array_equal(r[1], xs % 7)
    np.testing.assert_array_equal(r[2], np.minimum(xs, np.maximum(-5, 2 * xs)))
    np.testing.assert_array_equal(r[3], xs // -4)


def test_min_of_loads_counts_each_load_once():
    body = [comp(A_("T", V("pm_tx")), "=", Call("min", (A_("G", V("pm_tx")), A_("G", I(0)))))]
    r = build(single_kernel(body, block=(8, 1, 1))).run(
        {"G": np.arange(8, dtype=np.float32), "T": np.zeros(8, np.float32)}, {"N": 8})
    assert (r.loads, r.stores) == (16, 8)


# ---- the Python side ----------------------------------------------------------------

def test_input_checks():
    mod = build(elementwise_program(1))
    a, b, c, _ = elementwise_data()
    with pytest.raises(InputError, match="float32"):
        mod.run({"A": a.astype(np.float64), "B": b, "C": c}, {"N": 70, "M": 45}, {"alpha": 1.0})
    with pytest.raises(InputError, match="needs 3150"):
        mod.run({"A": a[:60], "B": b, "C": c}, {"N": 70, "M": 45}, {"alpha": 1.0})
    with pytest.raises(InputError, match="C-contiguous"):
        mod.run({"A": np.asfortranarray(a), "B": b, "C": c}, {"N": 70, "M": 45}, {"alpha": 1.0})
    with pytest.raises(InputError, match="alpha"):
        mod.run({"A": a, "B": b, "C": c}, {"N": 70, "M": 45}, {})


def test_temp_arrays_are_allocated_zeroed():
    """A temp array, written by one kernel and read by the next launch."""
    arrays = {"G": kir.ArrayDecl("G", "float", (N,)),
              "W": kir.ArrayDecl("W", "float", (N,), kind="temp")}
    k1 = kir.Kernel("k1", [comp(A_("W", V("pm_tx")), "+=", mul(A_("G", V("pm_tx")), Float("2.0f")))],
                    (8, 1, 1), ["G", "W"], [], [])
    k2 = kir.Kernel("k2", [comp(A_("G", V("pm_tx")), "=", A_("W", V("pm_tx")))],
                    (8, 1, 1), ["G", "W"], [], [])
    one = (I(1), I(1), I(1))
    prog = kir.Program("t", arrays, ["N"], {}, [kir.Launch("k1", one), kir.Launch("k2", one)],
                       {"k1": k1, "k2": k2})
    g = np.arange(8, dtype=np.float32)
    r = build(prog).run({"G": g}, {"N": 8})
    np.testing.assert_array_equal(g, 2 * np.arange(8, dtype=np.float32))
    assert r.counters == {"k1": {"loads": 16, "stores": 8, "launches": 1},
                          "k2": {"loads": 8, "stores": 8, "launches": 1}}


def test_missing_kernel_int_is_a_compile_error():
    body = [kir.Loop("i", V("pm_tx"), sub(N, I(1)), 8, [comp(A_("T", V("i")), "=", Float("0.0f"))])]
    with pytest.raises(CompileError, match="uses N"):
        print_emulator_c(single_kernel(body, ints=[]))


def test_strided_layout():
    """A column-major declaration (strides (1, N)): linearised with its strides,
    bounds checked per dimension and against the span."""
    arrays = {"G": kir.ArrayDecl("G", "int", (N, M), strides=(I(1), N))}
    body = [comp(A_("G", V("pm_ty"), V("pm_tx")), "=", add(mul(V("pm_ty"), I(100)), V("pm_tx")))]
    k = kir.Kernel("k", body, (5, 4, 1), ["G"], [], ["N"])
    prog = kir.Program("k", arrays, ["N", "M"], {}, [kir.Launch("k", (I(1), I(1), I(1)))], {"k": k})
    g = np.zeros(20, np.int32)
    build(prog).run({"G": g}, {"N": 4, "M": 5})
    np.testing.assert_array_equal(g.reshape(5, 4).T, np.add.outer(np.arange(4) * 100, np.arange(5)))
    wide = kir.Kernel("k", body, (6, 4, 1), ["G"], [], ["N"])    # pm_tx reaches 5 = M
    prog = kir.Program("k", arrays, ["N", "M"], {}, [kir.Launch("k", (I(1), I(1), I(1)))],
                       {"k": wide})
    with pytest.raises(EmulatorError, match=r"index G\[\d\]\[5\]"):
        build(prog).run({"G": np.zeros(20, np.int32)}, {"N": 4, "M": 5})


def test_build_is_cached():
    m1 = build(elementwise_program(2))
    m2 = build(elementwise_program(2))
    assert m1.path == m2.path and m1.path.exists()


def test_kernel_ints_must_fit_int32():
    """Kernel ints are passed as int32 (as the GPU runtime does): a bigger value fails."""
    arrays = {"T": kir.ArrayDecl("T", "float", (I(1),))}
    k = kir.Kernel("k", [comp(A_("T", I(0)), "=", Cast("float", N))], (1, 1, 1), ["T"], [], ["N"])
    prog = kir.Program("k", arrays, ["N"], {}, [kir.Launch("k", (I(1), I(1), I(1)))], {"k": k})
    t = np.zeros(1, np.float32)
    build(prog).run({"T": t}, {"N": 12})
    assert t[0] == 12
    with pytest.raises(EmulatorError, match="N = 8589934592 does not fit in a 32-bit int"):
        build(prog).run({"T": t}, {"N": 2**33})


def test_emulator_speed():
    """A barrier kernel with 256 threads x 256 blocks (65536 threads, 2 phases each)
    runs well under the 'tens of thousands of threads per second' bound."""
    n = 256 * 256
    arrays = {"G": kir.ArrayDecl("G", "float", (N,)), "T": kir.ArrayDecl("T", "float", (N,))}
    gi = add(mul(V("pm_bx"), I(256)), V("pm_tx"))
    body = [comp(A_("S", V("pm_tx")), "=", A_("G", gi)), kir.Barrier(0),
            comp(A_("T", gi), "=", A_("S", Binary("-", I(255), V("pm_tx"))))]
    k = kir.Kernel("rev", body, (256, 1, 1), ["G", "T"], [], [],
                   shared=[kir.SharedDecl("S", "float", (256,))])
    prog = kir.Program("rev", arrays, ["N"], {}, [kir.Launch("rev", (I(256), I(1), I(1)))],
                       {"rev": k})
    g = np.arange(n, dtype=np.float32)
    t = np.zeros(n, np.float32)
    mod = build(prog)
    t0 = cpu_seconds()                      # CPU time: load does not trip the cap
    mod.run({"G": g, "T": t}, {"N": n})
    np.testing.assert_array_equal(t, g.reshape(256, 256)[:, ::-1].ravel())
    assert cpu_seconds() - t0 < 5.0


# ---- the printed C ------------------------------------------------------------------

PROGRAMS = {
    "elementwise": lambda: elementwise_program(),
    "stencil": lambda: stencil_program(),
    "nobarrier": lambda: stencil_program(barrier=False),
    "divergent": lambda: single_kernel([kir.If(lt(V("pm_tx"), I(5)), [kir.Barrier(0)])]),
    "unrolled": lambda: single_kernel([kir.Loop("i", V("pm_tx"), I(7), 8, [
        comp(A_("T", V("i")), "=", Call("max", (A_("G", V("i")), Float("0.0f"))))], unroll=True)]),
}


@pytest.mark.parametrize("mode", ["emulate", "openmp"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_emulator_c_compiles_cleanly_with_wall(name, mode, tmp_path):
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc) is None:
        pytest.skip("no C compiler")
    if mode == "openmp":
        probe = tmp_path / "probe.c"
        probe.write_text("int pm_probe(void) { return 0; }\n")
        if subprocess.run([cc, "-fopenmp", "-c", "-o", str(tmp_path / "probe.o"), str(probe)],
                          capture_output=True).returncode != 0:
            pytest.skip("the C compiler has no OpenMP")
    src = tmp_path / "emu.c"
    src.write_text(print_emulator_c(PROGRAMS[name](), mode))
    flags = ["-std=gnu11", "-Wall", "-O1", "-shared", "-fPIC"] + (["-fopenmp"] if mode == "openmp" else [])
    p = subprocess.run([cc, *flags, "-o", str(tmp_path / "emu.so"), str(src), "-lm"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "warning" not in p.stderr, p.stderr


def test_c_like_printer_forms():
    """The base printer: linearised globals, multi-dimensional shared, pm_ macros,
    unroll pragma, Let, 2-space indentation."""
    prog = stencil_program()
    k = prog.kernels["stencil"]
    body = [kir.Loop("c", V("pm_tx"), I(31), 16, [
        kir.Let("i", Call("floord", (sub(V("c"), I(3)), I(2)))),
        comp(A_("Out", V("i"), V("c")), "=", Call("min", (A_("S", V("c"), I(1)), A_("In", I(0), V("c")))))],
        unroll=True), kir.Barrier(0)]
    text = "\n".join(CLikePrinter(prog, k).print_body(body, 1))
    assert text == (
        "  #pragma unroll\n"
        "  for (int c = pm_tx; c <= 31; c += 16) {\n"
        "    const int i = pm_floord(c - 3, 2);\n"
        "    Out[i * M + c] = pm_min(S[c][1], In[c]);\n"
        "  }\n"
        "  __syncthreads();")


def test_small_runs_build_at_O0_and_large_ones_at_O1():
    """The build level follows the run's work (``QUICK_BUILD_INSTANCES``): the
    quicker -O0 build for small runs, -O1 where the run time dominates; both right."""
    from polymagic.compiler import compile_source
    from polymagic.options import Options
    from polymagic.runtime import emulator, run as R
    assert "-O0" in emulator.compile_flags("emulate", quick=True)
    assert "-O1" in emulator.compile_flags("emulate")
    from pathlib import Path
    src = (Path(__file__).resolve().parent.parent / "examples" / "gemm.c").read_text()
    for n, quick in ((8, True), (128, False)):
        opts = Options(sizes={"N": n}, target="emulator", tile=(16, 16, 16))
        compiled = compile_source(src, opts)
        assert R.run(compiled, opts).ok
        keys = [k for k in R._MODULES if k[0] == "emu-variant" and k[-1] == quick]
        assert keys, (n, quick)
