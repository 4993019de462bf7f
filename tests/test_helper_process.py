"""The helper process (polymagic.helper_process): isl's scheduler runs there, in a
process forked once and kept, with the same CPU-time limit as a child per call
(isl_util.in_child) had (issue 22: a fork per call cost ~25 ms of CPU)."""
from __future__ import annotations

import os
import time

import islpy as isl
import pytest

from polymagic import helper_process
from polymagic.helper_process import helper_seconds, run_bounded
from polymagic.isl_util import TimedOut

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def card(text: str) -> str:
    return str(isl.Set(text).card())


def parse(text: str) -> str:
    return str(isl.Set(text))


def spin() -> None:
    while True:
        pass


def block() -> None:
    time.sleep(60)


def own_pid() -> int:
    return os.getpid()


def nested_pid() -> tuple[int, int]:
    """The helper's pid and that of the process a call made from the helper runs in."""
    return os.getpid(), run_bounded(own_pid, (), 30)


def test_calls_run_in_one_kept_process():
    assert run_bounded(card, ("{ [i] : 0 <= i < 5 }",), 30) == "{ 5 }"
    pid = run_bounded(own_pid, (), 30)
    assert pid != os.getpid()
    assert run_bounded(own_pid, (), 30) == pid          # the same helper, not a new fork
    assert run_bounded(card, ("[N] -> { [i] : 0 <= i < N }",), 30) == \
        "[N] -> { N : N > 0 }"


def test_errors_come_back_as_isl_errors_and_the_helper_stays():
    pid = run_bounded(own_pid, (), 30)
    with pytest.raises(isl.Error, match="syntax error"):
        run_bounded(parse, ("{ [i] : ",), 30)
    assert run_bounded(own_pid, (), 30) == pid


def test_a_call_past_its_cpu_limit_times_out_and_a_new_helper_follows():
    """The limit is the helper's CPU time in the call (issue 18: a loaded machine does
    not make it give up sooner); the helper is killed and the next call forks one."""
    pid = run_bounded(own_pid, (), 30)
    t0 = time.monotonic()
    with pytest.raises(TimedOut):
        run_bounded(spin, (), 0.3)
    assert time.monotonic() - t0 < 0.3 * 20 + 1.5      # (its own timer, not the wall guard)
    new = run_bounded(own_pid, (), 30)
    assert new != pid
    assert run_bounded(card, ("{ [i] : 0 <= i < 3 }",), 30) == "{ 3 }"


def test_a_blocked_call_is_killed_by_the_wall_guard():
    with pytest.raises(TimedOut):
        run_bounded(block, (), 0.1)        # killed at 20 x 0.1 + 1 s of wall time
    assert run_bounded(card, ("{ [i] : 0 <= i < 2 }",), 30) == "{ 2 }"


def test_a_call_made_inside_the_helper_runs_in_a_child_of_it():
    helper, inner = run_bounded(nested_pid, (), 30)
    assert inner not in (helper, os.getpid())


def test_the_helpers_cpu_time_is_counted():
    """Its CPU time reaches RUSAGE_CHILDREN only once it is reaped: until then the
    driver's clock (compiler.driver.cpu_seconds) adds what it reports per call."""
    from polymagic.compiler.driver import cpu_seconds
    run_bounded(own_pid, (), 30)
    before, c0 = helper_seconds(), cpu_seconds()
    run_bounded(card, ("[N, M] -> { [i, j] : 0 <= i < N and 0 <= j < M and i + j < 2N }",), 30)
    assert helper_seconds() > before
    assert cpu_seconds() - c0 >= helper_seconds() - before


def test_a_forked_child_does_not_talk_to_its_parents_helper():
    """It forks its own (a tile-search worker's calls would otherwise interleave with
    its parent's on one pipe), and the parent's helper carries on."""
    from polymagic.isl_util import in_child
    helper = run_bounded(own_pid, (), 30)
    assert in_child(lambda: run_bounded(own_pid, (), 30), 30) not in (helper, os.getpid())
    assert helper_process._helper is not None and helper_process._helper.pid == helper
    assert run_bounded(own_pid, (), 30) == helper
