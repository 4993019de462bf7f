"""Seed 001 localisation inside the superposition's kernels (issue 4: the
superposition composes with every stage; issue 5 §5: a kernel can use both).

* **intra-thread**: a loop each thread of a thread group runs sequentially (doitgen's
  ``s``) is a candidate of ``--localise LOOP[:w]`` and of the default (the analytic
  model of the single mapping): L is private to each thread (one row per thread).
  ``DOITGEN_TAP`` (the superposition is chosen for its coalescing: ``p`` on thread x
  where the single schedule puts ``q``) reads ``C4[s][p]`` and ``C4[s+1][p]``: the
  second is the first of the next step, so localised each thread loads ``np`` values
  of ``C4`` instead of ``2(np - 1)``.
* **inter-thread**: a step loop (seed 003 Algorithm 2: sequential, outside the thread
  dimensions, ``__syncthreads`` between steps) named by ``--localise`` keeps its data in
  L shared by the block's threads, moved in after a barrier (seed 001 §4.3 end: the
  input dependences cross threads, Fig. 5): jacobi-2d-alt's ``t`` keeps each block's
  rows of ``A`` in shared memory for all time steps (sized at ``--size``, the kernel
  specialised to it, as for a host time loop run inside one block).

Every run checks emulator == CPU (the emulator hunts shared-memory races and reads of
uninitialised shared memory) at sizes that are and are not multiples of the tiles and
blocks; NVRTC compiles the CUDA; ``--localise`` keeps the superposition (no
"superposition not used" note)."""
from __future__ import annotations

import pathlib

import pytest

from polymagic.errors import InputError
from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
JACOBI_ALT = (EXAMPLES / "jacobi-2d-alt.c").read_text()
GEMM = (EXAMPLES / "gemm.c").read_text()

DOITGEN_TAP = """
void kernel_doitgen_tap(int nr, int nq, int np, double A[nr][nq][np], double C4[np][np],
                        double sum[nr][nq][np])
{
  for (int r = 0; r < nr; r++)
    for (int q = 0; q < nq; q++) {
      for (int p = 0; p < np; p++) {
        sum[r][q][p] = 0.0;
        for (int s = 0; s < np - 1; s++)
          sum[r][q][p] += A[r][q][s] * (C4[s][p] + C4[s + 1][p]);
      }
      for (int p = 0; p < np; p++)
        A[r][q][p] = sum[r][q][p];
    }
}
"""

# a recurrence along s: the superposition maps the same loop (p) to thread x as the
# single schedule, so it is used only when forced (require_gain=False)
SCAN = """
void kernel_scan(int nr, int ns, int np, double X[nr][ns][np], double Y[nr][ns][np])
{
  for (int r = 0; r < nr; r++)
    for (int s = 1; s < ns; s++)
      for (int p = 0; p < np; p++)
        Y[r][s][p] = Y[r][s - 1][p] + X[r][s][p];
}
"""


def _run(src: str, sizes: dict, **kw):
    opts = Options(sizes=sizes, target="emulator", mapping="superposition", **kw)
    c = compile_source(src, opts)
    assert c.schedule.use_superposition, c.note_lines
    assert not any("superposition not used" in n for n in c.note_lines), c.note_lines
    r = run(c, opts)
    assert r.ok, r.message
    return c, r, opts


def _local(c) -> dict[str, list[str]]:
    """Kernel -> the L buffers seed 001 localisation declared in it."""
    return {k[3:]: [lb.name for lb in p.local.buffers] for k, p in c.mapping.plans.items()
            if p.local and p.local.buffers}


# ---- intra-thread: a per-thread loop of a thread group ---------------------------------------

DOITGEN_SIZES = [{"nr": 5, "nq": 6, "np": 37}, {"nr": 2, "nq": 4, "np": 32},
                 {"nr": 3, "nq": 7, "np": 5}]


