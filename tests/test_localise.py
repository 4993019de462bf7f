"""Seed 001 (Größlinger, CC 2009) §4 on its own examples (§5).

1d-SOR, sequential (Fig. 4): localised along the ``i`` loop, the cached set is
``C(i) = {i − 1, i, i + 1}``, the placement ``ρ(x, i) = x − i + 1``, three values
are kept in L, the drift is −1 (§5, Example 1).  The dependence-based sets of §4.3
are the paper's: the write ``A[i]`` is global and local, the read ``A[i − 1]`` is
local for ``i ≥ 2`` and global for ``i = 1``, ``R_gl`` is empty.  Sets are compared
with isl equality.
"""
from __future__ import annotations

import functools
from pathlib import Path

import islpy as isl
import pytest

from polymagic.frontend import parse
from polymagic.memory import localise as L

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _scop(name):
    return parse((EXAMPLES / name).read_text())


@pytest.fixture(scope="module")
def sor():
    scop = _scop("sor-1d.c")
    prefix = L.time_prefix(scop, "i")
    return scop, prefix, L.localise(scop, prefix, "A")


def _m(text):
    return isl.Map("[m, n] -> " + text)


DOM = "0 < k <= m and 0 < i < n"


def test_sor_cached_move_in_move_out_kept(sor):
    _scop_, _p, loc = sor
    assert loc.cached.is_equal(_m(f"{{ [k, i] -> A[x] : {DOM} and i - 1 <= x <= i + 1 }}"))
    # the first step of every sweep loads all three, later steps only A[i + 1]
    assert loc.move_in.is_equal(_m(
        f"{{ [k, i] -> A[x] : {DOM} and ((i = 1 and 0 <= x <= 2) or (i >= 2 and x = i + 1)) }}"))
    assert loc.move_out.is_equal(_m(
        f"{{ [k, i] -> A[x] : {DOM} and ((i = n - 1 and n - 2 <= x <= n) or "
        f"(i <= n - 2 and x = i - 1)) }}"))
    assert loc.kept.is_equal(_m(f"{{ [k, i] -> A[x] : {DOM} and i <= n - 2 and "
                                f"i <= x <= i + 1 }}"))


def test_sor_placement_storage_drift(sor):
    _scop_, _p, loc = sor
    assert loc.layout == "compact"
    expected = isl.PwAff(f"[m, n] -> {{ [[k, i] -> A[x]] -> [(x - i + 1)] : {DOM} and "
                         "i - 1 <= x <= i + 1 }")
    assert loc.rho.is_equal(expected)
    assert loc.storage == 3                       # three values kept (Fig. 4(b): l0, l1, l2)
    assert loc.constant_drift == (-1,)
    assert loc.reorg == "modulo"
    # the moves of the in-situ reorganisation: every kept element moves backwards
    assert loc.moves(-1).is_equal(loc.kept)
    assert loc.moves(+1).is_empty()


def test_sor_rank_count_is_barvinoks(sor):
    _scop_, _p, loc = sor
    # the count itself is a piecewise quasi-polynomial: x − i + 1 where it is non-zero
    pieces = []
    loc.count.foreach_piece(lambda s, q: pieces.append(q))
    assert len(pieces) == 1 and pieces[0].isa_aff()


def test_sor_liveness_of_the_move_out(sor):
    scop, prefix, loc = sor
    live = L.live_move_out(loc, scop, prefix)
    # the boundary elements A[0] and A[n] are only read: they never need storing back
    assert live.is_equal(loc.move_out.subtract(
        _m(f"{{ [k, i] -> A[x] : {DOM} and (x = 0 or x = n) }}")))


def test_sor_dependence_based_sets(sor):
    scop, prefix, _loc = sor
    ds = L.dependence_sets(scop, prefix, "A")
    u = lambda t: isl.UnionSet("[m, n] -> " + t)   # noqa: E731
    # S0: A[i] = (A[i-1] + A[i+1]) * 0.5; accesses R0 = A[i-1], R1 = A[i+1], R2 = A[i]
    assert ds.writes_global.is_equal(u(f"{{ [S0[k, i] -> R2[]] : {DOM} }}"))
    assert ds.writes_local.is_equal(u(f"{{ [S0[k, i] -> R2[]] : {DOM} and i <= n - 2 }}"))
    assert ds.reads_local.is_equal(u(f"{{ [S0[k, i] -> R0[]] : {DOM} and i >= 2 }}"))
    assert ds.reads_global.is_equal(u(f"{{ [S0[k, i] -> R1[]] : {DOM}; "
                                      f"[S0[k, i] -> R0[]] : {DOM} and i = 1 }}"))
    assert ds.reads_global_local.is_empty()


