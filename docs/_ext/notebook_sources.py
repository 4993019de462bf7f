"""The notebooks of the documentation site: docs/notebooks/ (generated, not in git).

notebooks/*.ipynb are stored without outputs (tests/test_notebooks.py), so that
students never see stale results.  The site shows them with their outputs: before
Sphinx runs, ``make docs`` calls this file as a script, which executes each notebook
once (nbclient, the emulator: no GPU needed) into docs/notebooks/, and again only when
the notebook or polymagic's code changed since.  Sphinx then renders those stored
outputs (myst-nb, ``nb_execution_mode = "off"``): it never executes anything.

    python docs/_ext/notebook_sources.py            # execute what is out of date
    python docs/_ext/notebook_sources.py --no-execute  # copy them without outputs

As a Sphinx extension it only fills in, without outputs, the notebooks that were not
prepared (a plain ``sphinx-build``), and says so.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
SOURCES = ROOT / "notebooks"
TARGET = DOCS / "notebooks"


def sources() -> list[Path]:
    return sorted(SOURCES.glob("*.ipynb"))


def _code_mtime() -> float:
    """The newest modification time of polymagic's code (outputs depend on it)."""
    return max(p.stat().st_mtime for p in (ROOT / "polymagic").rglob("*") if p.is_file())


def out_of_date(src: Path, code_mtime: float) -> bool:
    dst = TARGET / src.name
    return (not dst.exists() or dst.stat().st_mtime < max(src.stat().st_mtime, code_mtime)
            or _is_unexecuted(dst))


def _is_unexecuted(path: Path) -> bool:
    import nbformat
    nb = nbformat.read(path, as_version=4)
    return not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")


def execute(src: Path, timeout: int = 900) -> None:
    """Run ``src`` top to bottom (the checkout's polymagic, in a scratch directory)
    and store it with its outputs (and widget state) in docs/notebooks/."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(src, as_version=4)
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory(prefix="pm-docs-nb-") as tmp:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                       resources={"metadata": {"path": tmp}}).execute()
    TARGET.mkdir(exist_ok=True)
    nbformat.write(nb, TARGET / src.name)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Prepare docs/notebooks/ for the site.")
    ap.add_argument("--no-execute", action="store_true",
                    help="copy the notebooks without outputs (a quick build)")
    args = ap.parse_args(argv)
    TARGET.mkdir(exist_ok=True)
    code = _code_mtime()
    todo = [s for s in sources() if args.no_execute or out_of_date(s, code)]
    if not todo:
        print(f"docs/notebooks: all {len(sources())} notebooks up to date")
    for i, src in enumerate(todo, 1):
        if args.no_execute:
            shutil.copy(src, TARGET / src.name)
            continue
        print(f"docs/notebooks: executing {src.name} ({i}/{len(todo)}) ...", flush=True)
        t0 = time.monotonic()
        try:
            execute(src)
        except Exception as e:  # noqa: BLE001 - reported, then the build fails
            print(f"docs/notebooks: {src.name} failed: {type(e).__name__}: {e}",
                  file=sys.stderr)
            return 1
        print(f"docs/notebooks: {src.name} done in {time.monotonic() - t0:.0f} s", flush=True)
    if args.no_execute:
        print(f"docs/notebooks: {len(todo)} notebooks copied without outputs")
    return 0


def _fill_missing(app) -> None:
    from sphinx.util import logging
    TARGET.mkdir(exist_ok=True)
    missing = [s for s in sources() if not (TARGET / s.name).exists()]
    for src in missing:
        shutil.copy(src, TARGET / src.name)
    if missing:
        logging.getLogger(__name__).info(
            f"docs/notebooks: {len(missing)} notebooks copied without outputs "
            "(run docs/_ext/notebook_sources.py, or make docs, to show their outputs)")


def setup(app):
    app.connect("builder-inited", _fill_missing)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}


if __name__ == "__main__":
    sys.exit(main())
