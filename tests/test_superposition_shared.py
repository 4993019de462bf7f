"""Shared-memory buffers on the superposition's kernels (seed 000 §3 / seed 004 §4.2
composed with seed 003's tree): which arrays get buffers and at which level (the
block tile, or the thread tiles of a thread group), emulator == CPU (it checks
shared-memory races and reads of uninitialised shared memory) at sizes that are and
are not multiples of the tiles, the predicted and counted global loads, and fewer
global loads than without buffers where data is reused."""
from __future__ import annotations

import pathlib

import pytest

from polymagic.memory.counts import predict_for
from polymagic import options as _options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run
from test_superposition import DOITGEN3, KERNELS

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _src(name: str) -> str:
    return DOITGEN3 if name == "doitgen3" else (EXAMPLES / f"{name}.c").read_text()


def Options(**kw) -> _options.Options:
    """The options of every compile here: the superposed tree wherever it is legal,
    even without a coalescing gain (the policy ``require_gain=False``)."""
    return _options.Options(**{"require_gain": False, **kw})


def _buffers(c) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Shared buffers of every kernel: name -> (array, extents)."""
    return {b.name: (b.array, b.extents) for p in c.mapping.plans.values() if p.memory
            for b in p.memory.buffers}


def _loads(name: str, sizes: dict, **kw) -> tuple[int, object]:
    opts = Options(sizes=sizes, target="emulator", **kw)
    c = compile_source(_src(name), opts)
    assert c.schedule.use_superposition
    r = run(c, opts)
    assert r.ok, r.message
    pred = predict_for(c, opts.sizes)
    assert sum(k.loads for k in pred.values()) == r.counters["loads"]
    assert sum(k.stores for k in pred.values()) == r.counters["stores"]
    return r.counters["loads"], c


# ---- which arrays, at which level --------------------------------------------------------

def test_jacobi_2d_alt_buffers_a_per_thread_tile():
    """The block tile (8 rows of i) spans whole rows: A's footprint grows with n, so A
    is buffered per thread tile (8 rows x 32 + halo columns of j, at each step t);
    B (one full-rank reference per statement) is not."""
    opts = Options(sizes={"tsteps": 3, "n": 37}, target="emulator", vector=False)
    c = compile_source(_src("jacobi-2d-alt"), opts)
    assert _buffers(c) == {"sh0t1_A": ("A", (8, 34))}
    assert any(n.startswith("kernel0: A: sh0t1_A[8][34] per thread tile") and
               n.endswith("in thread group [S0]") for n in c.note_lines)
    assert any(n.startswith("kernel0: B: not buffered") for n in c.note_lines)
    assert not any("not planned for its kernels yet" in n for n in c.note_lines)
    body = c.cuda.split("kernel0(", 1)[1]
    # copy-in, barrier, compute, inside the tile loop inside the step loop t
    loop_t = body.index("for (int pm_c1 = 0; pm_c1 <= tsteps - 1")
    copy = body.index("sh0t1_A[((int)threadIdx.y)]")
    use = body.index("f * (sh0t1_A")
    assert loop_t < copy < body.index("__syncthreads()", copy) < use
    for order in ("shuffle", "reverse", "forward"):
        r = run(c, opts.with_(emu_order=order))
        assert r.ok, r.message


# jacobi-2d-alt on rows of 8: a block's rows fit, so A and B stay in shared memory
# across the whole time loop (the step loop's barriers separate the reuses)
NARROW = """
void narrow(int tsteps, int n, float f, float A[n][8], float B[n][8])
{
  for (int t = 0; t < tsteps; t++) {
    for (int i = 0; i < n; i++)
      for (int j = 1; j < 7; j++)
        B[i][j] = f * (A[i][j-1] + A[i][j] + A[i][j+1]);
    for (int i = 0; i < n; i++)
      for (int j = 1; j < 7; j++)
        A[i][j] = B[i][j];
  }
}
"""


def test_block_buffers_live_across_the_step_loop():
    opts = Options(sizes={"tsteps": 4, "n": 37}, target="emulator", vector=False)
    c = compile_source(NARROW, opts)
    assert c.schedule.use_superposition
    assert _buffers(c) == {"sh0_A": ("A", (8, 8)), "sh0_B": ("B", (8, 6))}
    body = c.cuda.split("kernel0(", 1)[1]
    loop_t = body.index("for (int pm_c1 = 0; pm_c1 <= tsteps - 1")
    end_t = body.rindex("__syncthreads();")          # the barrier before the copy-out
    assert body.index("sh0_A[((int)threadIdx.y)][((int)threadIdx.x)] = A[") < loop_t
    assert body.index("B[(((int)threadIdx.y) + 8 * ((int)blockIdx.x)) * 8") > end_t
    assert body.rindex("] = sh0_A[") > end_t and body.rindex("] = sh0_B[") > end_t
    assert body[loop_t:end_t].count("__syncthreads()") == 2   # two per step
    for order in ("shuffle", "reverse"):
        r = run(c, opts.with_(emu_order=order))
        assert r.ok, r.message
        assert r.counters["loads"] == 37 * 8          # each element of A once


def test_vector_copies_into_superposition_buffers():
    """16-byte copies (seed 002 §3.4, the default) take only buffers whose copied rows
    are whole chunks: the thread tile's rows start at the halo ``32c - 1``, inside a
    float4 chunk, so they keep element copies and their unpadded extents."""
    for n in (37, 64):
        opts = Options(sizes={"tsteps": 3, "n": n}, target="emulator", vector=True)
        c = compile_source(_src("jacobi-2d-alt"), opts)
        assert _buffers(c) == {"sh0t1_A": ("A", (8, 34))}
        assert "float4" not in c.cuda
        for order in ("shuffle", "reverse"):
            r = run(c, opts.with_(emu_order=order))
            assert r.ok, r.message


def test_stencil_jacobi_2d_buffers_per_block_with_halo():
    opts = Options(sizes={"tsteps": 2, "n": 45}, target="emulator", vector=False)
    c = compile_source(_src("jacobi-2d"), opts)
    assert _buffers(c) == {"sh0_A": ("A", (10, 34)), "sh1_B": ("B", (10, 34))}
    assert any("kernel0: A: sh0_A[10][34] per block (constant reuse" in n for n in c.note_lines)


def test_doitgen_example_buffers_like_the_paper_form():
    """examples/doitgen.c: its sum[p], reused by every (r, q), is expanded by the
    front end to pm_x_sum[r][q][p] (polymagic/frontend/expansion.py), so r and q
    run on blocks as in seed 003 Figure 4's form (below): A, C4 and the expanded sum
    per thread tile (s sub-tiled by 16); the copy-out of the last sum is kernel1."""
    _, c = _loads("doitgen", {"nr": 3, "nq": 4, "np": 40})
    assert _buffers(c) == {"sh0t1_A": ("A", (2, 4, 16)), "sh0t1_C4": ("C4", (16, 32)),
                           "sh0t1_pm_x_sum": ("pm_x_sum", (2, 4, 32))}
    assert len(c.program.kernels) == 2 and "for " not in c.host_py.split("def host")[1]


def test_doitgen_paper_form_buffers_like_the_single_mapping():
    """Seed 003 Figure 4's doitgen: A, C4 and sum per thread tile (p/32 on thread x,
    s sub-tiled by 16), as the single mapping's sub-tiles."""
    _, c = _loads("doitgen3", {"nr": 5, "nq": 6, "np": 37})
    assert {a for a, _ in _buffers(c).values()} == {"A", "C4", "sum"}
    assert _buffers(c)["sh0t1_C4"] == ("C4", (16, 32))


