"""Array expansion of a scratch array reused by every iteration of outer loops
(polymagic/frontend/expansion.py): doitgen's ``sum`` and the rule's limits.

Each case: the decision (``Scop.expansions``), emulator == CPU through the whole
pipeline, and the CUDA compiles with NVRTC (tests/pipeline_check.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from polymagic.compiler import compile_source
from polymagic.frontend import parse
from polymagic.options import Options
from polymagic.runtime.run import run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline_check import check  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DOITGEN = (EXAMPLES / "doitgen.c").read_text()


def _expanded(src: str) -> dict[str, tuple[tuple[str, ...], str | None]]:
    return {e.array: (e.loops, e.copy_out) for e in parse(src).expansions}


def test_doitgen_sum_is_expanded_and_r_q_run_in_one_launch():
    assert _expanded(DOITGEN) == {"sum": (("r", "q"), "S3")}
    c = check(DOITGEN, {"nr": 7, "nq": 5, "np": 9})
    assert "for " not in c.host_py.split("def host")[1]          # no host loop left
    assert "pm_x_sum" in c.program.arrays and c.program.arrays["pm_x_sum"].kind == "temp"
    assert any("expanded to pm_x_sum" in n and n.startswith("sum: ") for n in c.note_lines)


def test_doitgen_sum_holds_the_last_iterations_values():
    """The caller's sum ends as the source leaves it: the (nr-1, nq-1) iteration's."""
    nr, nq, np_ = 3, 4, 6
    opts = Options(sizes={"nr": nr, "nq": nq, "np": np_}, target="emulator")
    rng = np.random.default_rng(1)
    A = rng.random((nr, nq, np_))
    C4 = rng.random((np_, np_))
    s = np.full(np_, 7.0)
    want_A = np.einsum("rqs,sp->rqp", A, C4)
    r = run(compile_source(DOITGEN, opts), opts, {"A": A, "C4": C4, "sum": s})
    assert r.ok and r.checked
    assert np.allclose(A, want_A) and np.allclose(s, want_A[-1, -1])


LOCAL_SCALAR = """
void rowsum(int n, int m, double A[n][m], double y[n]) {
  double t;
  for (int i = 0; i < n; i++) {
    t = 0.0;
    for (int j = 0; j < m; j++)
      t += A[i][j];
    y[i] = 2.0 * t;
  }
}
"""


def test_a_local_scalar_declared_outside_the_loops_is_expanded_without_copy_out():
    assert _expanded(LOCAL_SCALAR) == {"t": (("i",), None)}
    c = check(LOCAL_SCALAR, {"n": 37, "m": 11})
    assert "for " not in c.host_py.split("def host")[1]


# expanded along i only: C links the t iterations, so t stays sequential
PARTIAL = """
void partial(int T, int n, int m, double B[T][n][m], double C[n][m], double tmp[m]) {
  for (int t = 0; t < T; t++)
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < m; j++)
        tmp[j] = 2.0 * B[t][i][j];
      for (int j = 0; j < m; j++)
        C[i][j] += tmp[j] * tmp[m - 1 - j];
    }
}
"""


def test_only_the_loops_the_expansion_frees_are_expanded():
    assert _expanded(PARTIAL) == {"tmp": (("i",), "S2")}
    check(PARTIAL, {"T": 3, "n": 13, "m": 7})
    check(PARTIAL, {"T": 2, "n": 5, "m": 6}, tile=(4, 4, 4), block=(2, 2, 1),
          emu_order="shuffle")


VALUE_FLOWS_IN = """
void carry(int n, int m, double A[n][m], double s[m]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      s[j] = s[j] + A[i][j];
}
"""

OTHER_ARRAY_LINKS = """
void smooth(int T, int n, double A[n], double tmp[n]) {
  for (int t = 0; t < T; t++) {
    for (int i = 0; i < n - 1; i++)
      tmp[i] = 0.5 * (A[i] + A[i + 1]);
    for (int i = 0; i < n - 1; i++)
      A[i] = tmp[i];
  }
}
"""

# a parameter whose iterations write different elements: its final values are
# spread over several iterations (no single copy-out)
UNEVEN = """
void tri(int n, double B[n][n], double s[n]) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j <= i; j++)
      s[j] = B[i][j] * 3.0;
    for (int j = 0; j <= i; j++)
      B[i][j] = s[j] + s[i - j];
  }
}
"""


ONLY_WRITTEN = """
void last(int T, double beta, double A[2], double B[2]) {
  for (int t = 0; t < T; t++)
    A[1] = 0.125 * B[1] + 0.125 * B[0] * beta;
}
"""


def test_arrays_the_rule_refuses_are_left_alone():
    assert _expanded(ONLY_WRITTEN) == {}         # no scratch: nothing read back
    assert _expanded(VALUE_FLOWS_IN) == {}       # s[j] read before written in i
    assert _expanded(OTHER_ARRAY_LINKS) == {}    # A links the t iterations: no gain
    assert _expanded(UNEVEN) == {}               # no one iteration holds s's final values
    check(UNEVEN, {"n": 9})


PY_DOITGEN = '''
def doitgen(nr: int, nq: int, np: int, A: "double[nr][nq][np]", C4: "double[np][np]",
            sum: "double[np]"):
    for r in range(nr):
        for q in range(nq):
            for p in range(np):
                sum[p] = 0.0
                for s in range(np):
                    sum[p] += A[r, q, s] * C4[s, p]
            for p in range(np):
                A[r, q, p] = sum[p]
'''


def test_the_python_front_end_gets_the_same_expansion():
    assert _expanded_py(PY_DOITGEN) == {"sum": (("r", "q"), "S3")}
    for target in ("emulator", "openmp"):
        opts = Options(sizes={"nr": 4, "nq": 3, "np": 7}, target=target, python=True)
        r = run(compile_source(PY_DOITGEN, opts, language="python"), opts)
        assert r.ok and r.checked, r.message


def _expanded_py(src: str) -> dict[str, tuple[tuple[str, ...], str | None]]:
    return {e.array: (e.loops, e.copy_out) for e in parse(src, "python").expansions}
