"""Sphinx configuration of polymagic's documentation site (``make docs``).

MyST Markdown pages (the ones under docs/ are also read as plain Markdown on GitHub),
the notebooks rendered by myst-nb from the copies ``scripts/docs_notebooks.py`` writes
into docs/notebooks/ (executed there once, before Sphinx runs; Sphinx never executes
them), and the option reference generated from polymagic's own option parser
(``_ext/option_reference.py``).  ``make docs`` builds with warnings as errors.
"""
from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(DOCS / "_ext"), str(ROOT)]

from polymagic.version import __version__  # noqa: E402

project = "polymagic"
author = "the polymagic developers"
copyright = "2026, " + author
release = version = __version__

extensions = ["myst_nb", "option_reference", "notebook_sources", "glossary_merge"]
# myst_nb brings myst_parser; .md pages are MyST, .ipynb notebooks are read as stored
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3
# notebooks: rendered from their stored outputs, never executed by Sphinx
nb_execution_mode = "off"
nb_merge_streams = True

html_theme = "furo"
html_title = f"polymagic {release}"
html_static_path: list[str] = []
# offline builds: no search for a remote intersphinx inventory
nitpicky = False
