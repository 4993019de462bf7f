"""Seed 003: loop kinds (§5.3), the DL model (§5.2), Algorithms 2 and 3 and their
superposition (§4.2-4.3) as one isl schedule tree, checked in the emulator against
the CPU reference."""
from __future__ import annotations

import pathlib

import pytest

from polymagic.deps import compute_dependences
from polymagic.frontend import parse
from polymagic.options import Options, parse_options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run
from polymagic.schedule import dl_model
from test_end_to_end import KERNELS as E2E_KERNELS
from polymagic.schedule.loop_kinds import LoopKind, classify, make_table, original_nests
from polymagic.schedule.superposition import (Kernel, StepLoop, ThreadGroup, check_legality,
                                              plan_superposition)

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

# the paper's doitgen (seed 003 Figure 4): sum has one element per (r, q, p)
DOITGEN3 = """
void doitgen3(int nr, int nq, int np, double A[nr][nq][np], double C4[np][np],
              double sum[nr][nq][np]) {
  for (int r = 0; r < nr; r++)
    for (int q = 0; q < nq; q++) {
      for (int p = 0; p < np; p++) {
        sum[r][q][p] = 0.0;
        for (int s = 0; s < np; s++)
          sum[r][q][p] += A[r][q][s] * C4[s][p];
      }
      for (int p = 0; p < np; p++)
        A[r][q][p] = sum[r][q][p];
    }
}
"""

# j carries a dependence (a recurrence along the contiguous dimension): the naive
# choice, j on threadIdx.x (best DL derivative), would be illegal
RECURRENCE = """
void recur(int n, int m, float A[n][m], float B[n][m]) {
  for (int i = 0; i < n; i++)
    for (int j = 1; j < m; j++)
      A[i][j] = A[i][j-1] + B[i][j];
}
"""


def _src(name: str) -> str:
    return (EXAMPLES / f"{name}.c").read_text()


def _plan(src: str):
    scop = parse(src)
    deps = compute_dependences(scop)
    return scop, deps, plan_superposition(scop, deps.validity)


def _groups(items):
    for it in items:
        if isinstance(it, ThreadGroup):
            yield it
        else:
            yield from _groups(it.body)


#: the policy that uses the superposed tree wherever it is legal, even without a
#: coalescing gain
EVERY_PLAN = {"require_gain": False}


# ---- loop kinds (§5.3) ------------------------------------------------------------------

def test_loop_kinds_of_gemm():
    scop = parse(_src("gemm"))
    deps = compute_dependences(scop)
    table = make_table(scop, deps.validity, {"S0"})
    i, j, k = original_nests(scop)["S0"].loops
    assert classify(table, {"S0": i}) == LoopKind.FORALL
    assert classify(table, {"S0": j}) == LoopKind.FORALL
    assert classify(table, {"S0": k}) == LoopKind.REDUCTION     # C[i][j] += ...
    assert classify(table, {"S0": (k[0], -1)}) == LoopKind.REDUCTION


def test_loop_kinds_sequential_and_illegal():
    scop = parse(RECURRENCE)
    deps = compute_dependences(scop)
    table = make_table(scop, deps.validity, {"S0"})
    i, j = original_nests(scop)["S0"].loops
    assert classify(table, {"S0": i}) == LoopKind.FORALL
    assert classify(table, {"S0": j}) == LoopKind.SEQUENTIAL   # A[i][j-1] is not a reduction
    assert classify(table, {"S0": (j[0], -1)}) == LoopKind.ILLEGAL


# ---- DL model (§5.2) ----------------------------------------------------------------------