@pytest.mark.parametrize("sizes", DOITGEN_SIZES)
def test_doitgen_tap_localised_by_default_loads_fall_by_the_reuse(sizes):
    """Without shared buffers (``--shared none``) the default localises ``C4`` along
    ``s`` in every thread (the analytic model predicts the saving): each thread point
    (r, q, p) loads ``np`` elements of C4 instead of ``2(np - 1)``, the rest unchanged."""
    nr, nq, n = sizes["nr"], sizes["nq"], sizes["np"]
    on, r_on, opts = _run(DOITGEN_TAP, sizes, shared="none")
    off, r_off, _ = _run(DOITGEN_TAP, sizes, shared="none", localise_auto=False)
    assert _local(on) == {"kernel0": ["lc0_C4"]} and not _local(off)
    assert any("localised along s by default" in n for n in on.note_lines)
    assert r_off.counters["loads"] - r_on.counters["loads"] == nr * nq * n * (n - 2)
    assert r_off.counters["stores"] == r_on.counters["stores"]
    for order in ("reverse", "forward"):
        assert run(on, opts.with_(emu_order=order)).ok


def test_doitgen_tap_forced_localise_matches_the_default():
    """``--localise s`` gives the default's choice; ``--localise s:2`` (window 2) is
    correct too (C4, and A now reused within the window)."""
    sizes = {"nr": 3, "nq": 5, "np": 29}
    auto, r_auto, _ = _run(DOITGEN_TAP, sizes, shared="none")
    forced, r_forced, _ = _run(DOITGEN_TAP, sizes, shared="none", localise=("s", 1))
    assert _local(forced) == _local(auto) == {"kernel0": ["lc0_C4"]}
    assert r_forced.counters == r_auto.counters
    win, _r, _ = _run(DOITGEN_TAP, sizes, shared="none", localise=("s", 2))
    assert "lc0_C4" in _local(win)["kernel0"]


def test_doitgen_tap_buffers_serve_c4_by_default():
    """With the default thread-tile buffers, C4 is served by them: localisation leaves
    buffered references alone (and the run is still correct)."""
    c, _r, _ = _run(DOITGEN_TAP, {"nr": 3, "nq": 5, "np": 29})
    assert not _local(c)


def test_localise_a_thread_loop_says_why_in_one_line():
    """``--localise p``: p is on thread x in the superposition, not a sequential loop:
    one note, the kernel unlocalised, the superposition kept."""
    c, _r, _ = _run(DOITGEN_TAP, {"nr": 3, "nq": 5, "np": 29}, shared="none",
                    localise=("p", 1))
    assert not _local(c)
    (line,) = [n for n in c.note_lines if "--localise p" in n]
    assert "kernel0" in line and "not a sequential loop" in line


def test_no_localise_turns_the_default_off():
    c, _r, _ = _run(DOITGEN_TAP, {"nr": 3, "nq": 5, "np": 29}, shared="none",
                    localise=None, localise_auto=False)
    assert not _local(c) and not any("localised" in n for n in c.note_lines)


@pytest.mark.parametrize("sizes", [{"nr": 5, "ns": 20, "np": 37}, {"nr": 8, "ns": 9, "np": 64}])
def test_forced_superposition_scan_localise(sizes):
    """A recurrence along a per-thread loop (forced superposition): Y[r][s][p] is
    written at step s before it is read (seed 001 §4.3: not moved in) and read from L
    at s + 1, so each column loads only its first Y and X: loads fall from
    2·nr·(ns − 1)·np to nr·(ns − 1)·np + nr·np, by default (the model sees it) and
    with ``--localise s``; the stores stay."""
    nr, ns, n = sizes["nr"], sizes["ns"], sizes["np"]
    off, r_off, _ = _run(SCAN, sizes, shared="none", localise_auto=False, require_gain=False)
    assert r_off.counters["loads"] == 2 * nr * (ns - 1) * n
    for kw in (dict(localise=("s", 1)), {}):
        c, r, opts = _run(SCAN, sizes, shared="none", require_gain=False, **kw)
        assert _local(c) == {"kernel0": ["lc0_Y"]}, kw
        assert r.counters["loads"] == nr * (ns - 1) * n + nr * n
        assert r.counters["stores"] == r_off.counters["stores"]
        assert run(c, opts.with_(emu_order="reverse")).ok


