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
    that replace a stage function, or that must see every stage run)."""
    from polymagic.compiler import clear_caches
    clear_caches()
    yield
    clear_caches()