def test_dl_model_reproduces_figure_8():
    # A[i1][i2] and B[i3][i1] in a triply nested tiled loop: DL = t1⌈t2/L⌉ + t3⌈t1/L⌉
    refs = [dl_model.Reference("A", (1000, 1, 0)), dl_model.Reference("B", (1, 0, 1000))]
    L = dl_model.WARP
    for t in [(1, 1, 1), (32, 32, 32), (16, 64, 8), (33, 31, 2), (100, 7, 65)]:
        t1, t2, t3 = t
        assert dl_model.distinct_lines(refs, t) == t1 * -(-t2 // L) + t3 * -(-t1 // L)
    assert dl_model.formula(refs, ["t1", "t2", "t3"]) == "t1*ceil(t2/L) + t3*ceil(t1/L)"


def test_dl_model_from_scop_strides_and_explicit_strides():
    scop = parse(_src("gemm"))
    costs = dl_model.statement_costs(scop)["S0"]          # i, j, k
    d = costs.derivative
    assert d[1] < d[2] < d[0] < 0                          # j best, then k, then i
    assert costs.coalesces(1) and not costs.coalesces(0)
    # a transposed layout of every array (column-major strides): i becomes contiguous
    n = dl_model.SAMPLE_EXTENT
    t = {a: (1, n) for a in ("C", "A", "B")}
    d2 = dl_model.statement_costs(scop, t)["S0"].derivative
    assert d2[0] == min(d2)


# ---- Algorithms 2 and 3 ----------------------------------------------------------------

def test_jacobi_2d_alt_plan():
    _, _, plan = _plan(_src("jacobi-2d-alt"))
    assert plan.legal, plan.problems
    (k,) = plan.items
    assert isinstance(k, Kernel) and plan.loop_text(k.block[0]) == "i" and len(k.block) == 1
    (step,) = k.body
    assert isinstance(step, StepLoop) and plan.loop_text(step.loop) == "t"
    g0, g1 = step.body                                   # not fused: barrier between them
    for g in (g0, g1):
        assert [plan.loop_text(d) for d in g.dims] == ["j", "i"]     # j→x, i→y


def test_jacobi_2d_alt_kernel_code():
    # without shared buffers: two barriers (tests/test_superposition_shared.py: with them)
    opts = Options(sizes={"tsteps": 3, "n": 37}, target="emulator", shared="none")
    c = compile_source(_src("jacobi-2d-alt"), opts)
    assert c.schedule.use_superposition
    (kern,) = c.program.kernels.values()
    assert kern.block[:2] == (32, 8)
    assert "i→block.x" in c.summary and "j→thread.x, i→thread.y" in c.summary
    assert "step t" in c.summary
    body = c.cuda.split("kernel0(", 1)[1]
    loop_t = body.index("for (int pm_c1 = 0; pm_c1 <= tsteps - 1")
    syncs = [i for i in range(len(body)) if body.startswith("__syncthreads()", i)]
    assert len(syncs) == 2 and all(s > loop_t for s in syncs)
    for order in ("shuffle", "reverse"):
        r = run(c, opts.with_(emu_order=order))
        assert r.ok, r.message
    single = compile_source(_src("jacobi-2d-alt"), opts.with_(mapping="single"))
    assert "i→block.x/thread.x" in single.summary
    assert run(single, opts.with_(mapping="single")).ok


def test_doitgen_paper_form_p_on_thread_x_r_q_on_blocks():
    _, _, plan = _plan(DOITGEN3)
    assert plan.legal, plan.problems
    (k,) = plan.items
    assert [plan.loop_text(b) for b in k.block] == ["r", "q"]
    groups = list(_groups(k.body))
    assert [g.statements for g in groups] == [["S0", "S1"], ["S2"]]   # U distributed
    for g in groups:
        assert plan.loop_text(g.dims[0]) == "p"
    opts = Options(sizes={"nr": 11, "nq": 10, "np": 13}, target="emulator", **EVERY_PLAN)
    c = compile_source(DOITGEN3, opts)
    assert c.schedule.use_superposition
    assert "r→block.y (tile 2), q→block.x (tile 4)" in c.summary
    assert "p→thread.x, q→thread.y, r→thread.z" in c.summary
    assert len(c.program.kernels) == 1 and c.program.kernels["kernel0"].has_barrier
    r = run(c, opts)
    assert r.ok, r.message


def test_doitgen_example_p_on_thread_x():
    # examples/doitgen.c reuses sum[p] in every (r, q): the front end expands it
    # (pm_x_sum[r][q][p], polymagic.frontend.expansion), so r and q are parallel and
    # S0-S2 one kernel with p on thread.x; the copy-out of the last sum is another
    _, _, plan = _plan(_src("doitgen"))
    assert plan.legal
    assert not any(isinstance(it, StepLoop) for it in plan.items)
    assert [it.statements for it in plan.items] == [["S0", "S1", "S2"], ["S3"]]
    groups = list(_groups(plan.items))
    assert [plan.loop_text(d) for d in groups[0].dims] == ["p", "q", "r"]
    assert plan.loop_text(groups[-1].dims[0]) == "pm_e0"


def test_naive_choice_illegal_legal_alternative():
    scop, deps, plan = _plan(RECURRENCE)
    cost = plan.costs["S0"]
    assert cost.derivative[1] < cost.derivative[0]       # the DL model prefers j ...
    (g,) = _groups(plan.items)
    assert plan.loop_text(g.dims[0]) == "i"               # ... but j carries: i goes to x
    assert plan.legal
    # the naive plan (j on threadIdx.x) is refused by the isl legality check
    g.dims = [{"S0": original_nests(scop)["S0"].loops[1]}]
    problems = check_legality(scop, deps.validity, plan)
    assert problems and "carries a dependence" in problems[0]
    opts = Options(sizes={"n": 19, "m": 45}, target="emulator")
    c = compile_source(RECURRENCE, opts)
    r = run(c, opts)
    assert r.ok, r.message


def test_illegal_plan_falls_back_with_a_note(monkeypatch, fresh_cache):
    from polymagic.schedule import superposition as sp
    real = sp.plan_superposition

    def broken(scop, validity, strides=None, **kw):
        plan = real(scop, validity, strides, **kw)
        for k in plan.kernels():          # blocks along j: A[i][j±1] crosses blocks
            k.block = [{s: original_nests(scop)[s].loops[2] for s in k.statements}]
        plan.problems = check_legality(scop, validity, plan)
        plan.legal = not plan.problems
        return plan
    monkeypatch.setattr(sp, "plan_superposition", broken)
    opts = Options(sizes={"tsteps": 2, "n": 20}, target="emulator")
    c = compile_source(_src("jacobi-2d-alt"), opts)
    assert not c.schedule.use_superposition
    assert any("superposition not legal" in n for n in c.note_lines)
    assert run(c, opts).ok


# ---- coalescing measured by the emulator (seed 003 §6.3) -------------------------------

COPY_T = """
void copyt(int N, int M, float A[N][M], float B[N][M]) {
  for (int j = 0; j < M; j++)
    for (int i = 0; i < N; i++)
      B[i][j] = A[i][j];
}
"""


@pytest.mark.parametrize("src, sizes", [
    (COPY_T, {"N": 64, "M": 64}),
    ("jacobi-2d-alt", {"tsteps": 2, "n": 64}),
])
def test_superposition_lowers_transactions_per_request(src, sizes):
    from polymagic.report.fmt import transactions
    src = _src(src) if "(" not in src else src
    per = {}
    for mode in ("single", "superposition"):
        opts = Options(sizes=sizes, target="emulator", mapping=mode)
        c = compile_source(src, opts)
        assert c.schedule.use_superposition == (mode == "superposition")
        r = run(c, opts)
        assert r.ok, r.message
        per[mode] = transactions(r.counters)["transactions_per_request"]
    assert per["superposition"] <= 4.5 < 16 <= per["single"], per


# ---- every example, both mappings -------------------------------------------------------

# the end-to-end suite's sizes (multi-tile run, sizes below a tile); doitgen smaller
# (its sequential loops run inside each thread here), plus jacobi-2d-alt
KERNELS = {**E2E_KERNELS,
           "doitgen": ({"nr": 7, "nq": 5, "np": 26}, {"nr": 3, "nq": 2, "np": 5}),
           "jacobi-2d-alt": ({"tsteps": 3, "n": 30}, {"tsteps": 2, "n": 6})}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_superposition_matches_cpu(name):
    big, small = KERNELS[name]
    for sizes, kw in ((big, dict(tile=(8, 8), block=(4, 4, 2), emu_order="reverse")),
                      (small, {})):
        opts = Options(sizes=sizes, target="emulator", mapping="superposition", **kw,
                       **EVERY_PLAN)
        c = compile_source(_src(name), opts)
        r = run(c, opts)
        assert r.ok, f"{name}: {r.message}"


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_single_mapping_matches_cpu(name):
    opts = Options(sizes=KERNELS[name][0], target="emulator", mapping="single", seed=2)
    c = compile_source(_src(name), opts)
    assert not c.schedule.use_superposition and c.schedule.superposition is None
    r = run(c, opts)
    assert r.ok, f"{name}: {r.message}"


def test_superposition_cuda_compiles_with_nvrtc():
    from polymagic.codegen.nvrtc import compile_cuda
    for src in [_src(n) for n in ("jacobi-2d-alt", "gemm", "atax", "fdtd-2d")] + [DOITGEN3]:
        c = compile_source(src, Options(mapping="superposition", **EVERY_PLAN))
        assert c.schedule.use_superposition
        assert b".entry" in compile_cuda(c.cuda, "sm_90")


# ---- options and report -------------------------------------------------------------------

def test_mapping_option():
    assert parse_options("--mapping single").mapping == "single"
    assert Options().mapping == "superposition"
    assert Options(mapping="single").compile != Options().compile
    from polymagic.errors import OptionsError
    with pytest.raises(OptionsError):
        parse_options("--mapping both")


def test_show_schedule_prints_both_schedules_and_dl_table():
    from polymagic.report.views import view
    c = compile_source(_src("jacobi-2d-alt"), Options(sizes={"tsteps": 2, "n": 20}))
    text = view("schedule", c).text
    assert "single schedule" in text and "block-level (outer)" in text
    assert "i→block.x" in text and "j→thread.x" in text and "step loop" in text
    assert "∂mem_cost/∂t" in text and "S0    j" in text
