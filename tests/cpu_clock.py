"""CPU time for the tests' time caps: a loaded machine (other suites, other users)
slows the wall clock of a test several times, not the CPU time it uses.

``cpu_seconds()`` is this process's user + system time plus its waited-for
children's (the pipeline counts with barvinok in child processes) and its helper
process's calls (isl's scheduler, polymagic.helper_process)."""
from __future__ import annotations

import os

from polymagic.helper_process import helper_seconds


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system + helper_seconds()


#: processes the tile search runs its samples in (polymagic.tiles.search's
#: default): its CPU time is up to this many times its wall time on an idle machine
SEARCH_WORKERS = min(2, os.cpu_count() or 1)
