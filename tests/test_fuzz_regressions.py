"""Every reproducer the fuzzer saved (tests/fuzz/regressions/*.c|.py + .json) passes.

Each one was shrunk from a failing fuzz case; it must now give the CPU
reference's result with no emulator complaint.  Entries whose bug is still open
carry ``xfail`` (where it is written up) and are expected to fail until fixed.
Each test runs its own reproducer in a forked worker with :data:`TIMEOUT_S` seconds
of CPU time, so a reproducer of a hang fails instead of hanging the suite.  One test
per reproducer, not one module fixture for all of them: under ``pytest -n auto`` a
module fixture runs once in every xdist worker that gets one of the module's tests
(the whole set twice on two workers), and its 130-165 CPU s were charged to one test,
which bounded the suite's wall time; one case per test spreads them over the workers.
"""
from __future__ import annotations

import pytest

from fuzz import regressions, runner
from fuzz.pool import Pool
# imported here, before the forks, so each test's worker does not import them anew
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

_PRELOADED = (compile_source, run)

#: CPU seconds per reproducer: the slowest pass in 13-22 s alone, and CPU time too
#: grows under load (caches shared with other processes); 30 s was too close
TIMEOUT_S = 60
SAVED = regressions.load_all()


def _params():
    out = []
    for name, case, meta in SAVED:
        marks = [pytest.mark.xfail(reason=meta["xfail"], strict=False)] if meta.get("xfail") else []
        out.append(pytest.param(name, case, meta, id=name, marks=marks))
    return out


def _outcome(case) -> runner.Outcome:
    """The case's outcome, run in one forked worker under the CPU-time cap."""
    with Pool(1, TIMEOUT_S) as pool:
        for _k, got in pool.imap([(runner.cases_job, ([case],), 1)]):
            return got[-1][1] if got else runner.Outcome("crash:no-result")
    return runner.Outcome("crash:no-result")


def test_there_are_saved_regressions():
    assert SAVED, "tests/fuzz/regressions/ holds no reproducers"


@pytest.mark.parametrize("name,case,meta", _params())
def test_saved_regression_passes(name, case, meta):
    outcome = _outcome(case)
    assert outcome.kind == "pass", (
        f"{outcome.kind}: {outcome.message}\nfirst found as {meta['found']['kind']}; "
        f"rerun: {meta.get('command', '')}")