def test_forced_superposition_gemm_localise_k_has_no_reuse():
    """gemm's k under the superposition (``--shared none``): C is in a register, A and
    B are not reused from one k to the next: notes say so, nothing is localised."""
    c, _r, _ = _run(GEMM, {"N": 37}, shared="none", localise=("k", 1), require_gain=False)
    assert not _local(c)
    assert any("kernel0: A: not localised (no reuse" in n for n in c.note_lines)
    assert any("kernel0: C: not localised" in n for n in c.note_lines)


# ---- inter-thread: a step loop, L shared by the block -----------------------------------------

@pytest.mark.parametrize("sizes", [{"tsteps": 4, "n": 37}, {"tsteps": 3, "n": 16},
                                   {"tsteps": 5, "n": 21}])
def test_jacobi_2d_alt_step_loop_localised_in_the_block(sizes):
    """``--localise t`` names jacobi-2d-alt's step loop (i on blocks of 8 rows, t
    sequential in the block, j on thread x): each block's rows of A and B stay in
    shared memory for every step (B's per-step register gives way to L): every element
    of A (n²) is loaded once, B is never loaded (seed 001 §4.3: each step writes it
    before reading it), both are stored once (n² + n(n − 2)), whatever the number of
    steps, against about 2·t·n² loads and stores without."""
    n = sizes["n"]
    c, r, opts = _run(JACOBI_ALT, sizes, localise=("t", 1))
    assert _local(c) == {"kernel0": ["lc0_A", "lc0_B"]}
    assert any("A: localised along the step loop t" in d for d in c.note_lines)
    assert any("B: not in a register (localised along a step loop" in d for d in c.note_lines)
    base, r_base, _ = _run(JACOBI_ALT, sizes)
    assert not _local(base)
    assert r.counters["loads"] == n * n
    assert r.counters["stores"] == n * n + n * (n - 2)
    assert r.counters["loads"] < r_base.counters["loads"]
    assert r.counters["stores"] < r_base.counters["stores"]
    for order in ("reverse", "forward"):
        assert run(c, opts.with_(emu_order=order)).ok


def test_jacobi_2d_alt_step_loop_is_specialised_to_its_sizes():
    """L is sized at ``--size`` (the block's rows span n): other sizes are refused with a
    one-line error, as for a time loop inside one block."""
    c, _r, opts = _run(JACOBI_ALT, {"tsteps": 3, "n": 16}, localise=("t", 1))
    assert c.program.specialised.get("n") == 16
    with pytest.raises(InputError, match=r"specialised to .*n=16.*--size"):
        run(c, opts.with_(sizes={"tsteps": 3, "n": 20}))


def test_jacobi_2d_alt_too_large_for_shared_memory_stays_unlocalised():
    """At n = 4096 a block's rows of A (8 x 4096 floats) exceed 48 KB: one note, the
    kernel keeps its per-step code (compiled only, no run)."""
    opts = Options(sizes={"tsteps": 2, "n": 4096}, mapping="superposition",
                   localise=("t", 1))
    c = compile_source(JACOBI_ALT, opts)
    assert c.schedule.use_superposition and not _local(c)
    assert any("A: not localised" in n and "shared memory" in n for n in c.note_lines)


def test_jacobi_2d_alt_without_sizes_stays_unlocalised():
    """Without ``--size`` L's extents grow with n: a note, no L."""
    c = compile_source(JACOBI_ALT, Options(mapping="superposition", localise=("t", 1)))
    assert c.schedule.use_superposition and not _local(c)
    assert any("kernel0: A: not localised" in n for n in c.note_lines)