def test_gemm_k_loop_keeps_only_c():
    scop = _scop("gemm.c")
    prefix = L.time_prefix(scop, "k")
    c = L.localise(scop, prefix, "C")
    assert c.storage == 1 and c.reorg == "none"
    assert c.kept.is_equal(isl.Map("[N] -> { [i, j, k] -> C[i, j] : 0 <= i, j < N and "
                                   "0 <= k < N - 1 }"))
    a = L.localise(scop, prefix, "A")
    assert a.kept.is_empty() and a.move_in.is_equal(a.cached)


def test_jacobi_1d_time_loop_caches_the_whole_array():
    scop = _scop("jacobi-1d.c")
    prefix = L.time_prefix(scop, "t")
    a = L.localise(scop, prefix, "A")
    assert a.storage is None and any("grows" in str(n) for n in a.notes)
    assert a.constant_drift == (0,)
    # after the first step nothing is moved in
    assert a.move_in.is_equal(isl.Map("[tsteps, n] -> { [t] -> A[x] : n >= 3 and t = 0 and "
                                      "0 <= x < n and tsteps >= 1 }"))


def test_window_two_unions_the_next_step():
    scop = _scop("sor-1d.c")
    prefix = L.time_prefix(scop, "i")
    loc = L.localise(scop, prefix, "A", window=2)
    assert loc.cached.is_equal(_m(f"{{ [k, i] -> A[x] : {DOM} and i - 1 <= x <= i + 2 and "
                                  "x <= n }"))
    assert loc.storage == 4


def test_bad_loop_and_window():
    scop = _scop("sor-1d.c")
    with pytest.raises(L.LocaliseError, match="no loop named 'q'"):
        L.time_prefix(scop, "q")
    with pytest.raises(L.LocaliseError, match="window"):
        L.localise(scop, L.time_prefix(scop, "i"), "A", window=0)


# ---- generated code: --localise LOOP[:w] ----------------------------------------------

@functools.lru_cache(maxsize=None)
def _run(path, sizes, *extra):
    """The CLI's --json report of one run (``polymagic.cli.main``: options parsed as
    on the command line; in this process, so the start-up of a fresh interpreter,
    about 1 CPU s a run, is not paid some thirty times, and the compile caches are
    shared; tests/test_cli.py runs the CLI as a process); the same command twice in
    this module runs once (results are deterministic)."""
    import contextlib
    import io
    import json
    from polymagic.cli import main
    argv = ["run", str(EXAMPLES / path), "--size", sizes, "--target", "emulator", "--json",
            *extra]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    out = json.loads(buf.getvalue())
    assert rc == 0, out
    return out


def _sizes(text):
    return {k: int(v) for k, v in (kv.split("=") for kv in text.split(","))}


@pytest.mark.parametrize("reorg", ["auto", "move"])
@pytest.mark.parametrize("sizes", ["m=1,n=3", "m=3,n=10", "m=4,n=37"])
def test_sor_sequential_localised_matches_cpu_and_the_io_sets(sizes, reorg):
    """Fig. 4(b): one thread, L of three slots; the emulator's global loads/stores
    fall by exactly what the move-in/move-out sets predict."""
    base = _run("sor-1d-seq.c", sizes, "--no-localise")
    loc_run = _run("sor-1d-seq.c", sizes, "--localise", "i", "--reorg", reorg)
    assert loc_run["ok"] and loc_run["max_abs_err"] == 0
    assert any("lc0_A[3]" in n and f"reorganisation: {'modulo' if reorg == 'auto' else 'move'}"
               in n for n in loc_run["notes"]), loc_run["notes"]
    scop = _scop("sor-1d-seq.c")
    prefix = L.time_prefix(scop, "i")
    d_loads, d_stores = L.traffic_change(scop, prefix, L.localise(scop, prefix, "A"),
                                         _sizes(sizes))
    assert loc_run["global_loads"] == base["global_loads"] + d_loads
    assert loc_run["global_stores"] == base["global_stores"] + d_stores
    assert d_loads < 0 or _sizes(sizes)["n"] <= 3      # one step: nothing to reuse


