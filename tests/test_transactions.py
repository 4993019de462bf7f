"""Warp transactions measured by the emulator (seed 003 §6.3, issue 4 item 7).

A request is one warp (32 consecutive linear thread ids, x fastest) executing one
global access of the generated code; its transactions are the distinct 32-byte
sectors its 32 addresses touch (128-byte lines counted too).  The expected values
below come from first principles: the byte address of every element a warp
touches, from the device layout the transfer plan reports (offset and strides in
elements) and the element size.
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.report.fmt import transactions
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

COPY = """
void copy(int N, int M, {t} A[N][M], {t} B[N][M]) {{
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      B[i][j] = A[i][j];
}}
"""
# the same copy with the loops swapped: i (the row) goes to thread x
COPY_T = """
void copyt(int N, int M, float A[N][M], float B[N][M]) {
  for (int j = 0; j < M; j++)
    for (int i = 0; i < N; i++)
      B[i][j] = A[i][j];
}
"""
SHIFT = """
void shift(int N, int M, float A[N][M], float B[N][M]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M - 1; j++)
      B[i][j] = A[i][j + 1];
}
"""


def _run(src, sizes, namespace=None, **kw):
    opts = Options(sizes=sizes, target="emulator", **kw)
    c = compile_source(src, opts)
    r = run(c, opts, namespace)
    assert r.ok, r.message
    return c, r


def _expected(layout: dict, itemsize: int, requests) -> tuple[int, int, int]:
    """(requests, sectors, lines) of warp requests given as lists of array indices."""
    n_sec = n_lines = 0
    for req in requests:
        addrs = [(layout["offset"] + sum(s * x for s, x in zip(layout["strides"], idx)))
                 * itemsize for idx in req]
        n_sec += len({a // 32 for a in addrs} | {(a + itemsize - 1) // 32 for a in addrs})
        n_lines += len({a // 128 for a in addrs} | {(a + itemsize - 1) // 128 for a in addrs})
    return len(requests), n_sec, n_lines


def _rows(n_outer: int, n_x: int, transpose: bool = False, shift: int = 0):
    """Warp requests of a 2-d kernel whose thread x runs along ``n_x`` in tiles of
    32: one request per outer index and 32-wide chunk; index (outer, x + shift),
    or (x, outer) when ``transpose``."""
    out = []
    for o in range(n_outer):
        for x0 in range(0, n_x, 32):
            xs = range(x0, min(x0 + 32, n_x))
            out.append([(x, o) if transpose else (o, x + shift) for x in xs])
    return out


def _kernel_tx(r) -> dict:
    (tx,) = r.counters["transactions"].values()
    return tx


@pytest.mark.parametrize("ctype, itemsize", [("float", 4), ("double", 8)])
def test_coalesced_copy(ctype, itemsize):
    """Thread x on the contiguous index: 32 consecutive elements per request, i.e.
    32·4 B = 128 B = 4 sectors (1 line) for fp32, 256 B = 8 sectors (2 lines) for fp64."""
    c, r = _run(COPY.format(t=ctype), {"N": 64, "M": 64})
    assert "j→block.x/thread.x" in c.summary
    tx = _kernel_tx(r)
    lay = r.transfers["per_array"]
    assert _expected(lay["A"]["layout"], itemsize, _rows(64, 64)) == \
        (tx["load_requests"], tx["load_sectors"], tx["load_lines"]) == \
        (128, 128 * itemsize, 128 * itemsize // 4)
    assert _expected(lay["B"]["layout"], itemsize, _rows(64, 64)) == \
        (tx["store_requests"], tx["store_sectors"], tx["store_lines"])
    tot = transactions(r.counters)
    assert tot["transactions_per_request"] == itemsize          # 4.0 / 8.0
    assert tot["load_transactions_per_request"] == tot["store_transactions_per_request"]


def test_transposed_access_takes_one_sector_per_thread():
    """Thread x on the row index (the single-schedule mapping puts the innermost
    loop there): 32 rows of 64 floats (256 B apart) per request: 32 sectors and 32
    lines."""
    c, r = _run(COPY_T, {"N": 64, "M": 64}, mapping="single")
    assert "i→block.x/thread.x" in c.summary
    tx = _kernel_tx(r)
    assert tx["load_sectors"] == tx["load_lines"] == 32 * tx["load_requests"] == 32 * 128
    assert tx["store_sectors"] == 32 * tx["store_requests"] == 32 * 128
    assert _expected(r.transfers["per_array"]["A"]["layout"], 4, _rows(64, 64, True)) == \
        (128, 32 * 128, 32 * 128)
    assert transactions(r.counters)["transactions_per_request"] == 32


def test_superposition_coalesces_the_transposed_loop_order():
    """Seed 003 §5.2: the DL model sends j (the contiguous index) to thread x even
    though it is the outer loop: 32 -> 4 sectors per request."""
    c, r = _run(COPY_T, {"N": 64, "M": 64}, mapping="superposition")
    assert "j→thread.x" in c.summary
    tx = _kernel_tx(r)
    assert (tx["load_requests"], tx["load_sectors"], tx["load_lines"]) == (128, 512, 128)
    assert transactions(r.counters)["transactions_per_request"] == 4


def test_transposed_numpy_view_changes_the_count():
    """The same coalesced kernel on ``X.T``: the transfer plan keeps the view's layout
    (column-major in the device buffer), so A's loads become 32 sectors per request
    while B's stores stay at 4."""
    x = np.random.default_rng(0).random((64, 64)).astype(np.float32)
    b = np.zeros((64, 64), np.float32)
    _, r = _run(COPY.format(t="float"), {"N": 64, "M": 64}, {"A": x.T, "B": b})
    assert np.array_equal(b, x.T)
    lay = r.transfers["per_array"]["A"]["layout"]
    assert lay["strides"] == [1, 64]
    tx = _kernel_tx(r)
    assert (tx["load_requests"], tx["load_sectors"], tx["load_lines"]) == \
        _expected(lay, 4, _rows(64, 64)) == (128, 32 * 128, 32 * 128)
    assert (tx["store_requests"], tx["store_sectors"]) == (128, 4 * 128)


