"""Which notes a report shows, in what order, and how they are grouped (issue 20).

A compile leaves a dozen notes (every buffer, register and constant-memory
decision); printing them all on every cell buries the one that matters.  The
default report shows at most :data:`SHOWN` notes, those the user can act on, ranked
by their typed fields (never by their text):

0. ``refusal``: an option the user gave was not applied (change or drop it);
1. ``fallback``: a limit made a stage take a simpler path (an option may lift it);
2. whole-function strategy decisions that name the option to change them (the tile
   search, the recurrence model, localisation by default, the arrays' layout);
3. the other decisions (buffers, registers, constant memory, the mapping);
4. ``info`` (where inputs came from, transfers).

Only ranks 0-2 reach the default report; every note, once (duplicates dropped),
is listed by ``--show notes`` and in the HTML report's collapsible "Why" section,
grouped by kernel and stage.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..notes import Note, Stage

#: the most notes the default report shows
SHOWN = 3
#: stages whose decisions are whole-function strategies with an option to change them
_STRATEGY = frozenset(s for s in Stage if s.strategy)
#: rank of the other decisions and of info notes; the default report shows below this
_DECISION, _INFO = 3, 4


def unique(notes: Iterable[Note]) -> list[Note]:
    """The notes in order, each once (equal records or equal printed lines)."""
    seen: set[str] = set()
    out = []
    for n in notes:
        if str(n) not in seen:
            seen.add(str(n))
            out.append(n)
    return out


def rank(note: Note, settled: frozenset[tuple[str, str]] = frozenset()) -> int:
    """How directly the user can act on ``note`` (0 first; see the module doc).
    ``settled``: (kernel, array) pairs the code keeps elsewhere after all (a register,
    read from the program's typed declarations): a buffer dropped for one of them
    ranks as a decision (gemm's C: no shared buffer, but registers)."""
    if note.kind == "refusal":
        return 0
    if note.kind == "fallback":
        return _DECISION if (note.kernel, note.subject) in settled else 1
    if note.kind == "info":
        return _INFO
    return 2 if note.stage in _STRATEGY and note.kernel is None else _DECISION


def top(notes: Iterable[Note], most: int = SHOWN,
        settled: frozenset[tuple[str, str]] = frozenset()) -> list[Note]:
    """The notes of the default report: ranks 0-2, best first, at most ``most``."""
    ranked = sorted((n for n in unique(notes) if rank(n, settled) < _DECISION),
                    key=lambda n: rank(n, settled))
    return ranked[:most]


def settled_arrays(program) -> frozenset[tuple[str, str]]:
    """(kernel, array) of every array a kernel keeps in registers (the Kernel IR's
    :class:`~polymagic.kir.RegisterDecl`)."""
    return frozenset((name, r.array) for name, k in program.kernels.items()
                     for r in k.registers if r.array)


def grouped(notes: Iterable[Note]) -> list[tuple[str, list[tuple[Stage, list[Note]]]]]:
    """``[(kernel or "whole function", [(stage, notes)])]``: the function's notes
    first, then each kernel's in order, stages in pipeline order (:class:`Stage`)."""
    by_kernel: dict[str | None, dict[Stage, list[Note]]] = {}
    for n in unique(notes):
        by_kernel.setdefault(n.kernel, {}).setdefault(n.stage, []).append(n)
    order = sorted(by_kernel, key=lambda k: (k is not None, _natural(k or "")))
    return [(k or "whole function",
             sorted(by_kernel[k].items(), key=lambda item: item[0].order))
            for k in order]


def _natural(name: str) -> tuple:
    """kernel2 before kernel10."""
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return (head, int(tail) if tail else -1)


#: what each stage's notes are about, as the grouped listing's headings
STAGE_TITLES = {s: s.label for s in Stage}

#: the stages whose notes are about the GPU code (its mapping, buffers, launches):
#: a run on the OpenMP target (issue 21) did not use them
GPU_STAGES = frozenset(s for s in Stage if s.gpu)


def for_target(notes: Iterable[Note], target: str | None) -> list[Note]:
    """The notes that concern the target that ran: all of them, except the GPU
    code's on the OpenMP target."""
    if target != "openmp":
        return list(notes)
    return [n for n in notes if n.stage not in GPU_STAGES]


def stage_title(stage: Stage | str) -> str:
    """A stage's heading in the grouped notes."""
    return Stage(stage).label


def lines(notes: Iterable[Note]) -> list[str]:
    """Every note, grouped (``--show notes``): a heading per kernel, one per stage
    under it, then the notes without the kernel's name."""
    out: list[str] = []
    for kernel, stages in grouped(notes):
        out.append(f"{kernel}:")
        for stage, group in stages:
            out.append(f"  {stage_title(stage)}:")
            out.extend(f"    {n.after_kernel()}" for n in group)
    return out


__all__ = ["SHOWN", "unique", "rank", "top", "grouped", "lines", "stage_title",
           "settled_arrays"]
