"""Every example kernel through the whole pipeline: emulator result == CPU reference.

Sizes are not multiples of the tile sizes, cover at least three tiles per mapped
dimension with small tiles, and one case is smaller than a tile.  The emulator runs
blocks and threads in shuffled and reversed orders and fails on races.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

# name -> (sizes for a multi-tile run with --tile 8,8 / 16, sizes smaller than a tile)
KERNELS = {
    "gemm": ({"N": 37}, {"N": 5}),
    "gemm-polybench": ({"ni": 37, "nj": 35, "nk": 29}, {"ni": 5, "nj": 3, "nk": 4}),
    "2mm": ({"ni": 29, "nj": 27, "nk": 31, "nl": 26}, {"ni": 3, "nj": 4, "nk": 5, "nl": 2}),
    "atax": ({"m": 41, "n": 35}, {"m": 3, "n": 4}),
    "bicg": ({"m": 33, "n": 45}, {"m": 4, "n": 3}),
    "mvt": ({"n": 39}, {"n": 5}),
    "gesummv": ({"n": 43}, {"n": 6}),
    "syrk": ({"n": 29, "m": 23}, {"n": 4, "m": 3}),
    "doitgen": ({"nr": 27, "nq": 25, "np": 26}, {"nr": 3, "nq": 2, "np": 5}),
    "covariance": ({"m": 27, "n": 31}, {"m": 4, "n": 5}),
    "jacobi-1d": ({"tsteps": 4, "n": 70}, {"tsteps": 2, "n": 7}),
    "jacobi-2d": ({"tsteps": 3, "n": 30}, {"tsteps": 2, "n": 6}),
    "fdtd-2d": ({"tmax": 3, "nx": 27, "ny": 29}, {"tmax": 2, "nx": 4, "ny": 5}),
    "seidel-2d": ({"tsteps": 2, "n": 27}, {"tsteps": 2, "n": 6}),
    "lu": ({"n": 29}, {"n": 5}),
}


def _source(name: str) -> str:
    return (EXAMPLES / f"{name}.c").read_text()


def _run(name: str, sizes: dict, **kw):
    opts = Options(sizes=sizes, target="emulator", **kw)
    compiled = compile_source(_source(name), opts)
    report = run(compiled, opts)
    assert report.ok, f"{name}: {report.message} (max rel err {report.max_rel_err})"
    return compiled, report


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("order", ["shuffle", "reverse"])
def test_small_tiles_many_blocks(name, order):
    _run(name, KERNELS[name][0], tile=(8, 8, 8), block=(4, 4, 2), emu_order=order)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_default_tiles_size_smaller_than_tile(name):
    _run(name, KERNELS[name][1])


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_cyclic_threads_without_shared_memory(name):
    # tile 16 with 4 threads per axis: each thread runs several points of its tile
    _run(name, KERNELS[name][0], tile=(16, 16, 16), block=(4, 4, 1), seed=3, shared="none")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_partition_in_shared_memory(name):
    # --shared all (the scratchpad-only machines of seed 000 §3), small shared limit
    _run(name, KERNELS[name][0], tile=(8, 8, 4), block=(8, 2, 1), seed=5, shared="all",
         shared_mem=4096)


@pytest.mark.parametrize("name,sizes", [("gemm", {"N": 20}),
                                        ("jacobi-1d", {"tsteps": 3, "n": 40}),
                                        ("seidel-2d", {"tsteps": 2, "n": 12})])
def test_emulator_catches_a_mapping_that_ignores_dependences(monkeypatch, fresh_cache,
                                                            name, sizes):
    """Planted mapping bug: every band member treated as parallel.  The generated
    kernels race; the emulator must say so rather than return a result.  Without the
    default localisation: its model spends 18 s of CPU on seidel-2d's bogus mapping
    (0.3 s without), and the race is in the mapping, not in localised code."""
    from polymagic.errors import EmulatorError
    from polymagic.mapping import single
    monkeypatch.setattr(single, "leading_coincident", lambda node: node.band_n_member())
    opts = Options(sizes=sizes, target="emulator", tile=(8, 8, 8), block=(4, 4, 2),
                   localise_auto=False)
    compiled = compile_source(_source(name), opts)
    with pytest.raises(EmulatorError, match="data race"):
        run(compiled, opts)
