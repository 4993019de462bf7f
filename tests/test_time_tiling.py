"""Time loops of stencils (issue 5): what exists today.

``--localise t`` naming a host time loop runs the loop inside one block (seed 001 §5,
:mod:`polymagic.timeblock`), with the kernel specialised to the ``--size`` values;
the rerunnable callable refuses other values with a one-line error instead of a
failed check.  Time tiling over many blocks (time-skewed tiles launched by
wavefront) is planned; :func:`polymagic.timeblock.time_band_permutable` says
whether isl's schedule makes it legal (the band holding ``t`` is permutable).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from polymagic.errors import InputError
from polymagic.options import parse_options
from polymagic.pipeline import compile_source
from polymagic.runtime.run import make_callable

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _callable(name, sizes, *extra):
    options = parse_options(["--size", sizes, "--target", "emulator", *extra])
    compiled = compile_source((EXAMPLES / name).read_text(), options)
    return compiled, make_callable(compiled, options)


def test_time_block_runs_at_its_sizes_and_refuses_others():
    compiled, f = _callable("jacobi-1d.c", "tsteps=4,n=64", "--localise", "t")
    assert compiled.program.specialised == {"tsteps": 4, "n": 64}
    rng = np.random.default_rng(1)
    a, b = rng.random(64), rng.random(64)
    rep = f(tsteps=4, n=64, A=a.copy(), B=b.copy(), check=True)
    assert rep.ok and rep.launches == 1
    for sizes in ({"tsteps": 5, "n": 64}, {"tsteps": 4, "n": 80}):
        n = sizes["n"]
        with pytest.raises(InputError, match=r"specialised to tsteps=4, n=64.*--size"):
            f(**sizes, A=rng.random(n), B=rng.random(n), check=True)


def test_host_loop_mapping_is_not_specialised():
    compiled, f = _callable("jacobi-1d.c", "tsteps=4,n=64")
    assert compiled.program.specialised == {}
    rng = np.random.default_rng(2)
    rep = f(tsteps=7, n=50, A=rng.random(50), B=rng.random(50), check=True)
    assert rep.ok and rep.launches == 14       # one launch per statement per time step
