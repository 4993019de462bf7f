"""The ``%%polycuda`` magic driven through a real IPython shell (CPU emulator)."""
from __future__ import annotations

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

SCALE = """
void scale(int N, float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      B[i][j] = 2.0f * A[i][j] + 1.0f;
}
"""

GEMM = """
void gemm(int N, float alpha, float A[N][N], float B[N][N], float C[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      C[i][j] = 0.0f;
      for (int k = 0; k < N; k++)
        C[i][j] += alpha * A[i][k] * B[k][j];
    }
}
"""

BAD_C = """
void broken(int N, float A[N]) {
  for (int i = 0; i < N; i++)
    A[i] = 2.0f * ;
}
"""

LINE = "--size N=40 --target emulator"
N = 40
NAMES = ("A", "B", "C", "alpha", "scale", "gemm", "broken")


@pytest.fixture
def shell():
    """The shared IPython shell with polymagic loaded; test names removed afterwards."""
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "polymagic")
    yield sh
    for name in NAMES:
        sh.user_ns.pop(name, None)


def _inputs(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((N, N), dtype=np.float32), np.full((N, N), -7.0, dtype=np.float32)


def test_magic_is_registered(shell):
    assert "polycuda" in shell.magics_manager.magics["cell"]


def test_namespace_arrays_are_used_and_written_back(shell):
    a, b = _inputs()
    shell.user_ns.update(A=a.copy(), B=b.copy())
    shell.run_cell_magic("polycuda", LINE, SCALE)
    np.testing.assert_array_equal(shell.user_ns["A"], a)          # input untouched
    np.testing.assert_allclose(shell.user_ns["B"], 2 * a + 1, rtol=1e-6)


def test_report_is_displayed(shell, capsys):
    shell.run_cell_magic("polycuda", LINE, SCALE)
    out = capsys.readouterr().out
    assert "check: OK" in out
    assert "emulator" in out


def test_last_report_is_ok(shell):
    shell.run_cell_magic("polycuda", LINE, SCALE)
    magics = shell.magics_manager.registry["PolyMagics"]
    compiled, report = magics.last
    assert report.ok and report.checked
    assert report.target == "emulator"
    assert "__global__" in compiled.cuda


def test_callable_appears_and_reruns(shell):
    shell.run_cell_magic("polycuda", LINE, SCALE)
    fn = shell.user_ns["scale"]
    assert callable(fn)
    a, b = _inputs(seed=2)
    fn(N=N, A=a, B=b)
    np.testing.assert_allclose(b, 2 * a + 1, rtol=1e-6)


def test_gemm_with_scalar_from_namespace(shell):
    rng = np.random.default_rng(3)
    a = rng.random((N, N), dtype=np.float32)
    b = rng.random((N, N), dtype=np.float32)
    shell.user_ns.update(A=a.copy(), B=b.copy(), C=np.zeros((N, N), np.float32), alpha=0.5)
    shell.run_cell_magic("polycuda", LINE, GEMM)
    np.testing.assert_allclose(shell.user_ns["C"], 0.5 * (a @ b), rtol=1e-4, atol=1e-4)


def test_bad_c_is_a_usage_error_with_line_and_column(shell):
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("polycuda", LINE, BAD_C)
    msg = str(info.value)
    assert "line 4" in msg
    assert "column" in msg


def test_bad_c_shows_no_traceback(shell, capsys):
    result = shell.run_cell(f"%%polycuda {LINE}\n{BAD_C}")
    assert isinstance(result.error_in_exec, UsageError)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "UsageError" in text
    assert "Traceback" not in text


def test_dtype_mismatch_is_an_error_and_leaves_arrays_unchanged(shell):
    a = np.random.default_rng(4).random((N, N))            # float64, C says float
    b = np.full((N, N), -7.0, dtype=np.float32)
    shell.user_ns.update(A=a.copy(), B=b.copy())
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("polycuda", LINE, SCALE)
    assert "A" in str(info.value)
    np.testing.assert_array_equal(shell.user_ns["A"], a)
    np.testing.assert_array_equal(shell.user_ns["B"], b)
    assert shell.user_ns["B"].dtype == np.float32


@pytest.mark.parametrize("line, word", [
    ("--tile 0", "--tile"),
    ("--target tpu", "target"),
    ("--frobnicate", "--frobnicate"),
    ("--show nonsense", "nonsense"),
    ("--size N", "--size"),
])
def test_bad_options_are_usage_errors(shell, line, word):
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("polycuda", line, SCALE)
    assert word in str(info.value)


def test_help_prints_options(shell, capsys):
    shell.run_cell_magic("polycuda", "--help", SCALE)
    out = capsys.readouterr().out
    assert "--size" in out and "--target" in out


def test_html_report_has_badge_times_and_cuda(shell):
    shell.run_cell_magic("polycuda", LINE + " --show deps", SCALE)
    from polymagic.report.html import HtmlReport
    compiled, report = shell.magics_manager.registry["PolyMagics"].last
    html = HtmlReport(report, compiled, ("deps",))._repr_html_()
    assert ">OK<" in html
    assert "<details" in html and "Generated CUDA" in html
    assert "__global__" in html
    assert "Dependences" in html
    assert "CPU reference" in html


PY_SCALE = '''
def scale(N: int, A: "float32[N][N]", B: "float32[N][N]"):
    for i in range(N):
        for j in range(N):
            B[i][j] = 2.0 * A[i][j] + 1.0
'''


def test_python_cell(shell):
    a, b = _inputs(seed=5)
    shell.user_ns.update(A=a.copy(), B=b.copy())
    shell.run_cell_magic("polycuda", LINE + " --python", PY_SCALE)
    np.testing.assert_allclose(shell.user_ns["B"], 2 * a + 1, rtol=1e-6)
    assert callable(shell.user_ns["scale"])


def test_transposed_namespace_arrays_steer_the_mapping(shell):
    """Seed 002 §2.3 / seed 003 §5.2: the magic compiles for the namespace arrays'
    real layout (Fortran-ordered views: i is contiguous, so i goes to thread x); the
    callable recompiles for contiguous arrays and results stay right in both."""
    a, b = _inputs()
    shell.user_ns.update(A=np.asfortranarray(a), B=np.asfortranarray(b))
    shell.run_cell_magic("polycuda", LINE + " --quiet", SCALE)
    compiled, report = shell.magics_manager.registry["PolyMagics"].last
    assert report.ok and "i→thread.x" in compiled.summary
    assert any("real strides of A" in n for n in compiled.note_lines)
    np.testing.assert_allclose(shell.user_ns["B"], 2 * a + 1, rtol=1e-6)
    fn = shell.user_ns["scale"]
    a2, b2 = _inputs(seed=3)
    assert fn(N=N, A=a2, B=b2).ok
    np.testing.assert_allclose(b2, 2 * a2 + 1, rtol=1e-6)
