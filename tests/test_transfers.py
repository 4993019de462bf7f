"""Transfers from linear memory access descriptors (seed 002 §4): the worked examples
of §4.3, plans for NumPy views, and whole runs on packed device buffers."""
from __future__ import annotations

import itertools
import pathlib

import numpy as np
import pytest

from polymagic.transfers.lmad import (CSLMAD, analyse_group, is_rcslmad, is_restricted,
                                      overlap_components)
from polymagic.transfers.plan import (Box, HostArray, Reference, plan_transfers,
                                      verify_plan)

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def check_bijection(members, g):
    """Every member's addresses map into [0, size), same host address <-> same slot."""
    seen_h, seen_d = {}, {}
    for m, f in enumerate(members):
        for t in itertools.product(*(range(u) for u in f.bounds)):
            h, d = f.at(t), g.device_offset(m, t)
            assert 0 <= d < g.size, (m, t, d, g.size)
            assert seen_h.setdefault(h, d) == d, f"host {h} -> slots {seen_h[h]} and {d}"
            assert seen_d.setdefault(d, h) == h, f"slot {d} <- hosts {seen_d[d]} and {h}"
    return seen_h


# ---- §4.3 worked examples ------------------------------------------------------------

def test_single_1d_cslmad_figure_4():
    # f(i) = 3i + 2 over [0, 5): locations 2, 5, 8, 11, 14 -> 0 .. 4
    f = CSLMAD(2, (3,), (5,))
    g = analyse_group([f])
    assert g.case == "single-1d" and g.size == 5
    assert [g.device_offset(0, (i,)) for i in range(5)] == [0, 1, 2, 3, 4]
    assert list(f.addresses()) == [2, 5, 8, 11, 14]


def test_interleaved_pair_figure_5_one_interval_of_10():
    # 2i and 2i + 1 over [0, 5): θ_A = [0, 8], θ_B = [1, 9] overlap, the sets are disjoint
    a, b = CSLMAD(0, (2,), (5,)), CSLMAD(1, (2,), (5,))
    assert a.interval() == (0, 8) and b.interval() == (1, 9)
    assert overlap_components([a.interval(), b.interval()]) == [[0, 1]]
    g = analyse_group([a, b])
    assert g.case == "interleaved-1d" and g.size == 10 and g.q == 2
    assert sorted(check_bijection([a, b], g)) == list(range(10))     # one interval [0, 9]


def test_three_cslmads_stride_4_figure_7():
    # s = 4, b_B = b_A + 5, b_C = b_A + 15, u = 5: v = (0, 1, 3), r = (0, 1, 3)
    fs = [CSLMAD(100, (4,), (5,)), CSLMAD(105, (4,), (5,)), CSLMAD(115, (4,), (5,))]
    g = analyse_group(fs)
    q, u, vn = 3, 5, 3
    assert g.case == "interleaved-1d" and g.q == q and g.size == q * (u + vn) == 24
    # g_j(i) = q·(i + v_j) + p_j with p_j the rank of r_j
    for m, (v, p) in enumerate([(0, 0), (1, 1), (3, 2)]):
        assert [g.device_offset(m, (i,)) for i in range(5)] == [q * (i + v) + p for i in range(5)]
    check_bijection(fs, g)


def test_rcslmad_no_overlap_test():
    # Figure 8: A[i][j] of double A[M][N] -> N·i + j; unique iff u2 <= N (span <= stride)
    assert is_rcslmad(CSLMAD(0, (10, 1), (4, 10)))
    assert not is_rcslmad(CSLMAD(0, (10, 1), (4, 12)))      # span of j (12) > stride of i
    assert not is_restricted((10, 1), (4, 11))
    g = analyse_group([CSLMAD(0, (10, 1), (4, 12))])
    assert g.case == "bounding-interval" and "no-overlap" in g.notes[0].text
    # Theorem 1 on an RCSLMAD: addresses increase in lexicographic order
    f = CSLMAD(7, (100, 9, 2), (3, 11, 4))
    assert is_rcslmad(f)
    addrs = [f.at(t) for t in itertools.product(range(3), range(11), range(4))]
    assert addrs == sorted(addrs) and len(set(addrs)) == len(addrs)
    g = analyse_group([f])
    assert g.case == "rcslmad" and g.size == 3 * 11 * 4
    check_bijection([f], g)


