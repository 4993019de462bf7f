"""Dependence-based copy minimisation (seed 000 §3.1.4): a buffer loads only what
its block reads before writing it, and a temporary is stored back only where a
statement outside the block reads it.  The copy sets are asserted exactly and the
kernels still give emulator == CPU."""
from __future__ import annotations

import pathlib

import islpy as isl

from polymagic.mapping import map_schedule
from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
IDS = "pm_tx, pm_ty, pm_tz, pm_bx, pm_by, pm_bz"

# X[i][0..63] is written, then X[i][0..127] read, in the same block
HALF = """
void half(int N, float A[N][64], float X[N][128], float Y[N][64]) {
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < 64; j++)
      X[i][j] = A[i][j] * 2.0f;
    for (int j = 0; j < 64; j++)
      Y[i][j] = X[i][j] + X[i][j + 64];
  }
}
"""

# the scalar t becomes a temporary array written and read only inside each block
TEMP = """
void twostep(int N, float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float t = A[i][j] * 2.0f;
      B[i][j] = t + t * t;
    }
}
"""


def _buffers(src: str, sizes: dict, **kw):
    o = Options(sizes=sizes, target="emulator", **kw)
    c = compile_source(src, o)
    m = map_schedule(c.scop, c.schedule, o.compile)
    r = run(c, o)
    assert r.ok, r.message
    return c, {b.name: b for p in m.plans.values() if p.memory for b in p.memory.buffers}


def _eq(rel: isl.Map, text: str) -> bool:
    exp = isl.Map(text)
    return rel.is_equal(exp.align_params(rel.get_space()))


def test_written_part_is_not_loaded():
    _, bufs = _buffers(HALF, {"N": 40}, shared="all")
    x0, x1 = bufs["sh0_X_0"], bufs["sh0_X_1"]
    # the block writes X[i][j] before reading it: no copy-in; all of it goes out
    assert x0.copy_in is None
    assert _eq(x0.copy_out, f"[N, {IDS}] -> {{ [i0, i1] -> X[o0, o1] : 32i0 <= o0 <= 31 + 32i0 "
                            "and 0 <= o0 < N and 32i1 <= o1 <= 31 + 32i1 and 0 <= o1 <= 63 }")
    # X[i][j + 64] is only read: loaded, never stored
    assert _eq(x1.copy_in, f"[N, {IDS}] -> {{ [i0, i1] -> X[o0, o1] : 32i0 <= o0 <= 31 + 32i0 "
                           "and 0 <= o0 < N and 64 + 32i1 <= o1 <= 95 + 32i1 and "
                           "64 <= o1 <= 127 }")
    assert x1.copy_out is None


def test_doitgen_sum_is_not_loaded():
    """sum[p] = 0 precedes the accumulation in the same block (sum is expanded per
    (r, q): pm_x_sum, polymagic.frontend.expansion): the copy-in the reads alone
    would ask for is dropped, the results still go out."""
    c, bufs = _buffers((EXAMPLES / "doitgen.c").read_text(), {"nr": 3, "nq": 4, "np": 21})
    s = bufs["sh0_pm_x_sum"]
    assert s.copy_in is None and s.copy_out is not None
    kernel0 = c.cuda[c.cuda.index("kernel0("):c.cuda.index("kernel1(")]
    assert "= pm_x_sum[" not in kernel0 and "pm_x_sum[" in kernel0


def test_block_local_temporary_is_neither_loaded_nor_stored():
    c, bufs = _buffers(TEMP, {"N": 40}, shared="all")
    t = bufs["sh0_t"]
    assert t.copy_in is None and t.copy_out is None
    assert bufs["sh0_A"].copy_out is None and bufs["sh0_B"].copy_in is None
    assert "t[" not in c.cuda.replace("sh0_t[", "")
