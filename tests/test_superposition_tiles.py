"""``--tile auto`` on the superposition's kernels: seed 000 §4.3's tile-size search
(cost C = N·(P·S + V·L/P), buffers ≤ M_up, Π t ≥ P_low, t ≤ N) of the block tiles
TL_k of seed 003's superposed schedule (and of its thread groups' sub-tile), fitted
to the superposition's own buffers (block level and thread tiles).

The search keeps the superposition (jacobi-2d-alt and gemver, where it is chosen by
default; doitgen with it forced), its model equals the planner at the chosen and at
other tile sizes, the chosen sizes respect the constraints for two M_up, and the
kernels compiled with them give emulator == CPU (sizes not multiples of the tiles)
and compile with NVRTC."""
from __future__ import annotations

import math
import pathlib

import islpy as isl
import pytest

from polymagic.mapping import map_schedule
from polymagic.tiles.search import search_tile_sizes
from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run
from test_superposition import DOITGEN3
from cpu_clock import SEARCH_WORKERS, cpu_seconds

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
KB = 1024


def _src(name: str) -> str:
    return DOITGEN3 if name == "doitgen3" else (EXAMPLES / f"{name}.c").read_text()


#: program -> (sizes of the emulator runs, superposition forced): jacobi-2d-alt and
#: gemver get it by default (a coalescing gain), doitgen only with require_gain off
RUNS = {
    "jacobi-2d-alt": ([{"tsteps": 3, "n": 37}, {"tsteps": 2, "n": 70}], False),
    "gemver": ([{"n": 45}, {"n": 100}], False),
    "doitgen3": ([{"nr": 11, "nq": 10, "np": 13}, {"nr": 5, "nq": 3, "np": 40}], True),
    "doitgen": ([{"nr": 5, "nq": 7, "np": 37}], True),
}


def _force(forced: bool) -> dict:
    """The policy options that force the superposition (no coalescing gain needed)."""
    return {"require_gain": False} if forced else {}


def _tile_note(c) -> str:
    (note,) = [n for n in c.note_lines if n.startswith("tile search")]
    return note


@pytest.mark.parametrize("name", sorted(RUNS))
def test_tile_auto_keeps_the_superposition_and_runs(name):
    sizes_list, forced = RUNS[name]
    for sizes in sizes_list:
        for m_up in (48 * KB, 2 * KB):
            opts = Options(sizes=sizes, target="emulator", tile_auto=True, shared_mem=m_up,
                           **_force(forced))
            c = compile_source(_src(name), opts)
            assert c.schedule.use_superposition, c.note_lines
            assert "superposition:" in c.summary
            assert not any("superposition not used" in n for n in c.note_lines)
            note = _tile_note(c)
            assert note.startswith("tile search (seed 000 §4.3): --tile "), note
            assert "predicted data movement" in note
            tile = tuple(int(v) for v in note.split("--tile ")[1].split(",")[:1])
            # the first chosen size is the outermost block loop's tile of the kernels
            # with the most block loops
            assert f"(tile {tile[0]})" in c.summary, (note, c.summary)
            for p in c.mapping.plans.values():
                if p.memory:
                    assert p.memory.shared_bytes <= m_up, (name, sizes, m_up)
            r = run(c, opts)
            assert r.ok, f"{name} {sizes} M_up={m_up}: {r.message}"


def _card(s: isl.Set, sizes: dict) -> int:
    for pos in range(s.dim(isl.dim_type.param)):
        s = s.fix_val(isl.dim_type.param, pos,
                      isl.Val(sizes.get(s.get_dim_name(isl.dim_type.param, pos), 0)))
    return int(s.count_val().to_python())


#: large sizes (the model is fitted at them), tiles to compare with the planner
SEARCHES = {
    "jacobi-2d-alt": ({"tsteps": 10, "n": 1024}, False, [(4,), (8,), (16,), (64,)]),
    "gemver": ({"n": 1024}, False, [(8, 32), (16, 64), (4, 128)]),
    "doitgen3": ({"nr": 64, "nq": 64, "np": 64}, True, [(2, 4, 16), (1, 8, 32), (4, 4, 8)]),
}


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_model_equals_the_planner_and_respects_the_constraints(name):
    sizes, forced, tiles = SEARCHES[name]
    c = compile_source(_src(name), Options(sizes=sizes, **_force(forced)))
    assert c.schedule.use_superposition
    for m_up in (48 * KB, 8 * KB):
        t0 = cpu_seconds()                  # CPU time: load does not trip the cap
        res = search_tile_sizes(c.scop, c.schedule, Options(shared_mem=m_up, **_force(forced)).compile, sizes)
        seconds = (cpu_seconds() - t0) / SEARCH_WORKERS
        assert res.searched, res.reason
        assert seconds < 5.0, seconds
        model = res.model
        assert all(k.superposed for k in model.kernels)
        assert model.violations(res.tile) == [], res.summary()
        assert max(res.shared_bytes.values()) <= m_up
        for tile in [res.tile] + tiles:
            mapping = map_schedule(c.scop, c.schedule, Options(
                sizes=sizes, tile=tile, shared_mem=48 * KB, keep_register_buffers=True,
                vector=False).compile)
            bufs = {(k, b.name): b for k, p in mapping.plans.items() if p.memory
                    for b in p.memory.buffers}
            assert set(bufs) == set(model.extents(tile)), tile
            for key, b in bufs.items():
                assert model.extents(tile)[key] == b.extents, (tile, key)
            for k, p in mapping.plans.items():
                if p.members:
                    assert model.threads(tile)[k] == math.prod(p.block), (tile, k)
            if name == "jacobi-2d-alt":
                # N of §4.3: launches × block tiles × ⌈t/B⌉ thread tiles × steps, exactly
                for key, b in bufs.items():
                    assert model.occurrences(tile)[key] == _card(b.copy_in.domain(), sizes)