def test_gemm_k_loop_localised_per_thread():
    """gemm's k loop runs inside each thread: C[i][j] stays in the thread's row of L
    (loaded once, stored once); A and B have no reuse along k and stay global."""
    base = _run("gemm.c", "N=40", "--no-shared", "--no-registers", "--no-localise")
    out = _run("gemm.c", "N=40", "--no-shared", "--no-registers", "--localise", "k")
    assert out["ok"]
    n = 40
    assert base["global_loads"] == 3 * n ** 3 and base["global_stores"] == n ** 3
    scop = _scop("gemm.c")
    prefix = L.time_prefix(scop, "k")
    d_loads, d_stores = L.traffic_change(scop, prefix, L.localise(scop, prefix, "C"),
                                         {"N": n})
    assert (d_loads, d_stores) == (-n ** 3 + n ** 2, -n ** 3 + n ** 2)
    assert out["global_loads"] == base["global_loads"] + d_loads
    assert out["global_stores"] == base["global_stores"] + d_stores
    assert any("A: not localised (no reuse" in x for x in out["notes"])


@pytest.mark.parametrize("case", [("sor-1d-seq.c", ["--localise", "i"]),
                                  ("sor-1d-seq.c", ["--localise", "i", "--reorg", "move"]),
                                  ("gemm.c", ["--no-shared", "--localise", "k"])])
def test_localised_cuda_compiles_with_nvrtc(case):
    from polymagic.codegen.nvrtc import compile_cuda
    from polymagic.options import parse_options
    from polymagic.compiler import compile_source
    path, args = case
    compiled = compile_source((EXAMPLES / path).read_text(), parse_options(args))
    assert "__shared__" in compiled.cuda and "lc0_" in compiled.cuda
    ptx = compile_cuda(compiled.cuda, "sm_80").decode(errors="replace")
    assert ".entry kernel0" in ptx


def test_localise_options():
    from polymagic.errors import OptionsError
    from polymagic.options import parse_options
    assert parse_options("--localise t:2").localise == ("t", 2)
    assert parse_options("--localise k").localise == ("k", 1)
    assert parse_options("--no-localise").localise is None
    assert parse_options("").localise_auto and not parse_options("--no-localise").localise_auto
    assert parse_options("--no-localise").compile != parse_options("").compile
    assert parse_options("--localise k").compile != parse_options("").compile
    for bad in ("--localise 3", "--localise t:0", "--localise t:x",
                "--localise k --no-localise"):    # contradictory (issue 18)
        with pytest.raises(OptionsError):
            parse_options(bad)


@pytest.mark.parametrize("sizes", ["m=3,n=10", "m=4,n=37"])
def test_default_localises_where_the_model_predicts_fewer_accesses(sizes):
    """Issue 5: without --localise the analytic model decides.  1d-SOR's one-thread
    kernel keeps A[i-1..i+1] in L by default (as --localise i does); --no-localise
    turns it off; gemm's k loop is left alone (C is in registers, A and B are not
    reused along k)."""
    off = _run("sor-1d-seq.c", sizes, "--no-localise")
    auto = _run("sor-1d-seq.c", sizes)
    forced = _run("sor-1d-seq.c", sizes, "--localise", "i")
    assert auto["ok"] and auto["max_abs_err"] == 0
    assert any("localised along i by default" in n for n in auto["notes"]), auto["notes"]
    assert auto["global_loads"] == forced["global_loads"] < off["global_loads"]
    assert not any("by default" in n for n in off["notes"])
    gemm = _run("gemm.c", "N=24")
    assert not any("localised along" in n for n in gemm["notes"])


def test_localise_names_no_kernel_loop():
    out = _run("gemm.c", "N=8", "--localise", "q")
    assert any("nothing was localised" in n for n in out["notes"])


def test_window_two_in_generated_code():
    """A window of 2 (§4.2) loads one step ahead: L holds four values, results unchanged."""
    out = _run("sor-1d-seq.c", "m=2,n=12", "--localise", "i:2")
    assert out["ok"] and any("lc0_A[4]" in n and "window 2" in n for n in out["notes"])


