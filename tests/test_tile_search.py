"""Tile-size search of seed 000 §4.3 (polymagic.tiles.search).

The model is fitted to the real planner at a few tile vectors; these tests hold it
to the planner at other tile vectors, check the chosen sizes against every
constraint for several shared-memory limits M_up, and run the chosen gemm tiles
in the emulator.
"""
from __future__ import annotations

import math
import pathlib

import islpy as isl
import pytest

from polymagic.deps import compute_dependences
from polymagic.frontend import parse
from polymagic.mapping import map_schedule
from polymagic.tiles.model import H100
from polymagic.tiles.search import search_tile_sizes
from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.schedule import compute_schedule
from polymagic.runtime.run import run
from cpu_clock import SEARCH_WORKERS, cpu_seconds

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
KB = 1024
SIZES = {"gemm": {"N": 4096}, "jacobi-2d": {"n": 4096, "tsteps": 100}}


def _src(name: str) -> str:
    return (EXAMPLES / f"{name}.c").read_text()


_SEARCHES: dict = {}


def _search(name: str, m_up: int = 48 * KB, sizes: dict | None = None, model=None):
    """One search per (kernel, M_up, sizes) for the whole module."""
    sizes = sizes or SIZES[name]
    key = (name, m_up, tuple(sorted(sizes.items())), model is not None)
    if key not in _SEARCHES:
        t0 = cpu_seconds()                  # CPU time: load does not trip the caps
        res = search_tile_sizes(*_front(name), Options(shared_mem=m_up).compile, sizes, model=model)
        _SEARCHES[key] = (res, (cpu_seconds() - t0) / SEARCH_WORKERS)
    return _SEARCHES[key][0]


_FRONT: dict = {}


def _front(name: str):
    """The example's Scop and schedule (the default options': the search's options
    differ only in what the scheduler does not read)."""
    if name not in _FRONT:
        c = compile_source(_src(name), Options())
        _FRONT[name] = (c.scop, c.schedule)
    return _FRONT[name]


def _scheduled(source: str, options: Options):
    """Scop and schedule of ``source`` for ``options`` (the search's input)."""
    scop = parse(source)
    return scop, compute_schedule(scop, compute_dependences(scop), options.compile.schedule)


def _planner(name: str, tile: tuple[int, ...], m_up: int = 48 * KB):
    """The planner's buffers at ``tile``: {(kernel, buffer): BufferPlan}, plans."""
    scop, sched = _front(name)
    mapping = map_schedule(scop, sched, Options(shared_mem=m_up, tile=tile,
                                                keep_register_buffers=True, vector=False).compile)
    bufs = {(k, b.name): b for k, p in mapping.plans.items() if p.memory
            for b in p.memory.buffers}
    return bufs, mapping.plans


def _card(s: isl.Set, sizes: dict) -> int:
    for pos in range(s.dim(isl.dim_type.param)):
        s = s.fix_val(isl.dim_type.param, pos,
                      isl.Val(sizes.get(s.get_dim_name(isl.dim_type.param, pos), 0)))
    return int(s.count_val().to_python())


def _per_block_box(rel: isl.Map) -> tuple[int, ...]:
    d = rel.reverse().apply_range(rel).deltas()
    d = d.project_out(isl.dim_type.param, 0, d.dim(isl.dim_type.param))
    return tuple(int(d.dim_max_val(k).to_python()) + 1 for k in range(d.dim(isl.dim_type.set)))


# ---- the fitted model equals the planner ------------------------------------------

