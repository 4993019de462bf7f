"""Sphinx directive ``polymagic-glossary``: the site's glossary, one list.

The directive's content holds the documentation's own entries (the papers' terms:
M_up, P_low, TL_k, ρ, LMAD ...), written as a MyST ``{glossary}`` body (a term on
its own line, its definition indented by two spaces).  When polymagic defines the
words its reports use (``polymagic.report.glossary.TERMS``, issue 20), those are
merged in and their definitions win for the same word, so the site and the
reports' tooltips say the same thing.  The result is rendered as one MyST
``{glossary}``, sorted, so ``{term}`...``` references work for every entry.
"""
from __future__ import annotations


def parse_entries(lines: list[str]) -> dict[str, str]:
    """``{word: definition}`` from a glossary body (unindented term lines,
    definitions indented beneath them)."""
    entries: dict[str, str] = {}
    word = None
    for line in lines:
        if not line.strip():
            continue
        if not line[0].isspace():
            word = line.strip()
            entries[word] = ""
        elif word is not None:
            entries[word] = (entries[word] + " " + line.strip()).strip()
    return entries


def report_entries() -> dict[str, str]:
    """The reports' own terms, where this version of polymagic defines them."""
    try:
        from polymagic.report.glossary import TERMS
    except ImportError:
        return {}
    out = {}
    for t in TERMS:
        text = t.text[0].upper() + t.text[1:]
        out[t.word] = text + (f" ({t.source})" if t.source else "")
    return out


def merged(own: dict[str, str], reports: dict[str, str]) -> dict[str, str]:
    """One entry per word (case-insensitive), the reports' definition first."""
    out = dict(reports)
    have = {w.lower() for w in out}
    for word, text in own.items():
        if word.lower() not in have:
            out[word] = text
    return dict(sorted(out.items(), key=lambda kv: kv[0].lower()))


def glossary_markdown(own: dict[str, str], reports: dict[str, str]) -> str:
    lines = ["```{glossary}"]
    for word, text in merged(own, reports).items():
        lines += [word, f"  {text}", ""]
    return "\n".join(lines) + "```\n"


def setup(app):
    """Registers the directive (Sphinx imported here only, for the tests' sake)."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class Glossary(SphinxDirective):
        has_content = True

        def run(self) -> list:
            text = glossary_markdown(parse_entries(list(self.content)), report_entries())
            container = nodes.container(classes=["polymagic-glossary"])
            self.state.nested_parse(StringList(text.splitlines(), source="glossary"),
                                    self.content_offset, container)
            return [container]

    app.add_directive("polymagic-glossary", Glossary)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
