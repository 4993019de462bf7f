"""Plain-text report: what the CLI prints and terminal IPython shows.

Layout (one item per line)::

    gemm: summary from the mapping stage
    check: OK: matches the CPU reference (max abs err ..., max rel err ...)
    times: compile ..., CPU reference ..., device kernels ..., H2D ..., D2H ...
    sizes: N=200
    target: emulator: no GPU found, ...
    memory: global loads ..., stores ...; transactions ... (emulator runs)

followed by the ``--show`` views, each under a ``==== title ====`` rule.
"""
from __future__ import annotations

from ..compiler import Compiled
from ..runtime.run import RunReport
from . import fmt
from .views import views


def header_lines(report: RunReport, compiled: Compiled) -> list[str]:
    """Summary, verdict, times, sizes, target: the report without extra views."""
    name = compiled.scop.name
    summary = compiled.cpu.summary() if report.target == "openmp" and compiled.cpu \
        else compiled.summary
    lines = [f"{name}: {summary}" if name else summary]
    lines.append(fmt.check_line(report))
    if not report.ok:
        lines.extend(f"  {name}: {fmt.fields(info)}" for name, info in (report.per_array or {}).items())
    rows = fmt.times(report, compiled.compile_s)
    lines.append("times: " + " | ".join(f"{k} {v}" for k, v in rows))
    if report.target in ("gpu", "openmp") and fmt.speedup(report):
        lines.append(f"speedup: CPU reference / device kernels = {fmt.speedup(report)}")
    if report.sizes:
        lines.append(f"sizes: {fmt.sizes(report.sizes)}")
    target = f"target: {report.target}"
    if report.target_note:
        target += f" ({report.target_note})"
    lines.append(target)
    mem = fmt.memory_line(report)
    if mem:
        lines.append(mem)
    if report.wrote_back:
        lines.append("wrote back: " + ", ".join(report.wrote_back))
    for note in compiled.notes:
        lines.append(f"note: {note}")
    if report.message:
        lines.append(report.message)
    return lines


def autotune_lines(result) -> list[str]:
    """``--autotune``: the choice, then one line per candidate (best first)."""
    lines = [result.summary()]
    ranked = sorted(result.candidates, key=lambda c: (not c.ok, c.score))
    for c in ranked:
        if c.skipped:
            what = f"skipped: {c.skipped}"
        elif not c.ok:
            what = f"failed: {c.error}"
        else:
            parts = [f"score {c.score:.2f}"]
            if c.traffic is not None:
                parts.append(f"{c.traffic:,} global loads+stores")
            if c.transactions is not None:
                parts.append(f"{c.transactions:,} transactions")
            if c.model_cost is not None:
                parts.append(f"§4.3 cost {c.model_cost:.3g}")
            if c.blocks is not None:
                parts.append(f"{c.blocks} blocks")
            if c.seconds is not None and result.mode == "gpu":
                parts.append(fmt.seconds(c.seconds))
            what = ", ".join(parts)
        star = "*" if c is result.best else " "
        lines.append(f"  {star} {c.label()} ({c.source}): {what}")
    lines.extend(f"  note: {n}" for n in result.notes)
    return lines


def to_text(report: RunReport, compiled: Compiled, show=()) -> str:
    """The full plain-text report, with the views named in ``show``."""
    lines = header_lines(report, compiled)
    for v in views(show, compiled):
        lines.append("")
        lines.append(f"==== {v.title} ====")
        lines.append(v.text)
    return "\n".join(lines) + "\n"
