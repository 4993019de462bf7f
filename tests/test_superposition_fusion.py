"""Fusion around thread-level tree reductions (seed 003 §5.4: greedy fusion only when
it keeps coalescing parallelism; issue 4 items 2-3 and 5).

A tree reduction runs one point of its block loop per block (tile 1).  Kernels whose
statements have no loop besides that block loop (gesummv's inits and finishing
statement) are fused with it, run by one thread per block, with barriers between the
steps; two reductions over the same source loop with no dependence between them run
in one pass and one tree.  A kernel that would lose a thread loop (mvt's ``S1``) or
whose block loop would carry a dependence is not fused.  Checked on the plan, in the
emulator against the CPU for sizes that are not multiples of the block, with isl's
legality check (Lemma 1) on a fusion that must be refused, and with NVRTC."""
from __future__ import annotations

import pathlib

import pytest

from polymagic import kir
from polymagic.deps import compute_dependences
from polymagic.frontend import parse
from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run
from polymagic.schedule.superposition import (Kernel, ThreadGroup, check_legality,
                                              plan_superposition)

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _src(name: str) -> str:
    return (EXAMPLES / f"{name}.c").read_text()


def _sizes(name: str, n: int) -> dict:
    return {"m": n, "n": n + 3} if name in ("atax", "bicg") else {"n": n}


def _plan(src: str, **kw):
    scop = parse(src)
    deps = compute_dependences(scop)
    return scop, deps, plan_superposition(scop, deps.validity, **kw)


def _check(src: str, sizes: dict, **kw):
    opts = Options(sizes=sizes, target="emulator", **kw)
    c = compile_source(src, opts)
    r = run(c, opts)
    assert r.ok, r.message
    return c, r


def _barriers(k: kir.Kernel) -> int:
    return sum(isinstance(s, kir.Barrier) for s in kir.walk(k.body))


# ---- gesummv: one kernel ---------------------------------------------------------------

def test_gesummv_plan_is_one_kernel_with_one_reduction_pass():
    _scop, _deps, plan = _plan(_src("gesummv"))
    assert plan.legal
    (k,) = plan.kernels()
    assert k.statements == ["S0", "S1", "S2", "S3", "S4"]
    groups = [g for g in k.body if isinstance(g, ThreadGroup)]
    assert [(g.statements, g.reduction, len(g.dims)) for g in groups] == \
        [(["S0", "S1"], False, 0), (["S2", "S3"], True, 1), (["S4"], False, 0)]
    text = plan.describe()
    assert "fused around tree reductions" in text and "one tree pass" in text


def test_gesummv_unfused_plan_is_still_available():
    """``fuse_reductions=False`` (the fallback when isl refuses a fused plan) keeps
    every tree reduction in a kernel of its own, as before."""
    _scop, _deps, plan = _plan(_src("gesummv"), fuse_reductions=False)
    assert plan.legal and len(plan.kernels()) == 4
    assert "not fused: tree reduction" in plan.describe()


@pytest.mark.parametrize("n", [1, 37, 100, 300])
@pytest.mark.parametrize("block", [None, (30,), (7,)])
def test_gesummv_one_kernel_matches_cpu(n, block):
    if n == 300 and block is not None:
        pytest.skip("one large size is enough")
    c, r = _check(_src("gesummv"), {"n": n}, block=block)
    (k,) = c.program.kernels.values()
    assert sorted(d.name for d in k.shared) == ["pm_red_S2", "pm_red_S3"]
    # 2 barriers between the steps, one after the partial results are stored, one per
    # halving step: both registers share one tree
    bx = k.block[0]
    halvings = 0
    while bx > 1:
        bx, halvings = (bx + 1) // 2, halvings + 1
    assert _barriers(k) == 3 + halvings


def test_gesummv_fused_stores_and_loads():
    """One kernel: A, B and x read once per (i, j) (one pass: x[j] loaded once into a
    register for both partial sums), each of tmp/y written by its init, its tree, S4."""
    n = 37
    c, r = _check(_src("gesummv"), {"n": n})
    assert r.counters["stores"] == 5 * n            # S0, S1, two tree results, S4
    assert r.counters["loads"] == 3 * n * n + 4 * n


def test_gesummv_no_reductions_unchanged():
    c, _r = _check(_src("gesummv"), {"n": 37}, reductions=False)
    assert not any(k.shared and any(d.name.startswith("pm_red_") for d in k.shared)
                   for k in c.program.kernels.values())


# ---- the other reduction kernels -------------------------------------------------------

@pytest.mark.parametrize("name, kernels", [("atax", 2), ("bicg", 2), ("mvt", 2),
                                           ("gemver", 3)])
@pytest.mark.parametrize("n", [37, 100])
def test_other_kernels_match_cpu(name, kernels, n):
    c, _r = _check(_src(name), _sizes(name, n))
    assert len(c.program.kernels) == kernels


def test_atax_inits_fused_with_its_reduction():
    _scop, _deps, plan = _plan(_src("atax"))
    ks = plan.kernels()
    assert [k.statements for k in ks] == [["S0", "S1", "S2"], ["S3"]]


def test_mvt_refuses_fusion_that_loses_thread_parallelism():
    """mvt's S1 (x2[i] += A[j][i]*y_2[j]) coalesces on i: in S0's tree-reduction
    kernel (one i per block) its j loop would run in one thread."""
    _scop, _deps, plan = _plan(_src("mvt"))
    assert [k.statements for k in plan.kernels()] == [["S0"], ["S1"]]
    assert "one thread per block (fusion would lose its thread parallelism)" in plan.describe()


