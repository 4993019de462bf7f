"""Pictures (report/plots.py) and the data behind them (report/explore.py, islnp.py).

The data are checked exactly where the answer is known (gemm's blocks and threads,
its buffers at one tile, seed 000 Figure 1's buffers); every picture is drawn for
every example kernel without error.
"""
from __future__ import annotations

from pathlib import Path

import islpy as isl
import numpy as np
import pytest

from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.report import explore as E
from polymagic.report import plots as P
from polymagic.report.islnp import eval_pw_multi_aff, set_points

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.c"))
GEMM = (ROOT / "examples" / "gemm.c").read_text()
PNG = b"\x89PNG"


def _isl_points(s: isl.Set) -> np.ndarray:
    rows = []
    n = s.dim(isl.dim_type.set)
    s.foreach_point(lambda p: rows.append(
        [p.get_coordinate_val(isl.dim_type.set, d).to_python() for d in range(n)]))
    a = np.array(rows, dtype=np.int64).reshape(len(rows), n)
    return a[np.lexsort(a.T[::-1])] if len(a) else a


@pytest.mark.parametrize("text", [
    "{ [i, j] : 0 <= i < 9 and 0 <= j <= i }",
    "{ [i, j] : exists k : 0 <= k < 7 and i = 3k + 1 and 0 <= j <= i }",
    "{ [i, j] : 0 <= i < 20 and 0 <= j < 20 and (i + j) mod 3 = 0 and (i >= 5 or j < 3) }",
    "{ [i, j, a, b] : 0 <= i < 16 and 0 <= j < 16 and a = i mod 4 and b = floor(j / 8) }",
    "{ [i] : 0 <= i < 5 or 10 <= i < 12 }",
    "{ [i, j] : 1 = 0 }",
])
def test_numpy_enumeration_equals_isl(text):
    s = isl.Set(text)
    assert np.array_equal(set_points(s), _isl_points(s))


