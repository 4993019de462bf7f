"""The differential fuzzer in CI (tests/fuzz/, see its package docstring).

* A short seeded smoke campaign of :data:`CI_CASES` random (program, options)
  cases, run on all cores with per-case CPU-time caps, must show no failure other
  than the known, already-reported ones (tests/fuzz/known.py).  It has no
  wall-clock budget (a loaded machine makes it slower, not failing).  The long
  campaigns live in benchmarks (issue 18); the 300-case campaign this test ran
  until session 10 (about 4 CPU minutes) is::

      python benchmarks/fuzz.py --cases 300 --seed 20240 --timeout 60 --allow-known
* A planted mapping bug — every band member treated as parallel — must be caught
  within 200 cases, which shows the campaign has teeth.
"""
from __future__ import annotations

import os

import pytest

from fuzz import main as fuzz_main
from fuzz import runner, shrink
from polymagic import compiler
from polymagic.mapping import single

CI_CASES = 30         # five programs x six option draws: a smoke, not a campaign
MAPPINGS, RUNS = 2, 3  # runner.campaign's defaults: six option draws per program
CI_PROGRAMS = CI_CASES // (MAPPINGS * RUNS)
CI_SEED = 20240
CI_TIMEOUT_S = 60
WORKERS = max(2, min(4, os.cpu_count() or 2))


def _describe(failures: list[runner.Failure], pool_workers: int) -> str:
    """The failures, the first one shrunk (bounded time) for a readable message."""
    lines = [f"{f.outcome.kind}: {f.outcome.message.splitlines()[0][:300]}\n  "
             f"{' '.join(f.case.cli()) if f.case else ''}" for f in failures[:10]]
    first = failures[0]
    if first.case is not None:
        with runner.Pool(pool_workers) as pool:
            res = shrink.shrink(fuzz_main.initial_state(first.case), first.outcome.signature, pool,
                                max_tests=150, budget_s=120, stage=first.outcome.stage)
        lines.append("shrunk reproducer (" + " ".join(res.state.case().cli()) + "):\n"
                     + res.state.source)
    return "\n".join(lines)


@pytest.mark.parametrize("program", range(CI_PROGRAMS))
def test_seeded_campaign_has_no_new_failures(program):
    """One of the campaign's programs (seed ``CI_SEED * 10**6 + program``, what
    ``runner.campaign(CI_CASES, seed=CI_SEED)`` runs) with its six option draws: one
    test per program, so the smoke (about 85 CPU s at load 7) is spread over the
    xdist workers instead of bounding the wall time as one test."""
    # no wall-clock budget: on a loaded machine the campaign takes longer, it does not
    # fail (each case is capped in CPU time by the pool, issue 18)
    pseed = CI_SEED * 1_000_000 + program
    per = MAPPINGS * RUNS
    res = runner.CampaignResult()
    with runner.Pool(1, CI_TIMEOUT_S) as pool:
        for _k, results in pool.imap([(runner.program_job,
                                       (pseed, runner.program_options(pseed, MAPPINGS, RUNS)),
                                       per)]):
            runner._tally(res, results, per, None)
    print(res.summary_line(), res.kinds)
    assert res.programs == 1 and res.cases + res.lost >= 1, \
        f"{res.cases} cases ran, {res.lost} lost"
    fresh = res.new_failures
    assert not fresh, _describe(fresh, WORKERS)


@pytest.fixture
def planted_bug(monkeypatch):
    """Every band member counts as coincident: loops carrying dependences get
    mapped to parallel threads.  Compile caches are cleared around it."""
    monkeypatch.setattr(single, "leading_coincident", lambda node: node.band_n_member())
    compiler.clear_caches()
    yield
    compiler.clear_caches()


def test_planted_bug_is_caught_within_200_cases(planted_bug):
    res = runner.campaign(200, seed=CI_SEED + 1, workers=WORKERS, stop_on_failure=True)
    assert res.failures, f"the planted bug went unnoticed in {res.cases} cases"
    first = res.failures[0]
    assert first.outcome.kind in ("mismatch", "emulator:race"), first.outcome
    assert res.cases <= 200
