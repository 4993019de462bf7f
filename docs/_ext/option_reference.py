"""Sphinx directive ``polymagic-options``: the option reference, generated from the
option parser the magic and the CLI use (``polymagic.options.make_parser``,
``polymagic.cli.make_cli_parser``) each time the site is built, so it cannot drift
from the code.  ``option_rows`` is also what tests/test_docs.py checks.
"""
from __future__ import annotations

import argparse


def _flags(action: argparse.Action) -> str:
    names = ", ".join(f"`{s}`" for s in action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or (("|".join(map(str, action.choices)))
                                 if action.choices else action.dest.upper())
    return f"{names} `{metavar}`"


def _default(action: argparse.Action) -> str:
    d = action.default
    if action.nargs == 0 or d in (None, [], "", argparse.SUPPRESS):
        return ""
    return f"`{d}`"


def option_rows(parser: argparse.ArgumentParser) -> list[tuple[str, str, str]]:
    """(flags, default, meaning) of every option of ``parser``, in its order."""
    rows = []
    for a in parser._actions:  # argparse keeps no public list of its actions
        if not a.option_strings or a.help == argparse.SUPPRESS:
            continue
        meaning = (a.help or "").strip()
        if meaning and meaning[-1] not in ".)":
            meaning += "."
        if a.choices:
            meaning += (" " if meaning else "") + "One of " + ", ".join(
                f"`{c}`" for c in a.choices) + "."
        rows.append((_flags(a), _default(a), meaning))
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reference_markdown() -> str:
    """The reference as MyST Markdown: the command line's usage, then one table row
    per option."""
    from polymagic.cli import make_cli_parser
    from polymagic.options import make_parser
    cli = make_cli_parser()
    sub = next(a for a in cli._actions if isinstance(a, argparse._SubParsersAction))
    lines = ["```text"]
    for name, sp in sub.choices.items():
        lines.append(f"{cli.prog} {name} FILE.c|FILE.py [options]   # {sp.description}")
    lines += ["%%polycuda [options]   # first line of a notebook cell holding the function",
              "```", "",
              "| option | default | meaning |", "| --- | --- | --- |"]
    for flags, default, meaning in option_rows(make_parser()):
        lines.append(f"| {_cell(flags)} | {_cell(default)} | {_cell(meaning)} |")
    return "\n".join(lines) + "\n"


def setup(app):
    """Registers the directive (Sphinx is imported here only, so that the tests can
    check :func:`reference_markdown` without the docs extra)."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class OptionReference(SphinxDirective):
        """Renders :func:`reference_markdown` in place."""
        has_content = False

        def run(self) -> list:
            container = nodes.container(classes=["polymagic-options"])
            lines = StringList(reference_markdown().splitlines(), source="polymagic.options")
            self.state.nested_parse(lines, self.content_offset, container)
            return [container]

    app.add_directive("polymagic-options", OptionReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
