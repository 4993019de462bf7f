"""Front ends: source text -> :class:`polymagic.scop.Scop`."""
from __future__ import annotations

from ..scop import Scop


def parse(source: str, language: str = "c") -> Scop:
    """The Scop of ``source``, its reused scratch arrays expanded (:mod:`.expansion`)."""
    from .expansion import expand_scratch
    if language == "c":
        from .c import parse_c
        return expand_scratch(parse_c(source))
    if language == "python":
        from .python import parse
        return expand_scratch(parse(source))
    from ..errors import OptionsError
    raise OptionsError(f"unknown source language {language!r} (polymagic reads C and Python)")
