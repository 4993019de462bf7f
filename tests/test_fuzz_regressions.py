"""Every reproducer the fuzzer saved (tests/fuzz/regressions/*.c + .json) passes.

Each one was shrunk from a failing fuzz case; it must now give the CPU
reference's result with no emulator complaint.  Entries whose bug is still open
carry ``xfail`` (where it is written up) and are expected to fail until fixed.
"""
from __future__ import annotations

import pytest

from fuzz import regressions, runner

TIMEOUT_S = 30


def _params():
    out = []
    for name, case, meta in regressions.load_all():
        marks = [pytest.mark.xfail(reason=meta["xfail"], strict=False)] if meta.get("xfail") else []
        out.append(pytest.param(case, meta, id=name, marks=marks))
    return out


def test_there_are_saved_regressions():
    assert regressions.load_all(), "tests/fuzz/regressions/ holds no reproducers"


@pytest.fixture(scope="module")
def pool():
    """One worker process, so a regression that hangs fails after TIMEOUT_S."""
    with runner.Pool(1, TIMEOUT_S) as p:
        yield p


@pytest.mark.parametrize("case,meta", _params())
def test_saved_regression_passes(case, meta, pool):
    [(_, [(_, outcome)])] = list(pool.imap([(runner.cases_job, ([case],), 1)]))
    assert outcome.kind == "pass", (
        f"{outcome.kind}: {outcome.message}\nfirst found as {meta['found']['kind']}; "
        f"rerun: {meta.get('command', '')}")
