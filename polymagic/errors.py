"""User-facing errors.

Every mistake a user can make (bad C, bad options, arrays that do not fit the C
declaration) raises a subclass of :class:`PolymagicError`.  The magic and the CLI
print such errors as one paragraph, without a traceback; anything else is a bug in
polymagic and is shown with its traceback.
"""
from __future__ import annotations


class PolymagicError(Exception):
    """Base class of errors caused by the user's input, shown without a traceback."""


class SourceError(PolymagicError):
    """A problem in the C (or Python) source, located at a line and column.

    The message quotes the source line and puts a caret under the column, as a
    compiler would.
    """

    def __init__(self, message: str, line: int | None = None, col: int | None = None,
                 source: str | None = None):
        self.reason = message
        self.line = line
        self.col = col
        text = message
        if line is not None:
            where = f"line {line}" + (f", column {col}" if col is not None else "")
            text = f"{where}: {message}"
            if source is not None:
                lines = source.splitlines()
                if 1 <= line <= len(lines):
                    src = lines[line - 1].rstrip().expandtabs(1)
                    text += "\n    " + src
                    if col is not None and col >= 1:
                        text += "\n    " + " " * (col - 1) + "^"
        super().__init__(text)


class UnsupportedError(SourceError):
    """A C construct outside the affine subset polymagic handles."""


class BoundsError(SourceError):
    """A reference of the user's code leaves its array at the run's sizes
    (``A[i - 2]`` at ``i = 0``): refused before anything runs."""


class OptionsError(PolymagicError):
    """An option value that makes no sense (tile size 0, unknown target, ...)."""


class InputError(PolymagicError):
    """Arrays or scalars given by the user do not fit the C declaration."""


class CompileError(PolymagicError):
    """Generated code failed to compile (NVRTC, the C compiler).  Always a polymagic
    bug or a missing tool; the message carries the compiler log."""


class EmulatorError(PolymagicError):
    """The race-hunting emulator found a data race, an out-of-bounds access or a
    barrier under divergent control in the generated kernel."""


class UserCodeError(PolymagicError):
    """The user's own code faulted when run (integer division by zero, INT_MIN / -1,
    an invalid memory access): caught, the process survives, nothing written back.
    ``signal`` and ``code``: the signal and its ``si_code``."""

    def __init__(self, message: str, signal: int = 0, code: int = 0):
        super().__init__(message)
        self.signal = signal
        self.code = code


class DeviceError(PolymagicError):
    """No usable GPU / CuPy when the GPU target was asked for explicitly."""


class RunInterrupted(KeyboardInterrupt):
    """A SIGINT (a notebook's stop button, Ctrl-C) ended a run of compiled code (the
    emulator, the CPU reference, the OpenMP target): nothing was written back.  A
    KeyboardInterrupt, so that it stops what the user asked to stop (no ``except
    Exception`` swallows it); IPython shows its one line, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"KeyboardInterrupt: {self}"]