def test_paper_counterexample_to_constraint_14_is_not_packed_disjointly():
    # 16i + 5j and 16i + 5j + 1 over 8 x 4: f1(i+1, 0) = f2(i, 3), they overlap
    f1, f2 = CSLMAD(0, (16, 5), (8, 4)), CSLMAD(1, (16, 5), (8, 4))
    assert f1.at((1, 0)) == f2.at((0, 3))
    g = analyse_group([f1, f2])
    assert g.case == "bounding-interval"
    check_bijection([f1, f2], g)


def test_theorem_2_first_case():
    # interleaved RCSLMADs whose bases differ by less than the smallest stride
    fs = [CSLMAD(b, (40, 3), (5, 10)) for b in (0, 1, 2)]
    g = analyse_group(fs)
    assert g.case == "rcslmad-group" and g.size == 3 * 5 * 10
    check_bijection(fs, g)


def test_stencil_group_second_case_ilp():
    # jacobi-2d's five references of A[N][M] over the interior: the ILP of §4.3.4
    M, N = 20, 10
    fs = [CSLMAD(b, (M, 1), (N - 2, N - 2)) for b in (M + 1, M, M + 2, 2 * M + 1, 1)]
    g = analyse_group(fs)
    assert g.case == "rcslmad-group" and g.periods == (N, N) and g.size == N * N
    check_bijection(fs, g)


def test_negative_strides_and_reflection():
    f = CSLMAD(50, (-5, 1), (4, 3))
    g = analyse_group([f])
    assert g.case == "rcslmad" and g.size == 12
    check_bijection([f], g)
    r = g.reflected(0)
    assert r.affine(0)[1][0] > 0
    check_bijection([f], r)


def test_overlap_components():
    iv = [(0, 9), (20, 30), (5, 12), (31, 40), (13, 19)]
    assert overlap_components(iv) == [[0, 2], [4], [1], [3]]
    assert overlap_components(iv, links=[(1, 3)]) == [[0, 2], [4], [1, 3]]


# ---- plans for NumPy arrays -------------------------------------------------------------

def whole(name, a, write=False):
    return Reference(name, Box((0,) * a.ndim, tuple(n - 1 for n in a.shape)), write)


def plan_of(arrays: dict, refs):
    hosts = {n: HostArray.of(n, a) for n, a in arrays.items()}
    plan = plan_transfers(refs, hosts)
    verify_plan(plan, hosts, refs)
    return plan


def test_view_with_stride_3_moves_5_elements():
    x = np.zeros(40)
    a = x[2::3]                                   # f(i) = 3i + 2 in elements of x
    plan = plan_of({"A": a}, [Reference("A", Box((0,), (4,)), True)])
    assert plan.components[0].case == "single-1d" and plan.bytes_h2d == 5 * 8
    assert plan.bytes_d2h == 5 * 8 and plan.layouts["A"].strides == (1,)


def test_two_interleaved_views_share_one_buffer_of_10():
    x = np.zeros(10, np.float32)
    plan = plan_of({"A": x[0::2], "B": x[1::2]}, [whole("A", x[0::2]), whole("B", x[1::2], True)])
    assert len(plan.components) == 1 and plan.components[0].size == 10
    la, lb = plan.layouts["A"], plan.layouts["B"]
    assert la.strides == lb.strides == (2,) and {la.offset, lb.offset} == {0, 1}
    assert plan.bytes_d2h == 9 * 4               # B's slots 1, 3, ..., 9


def test_figure_7_with_views():
    x = np.zeros(64)
    arrays = {"A": x[0::4], "B": x[5::4], "C": x[15::4]}
    refs = [Reference(n, Box((0,), (4,))) for n in arrays]
    plan = plan_of(arrays, refs)
    assert len(plan.components) == 1 and plan.components[0].size == 24
    assert plan.components[0].case == "interleaved-1d"


@pytest.mark.parametrize("make", [
    lambda b: b[3::2, 1::3],                      # steps and an offset
    lambda b: b[::-2, ::3],                       # negative stride
    lambda b: b[2:, 1:].T[::-1],                  # transpose, reversed
    lambda b: np.asfortranarray(b[:9, :7]),       # Fortran order
])
def test_views_pack_densely(make):
    big = np.arange(30 * 40, dtype=np.float64).reshape(30, 40)
    a = make(big)
    plan = plan_of({"A": a}, [whole("A", a, True)])
    lay = plan.layouts["A"]
    assert plan.bytes_h2d == a.nbytes and all(s >= 0 for s in lay.strides)
    # the layout is a permutation of the dense box: host order kept
    order = np.argsort([-abs(s) for s in a.strides])
    assert [lay.strides[k] for k in order] == sorted(lay.strides, reverse=True)


