"""Reports: every --show view renders, JSON is strict, HTML escapes and highlights."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from polymagic.options import SHOW, parse_options
from polymagic.compiler import compile_source
from polymagic.report import HtmlReport, to_html, to_json, to_text
from polymagic.report.jsonout import clean
from polymagic.runtime.run import RunReport, run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gemm():
    opts = parse_options("--size N=24 --target emulator")
    compiled = compile_source((ROOT / "examples" / "gemm.c").read_text(), opts)
    return compiled, run(compiled, opts)


@pytest.mark.parametrize("name", SHOW)
def test_every_view_renders(gemm, name):
    compiled, report = gemm
    text = to_text(report, compiled, (name,))
    assert "view unavailable" not in text
    assert "====" in text


def test_text_report_lines(gemm):
    compiled, report = gemm
    lines = to_text(report, compiled).splitlines()
    assert lines[0].startswith("gemm: 1 kernel: kernel0: i, j in ")
    assert lines[1].startswith("ran on: emulator (requested with --target emulator)")
    assert lines[2].startswith("check: OK")
    assert lines[3].startswith("times: compile")


def test_html_report(gemm):
    compiled, report = gemm
    html = to_html(report, compiled, ("deps",))
    assert "<details" in html and "__global__" in html
    assert "Dependences" in html and ">OK<" in html
    assert repr(HtmlReport(report, compiled)).startswith("gemm: ")


def _mismatch() -> RunReport:
    return RunReport(ok=False, target="emulator", target_note="<b>x</b>", checked=True,
                     max_abs_err=float("nan"), max_rel_err=float("inf"), mismatches=3,
                     first_mismatch=("C", (np.int64(1), np.int64(2))),
                     per_array={"C": {"mismatches": np.int64(3), "first_mismatch": (1, 2)}},
                     launches=1, sizes={"N": np.int32(4)})


def test_mismatch_text_and_html(gemm):
    compiled, _ = gemm
    r = _mismatch()
    text = to_text(r, compiled)
    assert "check: MISMATCH: 3 element(s)" in text and "first at C[1, 2]" in text
    html = to_html(r, compiled)
    assert ">MISMATCH<" in html
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_json_is_strict(gemm):
    compiled, _ = gemm
    data = to_json(_mismatch(), compiled)
    text = json.dumps(data, allow_nan=False)          # raises on NaN/inf
    back = json.loads(text)
    assert back["max_abs_err"] is None and back["max_rel_err"] is None
    assert back["first_mismatch"] == {"array": "C", "index": [1, 2]}
    assert back["sizes"] == {"N": 4}
    assert back["kernels"] == 1 and back["kernel_names"] == ["kernel0"]


def test_clean_numpy_values():
    assert clean({"a": np.float32(1.5), "b": np.arange(3), "c": (1, math.inf)}) == \
        {"a": 1.5, "b": [0, 1, 2], "c": [1, None]}
