"""Saved reproducers: ``tests/fuzz/regressions/<name>.c`` (``.py`` for ``--python``
cases) + ``<name>.json``.

The source file is the shrunk function; the JSON holds the option arguments, the
sizes, what the fuzzer saw (``found``: outcome kind and message) and,
optionally, ``xfail``: where the still-open bug is written up (e.g.
``docs/fuzz-findings.md#3``).  ``tests/test_fuzz_regressions.py`` runs every
saved case and expects it to pass (xfail while the bug is open).  Each pair is
also a command line::

    python -m polymagic run tests/fuzz/regressions/NAME.c ARGS... --size SIZES
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from .runner import Case, Outcome

DIR = Path(__file__).resolve().parent / "regressions"


def _slug(kind: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-")


def save(case: Case, outcome: Outcome, directory: Path = DIR, note: str = "") -> Path:
    """Write the case as NAME.c + NAME.json (NAME from the kind and a content
    hash, so saving the same reproducer twice is harmless); returns the .c path."""
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256((case.source + json.dumps(case.cli())).encode()).hexdigest()[:10]
    name = f"{_slug(outcome.kind)}-{digest}"
    c_path = directory / f"{name}{'.py' if case.language == 'python' else '.c'}"
    c_path.write_text(case.source)
    meta = {"args": case.args, "sizes": case.sizes,
            "found": {"kind": outcome.kind, "message": outcome.message[:2000]},
            "program_seed": case.seed, "command": command(c_path.name, case)}
    if note:
        meta["note"] = note
    (directory / f"{name}.json").write_text(json.dumps(meta, indent=2) + "\n")
    return c_path


def command(filename: str, case: Case) -> str:
    return " ".join(["python -m polymagic run", f"tests/fuzz/regressions/{filename}",
                     *case.cli()])


def load_all(directory: Path = DIR) -> list[tuple[str, Case, dict]]:
    """(name, case, metadata) for every saved pair, sorted by name."""
    out = []
    for meta_path in sorted(directory.glob("*.json")):
        c_path = meta_path.with_suffix(".c")
        if not c_path.exists():
            c_path = meta_path.with_suffix(".py")
        if not c_path.exists():
            continue
        meta = json.loads(meta_path.read_text())
        out.append((meta_path.stem, Case(c_path.read_text(), meta.get("sizes", {}),
                                         list(meta.get("args", []))), meta))
    return out