def test_jacobi_2d_alt_sizes_follow_m_up_and_the_smallest_grid():
    """jacobi-2d-alt's A is buffered per thread tile of 8 rows (threadIdx.y) and 32 + 2
    columns: a block tile larger than the 8 rows only adds thread tiles, so the model
    is flat past 8 and the SMs decide: 8 rows per block, 128 blocks at n = 1024 (95 % of
    the 132 SMs count as filling the GPU, tiles.model.FILL)."""
    c = compile_source(_src("jacobi-2d-alt"), Options(sizes={"tsteps": 10, "n": 1024}))
    res = search_tile_sizes(c.scop, c.schedule, Options().compile, {"tsteps": 10, "n": 1024})
    (k,) = res.model.kernels
    (b,) = k.buffers
    assert [e.text() for e in b.extents] == ["t0", "34"] and b.thread_tiles == (0,)
    assert k.fixed_threads == 32 and k.tied == (8,)
    assert res.tile == (8,)
    assert res.model.blocks(res.tile)["pm_kernel0"] == 128
    assert res.model.violations((8,)) == []
    assert res.model.violations((16,)) == [
        "kernel0: 64 thread blocks would leave 68 of the GPU's 132 multiprocessors idle"]
    assert res.model.violations((12,))[0].startswith("kernel0: t0=12 splits unevenly")


def test_tile_auto_cuda_compiles_with_nvrtc():
    from polymagic.codegen.nvrtc import compile_cuda
    for name, sizes in (("jacobi-2d-alt", {"tsteps": 10, "n": 1024}), ("gemver", {"n": 1024}),
                        ("doitgen3", {"nr": 64, "nq": 64, "np": 64})):
        c = compile_source(_src(name), Options(sizes=sizes, tile_auto=True, require_gain=False))
        assert c.schedule.use_superposition
        assert b".entry" in compile_cuda(c.cuda, "sm_90"), name


# ---- per-thread tiles (--tile T:t) on the superposition's kernels ----------------------

#: program -> (sizes, not multiples of the tiles; --tile levels; superposition forced)
PER_THREAD = {
    "jacobi-2d-alt": ({"tsteps": 3, "n": 37}, ((16,), (2,)), False),
    "gemver": ({"n": 45}, ((32, 64), (2, 2)), False),
    "gemm": ({"N": 37}, ((64, 64, 16), (4, 4)), True),
    "doitgen3": ({"nr": 11, "nq": 10, "np": 13}, ((2, 8, 16), (1, 2)), True),
}


@pytest.mark.parametrize("name", sorted(PER_THREAD))
def test_per_thread_tiles_keep_the_superposition(name):
    """Each thread computes t points of the block tile along the thread axis running
    the block loop, strided by the block size: T/t threads there instead of T (one
    point per thread), and the results match the CPU (shuffled and reversed orders)."""
    sizes, levels, forced = PER_THREAD[name]
    opts = Options(sizes=sizes, target="emulator", tile=levels[0], tile_levels=levels,
                   **_force(forced))
    c = compile_source(_src(name), opts)
    assert c.schedule.use_superposition
    assert not any("points per thread" in n for n in c.note_lines)
    assert "point(s) strided by the block size" in c.summary
    if math.prod(levels[0][:len(levels[1])]) <= 1024:     # one point per thread fits
        one = compile_source(_src(name), opts.with_(
            tile_levels=(levels[0], (1,) * len(levels[1]))))
        assert one.schedule.use_superposition
        for k, p in c.mapping.plans.items():
            q = one.mapping.plans[k]
            assert math.prod(p.block) <= math.prod(q.block), (k, p.block, q.block)
            if any(v > 1 for v in p.per_thread):
                assert math.prod(p.block) < math.prod(q.block), (k, p.block, q.block)
    assert any(v > 1 for p in c.mapping.plans.values() for v in p.per_thread)
    for order in ("shuffle", "reverse"):
        r = run(c, opts.with_(emu_order=order))
        assert r.ok, f"{name}: {r.message}"


def test_per_thread_tiles_threads_and_nvrtc():
    """gemm with its superposition forced, 64x64 block tiles of 4x4 points per thread:
    16x16 threads, each j point 16 columns from the previous one (consecutive threads,
    consecutive columns), and the CUDA compiles."""
    from polymagic.codegen.nvrtc import compile_cuda
    levels = ((64, 64, 16), (4, 4))
    c = compile_source(_src("gemm"), Options(sizes={"N": 256}, tile=levels[0],
                                             tile_levels=levels, require_gain=False))
    (plan,) = c.mapping.plans.values()
    assert plan.block == (16, 16, 1) and plan.per_thread == (4, 4)
    assert "i→block.y (tile 64), j→block.x (tile 64)" in c.summary
    assert b".entry" in compile_cuda(c.cuda, "sm_90")


def test_per_thread_tiles_too_many_threads_is_a_user_error():
    from polymagic.errors import OptionsError
    levels = ((64,), (1,))     # 64 rows of i on thread.y beside 32 columns on thread.x
    with pytest.raises(OptionsError, match="at most 1024"):
        compile_source(_src("jacobi-2d-alt"), Options(sizes={"tsteps": 2, "n": 40},
                                                      tile=levels[0], tile_levels=levels))