def test_pack_unpack_roundtrip_with_guards():
    from polymagic.transfers.pack import allocate, pack, unpack
    big = np.arange(12 * 10, dtype=np.float32).reshape(12, 10)
    a = big[::-2, 1::2]
    refs = [Reference("A", Box((1, 0), (4, 3)), True), Reference("A", Box((0, 1), (3, 4)))]
    plan = plan_of({"A": a}, refs)
    st = allocate(plan, {"A": 100})
    pack(plan, {"A": a}, st)
    assert st[0].guards_intact()
    out = np.zeros_like(a)
    unpack(plan, st, {"A": out})
    np.testing.assert_array_equal(out[1:5, 0:4], a[1:5, 0:4])
    assert (out[0] == 0).all()                    # only written regions come back


def test_stencil_references_of_a_subgrid():
    big = np.zeros((50, 60))
    a = big[5:25, 3:23]
    n = 20
    refs = [Reference("A", Box((1 + di, 1 + dj), (n - 2 + di, n - 2 + dj)))
            for di, dj in ((0, 0), (0, -1), (0, 1), (1, 0), (-1, 0))]
    refs.append(Reference("A", Box((1, 1), (n - 2, n - 2)), True))
    plan = plan_of({"A": a}, refs)
    c = plan.components[0]
    assert c.size <= n * n and plan.bytes_h2d < HostArray.of("A", a).span_bytes()
    assert plan.bytes_d2h < n * n * 8


# ---- whole runs on packed buffers (emulator) ---------------------------------------

from polymagic.options import Options  # noqa: E402
from polymagic.compiler import compile_source  # noqa: E402
from polymagic.runtime.run import run  # noqa: E402


def _views(name, rng, dtype):
    """Strided and transposed views inside larger buffers (offsets, steps, negative
    strides, Fortran order)."""
    def base(*shape):
        return rng.random(shape).astype(dtype)

    def strided(m, n):
        return base(2 * m + 3, 3 * n + 1)[3::2, 1::3]

    def transposed(m, n):
        return base(n + 2, m + 4)[1:n + 1, 2:m + 2].T

    def vec(n, k):
        return base(3 * n + 1)[1::3] if k else base(2 * n)[::-2]
    if name == "gemm":
        N = 21
        return {"C": strided(N, N), "A": transposed(N, N),
                "B": np.asfortranarray(base(N, N + 3))[:, 3:][:, ::-1]}, {"N": N}
    if name == "jacobi-2d":
        n = 18
        return {"A": strided(n, n), "B": transposed(n, n)}, {"tsteps": 3, "n": n}
    m, n = 19, 23
    return {"A": transposed(m, n), "x": vec(n, 1), "y": vec(n, 0),
            "tmp": base(2 * m)[::2]}, {"m": m, "n": n}


@pytest.mark.parametrize("name", ["gemm", "jacobi-2d", "atax"])
@pytest.mark.parametrize("target", ["emulator", "openmp"])
def test_views_match_contiguous_copies_and_move_fewer_bytes(name, target):
    rng = np.random.default_rng(1)
    src = (EXAMPLES / f"{name}.c").read_text()
    c = compile_source(src, Options(target=target))
    dtype = c.scop.arrays[c.scop.array_params[0].name].dtype
    views, sizes = _views(name, rng, dtype)
    assert not any(v.flags.c_contiguous for v in views.values())
    o = Options(target=target, sizes=sizes)
    copies = {k: np.ascontiguousarray(v) for k, v in views.items()}
    r1 = run(c, o, views)
    r2 = run(c, o, copies)
    assert r1.ok and r2.ok, (r1.message, r2.message)
    for k in views:
        np.testing.assert_array_equal(views[k], copies[k])
    if target == "openmp":      # the CPU target (issue 21) runs in place: no transfers
        assert r1.bytes_h2d == 0 and not r1.transfers
        return
    t = r1.transfers
    assert r1.bytes_h2d == t["bytes_h2d"] > 0 and r1.bytes_d2h > 0
    assert r1.bytes_h2d < t["whole_h2d"] and r1.bytes_d2h < t["whole_d2h"]
    assert r1.bytes_h2d <= r2.bytes_h2d <= sum(v.nbytes for v in copies.values())
    assert "transfers: H2D" in r1.message


