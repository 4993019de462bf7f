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

A note's stage is a :class:`Stage`, the one vocabulary of stage names shared by
the notes, the driver's stage log (``--show stages``) and the report's grouping.

This module sits at the bottom layer: every stage imports it, it imports nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

KINDS = ("decision", "fallback", "refusal", "info")


class Stage(StrEnum):
    """The compiler's stages, in the order they run (the report lists a kernel's notes
    in this order).  Each is a ``str`` equal to its name (what the stage log prints and
    the JSON report's ``stage`` field holds) and carries:

    - ``label``: the heading of its notes in the grouped listing (``--show notes``);
    - ``gpu``: its notes are about the GPU code (mapping, buffers, launches), so a run
      on the OpenMP target (issue 21) does not show them;
    - ``strategy``: its whole-function decisions are strategies with an option to
      change them (the short report ranks them above other decisions).

    Some are steps inside the driver's ``lowering`` entry (tiles, mapping, memory, ...):
    they leave notes but no log line of their own.
    """

    label: str
    gpu: bool
    strategy: bool

    def __new__(cls, name: str, label: str, gpu: bool = False,
                strategy: bool = False) -> "Stage":
        member = str.__new__(cls, name)
        member._value_ = name
        member.label, member.gpu, member.strategy = label, gpu, strategy
        return member

    OPTIONS = "options", "options"
    PARSE = "parse", "frontend"
    DEPENDENCES = "dependences", "dependences"
    SCHEDULE = "schedule", "mapping choice", True
    RECURRENCE = "recurrence", "time loop", True, True
    TILES = "tiles", "tile sizes", True, True
    LAYOUT = "layout", "array layout", False, True
    MAPPING = "mapping", "mapping", True
    MEMORY = "memory", "shared-memory buffers", True
    LOCALISE = "localise", "localisation", True, True
    REGISTERS = "registers", "registers", True
    CONSTANT = "constant", "constant memory", True
    LOWERING = "lowering", "code generation", True
    CUDA = "cuda", "CUDA code", True
    HOST = "host", "host code", True
    CPU = "cpu", "OpenMP C (the CPU target)"
    TRANSFERS = "transfers", "host-device transfers", True
    RUN = "run", "inputs and run"
    AUTOTUNE = "autotune", "autotune"

    @property
    def order(self) -> int:
        """Its place in the pipeline (0 first)."""
        return _ORDER[self]


_ORDER = {s: i for i, s in enumerate(Stage)}


@dataclass(frozen=True)
class Note:
    """One line of a stage's notes.  ``str()`` joins the kernel, the subject and the
    text with ": " (each only when set), which is exactly the line users see.
    ``stage`` may be given as its name; it is kept as the :class:`Stage` (an unknown
    name is an error)."""

    stage: Stage
    text: str
    kernel: str | None = None
    subject: str | None = None
    kind: str = "decision"
    #: a part of the kernel the note is about ("thread group [S0,S1]"), printed after
    #: the kernel's name in parentheses
    where: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "stage", Stage(self.stage))
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
        return {"stage": self.stage.value, "kind": self.kind, "kernel": self.kernel,
                "where": self.where, "subject": self.subject, "text": self.text,
                "line": str(self)}
