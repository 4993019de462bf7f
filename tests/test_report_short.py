"""The short report of issue 20: at most ten lines by default, at most three notes
ranked by what the user can act on, every note once under ``--show notes`` and the
HTML's "Why", summaries and notes in words, glossary terms defined."""
from __future__ import annotations

import collections
from pathlib import Path

import pytest

from polymagic.cli import main
from polymagic.compiler import compile_source
from polymagic.notes import Note
from polymagic.options import parse_options
from polymagic.report import to_html, to_text
from polymagic.report import why
from polymagic.report.glossary import TERMS, markdown, terms_in
from polymagic.report.summary import summary_words
from polymagic.runtime.run import run

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "examples").glob("*.c")) + \
    sorted((ROOT / "benchmarks" / "kernels").glob("*-scalar.c"))


def test_gemm_report_fits_ten_lines(capsys):
    assert main(["run", str(ROOT / "examples" / "gemm.c"), "--size", "N=200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 10, "\n".join(lines)
    # 8 x 32 tiles fill the grid best at N = 200 (mapping.grid_fill)
    assert lines[0].startswith("gemm: 1 kernel: kernel0: i, j in 8×32 tiles")
    assert lines[1].startswith("ran on: ")
    assert lines[2].startswith("check: OK")
    assert lines[3].startswith("times: compile")
    assert sum(1 for l in lines if l.startswith("memory: ")) <= 1
    assert sum(1 for l in lines if l.startswith("note: ")) <= why.SHOWN
    assert lines[-1].endswith("--show notes lists them")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_no_duplicate_notes(path):
    compiled = compile_source(path.read_text(), parse_options("--size N=64"))
    count = collections.Counter(str(n) for n in compiled.notes)
    assert [n for n, k in count.items() if k > 1] == []
    for n in compiled.notes:
        assert "% of the volume" not in n.text                # words, not δ percentages
        assert "no coalescing gain in the DL model" not in n.text


@pytest.fixture(scope="module")
def gemm():
    opts = parse_options("--size N=24 --target emulator")
    compiled = compile_source((ROOT / "examples" / "gemm.c").read_text(), opts)
    return compiled, run(compiled, opts)


def test_show_notes_lists_every_note_grouped(gemm):
    compiled, report = gemm
    text = to_text(report, compiled, ("notes",))
    view = text.split("==== Why: every note, by kernel and stage ====\n", 1)[1]
    for n in compiled.notes:
        assert n.after_kernel() in view
    assert "kernel0:\n  mapping:\n" in view and "\n  shared-memory buffers:\n" in view


def test_html_why_section_holds_every_note(gemm):
    from html import escape
    compiled, report = gemm
    html = to_html(report, compiled)
    assert "<details style=\"margin:4px 0\"><summary" in html and "Why: " in html
    for n in compiled.notes:
        assert escape(n.after_kernel()) in html
    assert "<abbr title=" in html and "Terms</summary>" in html


def test_notes_ranked_by_kind_not_text():
    notes = [Note("memory", "a buffer", "kernel0", "A"),
             Note("run", "inputs", kind="info"),
             Note("memory", "dropped", "kernel0", "C", kind="fallback"),
             Note("options", "ignored", kind="refusal"),
             Note("tiles", "tile search chose 32,32"),
             Note("memory", "dropped", "kernel0", "C", kind="fallback")]
    top = why.top(notes)
    assert [n.kind for n in top] == ["refusal", "fallback", "decision"]
    assert top[2].stage == "tiles"
    assert len(why.unique(notes)) == 5


def test_time_tiles_summary_in_words():
    src = (ROOT / "examples" / "jacobi-2d.c").read_text()
    compiled = compile_source(src, parse_options("--time-tiling 4,16,16"))
    words = summary_words(compiled)
    assert "time tiles of 4 steps × 16×16 points" in words
    assert "one launch per wavefront of tiles" in words
    assert "floor(" not in words


def test_glossary_defines_the_report_words():
    used = {t.word for t in terms_in("6 sectors per warp request; fully coalesced; "
                                     "one per thread block; 8×8 points per thread")}
    assert {"warp request", "coalesced", "thread block", "points per thread"} <= used
    page = markdown()
    assert all(f"## {t.word}" in page for t in TERMS)
    assert len({t.anchor for t in TERMS}) == len(TERMS)
