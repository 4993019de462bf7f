"""The words the reports use, defined once (issue 20: every term defined on first use
or linked here).

Each :class:`Term` has the word as the reports print it, an anchor (the documentation
site renders :func:`markdown` as its glossary page, one heading per term, so
``glossary.html#warp-request`` links to it), a definition in plain words and, where
the idea comes from one of the papers, the paper and section.  The HTML report puts
the definition in a tooltip on the word and lists the terms it used under "Why";
:func:`terms_in` finds which terms a text uses.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    """One glossary entry."""
    word: str
    text: str
    source: str = ""          # paper and section, e.g. "seed 000 §4.3"

    @property
    def anchor(self) -> str:
        """The heading's anchor: lower case, words joined by ``-``."""
        return re.sub(r"[^a-z0-9]+", "-", self.word.lower()).strip("-")


TERMS: tuple[Term, ...] = (
    Term("thread block", "a group of GPU threads (at most 1,024) that run on one "
         "multiprocessor and share its shared memory; the grid is all the blocks of one "
         "launch."),
    Term("tile", "the part of the iteration space one thread block computes (a 128×128 "
         "tile of i, j: 128 values of i times 128 of j).", "seed 000 §4.1"),
    Term("sub-tile", "a slice of a sequential loop (k in steps of 16) whose data is copied "
         "into shared memory before the block uses it.", "seed 000 §4.1"),
    Term("points per thread", "how many iterations one thread computes (8×8: a register "
         "tile); the loops over them are unrolled.", "seed 000 §4.1"),
    Term("shared memory", "fast memory of one thread block (48 KB by default, --shared-mem); "
         "a buffer there holds data the block's threads reuse.", "seed 000 §4.2"),
    Term("register", "a thread's own fastest storage: data only one thread uses (C[i][j] "
         "in gemm) is kept there across the sequential loop.", "seed 004 §4.2"),
    Term("constant memory", "a small read-only memory cached for values every thread reads "
         "at once (__constant__).", "seed 004 §4.2"),
    Term("global memory", "the GPU's main memory, where the arrays live; the slowest "
         "of the three, so the reports count its loads and stores."),
    Term("warp", "32 threads of a block that execute together; their memory accesses are "
         "served together."),
    Term("warp request", "one load or store instruction executed by a warp: up to 32 "
         "addresses at once."),
    Term("sector", "a 32-byte piece of global memory, the unit the memory system moves "
         "(what profilers call a transaction)."),
    Term("sectors per request", "how many 32-byte sectors a warp request touches: 4 when 32 "
         "threads read 32 consecutive 4-byte elements (fully coalesced), 8 for 8-byte "
         "elements, up to 32 when every thread hits its own sector; lower is better."),
    Term("coalesced", "the threads of a warp access neighbouring addresses, so one request "
         "moves few sectors (see sectors per request).", "seed 003 §5.2"),
    Term("launch", "one start of a kernel from the host; a host loop around a kernel "
         "launches it once per iteration."),
    Term("host loop", "a loop the CPU runs around kernel launches, because a dependence "
         "forbids running its iterations in parallel (a stencil's time loop)."),
    Term("time tile", "a block of several time steps × a patch of points, computed by one "
         "thread block; the tiles of one wavefront run in parallel, one launch each "
         "wavefront."),
    Term("wavefront", "a set of tiles (or iterations) with no dependence between them, "
         "run together; the next wavefront waits for it."),
    Term("superposition", "the mapping that picks blocks and threads from two schedules "
         "(one for blocks, one for threads) so that threads access memory coalesced.",
         "seed 003 §5"),
    Term("single mapping", "blocks and threads from one schedule, isl's outer parallel "
         "loops (used when the superposition gains nothing).", "seed 004 §4.1"),
    Term("DL model", "the data-locality model that scores which loop on threadIdx.x "
         "gives coalesced accesses.", "seed 003 §5.2"),
    Term("reuse", "a buffer is worth it when the block reads elements more than once: "
         "'constant reuse' when neighbouring threads read overlapping elements, "
         "'non-constant reuse' when a loop the reference does not depend on re-reads them.",
         "seed 000 §4.2"),
    Term("localisation", "keeping what a sequential loop reuses in shared memory from one "
         "step to the next, moving only the difference.", "seed 001"),
    Term("tree reduction", "a sum (or max…) over a loop done by all threads of a block: "
         "each thread a share, then halving in shared memory.", "seed 003 §5.3"),
    Term("emulator", "polymagic's CPU run of the generated kernels, thread by thread in a "
         "shuffled order, that finds races and counts memory traffic; used when there is "
         "no GPU."),
    Term("CPU reference", "the original C compiled for the CPU; every run is checked "
         "against it."),
    Term("H2D / D2H", "copies host to device and device to host (the arrays' transfers "
         "around the kernels).", "seed 002 §4"),
    Term("model cost", "the §4.3 cost model's estimate of one configuration's global-memory "
         "traffic per block, used to rank tile sizes.", "seed 000 §4.3"),
)

GLOSSARY: dict[str, Term] = {t.word: t for t in TERMS}


def terms_in(text: str) -> list[Term]:
    """The glossary terms ``text`` uses (whole words, case-insensitive), in glossary
    order."""
    low = text.lower()
    return [t for t in TERMS if re.search(rf"(?<![\w-]){re.escape(t.word.lower())}(?![\w-])",
                                          low)]


def markdown() -> str:
    """The glossary as a Markdown page (the documentation site's glossary)."""
    lines = ["# Glossary", ""]
    for t in sorted(TERMS, key=lambda t: t.word.lower()):
        lines += [f"## {t.word}", "", t.text[0].upper() + t.text[1:]
                  + (f" ({t.source})" if t.source else ""), ""]
    return "\n".join(lines)


__all__ = ["Term", "TERMS", "GLOSSARY", "terms_in", "markdown"]