# jacobi-2d-alt on rows of 32 values: the superposition is chosen (j on thread x where
# the single schedule puts b), t is a step loop and a block's rows have a bounded footprint
ROWS = """
void kernel_rows(int T, int nb, float A[nb][32], float B[nb][32])
{
  for (int t = 0; t < T; t++) {
    for (int b = 0; b < nb; b++)
      for (int j = 1; j < 31; j++)
        B[b][j] = 0.5f * (A[b][j - 1] + A[b][j + 1]);
    for (int b = 0; b < nb; b++)
      for (int j = 1; j < 31; j++)
        A[b][j] = B[b][j];
  }
}
"""


@pytest.mark.parametrize("sizes", [{"T": 6, "nb": 37}, {"T": 3, "nb": 16}, {"T": 4, "nb": 5}])
def test_rows_step_loop_localised_by_default_without_buffers(sizes):
    """``--shared none``: the default localises A along the step loop t in L shared by
    the block (its footprint, 8 rows of 32, is bounded for every size: no
    specialisation): A is loaded and stored once per element.  With or without it
    B lives in a register across the steps (written before read at each step: never
    loaded, stored once after them), so only A's two reads per point load.  ``--localise t`` takes B too: A loaded once, B never (written at each
    step before it is read), both stored once."""
    t, nb = sizes["T"], sizes["nb"]
    off, r_off, _ = _run(ROWS, sizes, shared="none", localise_auto=False)
    on, r_on, opts = _run(ROWS, sizes, shared="none")
    assert not _local(off) and _local(on) == {"kernel0": ["lc0_A"]}
    assert any("localised along the step loop t by default" in n for n in on.note_lines)
    assert not on.program.specialised
    assert r_off.counters["loads"] == 2 * 30 * nb * t
    assert r_on.counters["loads"] == 32 * nb
    assert r_on.counters["stores"] == 32 * nb + 30 * nb
    forced, r_forced, _ = _run(ROWS, sizes, shared="none", localise=("t", 1))
    assert _local(forced) == {"kernel0": ["lc0_A", "lc0_B"]}
    assert r_forced.counters["loads"] == 32 * nb
    assert r_forced.counters["stores"] == 32 * nb + 30 * nb
    for order in ("reverse", "forward"):
        assert run(on, opts.with_(emu_order=order)).ok


def test_rows_block_buffers_serve_the_step_loop_by_default():
    """With the default buffers, A and B have per-block buffers that already live across
    the steps: ``--localise t`` leaves them alone, one line each."""
    c, _r, _ = _run(ROWS, {"T": 3, "nb": 20}, localise=("t", 1))
    assert not _local(c)
    assert "kernel0: A: not localised (it has a per-block buffer)" in c.note_lines


# ---- NVRTC --------------------------------------------------------------------------------

def test_localised_superposition_cuda_compiles_with_nvrtc():
    from polymagic.codegen.nvrtc import compile_cuda
    for src, kw in ((DOITGEN_TAP, dict(shared="none")),
                    (DOITGEN_TAP, dict(shared="none", localise=("s", 2))),
                    (JACOBI_ALT, dict(sizes={"tsteps": 4, "n": 37}, localise=("t", 1))),
                    (ROWS, dict(shared="none")),
                    (ROWS, dict(shared="none", localise=("t", 1)))):
        c = compile_source(src, Options(mapping="superposition", **kw))
        assert c.schedule.use_superposition and _local(c), kw
        assert b".entry" in compile_cuda(c.cuda, "sm_90"), kw


def test_forced_superposition_gemm_without_registers_localises_c_along_k():
    """``--no-registers --shared none``: the default localises C[i][j] along k in each
    thread instead (moved in once, out once per thread point): the loads and stores of
    the register, N³ - N² fewer than unlocalised."""
    n = 37
    forced = dict(shared="none", registers=False, require_gain=False)
    loc, r_loc, _ = _run(GEMM, {"N": n}, **forced)
    off, r_off, _ = _run(GEMM, {"N": n}, localise_auto=False, **forced)
    assert _local(loc) == {"kernel0": ["lc0_C"]} and not _local(off)
    assert r_off.counters["loads"] - r_loc.counters["loads"] == n ** 3 - n ** 2
    assert r_off.counters["stores"] - r_loc.counters["stores"] == n ** 3 - n ** 2
