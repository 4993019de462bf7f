"""Every notebook under notebooks/ runs top to bottom without a GPU, and is stored
without outputs (so diffs stay readable and nothing stale is shown to students)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: notebooks that must show pictures (matplotlib PNGs) and widgets
WITH_PICTURES = {"02_scratchpad.ipynb", "03_superposition.ipynb", "04_localisation.ipynb",
                 "05_transfers.ipynb", "06_tile_explorer.ipynb"}
WITH_WIDGETS = {"06_tile_explorer.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path: Path):
    # plain JSON (nbformat 4): importing nbformat costs about 2 CPU s (jsonschema
    # builds its grammars), paid at collection by every xdist worker when it was here
    nb = json.loads(path.read_text())
    assert nb["nbformat"] == 4, path.name
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell["outputs"] and cell["execution_count"] is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    # The kernel imports the checkout's polymagic even without an install.
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    client = NotebookClient(nb, timeout=600, startup_timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()          # raises CellExecutionError on the first failing cell
    results = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    text = "\n".join(str(o.get("data", {}).get("text/plain", "")) + o.get("text", "")
                     for o in results)
    assert "MISMATCH" not in text
    assert "False" not in text, "a check cell in the notebook printed False"
    kinds = {k for o in results for k in o.get("data", {})}
    if path.name in WITH_PICTURES:
        assert "image/png" in kinds, f"{path.name} shows no picture"
    if path.name in WITH_WIDGETS:
        assert "application/vnd.jupyter.widget-view+json" in kinds, f"{path.name}: no widgets"