@pytest.mark.parametrize("path,sizes,loop,extra", [
    ("jacobi-1d.c", "tsteps=5,n=300", "t", []),
    ("sor-1d.c", "m=5,n=30", "k", []),            # Fig. 5: the wavefront 2k + i in one block
    ("sor-1d.c", "m=20,n=90", "k", ["--block", "16"]),
    ("jacobi-2d.c", "tsteps=3,n=20", "t", []),
])
def test_time_loop_in_one_block_localised(path, sizes, loop, extra):
    """--localise naming a host (time) loop: the loop runs inside one block, C(t) of
    the whole block stays in shared memory; far fewer global accesses, same result
    (the base: the host loop, which the recurrence model would replace by one block
    for sor-1d: ``--no-localise`` keeps it)."""
    base = _run(path, sizes, "--no-localise", *extra)
    out = _run(path, sizes, "--localise", loop, *extra)
    assert out["ok"] and out["kernels"] == 1
    assert out["global_loads"] < base["global_loads"] / 2
    assert any("shared by the block" in n for n in out["notes"]), out["notes"]


def test_sor_wavefront_block_keeps_2m_plus_1():
    """Seed 001 §5: with m sweeps active, 2m + 1 elements are accessed per step."""
    out = _run("sor-1d.c", "m=5,n=30", "--localise", "k")
    assert any("lc0_A[11]" in n for n in out["notes"])


def _spin():
    while True:
        pass


def test_in_child_returns_raises_and_times_out():
    """barvinok ignores isl's operation budget, so counts run in a child process
    that is killed past its time limit (isl_util.in_child): a limit in the child's
    CPU time, so a loaded machine does not make it give up sooner (issue 18); a
    child that blocks instead of computing is killed after WALL_FACTOR times it."""
    import time as _time
    from cpu_clock import cpu_seconds
    from polymagic.isl_util import TimedOut, in_child
    assert in_child(lambda: str(isl.Set("{ [i] : 0 <= i < 5 }").card()), 30) == "{ 5 }"
    with pytest.raises(isl.Error):
        in_child(lambda: isl.Set("{ [i] : "), 30)
    c0 = cpu_seconds()
    with pytest.raises(TimedOut):
        in_child(_spin, 0.3)
    assert 0.25 <= cpu_seconds() - c0 < 5      # the child's CPU (waited for), then killed
    with pytest.raises(TimedOut):
        in_child(lambda: _time.sleep(60), 0.1)  # blocked: killed at 20 x 0.1 + 1 s of wall


def test_gauss_seidel_window_two_is_bounded():
    """2d Gauss-Seidel with a window of 2 (seed 001 Example 2): when the barvinok
    count of ρ runs past its time limit (``trial_limits``, the bound the planner
    itself puts on counts) the analysis falls back to the bounding-box layout and
    says why, instead of hanging."""
    scop = _scop("gauss-seidel-2d.c")
    prefix = L.time_prefix(scop, "i")
    with L.trial_limits(0.01, L.COUNT_OPERATIONS):
        loc = L.localise(scop, prefix, "A", window=2)
    assert loc.layout == "box"
    assert any("took too long" in str(n) for n in loc.notes)
    assert not loc.cached.is_empty()


def test_default_localisation_past_its_lowering_budget_is_dropped():
    """The default localisation's moves (nobody asked for them) get a small isl
    budget in the lowering; past it the kernel is lowered without them, with a note
    (fuzz program 13001000073: 21 s of isl's AST generator with the moves, 4 s
    without), and the emulator still matches the CPU.  An explicit ``--localise``
    keeps the full budget."""
    from polymagic.compiler import clear_caches, compile_source
    from polymagic.options import parse_options
    from polymagic.runtime.run import run
    src = (EXAMPLES / "sor-1d-seq.c").read_text()
    opts = parse_options(["--size", "n=20,m=5", "--target", "emulator"])
    clear_caches()
    assert compile_source(src, opts).mapping.local_copies      # localised by default
    opts = opts.with_(auto_localised_operations=1000)
    c = compile_source(src, opts)
    assert any("localisation dropped" in n for n in c.note_lines)
    assert not c.mapping.local_copies
    assert c.cuda == compile_source(src, opts.with_(localise_auto=False)).cuda
    assert run(c, opts).ok


def test_access_sets_past_their_budget_refuse_the_localisation():
    """Seed 001 §4.2's access sets are bounded like the counts: past the trial's
    isl operations, a LocaliseError (the default localisation then tries the next
    loop or none; fuzz program 164 spent 8 s of a 17 s compile in them)."""
    scop = _scop("gauss-seidel-2d.c")
    prefix = L.time_prefix(scop, "i")
    with L.trial_limits(10.0, 1000), pytest.raises(L.LocaliseError, match="access sets"):
        L.localise(scop, prefix, "A", window=2)
