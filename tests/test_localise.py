"""Seed 001 (Größlinger, CC 2009) §4 on its own examples (§5).

1d-SOR, sequential (Fig. 4): localised along the ``i`` loop, the cached set is
``C(i) = {i − 1, i, i + 1}``, the placement ``ρ(x, i) = x − i + 1``, three values
are kept in L, the drift is −1 (§5, Example 1).  The dependence-based sets of §4.3
are the paper's: the write ``A[i]`` is global and local, the read ``A[i − 1]`` is
local for ``i ≥ 2`` and global for ``i = 1``, ``R_gl`` is empty.  Sets are compared
with isl equality.
"""
from __future__ import annotations

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
    assert a.storage is None and any("grows" in n for n in a.notes)
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
