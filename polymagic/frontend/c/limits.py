"""Resource limits of a cell's C, checked before pycparser sees it.

pycparser and the Scop builder recurse on the syntax tree: very deep parentheses,
blocks or very long expressions raise ``RecursionError`` (a traceback), and a
function with a thousand statements takes minutes and gigabytes in the scheduler
before anything refuses it.  A single scan of the text (comments already blanked)
refuses such sources in milliseconds with a located :class:`SourceError`; the
limits are far above what the examples need (at most 3 levels of parentheses, 7 of
braces, 33 statements, 170 tokens in a statement); 64 statements compile in about 5 s,
100 take 20 s to be refused by isl's operation budget.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import SourceError


@dataclass(frozen=True)
class SourceLimits:
    """What one cell may hold."""
    max_bytes: int = 100_000            # the whole source
    max_paren_depth: int = 64           # ( and [ nested in an expression
    max_brace_depth: int = 32           # { } blocks nested
    max_statements: int = 64            # ';' in the source (64 compile in ~5 s, 100 in 20)
    max_statement_tokens: int = 4_000   # tokens between two ';' (one expression)
    max_loop_depth: int = 48            # for/while/if nested without braces too


_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|\S")


def _where(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def check_limits(text: str, source: str, limits: SourceLimits = SourceLimits()) -> None:
    """SourceError at the first place ``text`` (the source with comments blanked,
    same lines and columns as ``source``) exceeds ``limits``."""
    if len(source.encode(errors="replace")) > limits.max_bytes:
        raise SourceError(f"the source is {len(source.encode(errors='replace'))} bytes, more "
                          f"than the {limits.max_bytes} a cell may hold (resource limit)")
    parens = braces = statements = tokens = 0
    control = 0
    for m in _TOKEN.finditer(text):
        tok = m.group()
        tokens += 1
        if tok in "([":
            parens += 1
            if parens > limits.max_paren_depth:
                _fail(text, source, m.start(), f"parentheses and brackets nested more than "
                      f"{limits.max_paren_depth} deep (resource limit: expression depth)")
        elif tok in ")]":
            parens = max(parens - 1, 0)
        elif tok == "{":
            braces += 1
            control = 0
            if braces > limits.max_brace_depth:
                _fail(text, source, m.start(), f"blocks nested more than "
                      f"{limits.max_brace_depth} deep (resource limit: nesting depth)")
        elif tok == "}":
            braces = max(braces - 1, 0)
        elif tok in ("for", "while", "if", "else", "do"):
            control += 1
            if control + braces > limits.max_loop_depth:
                _fail(text, source, m.start(), f"statements nested more than "
                      f"{limits.max_loop_depth} deep (resource limit: nesting depth)")
        elif tok == ";" and parens == 0:
            statements += 1
            tokens = 0
            control = 0
            if statements > limits.max_statements:
                _fail(text, source, m.start(), f"more than {limits.max_statements} "
                      "statements (resource limit: statement count); split the function")
        if tokens > limits.max_statement_tokens:
            _fail(text, source, m.start(), f"a statement longer than "
                  f"{limits.max_statement_tokens} tokens (resource limit: expression size)")


def _fail(text: str, source: str, pos: int, message: str) -> None:
    line, col = _where(text, pos)
    raise SourceError(message, line, col, source)


__all__ = ["SourceLimits", "check_limits"]
