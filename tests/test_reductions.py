"""Thread-level tree reductions (seed 003 §5.3 reduction loops on threads; issue 4
item 5): a coalescing reduction loop goes to thread x, each thread accumulates its
cyclic share in a register, the block reduces the partial results in shared memory
(any block size) and thread 0 combines with the global element.  Checked in the
emulator against the CPU reference, for sizes below and not multiples of the block,
block sizes that are not powers of two, and with NVRTC."""
from __future__ import annotations

import pathlib

import pytest

from polymagic import kir
from polymagic.deps import compute_dependences
from polymagic.frontend import parse
from polymagic.options import Options, parse_options
from polymagic.compiler import compile_source
from polymagic.report.fmt import transactions
from polymagic.runtime.run import run
from polymagic.schedule.superposition import ThreadGroup, plan_superposition

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
KERNELS = ["atax", "bicg", "mvt", "gesummv", "gemver"]


def _src(name: str) -> str:
    return (EXAMPLES / f"{name}.c").read_text()


def _sizes(name: str, n: int) -> dict:
    return {"m": n, "n": n + 3} if name in ("atax", "bicg") else {"n": n}


def _groups(plan):
    out = []

    def walk(items):
        for it in items:
            if isinstance(it, ThreadGroup):
                out.append(it)
            else:
                walk(getattr(it, "body", []))
    walk(plan.items)
    return out


def _reduction_groups(src: str, **kw):
    scop = parse(src)
    deps = compute_dependences(scop)
    plan = plan_superposition(scop, deps.validity, **kw)
    return scop, plan, [g for g in _groups(plan) if g.reduction]


def test_gemver_reduction_loops_use_tree_reductions():
    scop, plan, reds = _reduction_groups(_src("gemver"))
    assert plan.legal
    # w[i] += alpha*A[i][j]*x[j]: j (contiguous in A) goes to thread x as a reduction
    by_stmt = {g.statements[0]: g for g in reds}
    w = next(s.name for s in scop.statements if s.body.target.array == "w")
    assert w in by_stmt
    assert scop.statement(w).iterators[by_stmt[w].dims[0][w][0]] == "j"
    # x[i] += beta*A[j][i]*y[j]: i (contiguous in A[j][i]) is parallel and better
    x = next(s.name for s in scop.statements
             if s.body.target.array == "x" and len(s.iterators) == 2)
    assert x not in by_stmt
    # the Kernel IR: a register accumulator, a shared buffer, and barriers
    c = compile_source(_src("gemver"), Options(sizes={"n": 40}))
    k = next(k for k in c.program.kernels.values() if any(r.name == f"pm_acc_{w}"
                                                          for r in k.registers))
    assert [d.name for d in k.shared] == [f"pm_red_{w}"] and k.shared[0].shape == (k.block[0],)
    assert k.has_barrier
    computes = [s for s in kir.walk(k.body) if isinstance(s, kir.Compute) and s.stmt == w]
    assert computes and computes[0].assign.target.array == f"pm_acc_{w}"
    assert "tree reduction" in c.schedule.superposition.describe()
    assert "planned" not in c.schedule.superposition.describe()


@pytest.mark.parametrize("name", KERNELS)
def test_each_kernel_has_a_tree_reduction(name):
    _scop, plan, reds = _reduction_groups(_src(name))
    assert plan.legal and reds, plan.describe()


def test_no_reductions_option():
    _scop, plan, reds = _reduction_groups(_src("mvt"), reductions=False)
    assert not reds
    assert "--no-reductions" in plan.describe()
    o = parse_options("--no-reductions")
    assert o.reductions is False and o.compile != Options().compile
    c = compile_source(_src("mvt"), Options(sizes={"n": 20}, reductions=False))
    assert not any(k.shared for k in c.program.kernels.values())


def _check(name, n, **kw):
    opts = Options(sizes=_sizes(name, n), target="emulator", **kw)
    c = compile_source(_src(name), opts)
    r = run(c, opts)
    assert r.ok, r.message
    return c, r


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("n", [1, 5, 33, 100])
def test_emulator_matches_cpu(name, n):
    c, _r = _check(name, n)
    assert any(k.shared for k in c.program.kernels.values())   # the tree ran


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("block", [(30,), (7,), (12, 3), (1,)])
def test_block_sizes_not_powers_of_two(name, block):
    c, _r = _check(name, 45, block=block)
    want = tuple((list(block) + [1, 1, 1])[:3])
    blocks = {k.block for k in c.program.kernels.values() if k.shared}
    assert blocks == {want}


