"""The command-line contract: ``python -m polymagic run|cuda FILE.c [options]``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from polymagic.cli import main

ROOT = Path(__file__).resolve().parents[1]

SCALE = """
void scale(int N, float A[N][N], float B[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      B[i][j] = 2.0f * A[i][j] + 1.0f;
}
"""

BAD_C = """
void broken(int N, float A[N]) {
  for (int i = 0; i < N; i++)
    A[i] = 2.0f * ;
}
"""

JSON_KEYS = {"ok", "target", "max_rel_err", "max_abs_err", "mismatches", "kernels",
             "compile_s", "cpu_s", "device_s", "h2d_s", "d2h_s", "sizes", "summary"}

EMU = ["--size", "N=40", "--target", "emulator"]


@pytest.fixture
def scale_c(tmp_path: Path) -> Path:
    p = tmp_path / "scale.c"
    p.write_text(SCALE)
    return p


@pytest.fixture
def bad_c(tmp_path: Path) -> Path:
    p = tmp_path / "broken.c"
    p.write_text(BAD_C)
    return p


def _cli(*args: str) -> subprocess.CompletedProcess:
    """Run ``python -m polymagic`` in a subprocess, as a script would."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "polymagic", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)


def test_run_json_is_one_object_with_the_keys(scale_c):
    p = _cli("run", str(scale_c), *EMU, "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)                     # exactly one JSON document
    assert isinstance(data, dict)
    assert JSON_KEYS <= set(data)
    assert data["ok"] is True
    assert data["target"] == "emulator"
    assert data["mismatches"] == 0
    assert data["kernels"] >= 1
    assert data["sizes"]["N"] == 40


def test_run_text_report(scale_c, capsys):
    assert main(["run", str(scale_c), *EMU]) == 0
    out = capsys.readouterr().out
    assert out.startswith("scale: ")
    assert "check: OK" in out
    assert "times:" in out and "compile" in out


def test_run_show_cuda_and_deps(scale_c, capsys):
    assert main(["run", str(scale_c), *EMU, "--show", "cuda,deps"]) == 0
    out = capsys.readouterr().out
    assert "==== Generated CUDA ====" in out and "__global__" in out
    assert "==== Dependences ====" in out


def test_run_with_inputs_file(scale_c, tmp_path, capsys):
    a = np.random.default_rng(0).random((40, 40), dtype=np.float32)
    npz = tmp_path / "in.npz"
    np.savez(npz, A=a)
    assert main(["run", str(scale_c), *EMU, "--inputs", str(npz), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_cuda_subcommand_prints_only_cuda(scale_c):
    p = _cli("cuda", str(scale_c))
    assert p.returncode == 0, p.stderr
    assert "__global__" in p.stdout
    assert "check:" not in p.stdout


def test_bad_c_exits_2_without_traceback(bad_c):
    p = _cli("run", str(bad_c), *EMU)
    assert p.returncode == 2
    assert "line 4" in p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout == ""


def test_bad_c_with_json_prints_error_object(bad_c, capsys):
    assert main(["run", str(bad_c), *EMU, "--json"]) == 2
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["ok"] is False and "line 4" in data["error"]
    assert "line 4" in captured.err


@pytest.mark.parametrize("args", [
    ["run", "{file}", "--tile", "0"],
    ["run", "{file}", "--target", "tpu"],
    ["run", "{file}", "--block", "64,64"],
    ["run", "{file}", "--show", "nonsense"],
    ["run", "{file}", "--frobnicate"],
    ["cuda", "{file}", "--size", "NOPE=3"],          # not a size: refused without a run too
    ["run"],
    ["launch", "{file}"],
    [],
])
def test_bad_usage_exits_2(scale_c, capsys, args):
    argv = [a.replace("{file}", str(scale_c)) for a in args]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("polymagic: error:")
    assert captured.out == ""


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.c"), "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["ok"] is False
    assert "nope.c" in captured.err


def test_gemm_example_runs(capsys):
    gemm = ROOT / "examples" / "gemm.c"
    if not gemm.exists():
        pytest.skip("examples/gemm.c not written yet")
    assert main(["run", str(gemm), "--size", "N=48", "--target", "emulator", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_failed_check_exits_1(scale_c, capsys, monkeypatch):
    import polymagic.api.commands as commands
    real = commands.run

    def failing(compiled, options, namespace=None):
        report = real(compiled, options, namespace)
        report.ok, report.mismatches, report.first_mismatch = False, 1, ("B", (0, 0))
        return report

    monkeypatch.setattr(commands, "run", failing)
    assert main(["run", str(scale_c), *EMU, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["first_mismatch"] == {"array": "B", "index": [0, 0]}


def test_emulator_error_exits_1(scale_c, capsys, monkeypatch):
    import polymagic.api.commands as commands
    from polymagic.errors import EmulatorError

    def racing(compiled, options, namespace=None):
        raise EmulatorError("data race on B[0][0] between threads (0,0,0) and (1,0,0)")

    monkeypatch.setattr(commands, "run", racing)
    assert main(["run", str(scale_c), *EMU, "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"ok": False, "kind": "EmulatorError",
                                        "error": "data race on B[0][0] between threads "
                                                 "(0,0,0) and (1,0,0)"}
    assert "data race" in captured.err


def test_no_check_and_quiet(scale_c, capsys):
    assert main(["run", str(scale_c), *EMU, "--no-check"]) == 0
    out = capsys.readouterr().out
    assert "not checked" in out
    assert main(["run", str(scale_c), *EMU, "--quiet"]) == 0
    assert capsys.readouterr().out == ""


def test_python_file(tmp_path, capsys):
    p = tmp_path / "scale.py"
    p.write_text('def scale(N: int, A: "float32[N][N]", B: "float32[N][N]"):\n'
                 "    for i in range(N):\n"
                 "        for j in range(N):\n"
                 "            B[i][j] = 2.0 * A[i][j] + 1.0\n")
    assert main(["run", str(p), *EMU, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["function"] == "scale"


def test_json_reports_shared_bytes_and_emulator_counts(capsys):
    """Issue 3's --json keys: largest shared memory per block and global accesses."""
    import json
    import pathlib
    from polymagic.cli import main
    src = pathlib.Path(__file__).resolve().parent.parent / "examples" / "jacobi-2d.c"
    assert main(["run", str(src), "--size", "n=40,tsteps=2", "--target", "emulator", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # one 34x34 double buffer per kernel (rows padded to 36 only with --vector)
    assert out["shared_bytes"] == 34 * 34 * 8
    assert out["global_loads"] > 0 and out["global_stores"] == 2 * 2 * 38 * 38
    assert main(["run", str(src), "--size", "n=40,tsteps=2", "--target", "emulator", "--json",
                 "--no-shared"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["shared_bytes"] == 0
    assert plain["global_loads"] == 2 * 2 * 5 * 38 * 38
