"""scripts/gpu_evidence.sh ``tests`` runs every example on the GPU with sizes it
computes per example with ``scripts/example_sizes.py`` (issue 18: the old fallback
passed ``N=256`` to examples without an ``N``, and they failed with exit 2).  That
script is run here for every example, as the shell scripts run it: it must give every
size parameter of the example and no name the example lacks."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from polymagic.frontend.c import parse_c

ROOT = Path(__file__).resolve().parent.parent
SIZES = ROOT / "scripts" / "example_sizes.py"
EXAMPLES = sorted((ROOT / "examples").glob("*.c"))


@pytest.fixture(scope="module")
def sizes() -> dict:
    """The --size argument for every example (one interpreter per example, as the
    scripts run it)."""
    out = {}
    for f in EXAMPLES:
        p = subprocess.run([sys.executable, str(SIZES), str(f.relative_to(ROOT))],
                           capture_output=True, text=True, cwd=ROOT)
        assert p.returncode == 0, p.stderr
        out[f.stem] = p.stdout.strip()
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=[f.stem for f in EXAMPLES])
def test_each_example_gets_its_own_sizes(path, sizes):
    scop = parse_c(path.read_text())
    got = dict(kv.split("=") for kv in sizes[path.stem].split(",") if kv)
    assert set(scop.size_params) <= set(got), (sizes[path.stem], scop.size_params)
    scalars = {p.name for p in scop.scalar_params}     # the suite's (covariance's float_n)
    assert set(got) <= set(scop.size_params) | scalars, sizes[path.stem]
    assert all(float(v) > 0 for v in got.values())


def test_the_gpu_scripts_use_it():
    for script in ("gpu_evidence.sh", "gpu_first.sh"):
        assert "scripts/example_sizes.py" in (ROOT / "scripts" / script).read_text(), script
