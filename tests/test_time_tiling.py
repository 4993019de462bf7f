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

import islpy as isl
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


def _scop_deps(name):
    from polymagic.deps import compute_dependences
    from polymagic.frontend import parse
    scop = parse((EXAMPLES / name).read_text())
    return scop, compute_dependences(scop)


@pytest.mark.parametrize("name,members", [("jacobi-1d.c", 2), ("jacobi-2d.c", 3),
                                          ("seidel-2d.c", 3), ("fdtd-2d.c", 3)])
def test_time_band_is_skewed_and_permutable(name, members):
    """isl finds the skew: the band holding t is fully permutable, every dependence
    distance >= 0 in every member (so time-skewed rectangular tiles are legal)."""
    from polymagic.timeblock import band_legal_for_tiling, time_tiling_band
    scop, deps = _scop_deps(name)
    band, why = time_tiling_band(scop, deps)
    assert band is not None, why
    assert band.dim(isl.dim_type.out) == members
    assert band_legal_for_tiling(band, deps.validity)
    # the unskewed band (t, i, ...) of jacobi-1d is not legal to tile: i's distance < 0
    if name == "jacobi-1d.c":

        plain = isl.MultiUnionPwAff(
            "[tsteps, n] -> [{ S0[t, i] -> [(t)]; S1[t, i] -> [(t)] }, "
            "{ S0[t, i] -> [(i)]; S1[t, i] -> [(i)] }]")
        assert not band_legal_for_tiling(plain, deps.validity)


def test_no_time_band_for_a_plain_loop_nest():
    from polymagic.timeblock import time_tiling_band
    scop, deps = _scop_deps("gemm.c")
    band, why = time_tiling_band(scop, deps)
    # gemm's band is permutable too (no time loop needed): the analysis only says
    # whether a permutable band exists
    assert band is None or band.dim(isl.dim_type.out) >= 2
