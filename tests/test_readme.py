"""The README is a guide that cannot drift (issue 20): at most 2,000 words, no table
cell over 60 words, its example output the real run's (scripts/readme_example.py
writes it; timings aside it must match), the figures its explanations quote present
in that output; the site's option reference lists every option of the parser."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "docs" / "_ext")]
import readme_example  # noqa: E402

#: figures of the example's text report that README.md and
#: docs/guide/reading-reports.md quote in their explanations of sectors per request
QUOTED = ("3.57", "5.82")
#: the example's total transactions (32-byte sectors) they quote: the JSON's
#: ``global_transactions``
TRANSACTIONS = "170,000"
DOCS_QUOTING = ["README.md", "docs/guide/reading-reports.md"]


def table_cells(text: str) -> list[str]:
    """The cells of every Markdown table row (a line starting with ``|``)."""
    cells = []
    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            cells += [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
    return cells


def test_readme_is_short():
    words = len(README.read_text().split())
    assert words <= 2000, f"README.md has {words} words (at most 2,000: move detail to docs/)"


def test_readme_table_cells_are_short():
    long = [c for c in table_cells(README.read_text()) if len(c.split()) > 60]
    assert not long, f"README table cells over 60 words: {[c[:80] for c in long]}"


def test_table_cells_counts_each_cell():
    assert table_cells("| a b | `x\\|y` c |\n| --- | --- |") == ["a b", "`x\\|y` c", "---", "---"]


@pytest.fixture(scope="module")
def report() -> str:
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("the README shows the emulator's run; CuPy is importable here")
    return readme_example.run_example()


def test_readme_example_is_the_real_run(report):
    diff = readme_example.drift(README.read_text(), report)
    assert not diff, ("README.md's example is stale; run python scripts/readme_example.py\n"
                      + "\n".join(diff))


@pytest.mark.parametrize("doc", DOCS_QUOTING)
def test_quoted_figures_are_in_the_report(report, doc):
    text = (ROOT / doc).read_text()
    for figure in QUOTED:
        assert figure in text, f"{doc} no longer quotes {figure}: update QUOTED"
        assert figure in report, (f"{doc} explains the report with {figure}, which the "
                                  "example's run no longer prints: update the explanation")


def test_quoted_transactions_are_the_runs(report):
    import json
    run = json.loads(readme_example.run_example(extra=("--json",)))
    assert f"{run['global_transactions']:,}" == TRANSACTIONS, (
        f"the example now moves {run['global_transactions']:,} sectors: update "
        f"{', '.join(DOCS_QUOTING)} and TRANSACTIONS")
    for doc in DOCS_QUOTING:
        assert TRANSACTIONS in (ROOT / doc).read_text(), f"{doc} no longer quotes {TRANSACTIONS}"


def test_mask_hides_durations_only():
    line = "times: compile 988 ms | CPU 7.05 ms | kernels 1.2 s; 30,000 sectors, 0.48 MB, 3 s"
    assert readme_example.mask(line) == ("times: compile <time> | CPU <time> | kernels "
                                         "<time>; 30,000 sectors, 0.48 MB, <time>")


def test_option_reference_lists_every_option():
    from option_reference import reference_markdown
    from polymagic.options import make_parser
    text = reference_markdown()
    for action in make_parser()._actions:
        for flag in action.option_strings:
            assert f"`{flag}`" in text, f"{flag} missing from the generated option reference"
