"""Register tiles by default and full tiles apart from partial ones (issue 16, items 1-2).

A compute-bound band (:func:`polymagic.mapping.register_tiles.compute_bound`) gets,
at default options, a 128 x 128 block tile with 8 x 8 points per thread; isl's
``isolate`` option (:mod:`polymagic.mapping.full_tiles`) generates the full block
tiles apart, where the point loops have constant trip counts and no guard.  Checked
here: the decision (and where it is not taken), the generated code's shape, emulator
== CPU at sizes that leave partial tiles on every axis, below one tile and at tile
multiples, the predicted global loads and stores == the emulator's (the accumulators
loaded and stored once per point across the isolated pieces), and the sm_90 machine
code of the ``+=`` kernels (FMA share, FMAs per shared load, no spills).

The small sizes here would make the grid-fill rule (:mod:`polymagic.mapping.grid_fill`,
tested in ``test_grid_fill.py``) shrink the tiles: these tests compile with
``device_sms=0`` (no device model: the 128 x 128 register tiles at any size).
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic.compiler import compile_source
from polymagic.memory.counts import predict_for
from polymagic.options import Options
from polymagic.runtime.run import run

from bench_modules import load

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
KERNELS = ROOT / "benchmarks" / "kernels"

#: gemm without alpha, rectangular: partial tiles along i, j and k at 300 x 260 x 200
GEMM_RECT = """
void gemm_rect(int ni, int nj, int nk, float C[ni][nj], float A[ni][nk], float B[nk][nj]) {
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nj; j++)
      for (int k = 0; k < nk; k++)
        C[i][j] += A[i][k] * B[k][j];
}
"""


def _source(name: str) -> str:
    if name == "gemm-rect":
        return GEMM_RECT
    path = EXAMPLES / f"{name}.c"
    return (path if path.exists() else KERNELS / f"{name}.c").read_text()


def _compile_run(name: str, sizes: dict, **kw):
    opts = Options(sizes=sizes, target="emulator", device_sms=0, **kw)
    c = compile_source(_source(name), opts)
    r = run(c, opts)
    assert r.ok, f"{name} {sizes}: {r.message}"
    return c, r, opts


def _plans(c):
    return {p.name[len("pm_"):]: p for p in c.mapping.plans.values()}


@pytest.mark.parametrize("name, sizes, tiled", [
    ("gemm", {"N": 40}, ["kernel0"]),
    ("gemm-acc", {"N": 40}, ["kernel0"]),
    ("2mm-acc", {"ni": 20, "nj": 18, "nk": 22, "nl": 24}, ["kernel1", "kernel2"]),
    ("syrk-acc", {"n": 20, "m": 18}, ["kernel0"]),
    # an initialisation fused into the band (C *= beta at k = 0), split off the k steps
    ("gemm-polybench", {"ni": 20, "nj": 18, "nk": 22}, ["kernel0"]),
    ("syrk", {"n": 20, "m": 18}, ["kernel0"]),
    ("2mm", {"ni": 20, "nj": 18, "nk": 22, "nl": 24}, ["kernel1", "kernel2"]),
    # no reduction inside the parallel loops
    ("jacobi-2d", {"tsteps": 2, "n": 20}, []),
    ("mvt", {"n": 20}, []),
])
def test_default_register_tile_decision(name, sizes, tiled):
    c = compile_source(_source(name), Options(sizes=sizes, target="emulator", device_sms=0))
    plans = _plans(c)
    got = sorted(k for k, p in plans.items() if p.per_thread == (8, 8))
    assert got == tiled
    for k in tiled:
        p = plans[k]
        assert [(m.tile, m.threads) for m in p.members] == [(128, 16), (128, 16)]
        assert p.jammed and p.full_tiles
        assert c.program.kernels[k].block == (16, 16, 1)


def test_options_keep_their_tiles():
    """A tile, a block, --no-registers or --shared none: no default register tile."""
    src = _source("gemm-acc")
    for kw in ({"tile": (32, 32, 16)}, {"block": (32, 8)}, {"registers": False},
               {"shared": "none"}):
        c = compile_source(src, Options(sizes={"N": 40}, target="emulator", device_sms=0, **kw))
        (plan,) = c.mapping.plans.values()
        assert plan.per_thread != (8, 8), kw


def test_full_tile_code_has_no_guards_and_unrolled_points():
    """The full-tile piece: the 8 x 8 point loops constant and unguarded (isl
    simplified their bounds to the tile's), unrolled, the accumulators one register
    array shared by the full and the boundary pieces."""
    c = compile_source(_source("gemm-acc"), Options(sizes={"N": 4096}, target="emulator"))
    cuda = c.cuda
    full = cuda.index("N >= 128 * ((int)blockIdx.x) + 128 && N >= 128 * ((int)blockIdx.y) + 128")
    rest = cuda.index("if (pm_c4 <= pm_min(127, N - 128 * ((int)blockIdx.y) - 1)")
    assert full < rest
    piece = cuda[full:rest]
    assert "pm_r0_C[pm_c4_u * 8 + pm_c5_u] += sh0_A[pm_c4][pm_c3] * sh0_B[pm_c3][pm_c5];" in piece
    assert "if (pm_c4 <=" not in piece and "if (pm_c5 <=" not in piece
    assert piece.count("#pragma unroll") >= 6
    (decl,) = c.program.kernels["kernel0"].registers
    assert decl.shape == (64,) and decl.once_per_point
    assert "per thread: 8 x 8 points" in c.summary


@pytest.mark.parametrize("name, sizes", [
    ("gemm-rect", {"ni": 300, "nj": 260, "nk": 200}),     # partial tiles on every axis
    ("gemm-rect", {"ni": 5, "nj": 6, "nk": 7}),           # below one tile
    ("gemm-rect", {"ni": 256, "nj": 128, "nk": 32}),      # full tiles only
    ("gemm", {"N": 130}),
    ("2mm-acc", {"ni": 140, "nj": 131, "nk": 20, "nl": 129}),
    ("syrk-acc", {"n": 150, "m": 21}),                   # triangular: full and diagonal tiles
    ("syrk-acc", {"n": 3, "m": 2}),
    ("gemm-polybench", {"ni": 300, "nj": 260, "nk": 200}),
    ("syrk", {"n": 150, "m": 21}),
    ("2mm", {"ni": 140, "nj": 131, "nk": 20, "nl": 129}),
])
def test_emulator_matches_cpu_and_counts(name, sizes):
    c, r, opts = _compile_run(name, sizes)
    assert any(p.full_tiles for p in c.mapping.plans.values())
    pred = predict_for(c, opts.sizes)
    for k, counts in r.counters["per_kernel"].items():
        assert (pred[k].loads, pred[k].stores) == (counts["loads"], counts["stores"]), k


def test_syrk_reads_of_a_get_a_buffer_each():
    """syrk's A[i][k] and A[j][k] overlap only on diagonal blocks: their union's box
    grows with the problem size, each alone does not, A is read-only: one buffer each."""
    c = compile_source(_source("syrk-acc"), Options(sizes={"n": 40, "m": 30},
                                                    target="emulator", device_sms=0))
    assert "sh0_A_0[128][16]" in c.cuda and "sh0_A_1[128][16]" in c.cuda


def test_gemm_accumulators_move_once_per_point():
    """C loaded and stored once per point whether its block tile is full or not."""
    ni, nj, nk = 140, 130, 20
    c, r, _ = _compile_run("gemm-rect", {"ni": ni, "nj": nj, "nk": nk})
    assert r.counters["stores"] == ni * nj
    (decl,) = c.program.kernels["kernel0"].registers
    assert decl.once_per_point


# ---- machine code (sm_90, no GPU): the += kernels at issue 16's sizes ------------------

def _static_perf():
    return load("static_perf")


@pytest.mark.parametrize("name, sizes, fma", [
    ("gemm-acc", {"N": 4096}, "ffma"),
    ("2mm-acc", {"ni": 2048, "nj": 2048, "nk": 2048, "nl": 2048}, "dfma"),
    ("syrk-acc", {"n": 2048, "m": 2048}, "dfma"),
])
def test_register_tile_machine_code(name, sizes, fma):
    sp = _static_perf()
    nvdisasm = sp.find_nvdisasm()
    if nvdisasm is None:
        pytest.skip("nvdisasm is not installed (pip install nvidia-cuda-nvdisasm)")
    r = sp.program_report(name, KERNELS / f"{name}.c", sizes, nvdisasm)
    assert not r.error
    tiled = [k for k in r.kernels if k.mix.fma]
    assert tiled
    for k in tiled:
        m = k.mix
        assert getattr(m, fma) == m.fma == 64          # one k step of the 8 x 8 tile
        assert m.fma_share >= 0.6, (k.kernel, m)
        assert m.fma / m.lds >= 4, (k.kernel, m)
        assert k.spill_stores == k.spill_loads == 0 and k.registers <= 255


def test_a_mapped_loop_of_constant_small_extent_gets_no_register_tile():
    """n-body's ``d < 3`` beside ``i``: a 128-wide tile of 3 points is not compute bound."""
    src = (pathlib.Path(__file__).parent.parent / "benchmarks/kernels/nbody-potential.c").read_text()
    opts = Options(sizes={"n": 40, "eps": 0.5})
    compiled = compile_source(src, opts)
    assert all(not any(t > 1 for t in p.per_thread) for p in compiled.mapping.plans.values())
    assert run(compiled, opts).ok