def test_emulator_checks_the_remapped_addressing(monkeypatch):
    """The emulator runs on the packed buffers: a wrong layout is caught."""
    from polymagic.errors import EmulatorError
    from polymagic.transfers import session as S
    src = (EXAMPLES / "gemm.c").read_text()
    o = Options(target="emulator", sizes={"N": 9}, shared="none")
    c = compile_source(src, o)
    real = S.plan_session

    def broken(*a, **k):
        ses = real(*a, **k)
        lay = ses.plan.layouts["C"]
        lay.offset += 3                       # shift C by three slots
        return ses
    monkeypatch.setattr(S, "plan_session", broken)
    try:
        r = run(c, o, {})
    except EmulatorError as e:
        assert "outside the packed elements" in str(e) or "out-of-bounds" in str(e)
    else:
        assert not r.ok


@pytest.mark.parametrize("name,sizes,tile", [
    ("gemm", {"N": 40}, (8, 8)),
    ("jacobi-2d", {"tsteps": 2, "n": 30}, (8, 8)),
    ("atax", {"m": 37, "n": 29}, (8,)),
])
def test_device_memory_limit_runs_in_tiles(name, sizes, tile):
    src = (EXAMPLES / f"{name}.c").read_text()
    big = Options(target="emulator", sizes=sizes, tile=tile)
    c = compile_source(src, big)
    r0 = run(c, big)
    limit = r0.bytes_h2d // 3
    o = big.with_(device_mem=limit)
    c2 = compile_source(src, o)
    r = run(c2, o)
    assert r.ok, r.message
    assert r.transfers["mode"] == "tiled" and r.transfers["tiles"] > r.launches
    assert "tile(s)" in r.message


def test_device_memory_too_small_for_one_block():
    from polymagic.errors import DeviceError
    src = (EXAMPLES / "gemm.c").read_text()
    o = Options(target="emulator", sizes={"N": 40}, device_mem=64)
    with pytest.raises(DeviceError, match="device-mem"):
        run(compile_source(src, o), o)


# ---- the GPU runner's packed and tiled paths, against a stand-in CuPy -----------------

def _fake_cupy(launches: list):
    """CuPy's API surface as GpuModule uses it, on host memory; the kernel is the
    scale kernel of test_runtime (row = blockIdx.y, column = 32·blockIdx.x +
    threadIdx.x), reading and writing through the pointer and stride arguments."""
    import ctypes
    import types
    from types import SimpleNamespace

    class Dev(np.ndarray):
        def get(self, stream=None, out=None, blocking=True):
            out[...] = self
            return out

        def set(self, arr, stream=None):
            self[...] = arr

        @property
        def data(self):
            return SimpleNamespace(ptr=self.__array_interface__["data"][0])

    def cell(ptr, off):
        return (ctypes.c_float * 1).from_address(int(ptr) + 4 * int(off))

    def kernel(names, grid, block, args):
        v = dict(zip(names, args))
        a, b, alpha, n = v["A"], v["B"], v["alpha"], int(v["N"])
        sa = (v.get("pm_s_A_0", n), v.get("pm_s_A_1", 1))
        sb = (v.get("pm_s_B_0", n), v.get("pm_s_B_1", 1))
        off = (v.get("pm_box", 0), v.get("pm_boy", 0))
        for by in range(grid[1]):
            for bx in range(grid[0]):
                for tx in range(block[0]):
                    r, c = by + off[1], 32 * (bx + off[0]) + tx
                    if c < n:
                        x = cell(a, r * sa[0] + c * sa[1])[0]
                        cell(b, r * sb[0] + c * sb[1])[0] = np.float32(alpha) * np.float32(x) + 1
        launches.append((grid, names))

    class RawModule:
        def __init__(self, code, options=(), **kw):
            self.code = code

        def get_function(self, name):
            import re
            m = re.search(rf"{name}\(([^)]*)\)", self.code)
            names = [p.split()[-1].lstrip("*") for p in m.group(1).split(",") if p.strip()] \
                if m else []
            return lambda grid, block, args: kernel(names, grid, block, args)

    class Ev:
        def record(self, stream=None): pass
        def synchronize(self): pass

    class Stream:
        def __init__(self, non_blocking=False): pass
        def __enter__(self): return self
        def __exit__(self, *a): return False

    class Device:
        id = 0
        def synchronize(self): pass

    cp = types.ModuleType("cupy")
    cp.RawModule = RawModule
    cp.uint8 = np.uint8
    cp.empty = lambda shape, dtype: np.empty(shape, dtype).view(Dev)
    cp.zeros = lambda shape, dtype: np.zeros(shape, dtype).view(Dev)
    cp.cuda = SimpleNamespace(Event=Ev, Device=Device, Stream=Stream,
                              get_elapsed_time=lambda a, b: 1.0,
                              runtime=SimpleNamespace(getDeviceCount=lambda: 1,
                                                      getDeviceProperties=lambda i: {"name": b"Fake"}))
    return cp


