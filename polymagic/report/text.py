"""Plain-text report: what the CLI prints and terminal IPython shows.

At most ten lines by default (issue 20)::

    gemm: 1 kernel: kernel0: i, j in 128×128 tiles, one per thread block of ...
    ran on: emulator (no GPU ...); sizes N=200, alpha=0.939
    check: OK: matches the CPU reference (max abs err 0, max rel err 0)
    times: compile ... | CPU reference ... | kernels on the emulator ... (1 launch)
    memory: 200,000 global loads, 40,000 stores; 6.38 sectors per warp request (...)
    note: (at most three, those the user can act on: report/why.py)
    12 notes in all: --show notes lists them, grouped by kernel and stage

followed by the ``--show`` views, each under a ``==== title ====`` rule
(``--show notes``: every note).
"""
from __future__ import annotations

from ..compiler import Compiled
from ..dtypes import DTYPES
from ..notes import Note
from ..runtime.run import RunReport
from . import fmt, why
from .summary import summary_words
from .views import all_notes as views_all_notes
from .views import views

#: bytes of each NumPy element type the C types map to
_BYTES = {"float32": 4, "float64": 8, "int32": 4, "int64": 8, "int16": 2, "int8": 1,
          "uint32": 4}


def element_bytes(compiled: Compiled) -> set[int]:
    """The element sizes of the function's arrays (what full coalescing means)."""
    return {_BYTES.get(DTYPES.get(a.ctype, ""), 4) for a in compiled.scop.arrays.values()}


def all_notes(report: RunReport | None, compiled: Compiled) -> list[Note]:
    """The compile's notes then the run's, each once."""
    return views_all_notes(compiled, report)


def ran_on(report: RunReport) -> str:
    """``ran on: emulator (why); sizes N=200``."""
    text = f"ran on: {report.target}"
    if report.target_note:
        text += f" ({report.target_note})"
    if report.sizes:
        text += f"; sizes {fmt.sizes(report.sizes)}"
    return text


def check_text(report: RunReport) -> str:
    """The verdict, the arrays written back, and on a mismatch each array's detail."""
    line = fmt.check_line(report)
    if not report.ok and report.per_array:
        line += "; " + "; ".join(f"{n}: {fmt.fields(i)}" for n, i in report.per_array.items())
    if report.wrote_back:
        line += f"; wrote back {', '.join(report.wrote_back)}"
    if report.returned is not None:
        line += f"; returned {report.returned!r}"
    return line


def times_text(report: RunReport, compiled: Compiled) -> str:
    """The timing line (on the GPU with the CPU/GPU ratio)."""
    text = "times: " + " | ".join(f"{k} {v}" for k, v in fmt.times(report, compiled.compile_s))
    if report.target in ("gpu", "openmp") and fmt.speedup(report):
        text += f" | speed-up {fmt.speedup(report)}"
    return text


def cpu_summary(compiled: Compiled) -> str:
    """The CPU target's loops in one line (issue 21), named like the GPU summary."""
    name = compiled.scop.name
    summary = compiled.cpu.summary()
    return f"{name}: {summary}" if name else summary


def notes_hint(notes: list[Note], shown: int) -> str | None:
    """The last line: how many notes there are and how to see them all."""
    if len(notes) <= shown:
        return None
    return (f"{len(notes)} notes in all (why each buffer, register and mapping was chosen): "
            "--show notes lists them")


def header_lines(report: RunReport, compiled: Compiled) -> list[str]:
    """The default report (at most ten lines): summary, where it ran, the check, the
    times, memory, the notes to act on and where the others are."""
    lines = [cpu_summary(compiled) if report.target == "openmp" and compiled.cpu
             else summary_words(compiled),
             ran_on(report), check_text(report), times_text(report, compiled)]
    mem = fmt.memory_line(report, element_bytes(compiled))
    if mem:
        lines.append(mem)
    notes = all_notes(report, compiled)
    shown = why.top(notes, settled=why.settled_arrays(compiled.program))
    lines.extend(f"note: {n}" for n in shown)
    if not getattr(report, "notes", None) and report.message:
        lines.append(report.message)
    hint = notes_hint(notes, len(shown))
    if hint:
        lines.append(hint)
    return lines


def score_parts(c, mode: str) -> list[str]:
    """The numbers one candidate's score is made of, as the tables show them."""
    parts = []
    if c.traffic is not None:
        sectors = (f"{c.transactions:,} sectors" if c.transactions is not None
                   else f"{c.traffic:,} loads+stores")
        parts.append(sectors + (f" (×{c.traffic_ratio:.2f})" if c.traffic_ratio else ""))
    if c.model_cost is not None:
        parts.append(f"model cost {c.model_cost:.3g}"
                     + (f" (×{c.cost_ratio:.2f})" if c.cost_ratio else ""))
    if c.fill is not None:
        parts.append(f"fills {c.fill:.0%} of the GPU")
    if c.blocks is not None:
        parts.append(f"{c.blocks} blocks")
    if c.seconds is not None and mode == "gpu":
        parts.append(fmt.seconds(c.seconds))
    return parts


def autotune_lines(result) -> list[str]:
    """``--autotune``: the choice and why, how the score is computed, then one line per
    candidate (best first) with the numbers its score is made of."""
    lines = [result.summary(), f"  ({result.score_rule()})"]
    ranked = sorted(result.candidates, key=lambda c: (not c.ok, c.score))
    for c in ranked:
        if c.skipped:
            what = f"skipped: {c.skipped}"
        elif not c.ok:
            what = f"failed: {c.error}"
        else:
            what = f"score {c.score:.2f}: " + ", ".join(score_parts(c, result.mode))
        star = "*" if c is result.best else " "
        lines.append(f"  {star} {c.label()} ({c.source}): {what}")
    lines.extend(f"  note: {n}" for n in result.notes)
    return lines


def to_text(report: RunReport, compiled: Compiled, show=()) -> str:
    """The full plain-text report, with the views named in ``show``."""
    lines = header_lines(report, compiled)
    for v in views(show, compiled, report):
        lines.append("")
        lines.append(f"==== {v.title} ====")
        lines.append(v.text)
    return "\n".join(lines) + "\n"
