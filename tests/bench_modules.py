"""Scripts of ``benchmarks/`` loaded as modules by the tests that check their figures."""
from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as module ``name`` (``benchmarks/`` on the path for
    the modules it imports in turn)."""
    if name in sys.modules:
        return sys.modules[name]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
