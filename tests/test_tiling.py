"""Multi-level tiling with per-thread tiles (seed 000 §4.1, seed 004 §4.3).

``--tile 64,64,16:4,4``: a 64x64 block tile (k sub-tile 16), each thread a 4x4 tile
of points (16x16 threads), one register per point for the accumulator and no shared
buffer beside it, the point loops unrolled and jammed inside the k loop.  Asserted:
emulator == CPU (shuffled and reversed thread orders) at sizes that are not multiples
of the tiles and smaller than a tile, the plan's registers and buffers, predicted
global loads/stores == the emulator's, NVRTC compiles, and bad levels are one-line
errors.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic import kir
from polymagic.codegen.nvrtc import compile_cuda
from polymagic.errors import OptionsError
from polymagic.expr import Int
from polymagic.mapping import map_schedule
from polymagic.memory.counts import predict_for
from polymagic.options import Options, parse_options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

G44 = ((64, 64, 16), (4, 4))
G24 = ((32, 32, 8), (2, 4))


def _src(name: str) -> str:
    return (EXAMPLES / f"{name}.c").read_text()


def _opts(sizes: dict, levels, **kw) -> Options:
    return Options(sizes=sizes, target="emulator", tile=levels[0], tile_levels=levels, **kw)


def _compile_run(name: str, sizes: dict, levels, **kw):
    opts = _opts(sizes, levels, **kw)
    c = compile_source(_src(name), opts)
    r = run(c, opts)
    assert r.ok, f"{name} {levels} {kw}: {r.message}"
    return c, r, opts


CASES = [
    ("gemm", {"N": 37}, G44), ("gemm", {"N": 13}, G44), ("gemm", {"N": 70}, G44),
    ("gemm", {"N": 37}, G24), ("gemm", {"N": 5}, G24),
    ("gemm-polybench", {"ni": 37, "nj": 29, "nk": 23}, G44),
    ("gemm-polybench", {"ni": 19, "nj": 13, "nk": 11}, G24),
    ("2mm", {"ni": 37, "nj": 29, "nk": 23, "nl": 19}, G44),
    ("2mm", {"ni": 11, "nj": 9, "nk": 13, "nl": 10}, G24),
    ("syrk", {"n": 37, "m": 23}, G44), ("syrk", {"n": 11, "m": 9}, G24),
    ("jacobi-2d", {"n": 37, "tsteps": 2}, ((64, 64), (4, 4))),
    ("jacobi-2d", {"n": 13, "tsteps": 2}, ((32, 32), (2, 4))),
]


@pytest.mark.parametrize("order", ["shuffle", "reverse"])
@pytest.mark.parametrize("name, sizes, levels", CASES)
def test_per_thread_tiles_match_cpu_and_predicted_counts(name, sizes, levels, order):
    c, r, opts = _compile_run(name, sizes, levels, emu_order=order)
    per = levels[1]
    threads = tuple(t // p for t, p in zip(levels[0], per))
    for k in c.program.kernels.values():
        if k.block != (1, 1, 1):
            assert k.block[:2] == threads[::-1]
    pred = predict_for(c, opts.sizes)
    emu = r.counters["per_kernel"]
    assert set(pred) == set(emu)
    for k, p in pred.items():
        assert (p.loads, p.stores) == (emu[k]["loads"], emu[k]["stores"]), k


def test_gemm_4x4_registers_and_no_shared_buffer_for_c():
    n = 37
    c, r, opts = _compile_run("gemm", {"N": n}, G44)
    (plan,) = map_schedule(c.scop, c.schedule, opts.compile).plans.values()
    assert plan.block == (16, 16, 1)
    assert plan.per_thread == (4, 4)
    assert [(m.tile, m.threads) for m in plan.members] == [(64, 16), (64, 16)]
    assert {b.array for b in plan.memory.buffers} == {"A", "B"}       # no sh0_C
    assert plan.memory.shared_bytes == 2 * 64 * 16 * 4
    (decl,) = c.program.kernels["kernel0"].registers
    assert (decl.name, decl.shape, decl.array, decl.once_per_point) == \
        ("pm_r0_C", (16,), "C", True)
    # C: one load and one store per point; A and B: the copy sets
    assert r.counters["stores"] == n * n
    assert "per thread: 4 x 4 points (point loops unrolled and jammed" in c.summary
    assert "block 16x16x1" in c.summary


def test_point_loops_are_jammed_inside_the_k_loop():
    """Unroll-and-jam: in the compute nest the sequential k point loop encloses the
    two unrolled constant-trip point loops, which enclose the statement."""
    c, _, _ = _compile_run("gemm", {"N": 37}, G44)
    body = c.program.kernels["kernel0"].body

    def find(stmts, depth=()):
        for s in stmts:
            if isinstance(s, kir.Loop):
                yield from find(s.body, depth + (s,))
            elif isinstance(s, kir.If):
                yield from find(s.then, depth)
            elif isinstance(s, kir.Compute) and s.stmt == "S0":
                yield depth
    (loops,) = list(find(body))
    *_, k, u1, u2 = loops
    assert not k.unroll and k.var.startswith("pm_c") and not k.var.endswith("_u")
    assert u1.unroll and u2.unroll and u1.var.endswith("_u") and u2.var.endswith("_u")
    assert (u1.upper, u2.upper) == (Int(3), Int(3))           # 4 x 4 points
    assert c.cuda.count("#pragma unroll") >= 6


@pytest.mark.parametrize("levels", [G44, G24])
@pytest.mark.parametrize("name", ["gemm", "2mm", "syrk", "jacobi-2d"])
def test_per_thread_tiles_compile_with_nvrtc(name, levels):
    if name == "jacobi-2d":
        levels = (levels[0][:2], levels[1])
    opts = _opts({}, levels)
    c = compile_source(_src(name), opts)
    assert b".entry" in compile_cuda(c.cuda, "sm_90")


@pytest.mark.parametrize("args, message", [
    ("--tile 64,64,16:3,4", "per-thread size 3 does not divide tile size 64"),
    ("--tile 64,64:1,1", "64 x 64 = 4096 threads per block, at most 1024"),
    ("--tile 64,64:4,4 --block 16,8", "gives 16,16 threads per block (x,y,z), but --block "
                                      "is 16,8"),
    ("--tile 64,64:4,4,4", "the per-thread level has 3 sizes, at most 2"),
    ("--tile 64:8:2", "at most two levels"),
])
def test_bad_per_thread_levels_are_one_line_errors(args, message):
    with pytest.raises(OptionsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_options(args)


def test_block_agreeing_with_the_per_thread_level_is_accepted():
    o = parse_options("--tile 64,64,16:4,4 --block 16,16")
    assert o.tile_levels == ((64, 64, 16), (4, 4)) and o.block == (16, 16)


def test_kernels_mapping_fewer_loops_take_the_leading_sizes():
    """fdtd-2d has a 1-d kernel (ey[0][j]) beside 2-d ones: it takes the leading tile
    and per-thread sizes, as the first --tile level does."""
    c, _, _ = _compile_run("fdtd-2d", {"tmax": 2, "nx": 37, "ny": 29}, ((32, 32), (2, 4)))
    blocks = {k.block for k in c.program.kernels.values()}
    assert (8, 16, 1) in blocks and (16, 1, 1) in blocks


def test_per_thread_tiles_keep_the_superposition():
    """jacobi-2d-alt, which the superposition (seed 003) maps by default, keeps it with
    per-thread tiles: its block loop i (on thread.y) gets 32 / 2 = 16 threads, each
    computing 2 rows strided by 16, and still matches the CPU."""
    sizes = {"tsteps": 3, "n": 37}
    c0 = compile_source(_src("jacobi-2d-alt"), Options(sizes=sizes, target="emulator"))
    assert any(n.startswith("superposition: better coalescing") for n in c0.note_lines)
    c, r, _ = _compile_run("jacobi-2d-alt", sizes, ((32, 32), (2, 4)))
    assert c.schedule.use_superposition
    assert not any("points per thread" in n for n in c.note_lines)
    assert "per thread: 2 point(s) strided by the block size" in c.summary
    assert c.program.kernels["kernel0"].block == (32, 16, 1)


def test_per_thread_tiles_without_shared_memory():
    """--shared none: the k loop is still sub-tiled so the 4x4 point loops jam inside
    it; C stays in 16 registers across k (loaded and stored once per point), A and B
    are read from global memory once per instance."""
    n = 37
    c, r, opts = _compile_run("gemm", {"N": n}, G44, shared="none")
    (decl,) = c.program.kernels["kernel0"].registers
    assert decl.shape == (16,) and decl.once_per_point
    assert c.program.kernels["kernel0"].block == (16, 16, 1)
    assert not c.program.kernels["kernel0"].shared
    assert "jammed inside the sub-tile loops" in c.summary
    pred = predict_for(c, opts.sizes)["kernel0"]
    assert (pred.loads, pred.stores) == (r.counters["loads"], r.counters["stores"])
    assert (r.counters["loads"], r.counters["stores"]) == (2 * n ** 3 + n * n, n * n)


def test_json_shared_bytes_drop_for_gemm():
    """The CLI's --json shared_bytes: 8 KB with C's duplicate 32x32 buffer (registers
    off), 4 KB without it; 8 KB for the 64x64x16 tile with 4x4 points per thread."""
    import contextlib
    import io
    import json
    from polymagic.cli import main

    def shared(*args):
        # the CLI's main in this process (tests/test_cli.py runs it as a process)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main(["run", str(EXAMPLES / "gemm.c"), "--size", "N=40", "--target", "emulator",
                  "--json", *args])
        return json.loads(buf.getvalue())["shared_bytes"]
    assert shared("--no-registers") == 32 * 32 * 4 + 2 * 32 * 16 * 4
    # by default at N = 40, 8 x 32 tiles fill the grid best (mapping.grid_fill): A's
    # 8 x 16 and B's 16 x 32 sub-tiles, C in registers
    assert shared() == 8 * 16 * 4 + 16 * 32 * 4
    assert shared("--tile", "32,32,16") == 2 * 32 * 16 * 4
    assert shared("--tile", "64,64,16:4,4") == 2 * 64 * 16 * 4


@pytest.mark.parametrize("name, sizes, levels", [
    ("gemm-polybench", {"ni": 37, "nj": 29, "nk": 23}, G44),
    ("2mm", {"ni": 11, "nj": 9, "nk": 13, "nl": 10}, G24),
    ("syrk", {"n": 37, "m": 23}, G44),
    ("jacobi-2d", {"n": 13, "tsteps": 2}, ((32, 32), (2, 4)))])
def test_per_thread_tiles_without_shared_memory_match_cpu(name, sizes, levels):
    c, r, opts = _compile_run(name, sizes, levels, shared="none", emu_order="reverse")
    pred = predict_for(c, opts.sizes)
    emu = r.counters["per_kernel"]
    for k, p in pred.items():
        assert (p.loads, p.stores) == (emu[k]["loads"], emu[k]["stores"]), k


def _example_sizes() -> dict:
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from test_registers import SIZES
    return SIZES


@pytest.mark.parametrize("shared", ["auto", "all"])
@pytest.mark.parametrize("name", sorted(_example_sizes()))
def test_every_example_with_per_thread_tiles_matches_cpu(name, shared):
    _compile_run(name, _example_sizes()[name], G24, shared=shared, emu_order="reverse")
