"""Compile-time decisions of issue 22, checked by what runs, never by the clock.

* Full block tiles are generated apart only where some tile is partial: at sizes
  that are multiples of the 128 x 128 register tile the kernel is one piece (no
  second AST), otherwise the full piece runs under the block's full-tile condition
  and the generic piece for the others (:mod:`polymagic.lower.full_tile_pieces`),
  with the emulator == CPU at sizes that leave partial tiles.
* The explorer's first visit compiles and maps once (it shows the compile it was
  built from, and its mapping), and a tile change re-runs neither the parser, nor the dependence
  analysis, nor isl's scheduler.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic import compiler
from polymagic.options import Options
from polymagic.runtime.run import run

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: gemm with constant sizes: the full-tile set is known at compile time
GEMM_CONST = """
void gemm_c(float C[NN][NN], float A[NN][NN], float B[NN][NN]) {
  for (int i = 0; i < NN; i++)
    for (int j = 0; j < NN; j++)
      for (int k = 0; k < NN; k++)
        C[i][j] += A[i][k] * B[k][j];
}
"""


def _gemm(n: int) -> str:
    return GEMM_CONST.replace("NN", str(n))


def _plan(c):
    (plan,) = c.mapping.plans.values()
    return plan


def test_no_split_when_every_tile_is_full(fresh_cache):
    """256 = 2 x 128: every block tile is full, one piece (isl's AST of the kernel
    once), no full-tile condition in the code."""
    c = compiler.compile_source(_gemm(256), Options(device_sms=0))   # 128x128:8x8 tiles
    plan = _plan(c)
    assert plan.per_thread == (8, 8) and plan.full_instances is None
    assert not plan.full_tiles
    assert "else" not in c.cuda


def test_split_when_some_tile_is_partial(fresh_cache):
    """300 = 2 x 128 + 44: the full tiles' piece under the block's condition, the
    generic piece for the partial ones; emulator == CPU."""
    opts = Options(target="emulator", device_sms=0)      # 128x128:8x8 tiles, not fit
    c = compiler.compile_source(_gemm(300), opts)
    plan = _plan(c)
    assert plan.full_tiles and plan.full_instances is not None
    # the full piece: constant point loops, no per-point guard; the generic one guarded
    assert "if (((int)blockIdx.x) <= 1 && ((int)blockIdx.y) <= 1) {" in c.cuda
    assert "} else {" in c.cuda
    r = run(c, opts)
    assert r.ok, r.message


def test_split_covers_every_instance_at_parametric_sizes():
    """gemm's example (N a parameter): pieces at N = 130 (one full tile, partial
    ones on both axes) and N = 100 (no full tile) run every instance once."""
    src = (ROOT / "examples" / "gemm.c").read_text()
    for n in (100, 130):
        opts = Options(sizes={"N": n}, target="emulator")
        r = run(compiler.compile_source(src, opts), opts)
        assert r.ok, (n, r.message)


def test_explorer_first_visit_compiles_once_and_tile_changes_reuse_the_schedule(fresh_cache):
    pytest.importorskip("ipywidgets")
    from polymagic.report import explore as E
    from polymagic.report.widgets import Explorer
    src = (ROOT / "benchmarks" / "kernels" / "heat-3d.c").read_text()
    mapped = E.MAPPING_RUNS["fresh"]
    ex = Explorer(src, Options(), debounce_s=0)
    compiles = {id(v) for k, v in compiler.driver._CACHE.items() if k[0] == "compile"}
    assert len(compiles) == 1 and ex.timings[0]["compile_cached"]
    # the views read the compile's own mapping, though the controls spell its tiles
    # and block out (they mapped the schedule a second time: 0.3 s of 1.9)
    assert E.MAPPING_RUNS["fresh"] == mapped
    assert ex._as_compiled(ex.options()).compile == ex.compiled.options
    assert ex.compiled.cuda and "error" not in ex.status.value
    tile0 = ex.controls["tile0"].value
    ex.set(tile0=tile0 * 2)
    assert not ex.timings[-1]["compile_cached"] and ex.error is None
    ran = [s.name for s in ex.compiled.stages if not s.cached]
    assert ran == ["lowering", "cuda", "host"]     # parse, dependences, schedule: cached


#: a register-tiled product inside a host time loop (the transposed copy-back carries
#: the time loop across kernels): the full piece is generated with the host loop value
#: as a parameter (:func:`polymagic.lower.full_tile_pieces.launch_values`)
HOST_LOOP = """
void tg2(int T, int N, float C[N][N], float A[N][N], float B[N][N]) {
  for (int t = 0; t < T; t++) {
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++)
        for (int k = 0; k < N; k++)
          C[i][j] += A[i][k] * B[k][j];
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++)
        B[i][j] = 0.001f * C[j][i];
  }
}
"""


@pytest.mark.parametrize("per_kernel", [False, True])
def test_split_under_a_host_loop(per_kernel):
    opts = Options(sizes={"T": 2, "N": 130}, target="emulator", recurrence="wavefront",
                   per_kernel=per_kernel, device_sms=0)
    c = compiler.compile_source(HOST_LOOP, opts)
    assert c.mapping.host_loops == ["t"]
    assert any(p.full_instances is not None for p in c.mapping.plans.values())
    r = run(c, opts)
    assert r.ok, r.message


#: a triangular domain under a host loop (fuzz program 13301000011, shrunk by hand):
#: whether a block's j tile is full depends on the host loop's i (``j <= i``)
TRIANGLE = """
void tri(int N, double alpha, double beta, double C[N + 1][2 * N + 1][2],
         double D[N + 1][N + 1][N + 1]) {
  for (int i = 0; i <= N - 2; i++)
    for (int j = 0; j < N; j++)
      if (j <= i)
        for (int k = 0; k < N - 1; k++)
          C[j][i + j + 1][1] = 0.25 * D[k][j][i] * beta + 0.0625 * C[j][i + j][1] * alpha
                               + 0.0625 * C[j + 1][i + j + 1][1];
}
"""


@pytest.mark.parametrize("per_kernel", [False, True])
def test_full_tile_condition_is_per_launch(per_kernel):
    """The full-tile condition ``F`` of a kernel under a host loop holds the launch's
    host value: a block whose tile is full at later launches only runs the generic
    piece at the earlier ones (``F`` read above the launch filter said "full" for
    every launch, and the full piece's own guard then ran nothing: 148 elements of C
    wrong at N = 18)."""
    opts = Options(sizes={"N": 18}, target="emulator", tile=(8, 8),
                   tile_levels=((8, 8), (2, 2)), per_kernel=per_kernel)
    c = compiler.compile_source(TRIANGLE, opts)
    assert any(p.full_instances is not None for p in c.mapping.plans.values())
    r = run(c, opts)
    assert r.ok, r.message


def test_explorer_run_of_the_first_configuration_reuses_its_compile(fresh_cache):
    """Run before any change runs the compile the explorer was built from (the
    controls spell its default tiles out; a second compile of it took 0.5-1 s)."""
    pytest.importorskip("ipywidgets")
    from polymagic.report.widgets import Explorer
    src = (ROOT / "examples" / "gemm.c").read_text()
    ex = Explorer(src, Options(sizes={"N": 24}, target="emulator"), debounce_s=0)
    before = {k for k in compiler.driver._CACHE if k[0] == "compile"}
    report = ex.run()
    assert report.ok, report.message
    assert {k for k in compiler.driver._CACHE if k[0] == "compile"} == before
