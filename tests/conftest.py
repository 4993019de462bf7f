"""Shared pytest setup.

* The ``gpu`` marker: tests that need CuPy and a real GPU.  They are skipped,
  with the reason, wherever :func:`polymagic.runtime.gpu.gpu_available` is false
  (CI and most developer machines), and run where a GPU is present.
* The CPU reference's compile cache goes to a per-session temporary directory,
  so tests never write into the user's ``~/.cache``.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs CuPy and a CUDA GPU (skipped without one)")
    if not os.environ.get("POLYMAGIC_CACHE"):
        config._polymagic_cache = tempfile.mkdtemp(prefix="polymagic-test-cache-")
        os.environ["POLYMAGIC_CACHE"] = config._polymagic_cache


def pytest_unconfigure(config):
    path = getattr(config, "_polymagic_cache", None)
    if path:
        shutil.rmtree(path, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    gpu_items = [it for it in items if it.get_closest_marker("gpu")]
    if not gpu_items:
        return
    from polymagic.runtime.gpu import gpu_available, unavailable_reason
    if gpu_available():
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {unavailable_reason()}")
    for it in gpu_items:
        it.add_marker(skip)


@pytest.fixture
def fresh_cache():
    """No compile or stage result from before the test, none kept after it (for tests
    that replace a stage function, or that must see every stage run).  The results
    from before the test, computed by the real stages, are put back afterwards: the
    tests after it in this worker do not compile them again."""
    from polymagic.compiler import clear_caches, driver
    before = dict(driver._CACHE)
    clear_caches()
    yield
    clear_caches()
    driver._CACHE.update(before)


# --- CPU time per test (--cpu-durations=N) ---------------------------------------
# Wall time on a shared 2-core machine says little about what a test costs; the
# CPU time of the process and its waited-for children (gcc, the fork-guarded
# emulator, notebook kernels) does.  ``--cpu-durations=N`` prints the N costliest
# tests and the per-file totals; ``--cpu-json=PATH`` appends every test's figure as
# it ends (a run stopped half-way still leaves its figures).

def pytest_addoption(parser):
    group = parser.getgroup("polymagic")
    group.addoption("--cpu-durations", type=int, default=None, metavar="N",
                    help="show the N tests with the most CPU time (self + children), "
                         "and CPU time per file")
    group.addoption("--cpu-json", default=None, metavar="PATH",
                    help="append each test's CPU seconds (setup + call + teardown) to PATH "
                         "as it ends, one JSON object a line")


_CPU_BY_TEST: dict = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    from cpu_clock import cpu_seconds
    start = cpu_seconds()
    yield
    _CPU_BY_TEST[item.nodeid] = cpu_seconds() - start
    path = item.config.getoption("--cpu-json")
    if path:
        import json
        with open(path, "a") as f:
            f.write(json.dumps({"test": item.nodeid, "cpu_s": round(_CPU_BY_TEST[item.nodeid], 3)})
                    + "\n")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    n = config.getoption("--cpu-durations")
    if n is None or not _CPU_BY_TEST:
        return
    tr = terminalreporter
    total = sum(_CPU_BY_TEST.values())
    tr.write_sep("=", f"CPU time: {total / 60:.1f} min in {len(_CPU_BY_TEST)} tests")
    per_file: dict = {}
    for nodeid, sec in _CPU_BY_TEST.items():
        f = nodeid.split("::", 1)[0]
        per_file[f] = per_file.get(f, 0.0) + sec
    for f, sec in sorted(per_file.items(), key=lambda kv: -kv[1])[:max(n, 10)]:
        tr.write_line(f"{sec:8.1f}s  {f}")
    tr.write_sep("-", f"{n} costliest tests (CPU s, setup + call + teardown)")
    for nodeid, sec in sorted(_CPU_BY_TEST.items(), key=lambda kv: -kv[1])[:n]:
        tr.write_line(f"{sec:8.1f}s  {nodeid}")
