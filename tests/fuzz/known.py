"""Open bugs the fuzzer already found, recognised by their outcome.

Each entry names where the bug is written up (``docs/fuzz-findings.md``) and
matches failures by kind, a regular expression on the message and, optionally,
one on the generated CUDA (when the symptom varies but the faulty code is
recognisable).  The CI campaign (``tests/test_fuzz.py``) fails only on failures
that match no entry, so a bug in a module the fuzzer's authors may not edit does
not block the suite; ``benchmarks/fuzz.py`` counts them as failures unless
``--allow-known``.  Remove an entry when its bug is fixed (its saved regression
in ``tests/fuzz/regressions/`` then passes: drop its ``xfail`` too).
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    name: str
    kinds: tuple[str, ...]        # outcome kinds it shows up as ("*": any failure)
    pattern: str = ""             # regex on the outcome message
    code_pattern: str = ""        # regex on the generated CUDA
    where: str = ""

    def matches(self, outcome) -> bool:
        if "*" not in self.kinds and outcome.kind not in self.kinds:
            return False
        if self.pattern and not re.search(self.pattern, outcome.message):
            return False
        if self.code_pattern and not re.search(self.code_pattern, outcome.code or ""):
            return False
        return bool(self.pattern or self.code_pattern)


KNOWN: tuple[Known, ...] = (
    Known("slow-compile", ("timeout",),
          r"schedule/__init__\.py\", line \d+ in compute_schedule|"
          r"isl_util\.py\", line \d+ in pw_aff_to_expr",
          where="docs/fuzz-findings.md#12 (a compile of about a minute)"),
    Known("isl-dimensionality", ("compile-error",),
          r"total dimensionality changed unexpectedly",
          where="docs/fuzz-findings.md#50 (an isl internal error on a strided nest)"),
)


def known(outcome) -> Known | None:
    """The known bug a failed outcome matches, if any."""
    return next((k for k in KNOWN if k.matches(outcome)), None)