@pytest.mark.parametrize("name, held_out, formulas", [
    ("gemm", [(40, 24, 12), (64, 32, 8), (5, 96, 3)],
     {"sh0_C": ["t0", "t1"], "sh0_A": ["t0", "t2"], "sh0_B": ["t2", "t1"]}),
    ("jacobi-2d", [(20, 36), (64, 16), (3, 130)],
     {"sh0_A": ["t0 + 2", "t1 + 2"], "sh1_B": ["t0 + 2", "t1 + 2"]}),
])
def test_fitted_extents_equal_the_planner_at_held_out_sizes(name, held_out, formulas):
    small = {k: 150 for k in SIZES[name]} | ({"tsteps": 3} if "tsteps" in SIZES[name] else {})
    res = _search(name, sizes=small)
    model = res.model
    assert res.searched, res.reason
    got = {b.name: [e.text() for e in b.extents] for k in model.kernels for b in k.buffers}
    assert got == formulas
    for tile in held_out:
        bufs, plans = _planner(name, tile)
        assert set(bufs) == set(model.extents(tile))
        for key, b in bufs.items():
            assert model.extents(tile)[key] == b.extents, (tile, key)
            assert model.buffer_bytes(tile)[key] == b.nbytes
            vin, vout = model.volumes(tile)[key]
            assert vin == (math.prod(_per_block_box(b.copy_in)) if b.copy_in else 0)
            assert vout == (math.prod(_per_block_box(b.copy_out)) if b.copy_out else 0)
            # N of §4.3: how often the copies run = prefix points of the copy sets
            rel = b.copy_in if b.copy_in is not None else b.copy_out
            assert model.occurrences(tile)[key] == _card(rel.domain(), small), (tile, key)
        for k, p in plans.items():
            if p.members:
                assert model.threads(tile)[k] == math.prod(p.block)
        assert model.shared_bytes(tile) == {
            k: p.memory.shared_bytes for k, p in plans.items() if p.members}


# ---- constraints, and the sizes shrink with M_up ----------------------------------

@pytest.mark.parametrize("name", ["gemm", "jacobi-2d"])
def test_chosen_sizes_satisfy_every_constraint_and_shrink_with_m_up(name):
    prev_bytes, prev_vol = None, None
    first = _search(name)
    for m_up in (48 * KB, 16 * KB, 2 * KB):
        # a sweep over M_up reuses the fitted model (the planner is not sampled again)
        res = first if m_up == 48 * KB else _search(name, m_up, model=first.model)
        assert res.searched, res.reason
        t = res.tile
        model = res.model
        assert model.violations(t) == []
        assert all(0 < x <= u for x, u in zip(t, model.upper))
        # the real planner at the chosen sizes: every buffer kept, within M_up
        bufs, plans = _planner(name, t, m_up)
        assert {k for k in bufs} == set(model.extents(t))
        for k, p in plans.items():
            if not p.members:
                continue
            assert p.memory.shared_bytes <= m_up
            assert not p.memory.dropped_any
            assert H100.p_low <= math.prod(p.block) <= 1024
            assert math.prod(m.tile for m in p.members) >= H100.p_low
        assert res.cost is not None and res.cost <= min(
            c.cost for c in res.candidates if c.feasible) * 1.0201
        nbytes = max(res.shared_bytes.values())
        vol = math.prod(t)
        if prev_bytes is not None:
            assert nbytes <= prev_bytes and vol <= prev_vol, (m_up, t)
        prev_bytes, prev_vol = nbytes, vol
    # the table has the grid and the rounded SLSQP points, for a heat map
    rows = res.table()
    assert {"grid", "default"} <= {r["source"] for r in rows}
    assert len(res.relaxed) >= 1 and all(len(r) == len(t) for r in res.relaxed)


def test_reused_model_gives_the_fresh_search():
    fresh = _search("gemm", 16 * KB)
    reused = _search("gemm", 16 * KB, model=_search("gemm").model)
    assert reused.tile == fresh.tile and reused.cost == pytest.approx(fresh.cost)


def test_the_grid_demand_is_the_compile_options_device_sms():
    """One place gives the multiprocessors: ``CompileOptions.device_sms`` sets the
    model's grid demand (seed 000 §4.1), as it sets the default tiles' grid fill."""
    model = _search("gemm").model
    assert model.gpu.min_blocks == Options().device_sms == 132
    none = search_tile_sizes(*_front("gemm"), Options(device_sms=0).compile, SIZES["gemm"],
                             model=model)
    assert none.model.gpu.min_blocks == 0 and not none.model.min_blocks


