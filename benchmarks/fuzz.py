"""Differential fuzzing campaign: random affine C functions x option combinations.

    python benchmarks/fuzz.py --cases 100000 [--seed S] [--time-budget SEC] [--workers W]

Each case runs a generated function through the pipeline and compares the
device target (race-hunting emulator or OpenMP) with the CPU reference; failing
cases are shrunk and saved under tests/fuzz/regressions/.  The last line is
``cases N, failures F, cases/s R``; the exit status is 0 iff F = 0.  The fuzzer
itself lives in tests/fuzz/ (see its package docstring).
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]   # the fuzz package, then polymagic

from fuzz.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
