"""The stage caches of :mod:`polymagic.pipeline` key the schedule by exactly what the
scheduler reads of the options: every option the schedule stage consults is in
``schedule_key``, so a cached schedule never comes from other settings."""
from __future__ import annotations

import pathlib
import re

from polymagic.options import Options
from polymagic.pipeline import schedule_key

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_option_the_scheduler_reads_is_in_the_key():
    text = "".join(p.read_text() for p in (ROOT / "polymagic/schedule").glob("*.py"))
    read = set(re.findall(r"options\.(\w+)", text)) | set(
        re.findall(r"getattr\(options, \"(\w+)\"", text))
    base = Options()
    for name in sorted(read):
        value = getattr(base, name)
        other = (not value) if isinstance(value, bool) else (
            "single" if name == "mapping" else ("t", 1) if name == "localise" else
            (("A", (1, 2)),) if name == "layout" else (4,) if value == () else value)
        assert other != value, f"the test does not know another value of {name}"
        assert schedule_key(base) != schedule_key(base.with_(**{name: other})), name
