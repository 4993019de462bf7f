"""A fuzz case (program source, sizes, option arguments) and its outcome.

Kept apart from the runner so that the worker pool (:mod:`.pool`) and the
corpus test can use them without importing the pipeline.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

#: Outcome kinds that are not failures.
PASS = "pass"
SKIPPED = "skipped"          # never ran (its worker timed out on an earlier case)
REFUSED = "refused"          # a clear user-level refusal of a resource limit option


@dataclass
class Outcome:
    """What one case did."""
    kind: str                    # pass | mismatch | emulator:<what> | compile-error | ...
    message: str = ""
    seconds: float = 0.0
    stage: str = ""              # where it failed: options | compile (pipeline) | run
    where: str = ""              # crash: innermost polymagic frame; compile error: its first error
    code: str = field(default="", repr=False)   # generated CUDA of a failed run (known bugs)

    @property
    def failed(self) -> bool:
        return self.kind not in (PASS, SKIPPED, REFUSED)

    @property
    def signature(self) -> str:
        """What shrinking must preserve: the kind, and for crashes and compile errors
        where they happen (so a shrink cannot drift to another bug)."""
        return f"{self.kind}|{self.where}" if self.where else self.kind


@dataclass
class Case:
    """A program (as source and sizes) plus option arguments."""
    source: str
    sizes: dict
    args: list[str]
    seed: int = -1               # program seed (-1: not generated, e.g. a regression)
    attempt: int = 0

    @property
    def language(self) -> str:
        """The front end the source is for (``--python``: Python, else C)."""
        return "python" if "--python" in self.args else "c"

    def cli(self) -> list[str]:
        sizes = ",".join(f"{k}={v}" for k, v in self.sizes.items())
        return list(self.args) + (["--size", sizes] if sizes else [])

    def as_dict(self) -> dict:
        return asdict(self)
