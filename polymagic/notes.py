"""Notes: what a stage decided, as records rather than text (issue 17).

Every stage may leave notes for the user: why a buffer was dropped, why the
superposition was not used, which tiles the search chose.  A :class:`Note` keeps
the stage, the kernel and the subject (an array, a loop, an option) as fields set
where they are known, so that nothing downstream parses them back out of text;
``str(note)`` is the line the user reads ("kernel0: C: not buffered (...)").

Kinds:

- ``decision``: what a stage chose and why (a buffer, a register, localisation).
- ``fallback``: a limit or failure made a stage take a simpler, safe path (isl's
  operation budget, a scheduler time limit, buffers dropped to fit).
- ``refusal``: an option the user gave was not applied (``--time-tiling``,
  ``--localise``, ``--shared-mem`` capped).
- ``info``: anything else worth a line (sampling, transfers, where inputs came from).

This module sits at the bottom layer: every stage imports it, it imports nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

KINDS = ("decision", "fallback", "refusal", "info")


@dataclass(frozen=True)
class Note:
    """One line of a stage's notes.  ``str()`` joins the kernel, the subject and the
    text with ": " (each only when set), which is exactly the line users see."""

    stage: str
    text: str
    kernel: str | None = None
    subject: str | None = None
    kind: str = "decision"
    #: a part of the kernel the note is about ("thread group [S0,S1]"), printed after
    #: the kernel's name in parentheses
    where: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown note kind {self.kind!r} (one of {', '.join(KINDS)})")

    def __str__(self) -> str:
        kernel = self.kernel
        if kernel is not None and self.where is not None:
            kernel = f"{kernel} ({self.where})"
        return ": ".join(p for p in (kernel, self.subject, self.text) if p is not None)

    def after_kernel(self) -> str:
        """The line without its kernel's name (a kernel's own listing)."""
        if self.kernel is None:
            return str(self)
        return ": ".join(p for p in (self.subject, self.text) if p is not None)

    def as_dict(self) -> dict[str, str | None]:
        """The structured fields and the printed line (for the JSON report)."""
        return {"stage": self.stage, "kind": self.kind, "kernel": self.kernel,
                "where": self.where, "subject": self.subject, "text": self.text,
                "line": str(self)}