# ---- a fusion that would be illegal -----------------------------------------------------

CHAIN = """
void chain(int n, double A[n][n], double x[n], double t[n], double y[n]) {
  for (int i = 0; i < n; i++) {
    t[i] = 0.0;
    for (int j = 0; j < n; j++)
      t[i] += A[i][j] * x[j];
  }
  for (int i = 0; i < n; i++) {
    y[i] = 0.0;
    for (int j = 0; j < n; j++)
      y[i] += A[i][j] * t[j];
  }
}
"""


def test_illegal_fusion_is_refused_and_correct():
    """The second reduction reads every t[j]: fusing it into the first one's kernel
    (one i per block) would read t before other blocks wrote it.  The planner does
    not fuse it, isl's Lemma 1 check rejects the fused plan built by hand, and the
    emitted program matches the CPU."""
    scop, deps, plan = _plan(CHAIN)
    assert plan.legal
    ks = plan.kernels()
    t = [k for k in ks if "S1" in k.statements]
    y = [k for k in ks if "S3" in k.statements]
    assert t and y and t[0] is not y[0]
    # the same kernels fused by hand: block loop i carries the dependence S1 -> S3
    fused = Kernel([s for k in ks for s in k.statements],
                   [{s: v for k in ks for s, v in k.block[0].items()}],
                   [it for k in ks for it in k.body])
    plan.items = [fused]
    problems = check_legality(scop, deps.validity, plan)
    assert any(p.startswith("S1→S3") for p in problems), problems
    for n in (1, 37, 100):
        for block in (None, (30,)):
            _check(CHAIN, {"n": n}, block=block)


# ---- NVRTC ---------------------------------------------------------------------------------

# NVRTC: tests/test_reductions.py::test_cuda_compiles_with_nvrtc compiles the fused
# kernels of gesummv and atax (and the other reduction examples) at two block sizes.


def test_predicted_counts_equal_the_emulator():
    """memory.counts predicts the fused kernel's loads (x[j] once per (i, j))."""
    from polymagic.memory.counts import predict_for
    for n in (5, 37):
        opts = Options(sizes={"n": n}, target="emulator")
        c, r = _check(_src("gesummv"), {"n": n})
        pred = predict_for(c, opts.sizes)
        emu = r.counters["per_kernel"]
        assert {k: (p.loads, p.stores) for k, p in pred.items()} == \
            {k: (v["loads"], v["stores"]) for k, v in emu.items()}


@pytest.mark.parametrize("kw", [{"tile": (16,)}, {"tile": (3,), "block": (64,)},
                                {"shared": "none"}, {"emu_order": "reverse", "seed": 5,
                                                     "block": (33,)}],
                         ids=["tile16", "tile3-block64", "no-shared", "reverse-order"])
def test_gesummv_fused_variants_match_cpu(kw):
    """A given block tile (several rows per block: the reductions run one row after
    the other, the one-thread statements loop over the rows), no shared memory, and
    the emulator's reversed thread order (race hunting) still give the CPU's result."""
    c, _r = _check(_src("gesummv"), {"n": 37}, **kw)
    assert len(c.program.kernels) == 1


THREE = """
void three(int n, float A[n][n], float B[n][n], float x[n], float r[n], float s[n],
           float p[n]) {
  for (int i = 0; i < n; i++) {
    r[i] = A[i][0];
    s[i] = 1.0f;
    p[i] = 0.0f;
    for (int j = 0; j <= i; j++) {
      r[i] = fmaxf(r[i], A[i][j]);
      s[i] = s[i] * (1.0f + 0.001f * B[i][j]);
      p[i] += A[i][j] * x[j] + B[i][j];
    }
    p[i] = p[i] + r[i] * s[i];
  }
}
"""
# the second reduction reads the first one's result: two trees, one after the other
CHAINED_IN_ROW = """
void row(int n, double A[n][n], double x[n], double t[n], double u[n], double v[n]) {
  for (int i = 0; i < n; i++) {
    t[i] = 0.0;
    for (int j = 0; j < n; j++)
      t[i] += A[i][j] * x[j];
    u[i] = 2.0 * t[i];
    for (int j = 0; j < n; j++)
      u[i] += A[i][j] * t[i];
    v[i] = u[i] - t[i];
  }
}
"""


@pytest.mark.parametrize("n", [1, 5, 37, 70])
def test_three_operators_one_pass_triangular(n):
    """max, product and sum over a triangular j in one pass and one tree; A and B
    are loaded once per (i, j) for the three of them."""
    c, _r = _check(THREE, {"n": n})
    (k,) = c.program.kernels.values()
    assert sorted(d.name for d in k.shared) == ["pm_red_S3", "pm_red_S4", "pm_red_S5"]
    if n > 1:
        assert sum(a.array in ("A", "B") for s in kir.walk(k.body) if isinstance(s, kir.Compute)
                   for a in _reads(s)) == 2 + 1      # the two shared loads + r's init


def _reads(c: kir.Compute):
    from polymagic.expr import accesses
    return accesses(c.assign.value)


@pytest.mark.parametrize("n", [1, 37])
def test_dependent_reductions_stay_two_trees(n):
    _scop, _deps, plan = _plan(CHAINED_IN_ROW)
    (k,) = plan.kernels()
    reds = [g.statements for g in k.body if isinstance(g, ThreadGroup) and g.reduction]
    assert reds == [["S1"], ["S3"]]
    _check(CHAINED_IN_ROW, {"n": n})