def test_partial_warps_and_packed_offsets():
    """40x40 with a shifted read: edge blocks have 8-lane warps; the transfer plan
    packs both arrays compactly (row stride 39, A's element 0 one slot before its
    buffer), so rows are not 128-byte aligned and lines straddle."""
    _, r = _run(SHIFT, {"N": 40, "M": 40})
    lay = r.transfers["per_array"]
    tx = _kernel_tx(r)
    assert (tx["load_requests"], tx["load_sectors"], tx["load_lines"]) == \
        _expected(lay["A"]["layout"], 4, _rows(40, 39, shift=1))
    assert (tx["store_requests"], tx["store_sectors"], tx["store_lines"]) == \
        _expected(lay["B"]["layout"], 4, _rows(40, 39))
    assert tx["load_requests"] == 80 and tx["load_sectors"] > 4 * 40   # not all aligned


@pytest.mark.parametrize("name, sizes", [("gemm", {"N": 45}), ("jacobi-2d", {"n": 40, "tsteps": 2})])
def test_counts_do_not_depend_on_the_emulator_order(name, sizes):
    """Barrier kernels (shared-memory copies) included: the same requests, sectors
    and lines under forward, reverse and shuffled block/thread orders."""
    src = (EXAMPLES / f"{name}.c").read_text()
    seen = []
    for order, seed in [("forward", 0), ("reverse", 0), ("shuffle", 1), ("shuffle", 7)]:
        _, r = _run(src, sizes, emu_order=order, seed=seed)
        seen.append(r.counters["transactions"])
    assert all(s == seen[0] for s in seen)
    assert all(t["load_requests"] > 0 for t in seen[0].values())


def test_counting_can_be_switched_off():
    from polymagic.runtime.emulator import build
    c = compile_source(COPY.format(t="float"), Options(sizes={"N": 8, "M": 8}))
    mod = build(c.program)
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    on = mod.run({"A": a, "B": np.zeros_like(a)}, {"N": 8, "M": 8})
    off = mod.run({"A": a, "B": np.zeros_like(a)}, {"N": 8, "M": 8}, transactions=False)
    assert off.tx is None and off.counters == on.counters
    # whole 8x8 arrays, each its own allocation; 32x8 blocks: a warp is one row of
    # threads, 8 of them active, 8 floats = 32 B = 1 sector per request, 8 rows
    assert on.tx == {"load_requests": 8, "load_sectors": 8, "load_lines": 8,
                     "store_requests": 8, "store_sectors": 8, "store_lines": 8}