def test_quasi_affine_functions_on_grids():
    m = isl.Map("{ [i, j] -> [a, b] : 0 <= i < 40 and 0 <= j < 40 and a = i mod 8 and "
                "b = floor((j + 3) / 32) }")
    X = np.array([[i, j] for i in range(40) for j in range(40)])
    v, ok = eval_pw_multi_aff(m.lexmin_pw_multi_aff(), X)
    assert ok.all()
    assert np.array_equal(v[:, 0], X[:, 0] % 8) and np.array_equal(v[:, 1], (X[:, 1] + 3) // 32)


# ---- iteration space ------------------------------------------------------------------

@pytest.mark.parametrize("tile,block", [((32, 32), (32, 8)), ((16, 8), (8, 4))])
def test_gemm_points_have_the_mapping_blocks_and_threads(tile, block):
    o = Options(sizes={"N": 200}, tile=tile, tile_levels=(tile,), block=block)
    c = compile_source(GEMM, o)
    ip = E.iteration_points(c, o)
    assert ip.statement == "S0" and ip.loops == ("i", "j") and ip.sizes == {"N": 64}
    assert len(ip.coords) == 64 * 64
    i, j = ip.coords[:, 0], ip.coords[:, 1]
    # j -> block.x/thread.x, i -> block.y/thread.y, cyclic inside a tile
    assert np.array_equal(ip.blocks[:, 0], j // tile[1])
    assert np.array_equal(ip.blocks[:, 1], i // tile[0])
    assert np.array_equal(ip.threads[:, 0], (j % tile[1]) % block[0])
    assert np.array_equal(ip.threads[:, 1], (i % tile[0]) % block[1])
    assert not ip.blocks[:, 2].any() and not ip.threads[:, 2].any()


def test_projection_on_chosen_loops_and_errors():
    o = Options(sizes={"N": 40})
    c = compile_source(GEMM, o)
    ip = E.iteration_points(c, o, loops=("i", "k"), cap=40)
    assert ip.loops == ("i", "k") and len(ip.coords) == 40 * 40
    with pytest.raises(KeyError):
        E.iteration_points(c, o, loops=("i", "q"))
    with pytest.raises(KeyError):
        E.iteration_points(c, o, statement="S7")


def test_picture_sizes_cap_and_context():
    c = compile_source((ROOT / "examples" / "jacobi-2d.c").read_text(),
                       Options(sizes={"n": 500, "tsteps": 2}))
    assert E.picture_sizes(c.scop, {"n": 500, "tsteps": 2}) == {"tsteps": 2, "n": 64}
    assert E.picture_sizes(c.scop, {}, cap=10) == {"tsteps": 10, "n": 10}


# ---- one tile's footprint -----------------------------------------------------------------

def _box(pts):
    return tuple(pts.min(axis=0)), tuple(pts.max(axis=0)), len(pts)


def test_gemm_tile_footprint_is_the_buffers():
    # registers off: with them C lives in registers only and has no shared buffer
    o = Options(sizes={"N": 64}, registers=False)
    c = compile_source(GEMM, o)
    fp = E.tile_footprint(c, o, block=(1, 0, 0))        # bx = 1: columns 32..63
    arr = {a.array: a for a in fp.arrays}
    (bc,), (ba,), (bb,) = arr["C"].buffers, arr["A"].buffers, arr["B"].buffers
    assert (bc.name, bc.lower, bc.extents, bc.level) == ("sh0_C", (0, 32), (32, 32), "block")
    assert _box(bc.copy_in) == ((0, 32), (31, 63), 1024)
    assert _box(bc.copy_out) == ((0, 32), (31, 63), 1024)
    # the first k sub-tile of A and B (sub-tile 16)
    assert (ba.lower, ba.extents, ba.level) == ((0, 0), (32, 16), "sub-tile")
    assert _box(ba.copy_in) == ((0, 0), (31, 15), 512) and not len(ba.copy_out)
    assert (bb.lower, bb.extents) == ((0, 32), (16, 32))
    assert _box(bb.copy_in) == ((0, 32), (15, 63), 512)
    # the block reads rows 0..31 of A over every k, its first sub-tile 16 columns
    assert _box(arr["A"].touched) == ((0, 0), (31, 63), 2048)
    assert _box(arr["A"].current) == ((0, 0), (31, 15), 512)
    assert _box(arr["C"].written) == ((0, 32), (31, 63), 1024)


def test_no_buffers_with_shared_none():
    o = Options(sizes={"N": 64}, shared="none")
    fp = E.tile_footprint(compile_source(GEMM, o), o)
    assert all(not a.buffers for a in fp.arrays)


def test_figure1_merged_buffers():
    from polymagic.frontend import parse
    from polymagic.memory.scratchpad import figure1_example
    arrays = {a.array: a for a in E.program_data_spaces(parse(figure1_example()))}
    assert (arrays["A"].lower, arrays["A"].extents) == ((10, 11), (19, 10))
    assert (arrays["B"].lower, arrays["B"].extents) == ((10, 11), (19, 24))
    a_parts = sorted(arrays["A"].partitions, key=lambda p: len(p.refs))
    assert [p.beneficial for p in a_parts] == [False, True]
    assert len(a_parts[1].copy_out) == 25 and len(a_parts[1].copy_in) == 50


def test_mapping_and_memory_texts():
    o = Options(sizes={"N": 64}, shared_mem=2048, tile=(32, 32))
    c = compile_source(GEMM, o)
    text = E.mapping_text(c, o)
    assert "i: tile 32 -> blockIdx.y" in text and "j: tile 32 -> blockIdx.x" in text
    mem = E.memory_text(c, o)
    assert "M_up = 2 KB" in mem and "dropped" in mem


# ---- every picture, every example ---------------------------------------------------------

@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_pictures_of_every_example(path):
    o = Options(sizes={})
    c = compile_source(path.read_text(), o)
    for fig in (P.iteration_space(c, o, cap=20), P.footprint(c, o, cap=20)):
        assert isinstance(fig, P.Figure)
        assert P.to_png(fig, dpi=30).startswith(PNG)


def test_figure_renders_in_ipython():
    assert P.packing()._repr_png_().startswith(PNG)


def test_tile_search_picture():
    from polymagic.tiles.search import search_tile_sizes
    o = Options(sizes={"N": 128})
    c = compile_source(GEMM, o)
    r = search_tile_sizes(c.scop, c.schedule, o.compile, workers=1)
    fig = P.tile_search(r)
    assert P.to_png(fig, dpi=30).startswith(PNG)
    assert fig.axes[0].get_xscale() == "log"
    fig1 = P.tile_search(r, dims=(2,))
    assert P.to_png(fig1, dpi=30).startswith(PNG)


def test_times_and_traffic_pictures():
    from polymagic.runtime.run import RunReport
    runs = {"none": RunReport(True, "emulator", "", True, cpu_s=0.01, device_s=0.5,
                              counters={"loads": 1000, "stores": 10}),
            "auto": RunReport(True, "emulator", "", True, cpu_s=0.01, device_s=0.3,
                              counters={"loads": 100, "stores": 10})}
    for fig in (P.times(runs), P.memory_traffic(runs), P.times(runs["none"]),
                P.memory_traffic({"gpu": RunReport(True, "gpu", "", True)})):
        assert P.to_png(fig, dpi=30).startswith(PNG)


def test_packing_pictures():
    fig = P.packing()
    assert "interleaved-1d" in fig.axes[0].get_title()
    src = """
    void scale(int N, int M, float A[N][M], float B[N][M]) {
      for (int i = 0; i < N; i++)
        for (int j = 0; j < M; j++)
          B[i][j] = 2.0f * A[i][j];
    }"""
    c = compile_source(src, Options())
    base = np.zeros((12, 30), np.float32)
    arrays = {"A": base[::2, 1::3], "B": np.zeros((6, 10), np.float32)}
    plan = E.transfer_plan(c, arrays, {"N": 6, "M": 10})
    fig = P.transfer_packing(plan, arrays)
    assert P.to_png(fig, dpi=30).startswith(PNG)
    assert any("A" in ax.get_title() for ax in fig.axes)


# ---- seed 001: C(t), I/O/G, ρ and the drift; seed 003: block and thread schedules ---------

SOR = """void sor(int n, double A[n]) {
  for (int i = 1; i < n - 1; i++)
    A[i] = (A[i - 1] + A[i + 1]) / 2.0;
}"""


def test_localisation_of_1d_sor_is_seed_001_example_1():
    """Seed 001 §5, Example 1, from the localisation stage: C(i) = {i-1, i, i+1},
    ρ(x, i) = x - i + 1, drift -1."""
    from polymagic.frontend import parse
    from polymagic.memory.localise import localise, time_prefix
    scop = parse(SOR)
    loc = E.localisation(localise(scop, time_prefix(scop, "i"), "A"), {"n": 10}, time="i")
    assert [s.t for s in loc.steps] == [(i,) for i in range(1, 9)] and loc.storage == 3
    for s in loc.steps:
        i = s.t[0]
        assert s.cached.ravel().tolist() == [i - 1, i, i + 1]
        assert s.rho == {(x,): x - i + 1 for x in (i - 1, i, i + 1)}
        assert s.move_out.ravel().tolist() == ([i - 1] if i < 8 else [7, 8, 9])
        assert s.move_in.ravel().tolist() == ([0, 1, 2] if i == 1 else [i + 1])
        if i < 8:
            assert s.drift == {(i,): -1, (i + 1,): -1}
    assert loc.drifts() == {-1}
    # a cached-set map alone gives the same steps; a window of two keeps four elements
    C = isl.Map("[n] -> { [i] -> A[x] : 1 <= i <= n - 2 and i - 1 <= x <= i + 1 }")
    alone = E.localisation(C, {"n": 10})
    assert [s.rho for s in alone.steps] == [s.rho for s in loc.steps]
    loc2 = E.localisation(localise(scop, time_prefix(scop, "i"), "A", window=2), {"n": 10})
    assert loc2.storage == 4 and loc2.window == 2
    fig = P.localisation(loc)
    assert P.to_png(fig, dpi=30).startswith(PNG)
    assert "constant drift -1" in fig._suptitle.get_text()
    fig = P.localisation_of(scop, sizes={"n": 8})          # a Scop (or a Compiled)
    assert "along i" in fig._suptitle.get_text()


def test_scattering_functions_of_gemm():
    o = Options(sizes={"N": 64}, tile=(16, 32), tile_levels=((16, 32),), block=(32, 8))
    info = E.mapping_of(compile_source(GEMM, o), o)
    outer, regular = E.scattering_functions(info)
    assert outer == "(0, ⌊i/16⌋_y, ⌊j/32⌋_x)"
    assert regular.startswith("(⌊k/16⌋, (i mod 16) mod 8_y, j mod 32_x, ⌊(i mod 16)/8⌋")
    fig = P.schedules(compile_source(GEMM, o), o)
    assert P.to_png(fig, dpi=30).startswith(PNG)
    assert "⌊i/16⌋_y" in fig.axes[0].get_title()


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_seed_pictures_of_every_example(path):
    o = Options(sizes={})
    c = compile_source(path.read_text(), o)
    for fig in (P.schedules(c, o, cap=8), P.localisation_of(c, max_steps=4)):
        assert isinstance(fig, P.Figure)
        assert P.to_png(fig, dpi=30).startswith(PNG)


def test_transactions_per_variant_picture():
    """Warp transactions (seed 003 §6.3) per --shared variant, from real emulator runs."""
    runs = E.shared_variants(GEMM, Options(sizes={"N": 32}))
    from polymagic.report.fmt import transactions
    assert all(transactions(r.counters) for r in runs.values())
    fig = P.memory_traffic(runs)
    assert len(fig.axes) == 2 and "transactions" in fig.axes[1].get_title()
    assert P.to_png(fig, dpi=30).startswith(PNG)


def test_superposition_points_use_its_thread_axes():
    """jacobi-2d-alt under superposition maps j to thread.x and i to thread.y (no band
    member on y): every row of a block's tile is shown, each point with its own thread."""
    src = (ROOT / "examples" / "jacobi-2d-alt.c").read_text()
    o = Options(sizes={"tsteps": 4, "n": 64}, target="emulator", mapping="superposition")
    ip = E.iteration_points(compile_source(src, o), o, "S0", ("i", "j"),
                            {"tsteps": 1, "n": 16})
    assert sorted(set(ip.coords[:, 0].tolist())) == list(range(16))
    assert len(ip.coords) == 16 * 14
    first = ip.blocks[:, 0] == 0
    assert len(set(ip.thread_linear()[first].tolist())) == 8 * 14
