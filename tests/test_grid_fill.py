"""Default tiles of compute-bound bands fit to the grid (:mod:`polymagic.mapping.grid_fill`).

The first H100 run (benchmarks/results/h100-2026-11-26) measured the 128 x 128 register
tiles at PolyBench's medium sizes 5-13x slower than 32 x 32 shared tiles (a 2 x 2 grid
on 132 multiprocessors).  Checked here, without a GPU: the exact decisions and block
counts at the medium sizes and at large ones, today's tiles without sizes or without a
device model, the compile cache keyed by the sizes, the note, emulator == CPU on every
rung of the ladder, and that the code of each rung compiles with NVRTC.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic.codegen.nvrtc import compile_cuda
from polymagic.compiler import compile_source
from polymagic.mapping import DEFAULT_TILES
from polymagic.mapping.grid_fill import LADDER
from polymagic.options import Options
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _fills(name: str, **kw):
    c = compile_source((EXAMPLES / f"{name}.c").read_text(), Options(**kw))
    return c, {k[len("pm_"):]: p.grid_fill for k, p in c.mapping.plans.items()
               if p.grid_fill is not None}


def test_the_ladder_passes_through_the_default_tile():
    assert LADDER[2] == (DEFAULT_TILES[2], None)


@pytest.mark.parametrize("name, sizes, tile, points, blocks", [
    # PolyBench medium: 128 x 128 gave 4 blocks (gemm) and 3 (syrk's triangle)
    ("gemm-polybench", {"ni": 200, "nj": 220, "nk": 240}, (8, 32), None, 175),
    # no rung reaches 132: the most blocks
    ("syrk", {"n": 240, "m": 200}, (8, 32), None, 128),
    ("gemm", {"N": 512}, (32, 32), None, 256),
    ("gemm", {"N": 1024}, (64, 64), (4, 4), 256),
    # large: today's register tiles (30.9 TFLOP/s at N = 4096 on the H100)
    ("gemm", {"N": 4096}, (128, 128), (8, 8), 1024),
    ("syrk", {"n": 2048, "m": 2048}, (128, 128), (8, 8), 136),
])
def test_decision_at_the_sizes(name, sizes, tile, points, blocks):
    c, fills = _fills(name, sizes=sizes)
    (fill,) = fills.values()
    assert (fill.tile, fill.points, fill.blocks, fill.wanted) == (tile, points, blocks, 132)
    (plan,) = [p for p in c.mapping.plans.values() if p.grid_fill is fill]
    assert [m.tile for m in plan.members] == list(tile)
    assert plan.per_thread == (points or ())
    assert c.mapping.size_dependent
    assert any(n.stage == "mapping" and n.text == fill.text() for n in c.notes)


def test_2mm_medium_both_products_shrink():
    _, fills = _fills("2mm", sizes={"ni": 180, "nj": 190, "nk": 210, "nl": 220})
    assert {k: (f.tile, f.blocks) for k, f in fills.items()} == {
        "kernel1": ((8, 32), 138), "kernel2": ((8, 32), 161)}
    assert [b for _, b in fills["kernel1"].tried] == [4, 9, 36, 72, 138]


def test_without_sizes_or_device_model_today_s_tiles():
    _, fills = _fills("gemm")
    (fill,) = fills.values()
    assert (fill.tile, fill.points, fill.blocks) == ((128, 128), (8, 8), None)
    assert "not given" in fill.text()
    c, fills = _fills("gemm", sizes={"N": 64}, device_sms=0)
    (fill,) = fills.values()
    assert (fill.tile, fill.points) == ((128, 128), (8, 8))
    assert not c.mapping.size_dependent


def test_the_compile_cache_tells_the_sizes_apart():
    src = (EXAMPLES / "gemm.c").read_text()
    big = compile_source(src, Options(sizes={"N": 4096}))
    small = compile_source(src, Options(sizes={"N": 512}))
    again = compile_source(src, Options(sizes={"N": 4096}))
    assert "tile 128" in big.summary and "tile 128" not in small.summary
    assert again.cuda == big.cuda


# the rungs at emulator sizes: device_sms chosen so that each rung is the first to fill
RUNGS = [
    ({"ni": 130, "nj": 129, "nk": 9}, 4, (128, 128)),
    ({"ni": 70, "nj": 66, "nk": 9}, 4, (64, 64)),
    ({"ni": 40, "nj": 40, "nk": 9}, 4, (32, 32)),
    ({"ni": 40, "nj": 40, "nk": 9}, 6, (16, 32)),
    ({"ni": 40, "nj": 40, "nk": 9}, 10, (8, 32)),
]


@pytest.mark.parametrize("sizes, sms, tile", RUNGS, ids=[f"{t[0]}x{t[1]}" for *_, t in RUNGS])
def test_every_rung_matches_the_cpu_and_compiles(sizes, sms, tile):
    opts = Options(sizes=sizes, device_sms=sms, target="emulator")
    c = compile_source((EXAMPLES / "gemm-polybench.c").read_text(), opts)
    (plan,) = c.mapping.plans.values()
    assert plan.grid_fill.tile == tile and plan.grid_fill.blocks >= sms
    r = run(c, opts)
    assert r.ok, r.message
    ptx = compile_cuda(c.cuda, "sm_90").decode(errors="replace")
    assert ".entry kernel0" in ptx


def test_bound_callable_fits_the_tiles_to_the_call_s_sizes():
    """Compiled without sizes (today's tiles), called with small arrays: the callable
    compiles again at the call's sizes, whose grid-fill choice differs."""
    import numpy as np
    from polymagic.api.function import make_callable
    options = Options(target="emulator")
    compiled = compile_source((EXAMPLES / "gemm.c").read_text(), options)
    assert "tile 128" in compiled.summary
    fn = make_callable(compiled, options)
    rng = np.random.default_rng(0)
    A, B, C = (rng.random((20, 20), dtype=np.float32) for _ in range(3))
    rep = fn(N=20, A=A, B=B, C=C, check=True)
    assert rep.ok
    assert "tile 128" not in fn._for_sizes({"N": 20}).summary


@pytest.mark.parametrize("name, sizes, exact", [
    ("gemm", {"N": 2_000_000_000}, True),                 # a box: product of extents
    ("syrk", {"n": 2_000_000_000, "m": 8}, False),        # a triangle: a lower bound
])
def test_huge_sizes_are_counted_without_a_scan(name, sizes, exact):
    """isl's ``count_val`` enumerates; at N = 2e9 the grid has 2.4e14 tiles, so the
    choice must not scan them (it hung before): a box's count is exact, a triangle's
    a lower bound, said in the note."""
    _, fills = _fills(name, sizes=sizes)
    (fill,) = fills.values()
    assert (fill.tile, fill.points, fill.exact) == ((128, 128), (8, 8), exact)
    n = -(-2_000_000_000 // 128)
    assert fill.blocks == (n * n if exact else n)
    assert ("at least " + str(fill.blocks)) in fill.text() or exact


def test_sizes_past_a_c_int_are_refused_before_compiling():
    from polymagic.errors import InputError
    with pytest.raises(InputError, match=r"N=3000000000 does not fit a C int"):
        _fills("gemm", sizes={"N": 3_000_000_000})
