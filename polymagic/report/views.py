"""The extra views that ``--show`` asks for (cuda, deps, schedule, kir, host,
emulator, scop, stages, notes, c), as plain text with a language tag for syntax highlighting.

Each view is computed lazily from a ``Compiled`` bundle; a view that fails (a stage
that lacks a printer yet) becomes a one-line note instead of breaking the report.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..compiler import Compiled


@dataclass
class View:
    name: str        # the --show word
    title: str       # heading in the report
    text: str        # the content
    language: str    # pygments lexer alias: 'cuda', 'c', 'python', 'text'


def _cuda(compiled) -> str:
    return compiled.cuda


def _deps(compiled: Compiled) -> str:
    return compiled.deps.describe()            # deps.Dependences


def _schedule(compiled: Compiled) -> str:
    return compiled.schedule.describe()        # schedule.ScheduleResult


def _kir(compiled) -> str:
    from .kirtext import format_program
    return format_program(compiled.program)


def _passes(compiled) -> str:
    from .kirtext import format_passes
    return format_passes(compiled.passes)


def _host(compiled) -> str:
    return compiled.host_py


def _emulator(compiled) -> str:
    from ..codegen.emulator import print_emulator_c
    return print_emulator_c(compiled.program)


def _scop(compiled) -> str:
    """Statements with their iteration domains and accesses: the polyhedral model."""
    from ..expr import CPrinter
    p = CPrinter()
    scop = compiled.scop
    lines = [f"function {scop.name}({', '.join(p.name for p in scop.params)})",
             f"context: {scop.context}"]
    for a in scop.arrays.values():
        shape = "".join(f"[{p(e)}]" for e in a.shape)
        lines.append(f"array {a.ctype} {a.name}{shape} ({a.kind})")
    for s in scop.statements:
        lines.append("")
        lines.append(f"{s.name} (line {s.line}): {s.text.strip()}")
        lines.append(f"  domain: {s.domain}")
        for acc in s.accesses:
            lines.append(f"  {'write' if acc.is_write else 'read '}: {acc.relation}")
    lines.append("")
    lines.append(f"original schedule: {scop.schedule}")
    return "\n".join(lines)


def _cpu_c(compiled: Compiled) -> str:
    """The CPU target's OpenMP C (issue 21), its bands' decisions first."""
    from ..runtime.run import with_cpu_code
    cpu = with_cpu_code(compiled).cpu
    head = "".join(f"/* {line} */\n" for line in cpu.describe().splitlines())
    return head + cpu.source


def _stages(compiled: Compiled) -> str:
    """Each compiler stage's time and result, in the order they ran."""
    return "\n".join(s.line() for s in compiled.stages)


_VIEWS: dict[str, tuple[str, str, Callable]] = {
    "cuda": ("Generated CUDA", "cuda", _cuda),
    "deps": ("Dependences", "text", _deps),
    "schedule": ("Schedule", "text", _schedule),
    "kir": ("Kernel IR", "text", _kir),
    "passes": ("Kernel IR after each pass", "text", _passes),
    "host": ("Host driver (Python)", "python", _host),
    "emulator": ("Emulator C", "c", _emulator),
    "scop": ("Polyhedral model (SCoP)", "text", _scop),
    "stages": ("Compiler stages", "text", _stages),
    "notes": ("Why: every note, by kernel and stage", "text", None),
    "c": ("OpenMP C (CPU target)", "c", _cpu_c),
}


def all_notes(compiled, report=None) -> list:
    """The compile's notes then the run's (``report.notes``), each once; on the
    OpenMP target without the GPU code's."""
    from .why import for_target, unique
    notes = unique(list(compiled.notes) + list(getattr(report, "notes", None) or []))
    return for_target(notes, getattr(report, "target", None))


def _notes(compiled, report=None) -> str:
    from .why import lines
    return "\n".join(lines(all_notes(compiled, report))) or "(no notes)"


def view(name: str, compiled, report=None) -> View:
    """One ``--show`` view; a failure to produce it is reported inside the view."""
    title, language, make = _VIEWS[name]
    try:
        text = _notes(compiled, report) if name == "notes" else make(compiled)
    except Exception as e:  # a missing printer must not hide the rest of the report
        text, language = f"({name} view unavailable: {type(e).__name__}: {e})", "text"
    return View(name, title, text.rstrip("\n"), language)


def views(names, compiled, report=None) -> list[View]:
    """The requested views in the order asked, each once (``report``: the run whose
    notes ``notes`` adds to the compile's)."""
    seen: list[str] = []
    for n in names:
        if n in _VIEWS and n not in seen:
            seen.append(n)
    return [view(n, compiled, report) for n in seen]