@pytest.mark.parametrize("device_mem,transposed", [(None, False), (None, True), (3000, False),
                                                   (700, True)])
def test_gpu_runner_packed_and_tiled_on_a_stand_in_cupy(monkeypatch, device_mem, transposed):
    import sys
    from test_runtime import stand_in_compiled
    from polymagic.runtime import gpu
    launches: list = []
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(launches))
    monkeypatch.setattr(gpu, "_AVAILABLE", None)
    monkeypatch.setattr(gpu, "_RAW_MODULES", {})
    m = gpu.GpuModule(stand_in_compiled())
    rng = np.random.default_rng(0)
    n = 20
    a = rng.random((2 * n, 3 * n)).astype(np.float32)[::2, 1::3]      # a strided view
    if transposed:
        a = rng.random((n + 3, n)).astype(np.float32)[3:].T
    b = np.zeros((n, n), np.float32)
    res = m.run({"B": b}, {"N": n}, {"alpha": 2.0}, sources={"A": a, "B": b},
                device_mem=device_mem)
    np.testing.assert_allclose(b, 2 * a + 1, rtol=1e-6)
    t = res.transfers
    assert t.bytes_h2d >= 2 * n * n * 4 and t.whole_h2d >= t.bytes_h2d
    if device_mem is None:
        assert t.mode == "session" and len(launches) == 1
        assert ("pm_s_A_1" in launches[0][1]) == transposed   # strides as ints when needed
        assert "pm_s_B_1" not in launches[0][1]
    else:
        assert t.mode == "tiled" and t.tiles == len(launches) > 1
        assert all("pm_boy" in g[1] and "pm_s_B_0" in g[1] for g in launches)
        assert sum(gr[1] for gr, _ in launches) == n         # the tiles cover every row


def test_random_views_and_boxes_plan_and_roundtrip():
    """Seeded random views (steps, flips, offsets, transposes; interleaved pairs) and
    reference boxes: every plan is a bijection into its buffers with non-negative
    strides, and packing then unpacking returns the written boxes."""
    import random
    from polymagic.transfers.pack import allocate, pack, unpack
    rng = random.Random(7)
    for trial in range(300):
        nd = rng.choice([1, 2, 3])
        shape = [rng.randint(1, 6) for _ in range(nd)]
        steps = [rng.choice([1, 1, 2, 3, -1, -2]) for _ in range(nd)]
        bshape = [abs(s) * n + rng.randint(0, 3) for s, n in zip(steps, shape)]
        base = np.arange(float(np.prod(bshape))).reshape(bshape)
        sl = []
        for s, n, bn in zip(steps, shape, bshape):
            if s > 0:
                start = rng.randint(0, bn - s * (n - 1) - 1)
                sl.append(slice(start, start + s * (n - 1) + 1, s))
            else:
                start = rng.randint(-s * (n - 1), bn - 1)
                stop = start + s * (n - 1) - 1
                sl.append(slice(start, stop if stop >= 0 else None, s))
        perm = list(range(nd))
        rng.shuffle(perm)
        v = base[tuple(sl)].transpose(perm)
        arrays = {"A": v}
        refs = []
        for _ in range(rng.randint(1, 5)):
            lo = [rng.randint(0, n - 1) for n in v.shape]
            hi = [rng.randint(l, n - 1) for l, n in zip(lo, v.shape)]
            refs.append(Reference("A", Box(tuple(lo), tuple(hi)), rng.random() < 0.5))
        if nd == 1 and steps[0] > 1:                 # an interleaved second view
            off = rng.randint(1, steps[0] - 1)
            w = base[off::steps[0]][:shape[0]]
            if len(w):
                arrays["B"] = w
                refs.append(Reference("B", Box((0,), (len(w) - 1,)), True))
        hosts = {n: HostArray.of(n, a) for n, a in arrays.items()}
        plan = plan_transfers(refs, hosts)
        verify_plan(plan, hosts, refs)
        assert all(s >= 0 for lay in plan.layouts.values() for s in lay.strides)
        st = allocate(plan, {n: 10_000 for n in arrays})
        pack(plan, arrays, st)
        out = {n: np.full(a.shape, -1.0) for n, a in arrays.items()}
        unpack(plan, st, out)
        for r in refs:
            if r.write:
                np.testing.assert_array_equal(out[r.array][r.box.slices],
                                              arrays[r.array][r.box.slices])
        assert all(s.guards_intact() for s in st)
