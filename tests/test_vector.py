"""16-byte vector copies between global and shared memory (seed 002 §3.4: float4 /
double2 loads and stores where alignment and contiguity allow).

A buffer whose copy sets are made of whole 16-byte chunks (when the array's rows are,
innermost extent ≡ 0 mod w) is copied by one statement over the chunks of its rows
(``memory.plan.chunk_domain``); a chunk is one 16-byte access when isl's guard says
it is whole and the rows aligned, and the array base's alignment (``pm_aligned16``)
holds, else its elements one by one.  Buffers whose rows start or end inside chunks
(jacobi's halo) keep element copies.  Evidence: the KIR holds ``kir.VectorCopy``
nodes, the emulator (which checks the alignment of every vector access) equals the
CPU for sizes that are multiples of 4 and sizes that are not, its element counts
equal the plan's prediction, load requests fall, and the CUDA compiles with NVRTC.
"""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from polymagic import kir
from polymagic.codegen.nvrtc import compile_cuda
from polymagic.errors import EmulatorError
from polymagic.expr import Call, Int
from polymagic.mapping import map_schedule
from polymagic.memory.counts import predict_for
from polymagic.options import Options, parse_options
from polymagic.compiler import compile_source
from polymagic.runtime import emulator as E
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

#: (example, its element type, sizes multiple of 4, sizes that are not)
KERNELS = {
    "gemm": ("float", {"N": 64}, {"N": 37}),
    "jacobi-2d": ("double", {"n": 64, "tsteps": 2}, {"n": 37, "tsteps": 2}),
    "2mm": ("double", {"ni": 32, "nj": 36, "nk": 40, "nl": 44},
            {"ni": 37, "nj": 29, "nk": 23, "nl": 19}),
}
TILES = {"default": None, "per-thread": "64,64,16:4,4"}
#: the kernels whose buffers take vector copies (jacobi-2d's halo rows do not)
VECTORISED = sorted(set(KERNELS) - {"jacobi-2d"})


def _src(name: str, ctype: str) -> str:
    text = (EXAMPLES / f"{name}.c").read_text()
    own = KERNELS[name][0]
    return text if ctype == own else text.replace(own, ctype)


def _opts(name: str, sizes: dict, tile: str | None, **kw) -> Options:
    args = "--target emulator --vector"
    if tile:
        if name == "jacobi-2d":          # a 2-d band: block tile and points per thread
            tile = "64,64:4,4"
        args += f" --tile {tile}"
    # device_sms=0: the default tiles at any size (mapping.grid_fill would shrink them)
    return parse_options(args).with_(sizes=sizes, device_sms=0, **kw)


def _vector_copies(c) -> list[kir.VectorCopy]:
    return [s for k in c.program.kernels.values() for s in kir.walk(k.body)
            if isinstance(s, kir.VectorCopy)]


def _guarded(body, inside=False):
    """Every VectorCopy sits in the then-branch of an ``If(pm_aligned16(A))``."""
    for s in body:
        if isinstance(s, kir.VectorCopy):
            yield inside
        elif isinstance(s, kir.Loop):
            yield from _guarded(s.body, inside)
        elif isinstance(s, kir.If):
            g = isinstance(s.cond, Call) and s.cond.func == kir.ALIGNED16
            yield from _guarded(s.then, inside or g)
            yield from _guarded(s.orelse, inside)


@pytest.mark.parametrize("tile", sorted(TILES))
@pytest.mark.parametrize("ctype", ["float", "double"])
@pytest.mark.parametrize("name", VECTORISED)
def test_plan_and_kir_use_vector_copies(name, ctype, tile):
    sizes = KERNELS[name][1]
    opts = _opts(name, sizes, TILES[tile])
    c = compile_source(_src(name, ctype), opts)
    width = 4 if ctype == "float" else 2
    vecs = _vector_copies(c)
    assert vecs and all(v.width == width for v in vecs)
    for v in vecs:                   # global <-> shared, same element type
        arrays = {v.assign.target.array, v.assign.value.array}
        assert len(arrays & set(c.program.arrays)) == 1
    for k in c.program.kernels.values():
        assert all(_guarded(k.body))
    mapping = map_schedule(c.scop, c.schedule, opts.compile)
    bufs = [b for p in mapping.plans.values() if p.memory for b in p.memory.buffers]
    assert any(b.vector == width for b in bufs)
    for b in bufs:
        if b.vector:
            assert b.extents[-1] % width == 0          # 16-byte row pitch
    off = compile_source(_src(name, ctype), opts.with_(vector=False))
    assert not _vector_copies(off)


