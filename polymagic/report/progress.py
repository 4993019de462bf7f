"""A status line in the notebook while a cell compiles and runs (issue 20).

A compile can take several seconds (isl's scheduling and AST generation) and an
emulator run of a large size longer; a cell that shows nothing for that long looks
hung.  :class:`StatusLine` shows one line of text, "gemm: compiling… 3 s", once the
work has taken ``after`` seconds, updates it every half second and with each new
phase ("running on the emulator… 5 s"), and clears it when the work ends, so a
fast cell shows nothing at all.  It needs no widgets: an HTML display updated in
place (``display_id``), which Jupyter, JupyterLab and VS Code all support.

The line is drawn by a daemon thread (the compile keeps the main thread busy);
ipykernel sends a thread's output to the cell that is running.  ``sink`` replaces
the notebook display (tests, terminals): it is called with each new line, and with
``""`` when the line is cleared.
"""
from __future__ import annotations

import threading
import time
from html import escape
from typing import Callable

Sink = Callable[[str], None]


def notebook_sink() -> Sink | None:
    """A sink that draws the line as an updatable HTML display in a notebook, or
    None outside a kernel (terminal IPython, scripts: nothing to update in place)."""
    try:
        from IPython import get_ipython
        from IPython.display import display, update_display
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    shown: list[str] = []          # the display id, once the line is up

    def draw(text: str) -> None:
        # text/plain as well, so that a cleared line leaves no "<HTML object>" behind
        data = {"text/plain": text, "text/html": (
            f'<div style="font-family:monospace;color:#57606a">{escape(text)}</div>'
            if text else "")}
        if not shown:
            if text:
                handle = display(data, raw=True, display_id=True)
                shown.append(handle.display_id)
            return
        update_display(data, raw=True, display_id=shown[0])
    return draw


class StatusLine:
    """``with StatusLine("gemm", sink) as status: ...; status.phase("running")``:
    after ``after`` seconds the sink gets "gemm: compiling… 3 s", then an update
    every ``every`` seconds and at each phase; ``""`` at the end if anything was
    shown.  A None sink does nothing."""

    def __init__(self, name: str, sink: Sink | None, after: float = 2.0,
                 every: float = 0.5, first: str = "compiling") -> None:
        self.name = name
        self.sink = sink
        self.after = after
        self.every = every
        self._phase = first
        self._t0 = time.monotonic()
        self._shown = False
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "StatusLine":
        self._t0 = time.monotonic()
        if self.sink is not None:
            self._thread = threading.Thread(target=self._tick, daemon=True,
                                            name="polymagic-status")
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self._shown and self.sink is not None:
                self.sink("")

    def phase(self, what: str) -> None:
        """The work moved on ("running on the emulator"): shown at once if the line
        is up already."""
        with self._lock:
            self._phase = what
            if self._shown:
                self._draw()

    def line(self) -> str:
        """The text shown now: ``name: phase… N s``."""
        secs = time.monotonic() - self._t0
        return f"{self.name}: {self._phase}… {secs:.0f} s"

    def _draw(self) -> None:
        try:
            self.sink(self.line())
        except Exception:       # a display that fails must not break the cell
            self.sink = None

    def _tick(self) -> None:
        if self._done.wait(self.after):
            return
        while True:
            with self._lock:
                if self.sink is None:
                    return
                self._shown = True
                self._draw()
            if self._done.wait(self.every):
                return


__all__ = ["StatusLine", "notebook_sink"]
