"""Every reproducer the fuzzer saved (tests/fuzz/regressions/*.c|.py + .json) passes.

Each one was shrunk from a failing fuzz case; it must now give the CPU
reference's result with no emulator complaint.  Entries whose bug is still open
carry ``xfail`` (where it is written up) and are expected to fail until fixed.
They run in worker processes (all cores), each with :data:`TIMEOUT_S` seconds,
so a reproducer of a hang fails instead of hanging the suite.
"""
from __future__ import annotations

import pytest

from fuzz import regressions, runner
from fuzz.pool import Pool

#: CPU seconds per reproducer: the slowest pass in 13-22 s alone, and CPU time too
#: grows under load (caches shared with other processes); 30 s was too close
TIMEOUT_S = 60
SAVED = regressions.load_all()


def _params():
    out = []
    for name, case, meta in SAVED:
        marks = [pytest.mark.xfail(reason=meta["xfail"], strict=False)] if meta.get("xfail") else []
        out.append(pytest.param(name, meta, id=name, marks=marks))
    return out


@pytest.fixture(scope="module")
def outcomes() -> dict:
    """name -> Outcome of every saved case, run in parallel."""
    jobs = [(runner.cases_job, ([case],), 1) for _, case, _ in SAVED]
    out = {}
    with Pool(2, TIMEOUT_S) as pool:
        for k, got in pool.imap(jobs):
            out[SAVED[k][0]] = got[-1][1] if got else runner.Outcome("crash:no-result")
    return out


def test_there_are_saved_regressions():
    assert SAVED, "tests/fuzz/regressions/ holds no reproducers"


@pytest.mark.parametrize("name,meta", _params())
def test_saved_regression_passes(name, meta, outcomes):
    outcome = outcomes[name]
    assert outcome.kind == "pass", (
        f"{outcome.kind}: {outcome.message}\nfirst found as {meta['found']['kind']}; "
        f"rerun: {meta.get('command', '')}")
