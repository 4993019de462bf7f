"""Delinearisation (issue 19, item 4): flat subscripts of pointer and 1-d array
parameters (``A[i*n + k]``, ``M[(b*n + i)*n + j]``, ``x[IDX(i, j)]``) are split into
dimensions (Grosser et al., ICS 2015), their exactness conditions checked with isl
or at the sizes; the caller's flat NumPy buffers are used in place.  Emulator ==
CPU; the flat gemm gets the 2-d gemm's plan; splits that are never exact, sizes
where one is not, buffers that are too small and aliasing pointers are refused
clearly."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from polymagic import expr as E
from polymagic.cli import main
from polymagic.compiler import compile_source
from polymagic.errors import InputError, UnsupportedError
from polymagic.frontend.c import parse_c
from polymagic.frontend.c.delinearise import find_sizes
from polymagic.options import Options
from polymagic.runtime.run import run

from pipeline_check import check

ROOT = Path(__file__).resolve().parents[1]

GEMM_FLAT = """\
void gemm(int N, float alpha, float *C, const float *A, const float *B) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i*N + j] += alpha * A[i*N + k] * B[k*N + j];
}
"""

BATCHED_MATVEC = """\
void bmv(int nb, int n, const double *M, const double *x, double *y) {
  for (int b = 0; b < nb; b++)
    for (int i = 0; i < n; i++) {
      y[b*n + i] = 0.0;
      for (int j = 0; j < n; j++)
        y[b*n + i] += M[(b*n + i)*n + j] * x[b*n + j];
    }
}
"""

JACOBI_IDX = """\
#define IDX(i, j) ((i)*m + (j))
void jacobi(int tsteps, int n, int m, double *a, double *b) {
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        b[IDX(i, j)] = 0.2 * (a[IDX(i, j)] + a[IDX(i - 1, j)] + a[IDX(i + 1, j)]
                              + a[IDX(i, j - 1)] + a[IDX(i, j + 1)]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < m - 1; j++)
        a[IDX(i, j)] = b[IDX(i, j)];
  }
}
"""

RECT = """\
void rect(int n, int m, double *A, const double *x) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      A[i*n + j] = 2.0 * x[j];
}
"""

DECLARED_FLAT = """\
#define AT(i, j) A[(i)*n + (j)]
void transpose_add(int n, double A[n*n], const double *B) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      AT(i, j) += B[j*n + i];
}
"""


def _plan(compiled) -> list:
    """What the mapping and memory plan decided per kernel (not the text)."""
    out = []
    for k in compiled.mapping.plans.values():
        m = k.memory
        # the registers the lowering made of each plan (the kernel's declarations)
        made = compiled.program.kernels[k.name[3:]].registers
        out.append((k.name, [(x.axis, x.threads) for x in k.members], k.per_thread,
                    list(k.sub_tiles),
                    [(b.name, b.array, b.extents, b.level, b.vector) for b in m.buffers],
                    [(r.array, list(r.statements), [d.name for d in made if d.array == r.array])
                     for r in m.registers]))
    return out


def test_sizes_from_the_parametric_terms():
    assert find_sizes({("n", "n"), ("n",)}) == (("n",), ("n",))
    assert find_sizes({("m", "n"), ("m",)}) == (("n",), ("m",))
    assert find_sizes({("n",)}) == (("n",),)
    assert find_sizes({("m",), ("n",)}) is None        # neither divides the other


def test_flat_gemm_gets_the_2d_gemms_plan_and_matches_cpu():
    flat = check(GEMM_FLAT, {"N": 70})
    assert {n: a.shape for n, a in flat.scop.arrays.items()} == {
        n: (E.Var("N"), E.Var("N")) for n in "CAB"}
    assert all(a.flat is not None and a.flat.bounds == () for a in flat.scop.arrays.values())
    two_d = compile_source((ROOT / "examples" / "gemm.c").read_text(), Options())
    assert _plan(compile_source(GEMM_FLAT, Options())) == _plan(two_d)
    assert any(b for *_, b, _ in _plan(two_d))        # shared buffers, to compare
    assert any(r for *_, r in _plan(two_d))           # and register tiles


def test_batched_matvec_is_three_dimensional_and_matches_cpu():
    compiled = check(BATCHED_MATVEC, {"nb": 3, "n": 19})
    arrays = compiled.scop.arrays
    assert arrays["M"].shape == (E.Var("nb"), E.Var("n"), E.Var("n"))
    assert arrays["y"].shape == (E.Var("nb"), E.Var("n"))
    writes = [str(a.relation).replace(" ", "") for a in compiled.scop.statements[1].accesses]
    assert "[nb,n]->{S1[b,i,j]->M[b,i,j]}" in writes


def test_jacobi_through_an_index_macro_matches_cpu():
    compiled = check(JACOBI_IDX, {"tsteps": 3, "n": 21, "m": 17})
    a = compiled.scop.arrays["a"]
    assert a.shape[1] == E.Var("m") and a.flat.bounds == ()   # exact for every size


def test_the_callers_flat_buffers_are_used_in_place():
    n = 23
    rng = np.random.default_rng(1)
    A = rng.random(n * n, dtype=np.float32)
    B = rng.random(n * n + 7, dtype=np.float32)             # longer: the rest unused
    C = np.zeros(n * n + 3, np.float32)
    opts = Options(sizes={"N": n, "alpha": 1.5}, target="emulator")
    report = run(compile_source(GEMM_FLAT, opts), opts, {"A": A, "B": B, "C": C})
    assert report.ok and report.wrote_back == ["C"]
    want = 1.5 * A.reshape(n, n) @ B[:n * n].reshape(n, n)
    assert np.allclose(C[:n * n].reshape(n, n), want, rtol=1e-4)
    assert not C[n * n:].any()
    with pytest.raises(InputError, match=r"C: 528 elements are too few.*\(23, 23\).*529"):
        run(compile_source(GEMM_FLAT, opts), opts, {"A": A, "B": B, "C": C[:528]})
    A2 = A.reshape(n, n).copy()                              # the model's shape is fine too
    C[:] = 0
    assert run(compile_source(GEMM_FLAT, opts), opts, {"A": A2, "B": B, "C": C}).ok


def test_declared_flat_array_through_a_macro():
    compiled = check(DECLARED_FLAT, {"n": 15})
    A = compiled.scop.arrays["A"]
    assert A.shape == (E.Var("n"), E.Var("n"))
    assert A.flat.declared == E.Binary("*", E.Var("n"), E.Var("n"))
    a = np.arange(225, dtype=np.float64)
    b = np.ones(225)
    opts = Options(sizes={"n": 15}, target="emulator")
    assert run(compiled, opts, {"A": a, "B": b}).ok
    assert np.array_equal(a, np.arange(225) + 1.0)
    with pytest.raises(InputError, match="does not match the declaration"):
        run(compiled, opts, {"A": np.zeros(226), "B": b})


@pytest.mark.parametrize("src,line,col,words", [
    ("void f(int n, double *A) {\n  for (int i = 0; i < n; i++)\n"
     "    for (int j = 0; j <= n; j++)\n      A[i*n + j] = 1.0;\n}\n", 4, 7,
     ["A[i*n + j] cannot be delinearised", "A[i][j]", "0 <= j < n", "from 0 to n"]),
    ("#define IDX(i, j) ((i)*n + (j))\nvoid f(int n, double *A) {\n"
     "  for (int i = 0; i < n; i++)\n    for (int j = 0; j < n; j++)\n"
     "      A[IDX(i, j + 1)] = 1.0;\n}\n", 5, 7,
     ["A[IDX(i, j + 1)] cannot be delinearised", "from 1 to n"]),
    ("void f(int n, int m, double *A) {\n  for (int i = 0; i < n; i++)\n"
     "    for (int j = 0; j < n; j++)\n      A[i*n + j*m] = 1.0;\n}\n", 4, 9,
     ["strides m, n do not divide one another"]),
    ("void f(int n, double *A) {\n  for (int i = 0; i < n; i++)\n"
     "    for (int j = 0; j < n; j++)\n      A[i*n + j] = A[i][0];\n}\n", 4, 20,
     ["cannot also be used with several subscripts"]),
])
def test_delinearisation_that_must_be_refused(src, line, col, words):
    with pytest.raises(UnsupportedError) as e:
        parse_c(src)
    for w in words:
        assert w in e.value.reason, e.value.reason
    assert (e.value.line, e.value.col) == (line, col), str(e.value)


def test_exact_only_for_some_sizes_is_checked_at_the_sizes():
    (bound,) = parse_c(RECT).arrays["A"].flat.bounds
    assert (bound.line, bound.col, bound.written, bound.split) == (4, 7, "A[i*n + j]", "A[i][j]")
    check(RECT, {"n": 10, "m": 8})
    opts = Options(sizes={"n": 10, "m": 12}, target="emulator")
    with pytest.raises(UnsupportedError, match=r"j reaches 11") as e:
        compile_source(RECT, opts)                        # at compile time under --size
    assert (e.value.line, e.value.col) == (4, 7)
    compiled = compile_source(RECT, Options(sizes={"n": 10, "m": 8}, target="emulator"))
    A = np.full(100, 7.0)
    with pytest.raises(InputError, match=r"line 4, column 7: A\[i\*n \+ j\] was delinearised"):
        run(compiled, opts, {"A": A, "x": np.ones(12)})   # at run time
    assert (A == 7.0).all()


def test_aliasing_pointer_arguments():
    compiled = compile_source(BATCHED_MATVEC, Options(sizes={"nb": 2, "n": 8}))
    opts = Options(sizes={"nb": 2, "n": 8}, target="emulator")
    buf = np.ones(300)
    with pytest.raises(InputError, match=r"x and y share memory.*y is written.*pointers"):
        run(compiled, opts, {"M": np.ones(128), "x": buf[:16], "y": buf[8:24]})
    with pytest.raises(InputError, match="share memory"):
        run(compiled, opts, {"M": np.ones(128), "x": buf, "y": buf})
    # the elements used do not overlap (y uses buf[200:216] only), and two read-only
    # arguments may share memory
    assert run(compiled, opts, {"M": buf[:128], "x": buf[:16], "y": buf[200:]}).ok
    assert np.allclose(buf[200:216], 8.0) and np.allclose(buf[216:], 1.0)


def test_cli_with_sizes_only(tmp_path, capsys):
    p = tmp_path / "bmv.c"
    p.write_text(BATCHED_MATVEC)
    assert main(["run", str(p), "--size", "nb=4,n=33", "--target", "emulator", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["mismatches"] == 0
    r = tmp_path / "rect.c"
    r.write_text(RECT)
    assert main(["cuda", str(r), "--size", "n=8,m=9"]) != 0
    err = capsys.readouterr().err
    assert "line 4, column 7" in err and "j reaches 8" in err


def test_the_fuzzers_flat_forms_are_read_back():
    """The fuzzer's flat-buffer and index-macro renderings (tests/fuzz/program.py)
    parse, every array a pointer whose accesses were delinearised (or left 1-d when
    affine); their runs against the CPU are the fuzz campaign's."""
    from fuzz import generator
    from fuzz.program import render_flat, used_names
    split = 0
    for seed in range(16):
        program = generator.generate(seed)
        source, sizes = render_flat(program, macros=seed % 2 == 1, pad=seed % 3)
        scop = parse_c(source)
        used = used_names(program)
        for a in program.arrays:
            if a.name in used:
                assert scop.arrays[a.name].flat is not None and \
                    1 <= len(scop.arrays[a.name].shape) <= a.rank
                split += len(scop.arrays[a.name].shape) > 1
        assert set(sizes) == set(scop.size_params)
    assert split >= 6