def test_gemm_picks_large_tiles_with_48kb_and_beats_the_defaults():
    res = _search("gemm")
    ti, tj, tk = res.tile
    assert res.shared_bytes["pm_kernel0"] <= 48 * KB
    assert ti * tj > 32 * 32 and tk >= 16
    assert tj % 32 == 0                         # innermost member: coalesced
    assert res.cost < res.default_cost
    assert "less than the defaults" in res.summary()


# ---- the chosen tiles compile and run ---------------------------------------------

@pytest.mark.parametrize("m_up, n", [(48 * KB, 67), (16 * KB, 100), (2 * KB, 45)])
def test_chosen_gemm_tiles_run_correctly_in_the_emulator(m_up, n):
    res = _search("gemm", m_up)
    opts = res.options(Options(sizes={"N": n}, target="emulator", shared_mem=m_up))
    c = compile_source(_src("gemm"), opts)
    assert "sh0_A" in c.cuda and "sh0_B" in c.cuda and "sh0_C" in c.cuda
    r = run(c, opts)
    assert r.ok, r.message


def test_searched_at_the_run_size_gemm_runs():
    res = _search("gemm", 16 * KB, {"N": 100})
    assert res.searched, res.reason
    # at N=100 the grid must still give blocks to the SMs (§4.1)
    assert res.model.blocks(res.tile)["pm_kernel0"] >= res.model.min_blocks["pm_kernel0"]
    opts = res.options(Options(sizes={"N": 100}, target="emulator", shared_mem=16 * KB))
    assert run(compile_source(_src("gemm"), opts), opts).ok


def test_chosen_jacobi_tiles_run_correctly_in_the_emulator():
    res = _search("jacobi-2d")
    opts = res.options(Options(sizes={"n": 70, "tsteps": 2}, target="emulator"))
    r = run(compile_source(_src("jacobi-2d"), opts), opts)
    assert r.ok, r.message


# ---- refusal and speed -------------------------------------------------------------

TWO_POINT = """\
void two(int N, float A[N], float B[N]) {
  for (int i = 0; i < N - 1; i++)
    B[i] = A[i] + A[i + 1];
}
"""


def test_refuses_when_the_planner_is_not_affine_in_the_tile_sizes():
    """With δ = 0.8 the two-point stencil's constant reuse (t-1)/(t+1) decides for a
    buffer at t = 16 but not at t = 8: the buffers change with the tile size, the
    fit cannot hold, and the defaults are kept with the reason."""
    res = search_tile_sizes(*_scheduled(TWO_POINT, Options(delta=0.8)), Options(delta=0.8).compile,
                            {"N": 1000})
    assert not res.searched
    assert res.tile == (256,)
    assert "depend on the tile sizes" in res.reason
    assert res.summary().startswith("tile search kept the defaults --tile 256: ")


def test_no_buffers_keeps_the_defaults():
    res = search_tile_sizes(*_front("gemm"), Options(shared="none").compile, {"N": 512})
    assert not res.searched and res.tile == (32, 32)
    assert "no shared-memory buffers" in res.reason


def test_missing_size_is_a_user_error():
    from polymagic.errors import OptionsError
    with pytest.raises(OptionsError, match="tsteps"):
        search_tile_sizes(*_front("jacobi-2d"), Options().compile, {"n": 100})


@pytest.mark.parametrize("name", ["gemm", "jacobi-2d"])
def test_search_takes_under_five_seconds_per_kernel(name):
    _search(name)
    res, seconds = _SEARCHES[(name, 48 * KB, tuple(sorted(SIZES[name].items())), False)]
    kernels = sum(1 for k in res.model.kernels if k.m)
    assert seconds / kernels < 5.0, seconds