def test_json_and_text_report(capsys, tmp_path):
    from polymagic.cli import main
    p = tmp_path / "copy.c"
    p.write_text(COPY.format(t="double"))
    args = ["run", str(p), "--size", "N=64,M=64", "--target", "emulator"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["global_transactions"] == 2 * 128 * 8
    assert out["transactions_per_request"] == 8
    assert out["transactions"]["load_lines"] == 256
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "memory: 4,096 global loads, 4,096 stores; 8 sectors per warp request" in text
    assert "fully coalesced is 8)" in text
    assert main(args[:-1] + ["openmp", "--json"]) == 0
    omp = json.loads(capsys.readouterr().out)
    assert omp["global_transactions"] is None and omp["transactions_per_request"] is None


def test_warps_span_thread_rows_for_narrow_blocks():
    """--block 16,16: a warp is two rows of 16 threads (linear id x fastest), so a
    request reads two 64-byte row pieces of 16 floats: 4 sectors but 2 lines."""
    c, r = _run(COPY.format(t="float"), {"N": 64, "M": 64}, block=(16, 16))
    assert c.program.kernels["kernel0"].block == (16, 16, 1)
    tx = _kernel_tx(r)
    assert (tx["load_requests"], tx["load_sectors"], tx["load_lines"]) == (128, 512, 256)


def test_too_many_addresses_give_no_counts_rather_than_wrong_ones():
    from polymagic.runtime.emulator import build
    c = compile_source(COPY.format(t="float"), Options(sizes={"N": 64, "M": 64}))
    mod = build(c.program, extra_cflags=("-DPM_TX_MAX_BYTES=4096",))
    a = np.ones((64, 64), np.float32)
    r = mod.run({"A": a, "B": np.zeros_like(a)}, {"N": 64, "M": 64})
    assert r.tx is None and r.tx_counters is None and r.loads == 4096


def test_tiled_launches_are_counted_too():
    """--device-mem splits the launch into tiles with their own buffers; every
    tile's requests are counted (the copy's rows stay 256 B apart: 4 sectors)."""
    _, r = _run(COPY.format(t="float"), {"N": 64, "M": 64}, device_mem=12 * 1024)
    assert r.transfers["mode"] == "tiled" and r.transfers["tiles"] > 1
    tx = _kernel_tx(r)
    assert (tx["load_requests"], tx["load_sectors"]) == (128, 512)


def test_per_kernel_summary_in_the_report():
    from polymagic.report.text import to_text
    c, r = _run((EXAMPLES / "jacobi-2d.c").read_text(), {"n": 40, "tsteps": 2})
    tx = transactions(r.counters)
    assert set(tx["per_kernel"]) == {"kernel0", "kernel1"}
    assert sum(v["transactions"] for v in tx["per_kernel"].values()) == tx["transactions"]
    assert "sectors per warp request" in to_text(r, c)
    assert "; by kernel: kernel0 " in to_text(r, c)


def test_one_thread_kernels_count_every_access_as_a_request():
    """A kernel without parallel loops runs on one thread: each access is its own
    request of one sector (4-byte elements never straddle 32-byte sectors)."""
    src = """
void prefix(int N, float A[N]) {
  for (int i = 1; i < N; i++)
    A[i] = A[i] + A[i - 1];
}
"""
    c, r = _run(src, {"N": 50})
    assert all(k.block == (1, 1, 1) for k in c.program.kernels.values())
    tx = _kernel_tx(r)
    assert tx["load_requests"] == tx["load_sectors"] == tx["load_lines"] == r.counters["loads"]
    assert tx["store_requests"] == tx["store_sectors"] == r.counters["stores"] == 49


def test_layout_of_numpy_views_steers_the_dl_model():
    """Seed 003 §5.2 with the arrays' real strides (issue 4 item 7): with both arrays
    passed as transposed views, the contiguous index is i, so the layout-specialised
    compilation puts i on thread x and the copy coalesces again (4 sectors per
    request), where the compilation for the declared layout gives 32."""
    from polymagic.compiler import array_layout, specialise_layout
    rng = np.random.default_rng(1)
    x = rng.random((64, 64)).astype(np.float32)
    views = {"A": x.T, "B": np.zeros((64, 64), np.float32).T}
    opts = Options(sizes={"N": 64, "M": 64}, target="emulator")
    declared = compile_source(COPY.format(t="float"), opts)
    assert array_layout(declared.scop, views) == (("A", (1, 64)), ("B", (1, 64)))
    assert array_layout(declared.scop, {"A": x, "B": x.copy()}) == ()
    plain = run(declared, opts, {"A": x.T, "B": np.zeros((64, 64), np.float32).T})
    assert plain.ok and transactions(plain.counters)["transactions_per_request"] == 32
    c, o = specialise_layout(declared, opts, views)
    assert o.layout == (("A", (1, 64)), ("B", (1, 64)))
    assert "i→thread.x" in c.summary and any("real strides of A" in n for n in c.note_lines)
    r = run(c, o, views)
    assert r.ok, r.message
    assert np.array_equal(views["B"], x.T)
    assert transactions(r.counters)["transactions_per_request"] == 4
    # contiguous arrays afterwards: back to the declared-layout compilation
    again, o2 = specialise_layout(c, o, {"A": x, "B": x.copy()})
    assert o2.layout == () and again.summary == declared.summary