def test_gemm_c_per_block_a_b_per_sub_tile():
    _, c = _loads("gemm", {"N": 45}, registers=False)
    assert _buffers(c) == {"sh0_C": ("C", (8, 32)), "sh0t1_A": ("A", (8, 16)),
                           "sh0t1_B": ("B", (16, 32))}
    # with registers (the default) C[i][j] lives in one across k: its block buffer goes
    # (seed 004 §4.2, tests/test_superposition_registers.py)
    _, c = _loads("gemm", {"N": 45})
    assert _buffers(c) == {"sh0t1_A": ("A", (8, 16)), "sh0t1_B": ("B", (16, 32))}
    # --tile's third size is the sub-tile of k
    c = compile_source(_src("gemm"), Options(sizes={"N": 45}, tile=(8, 32, 8)))
    assert _buffers(c)["sh0t1_A"] == ("A", (8, 8))


def test_tree_reduction_kernels_keep_no_buffers():
    """atax: the tree reduction is fused with the inits (kernel0, tests/test_superposition_fusion.py)."""
    opts = Options(sizes={"m": 20, "n": 30}, target="emulator")
    c = compile_source(_src("atax"), opts)
    assert any("kernel0: no buffers: its tree reductions" in n for n in c.note_lines)
    assert run(c, opts).ok


