"""The ``%polycuda`` line magic, ``%%polycuda --help`` alone in a cell, notebook
defaults, and IPython's own names (``Out``, ``In``, ``_``) as C names (issue 20),
through a real IPython shell on the CPU emulator."""
from __future__ import annotations

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

from polymagic.report.progress import StatusLine
from polymagic.version import __version__

TWICE = """
void twice(int N, float A[N], float B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = 2.0f * A[i];
}
"""

OUT_ARRAY = """
void twice_out(int N, float A[N], float Out[N]) {
  for (int i = 0; i < N; i++)
    Out[i] = 2.0f * A[i];
}
"""

OUT_FUNCTION = """
void Out(int N, float A[N], float B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = 2.0f * A[i];
}
"""
NAMES = ("A", "B", "twice", "twice_out")


@pytest.fixture
def shell():
    """The shared shell with polymagic loaded, its defaults and test names reset after."""
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "polymagic")
    out = sh.user_ns.get("Out")
    yield sh
    sh.run_line_magic("polycuda", "--reset")
    for name in NAMES:
        sh.user_ns.pop(name, None)
    sh.user_ns["Out"] = out


def _magics(sh):
    return sh.magics_manager.registry["PolyMagics"]


def test_line_magic_is_registered(shell):
    assert "polycuda" in shell.magics_manager.magics["line"]
    assert "polycuda" in shell.magics_manager.magics["cell"]


def test_line_help_lists_every_option(shell, capsys):
    shell.run_line_magic("polycuda", "--help")
    out = capsys.readouterr().out
    assert "%polycuda --help | --version | --reset" in out
    for option in ("--size", "--target", "--tile", "--show", "--autotune"):
        assert option in out


def test_version(shell, capsys):
    shell.run_line_magic("polycuda", "--version")
    assert capsys.readouterr().out.strip() == f"polymagic {__version__}"


@pytest.mark.parametrize("cell", ["%%polycuda --help", "%%polycuda --help\n\n",
                                  "%%polycuda --help\n" + TWICE])
def test_cell_help_with_or_without_body(shell, capsys, cell):
    result = shell.run_cell(cell)
    assert result.success, result.error_in_exec
    assert "usage: %%polycuda" in capsys.readouterr().out


def test_empty_cell_says_what_to_do(shell, capsys):
    result = shell.run_cell("%%polycuda --size N=8")
    assert not result.success
    assert "`%polycuda OPTIONS` (one %) sets defaults" in str(result.error_in_exec)


def test_every_help_hint_works(shell, capsys):
    """Option errors point at `%polycuda --help`, which answers."""
    result = shell.run_cell("%%polycuda --tile x\n" + TWICE)
    assert "`%polycuda --help` lists the options" in str(result.error_in_exec)
    assert shell.run_cell("%polycuda --help").success


def test_defaults_apply_and_cells_override(shell, capsys):
    shell.run_line_magic("polycuda", "--target emulator --size N=12 --no-shared")
    assert "--target emulator --size N=12 --no-shared" in capsys.readouterr().out
    shell.run_cell_magic("polycuda", "", TWICE)
    compiled, report = _magics(shell).last
    assert report.target == "emulator" and report.sizes["N"] == 12
    assert compiled.options.shared == "none"
    # the cell's options win: a size of the same name, and --shared against --no-shared
    shell.run_cell_magic("polycuda", "--size N=20 --shared all", TWICE)
    compiled, report = _magics(shell).last
    assert report.sizes["N"] == 20 and compiled.options.shared == "all"
    shell.run_line_magic("polycuda", "--reset")
    assert _magics(shell).defaults == []


def test_bad_default_is_refused_at_once(shell):
    from IPython.core.error import UsageError
    with pytest.raises(UsageError, match="--target"):
        shell.run_line_magic("polycuda", "--target nowhere")
    assert _magics(shell).defaults == []


def test_array_named_out_runs_and_defines_the_function(shell, capsys):
    """``Out`` is IPython's output history (a dict): as an array parameter it gets
    made-up inputs, the cell runs and the function is defined."""
    result = shell.run_cell("%%polycuda --size N=16 --target emulator\n" + OUT_ARRAY)
    assert result.success, result.error_in_exec
    out = capsys.readouterr().out
    assert "Out in the notebook is a dict (a name IPython uses)" in out
    assert "check: OK" in out
    assert callable(shell.user_ns["twice_out"])
    assert isinstance(shell.user_ns["Out"], dict)       # IPython's history kept
    # an array assigned to Out is used and written back
    a = np.arange(16, dtype=np.float32)
    shell.user_ns.update(A=a, Out=np.zeros(16, np.float32))
    assert shell.run_cell("%%polycuda --size N=16 --target emulator\n" + OUT_ARRAY).success
    np.testing.assert_array_equal(shell.user_ns["Out"], 2 * a)


def test_function_named_out_is_defined(shell, capsys):
    result = shell.run_cell("%%polycuda --size N=16 --target emulator\n" + OUT_FUNCTION)
    assert result.success, result.error_in_exec
    assert "Out now names the function" in capsys.readouterr().out
    assert callable(shell.user_ns["Out"])


def test_function_named_underscore_says_rename(shell, capsys):
    src = TWICE.replace("twice", "_")
    result = shell.run_cell("%%polycuda --size N=16 --target emulator\n" + src)
    assert result.success, result.error_in_exec
    assert "rename the C function" in capsys.readouterr().out


def test_status_line_shows_only_slow_work():
    """The progress line: nothing for fast work; for slow work a line, updated at
    each phase, cleared at the end."""
    import threading
    seen: list[str] = []
    with StatusLine("gemm", seen.append, after=10.0):
        pass
    assert seen == []
    shown = threading.Event()

    def sink(text: str) -> None:
        seen.append(text)
        shown.set()
    with StatusLine("gemm", sink, after=0.0, every=0.05) as status:
        assert shown.wait(30)
        status.phase("running and checking")
    assert seen[0].startswith("gemm: compiling… ")
    assert any(s.startswith("gemm: running and checking… ") for s in seen)
    assert seen[-1] == ""


def test_status_line_in_a_notebook_kernel(tmp_path, monkeypatch):
    """In a real kernel the line is an HTML display updated in place from the status
    thread, and cleared (text and HTML) at the end: nothing is left in the notebook."""
    import os
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient
    root = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import time\n"
        "from polymagic.report.progress import StatusLine, notebook_sink\n"
        "with StatusLine('gemm', notebook_sink(), after=0.1, every=0.1) as status:\n"
        "    time.sleep(0.5)\n"
        "    status.phase('running and checking')\n"
        "    time.sleep(0.3)\n")]
    client = NotebookClient(nb, timeout=600, startup_timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    shown = []
    output = client.output

    def record(outs, msg, display_id, cell_index):
        if msg["msg_type"] == "display_data":
            shown.append(msg["content"]["data"]["text/plain"])
        return output(outs, msg, display_id, cell_index)
    client.output = record
    client.execute()
    assert shown and shown[0].startswith("gemm: compiling… ")
    (out,) = nb.cells[0].outputs
    assert out["data"] == {"text/plain": "", "text/html": ""}
