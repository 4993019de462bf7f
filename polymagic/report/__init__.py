"""Reports of one compile-and-run: plain text (CLI, terminal IPython), HTML
(notebooks) and JSON (scripts).

All three read the same two objects, the runtime's ``RunReport`` and the
pipeline's ``Compiled``, so they always agree.  Nothing here imports IPython
display machinery, ipywidgets or CuPy: showing a report is the magic's job.
"""
from __future__ import annotations

from .html import HtmlReport, to_html
from .jsonout import to_json
from .text import to_text

__all__ = ["HtmlReport", "to_html", "to_json", "to_text"]