def test_float32_max_reduction():
    src = """
void rowmax(int n, int m, float A[n][m], float r[n]) {
  for (int i = 0; i < n; i++) {
    r[i] = A[i][0];
    for (int j = 0; j < m; j++)
      r[i] = fmaxf(r[i], A[i][j]);
  }
}
"""
    for sizes in ({"n": 9, "m": 70}, {"n": 3, "m": 5}):
        opts = Options(sizes=sizes, target="emulator")
        c = compile_source(src, opts)
        r = run(c, opts)
        assert r.ok, r.message
        assert any(k.shared for k in c.program.kernels.values())
        from polymagic.memory.counts import predict_for
        pred = predict_for(c, opts.sizes)    # max: every thread reads the element once per row
        assert {k: (p.loads, p.stores) for k, p in pred.items()} == \
            {k: (v["loads"], v["stores"]) for k, v in r.counters["per_kernel"].items()}


TRIANGULAR = """
void tri(int n, double L[n][n], double x[n], double b[n]) {
  for (int i = 0; i < n; i++) {
    b[i] = 0.0;
    for (int j = 0; j <= i; j++)
      b[i] += L[i][j] * x[j];
  }
}
"""
DOT = """
void dot(int n, float a[n], float b[n], float s[1]) {
  for (int j = 0; j < n; j++)
    s[0] += a[j] * b[j];
}
"""
# the reduction inside a host (time) loop, its result read by the next kernel
POWER = """
void pw(int T, int n, double A[n][n], double x[n], double y[n]) {
  for (int t = 0; t < T; t++) {
    for (int i = 0; i < n; i++) {
      y[i] = 0.0;
      for (int j = 0; j < n; j++)
        y[i] += A[i][j] * x[j];
    }
    for (int i = 0; i < n; i++)
      x[i] = 0.5 * y[i];
  }
}
"""


@pytest.mark.parametrize("src", [TRIANGULAR, DOT, POWER], ids=["triangular", "dot", "power"])
@pytest.mark.parametrize("n", [1, 3, 40, 300])
@pytest.mark.parametrize("block", [None, (24,)])
def test_other_reductions(src, n, block):
    opts = Options(sizes={"n": n, "T": 3} if "T" in src.split("{")[0] else {"n": n},
                   target="emulator", block=block)
    c = compile_source(src, opts)
    r = run(c, opts)
    assert r.ok, r.message
    assert any(k.shared for k in c.program.kernels.values())


@pytest.mark.parametrize("name", KERNELS)
def test_transactions_per_request_fall(name):
    _c, tree = _check(name, 100)
    _c, single = _check(name, 100, mapping="single")
    t, s = transactions(tree.counters), transactions(single.counters)
    assert t["transactions_per_request"] < s["transactions_per_request"]


@pytest.mark.parametrize("name", KERNELS)
def test_cuda_compiles_with_nvrtc(name):
    from polymagic.codegen.nvrtc import compile_cuda
    for blk in (None, (30,)):
        c = compile_source(_src(name), Options(block=blk))
        assert "__syncthreads" in c.cuda and "pm_red_" in c.cuda
        ptx = compile_cuda(c.cuda, "sm_80").decode(errors="replace")
        for k in c.program.kernels:
            assert f".entry {k}" in ptx


@pytest.mark.parametrize("name", ["mvt", "gesummv", "atax"])
def test_predicted_counts_hold(name):
    """memory.counts predicts the tree reduction's traffic exactly: the element once
    per point of the enclosing loops, the reduced operands once per instance."""
    from polymagic.memory.counts import predict_for
    c, r = _check(name, 37)
    opts = Options(sizes=_sizes(name, 37), target="emulator")
    pred = predict_for(c, opts.sizes)
    assert {k: (p.loads, p.stores) for k, p in pred.items()} == \
        {k: (v["loads"], v["stores"]) for k, v in r.counters["per_kernel"].items()}