@pytest.mark.parametrize("tile", sorted(TILES))
@pytest.mark.parametrize("aligned", [True, False], ids=["mult4", "other"])
@pytest.mark.parametrize("ctype", ["float", "double"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_emulator_equals_cpu_and_predicted_counts(name, ctype, aligned, tile):
    """Sizes that are multiples of 4 take the vector path, others the element
    fallback (isl's size guard); both equal the CPU (run's check) and the element
    counts the plan predicts, with vector copies on and off alike."""
    sizes = KERNELS[name][1 if aligned else 2]
    counts = []
    for vector in (True, False):
        opts = _opts(name, sizes, TILES[tile], vector=vector)
        c = compile_source(_src(name, ctype), opts)
        r = run(c, opts)
        assert r.ok, r.message
        pred = predict_for(c, opts.sizes)
        emu = r.counters["per_kernel"]
        for k, p in pred.items():
            assert (p.loads, p.stores) == (emu[k]["loads"], emu[k]["stores"]), k
        counts.append((r.counters["loads"], r.counters["stores"]))
    assert counts[0] == counts[1]


def _load_requests(c, opts) -> int:
    r = run(c, opts)
    assert r.ok, r.message
    return sum(t["load_requests"] for t in r.counters["transactions"].values())


@pytest.mark.parametrize("tile", sorted(TILES))
@pytest.mark.parametrize("name", VECTORISED)
def test_global_load_requests_fall(name, tile):
    ctype, sizes, _ = KERNELS[name]
    on = _opts(name, sizes, TILES[tile])
    req_on = _load_requests(compile_source(_src(name, ctype), on), on)
    off = on.with_(vector=False)
    req_off = _load_requests(compile_source(_src(name, ctype), off), off)
    assert req_on < req_off


def test_gemm_fp32_requests_by_the_chunk_ratio():
    """gemm fp32 N=64: 2x2 blocks of 32x32 (32x8 threads, 8 warps), 4 k sub-tiles of
    16.  Element copies: A's 32x16 tile is 4 rows per warp (32 requests), B's 16x32
    tile 2 rows per warp (16), plus C's 4 point rows per warp once per block (32):
    4 * (4 * 48 + 32) = 896.  float4 chunks: a row's chunks go to 8 lanes (one 128-byte
    line), the rows to the 32 groups of 8 threads: A's rows of 4 chunks are 4 rows per
    warp (8 requests, half the lanes idle), B's rows of 8 chunks 4 rows per warp (4):
    4 * (4 * 12 + 32) = 320.  (The 32 x 32 tile given: by default gemm takes an 8 x 8
    register tile, test_register_tiles.)"""
    ctype, sizes, _ = KERNELS["gemm"]
    on = _opts("gemm", sizes, "32,32,16")
    c = compile_source(_src("gemm", ctype), on)
    off = on.with_(vector=False)
    req_on = _load_requests(c, on)
    req_off = _load_requests(compile_source(_src("gemm", ctype), off), off)
    assert req_off == 4 * (4 * 48 + 32)
    assert req_on == 4 * (4 * 12 + 32)


def test_halo_rows_keep_element_copies():
    """jacobi-2d's buffers start one element before the tile (``32 b - 1``): every
    row's first and last chunks are partial, copied element by element in branches of
    their own (more requests than the element copies), so they keep element copies;
    the plan says which buffers take vector copies."""
    c = compile_source(_src("jacobi-2d", "double"), _opts("jacobi-2d", {"n": 64, "tsteps": 2}, None))
    assert not _vector_copies(c)
    assert not any("double2 copies" in n for n in c.note_lines)
    g = compile_source(_src("gemm", "float"), _opts("gemm", {"N": 64}, "32,32,16"))
    assert sum("float4 copies" in n for n in g.note_lines) == 2


@pytest.mark.parametrize("tile", sorted(TILES))
@pytest.mark.parametrize("ctype", ["float", "double"])
@pytest.mark.parametrize("name", VECTORISED)
def test_vector_copies_compile_with_nvrtc(name, ctype, tile):
    c = compile_source(_src(name, ctype), _opts(name, {}, TILES[tile]))
    assert "*(const float4 *)&" in c.cuda or "*(const double2 *)&" in c.cuda
    assert b".entry" in compile_cuda(c.cuda, "sm_90")


def _run_with_base(c, sizes: dict, base: list[int]):
    """Run the emulator on fresh arrays whose element 0 sits ``base`` bytes into its
    device allocation (as a packed or offset view would)."""
    mod = E.build(c.program, "emulate")
    rng = np.random.default_rng(0)
    arrays = []
    for n, a in c.program.arrays.items():
        from polymagic.expr import evaluate
        from polymagic.dtypes import DTYPES
        shape = tuple(int(evaluate(e, sizes)) for e in a.shape)
        arrays.append(rng.random(shape).astype(DTYPES[a.ctype]))
    ptrs = [x.ctypes.data for x in arrays]
    scalars = {s: 1.5 for s in c.program.scalars}
    r = mod.run_pointers(ptrs, sizes, scalars, base_bytes=base, order="forward")
    return arrays, r


def test_misaligned_base_takes_the_element_fallback():
    """An array whose element 0 is not 16-byte aligned on the device: the run-time
    guard sends every chunk to the element copies; same results, scalar requests."""
    ctype, sizes, _ = KERNELS["gemm"]
    c = compile_source(_src("gemm", ctype), _opts("gemm", sizes, None))
    names = list(c.program.arrays)
    base = [8 if n in ("A", "B") else 0 for n in names]
    out_al, r_al = _run_with_base(c, sizes, [0] * len(names))
    out_mis, r_mis = _run_with_base(c, sizes, base)
    for x, y in zip(out_al, out_mis):
        np.testing.assert_array_equal(x, y)
    off = compile_source(_src("gemm", ctype), _opts("gemm", sizes, None, vector=False))
    out_off, _ = _run_with_base(off, sizes, base)
    for x, y in zip(out_off, out_mis):
        np.testing.assert_array_equal(x, y)
    # the fallback copies a chunk's 4 elements one by one: 4 requests where the
    # aligned run makes 1 (the element copies of --no-vector take 896, see above)
    assert r_mis.tx["load_requests"] > r_al.tx["load_requests"]
    assert r_mis.loads == r_al.loads


def test_emulator_rejects_a_misaligned_vector_access():
    """With the base guard removed by hand, a vector copy from an array at device
    offset 8 is a misaligned 16-byte access: an error, like a bounds error."""
    ctype, sizes, _ = KERNELS["gemm"]
    c = compile_source(_src("gemm", ctype), _opts("gemm", sizes, None))

    def strip(body):
        for s in body:
            if isinstance(s, kir.If):
                if isinstance(s.cond, Call) and s.cond.func == kir.ALIGNED16:
                    s.cond = Int(1)
                strip(s.then)
                strip(s.orelse)
            elif isinstance(s, kir.Loop):
                strip(s.body)
    for k in c.program.kernels.values():
        strip(k.body)
    base = [8 if n == "A" else 0 for n in c.program.arrays]
    with pytest.raises(EmulatorError, match="misaligned vector read of global array A"):
        _run_with_base(c, sizes, base)


def test_no_vector_option():
    assert parse_options("--no-vector").vector is False
    assert parse_options("--vector").vector is True
    assert parse_options("").vector is True           # the default
    assert Options().vector is True
    assert Options().compile != Options(vector=False).compile


@pytest.mark.parametrize("n", [100, 64, 37])
def test_chunks_over_two_dims_reach_every_row(n):
    """Fuzz finding 24: gemver's 16x256 buffer ``sh0_A`` has 128 double2 chunks a row,
    256 threads take 8 chunks each, two rows apart.  isl's AST generator kept one
    chunk per thread when the copy band scanned the chunk's coordinates directly
    (rows 2-15 never copied in, an uninitialised shared read); the copy band now
    scans each thread's round first."""
    src = (EXAMPLES / "gemver.c").read_text()
    opts = parse_options("--target emulator --mapping single --vector").with_(sizes={"n": n})
    c = compile_source(src, opts)
    if n % 2 == 0:
        assert _vector_copies(c)
    rep = run(c, opts)
    assert rep.ok, rep.message