# ---- options: the single mapping's decision rule --------------------------------------------

def test_options_no_shared_all_delta_and_shared_mem():
    sizes = {"tsteps": 2, "n": 45}
    src = _src("jacobi-2d")
    assert _buffers(compile_source(src, Options(sizes=sizes, shared="none"))) == {}
    every = _buffers(compile_source(src, Options(sizes=sizes, shared="all")))
    assert {"sh0_A", "sh0_B", "sh1_A", "sh1_B"} <= set(every)
    assert _buffers(compile_source(src, Options(sizes=sizes, delta=100.0))) == {}
    c = compile_source(src, Options(sizes=sizes, shared_mem=1024, vector=False))
    assert _buffers(c) == {}
    assert any("sh0_A dropped: 2720 bytes of shared memory would exceed the 1024 a block may use" in n for n in c.note_lines)


# ---- global loads fall where data is reused ---------------------------------------------------

@pytest.mark.parametrize("name, sizes, most", [
    ("jacobi-2d-alt", {"tsteps": 3, "n": 50}, 0.55),
    ("jacobi-2d", {"tsteps": 2, "n": 50}, 0.35),
    ("gemm", {"N": 50}, 0.15),
    ("doitgen", {"nr": 3, "nq": 4, "np": 40}, 0.5),
    ("doitgen3", {"nr": 5, "nq": 6, "np": 37}, 0.5),
])
def test_global_loads_fall_against_no_shared(name, sizes, most):
    with_buffers, _ = _loads(name, sizes)
    # registers off on this side: doitgen's sum[p] register, hoisted around s only (S0
    # and S2 access sum outside it), is loaded once per (point, r, q) and the counts
    # model predicts only registers loaded once per thread point; seed 001's default
    # localisation off too (the counts model does not predict its moves)
    without, c = _loads(name, sizes, shared="none", registers=False, localise_auto=False)
    assert _buffers(c) == {}
    assert with_buffers <= most * without, (with_buffers, without)


# ---- every example: emulator == CPU, NVRTC ----------------------------------------------------

# the examples the end-to-end suite leaves out
OTHERS = {"coulomb": ({"NY": 19, "NX": 37, "NA": 5}, {"NY": 3, "NX": 5, "NA": 2}),
          "gauss-seidel-2d": ({"m": 3, "n": 37}, {"m": 2, "n": 5}),
          "sor-1d": ({"m": 4, "n": 41}, {"m": 2, "n": 3}),
          "sor-1d-seq": ({"m": 4, "n": 41}, {"m": 2, "n": 3}),
          "gemver": ({"n": 37}, {"n": 5})}
ALL = {**KERNELS, **OTHERS}


def test_every_example_is_covered():
    assert set(ALL) == {p.stem for p in EXAMPLES.glob("*.c")}


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_example_matches_cpu_with_buffers(name):
    """The end-to-end sizes (several tiles; below one tile) and tiles that are not
    multiples of the block (thread tiles straddle the block tiles), every buffer
    (--shared all) in one run."""
    big, small = ALL[name]
    for sizes, kw in ((big, dict(tile=(6, 10), block=(4, 4, 1), emu_order="reverse")),
                      (big, dict(shared="all", emu_order="shuffle")),
                      (small, {})):
        opts = Options(sizes=sizes, target="emulator", mapping="superposition", **kw)
        c = compile_source(_src(name), opts)
        r = run(c, opts)
        assert r.ok, f"{name} {kw}: {r.message}"


def test_buffered_cuda_compiles_with_nvrtc():
    from polymagic.codegen.nvrtc import compile_cuda
    for name in ("jacobi-2d-alt", "jacobi-2d", "gemm", "2mm", "doitgen", "fdtd-2d", "doitgen3"):
        c = compile_source(_src(name), Options(mapping="superposition"))
        assert c.schedule.use_superposition and _buffers(c), name
        assert b".entry" in compile_cuda(c.cuda, "sm_90"), name
