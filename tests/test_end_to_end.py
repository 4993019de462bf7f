"""Every example kernel through the whole pipeline: emulator result == CPU reference.

Sizes are not multiples of the tile sizes, cover at least three tiles per mapped
dimension with small tiles, and one case is smaller than a tile.  The emulator runs
blocks and threads in shuffled and reversed orders and fails on races.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic.options import Options
from polymagic.pipeline import compile_source
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

# name -> (sizes for a multi-tile run with --tile 8,8 / 16, sizes smaller than a tile)
KERNELS = {
    "gemm": ({"N": 37}, {"N": 5}),
    "2mm": ({"NI": 29, "NJ": 27, "NK": 31, "NL": 26}, {"NI": 3, "NJ": 4, "NK": 5, "NL": 2}),
    "atax": ({"M": 41, "N": 35}, {"M": 3, "N": 4}),
    "bicg": ({"M": 33, "N": 45}, {"M": 4, "N": 3}),
    "mvt": ({"N": 39}, {"N": 5}),
    "gesummv": ({"N": 43}, {"N": 6}),
    "syrk": ({"N": 29, "M": 23}, {"N": 4, "M": 3}),
    "doitgen": ({"NR": 27, "NQ": 25, "NP": 26}, {"NR": 3, "NQ": 2, "NP": 5}),
    "covariance": ({"M": 27, "N": 31}, {"M": 4, "N": 5}),
    "jacobi-1d": ({"TSTEPS": 4, "N": 70}, {"TSTEPS": 2, "N": 7}),
    "jacobi-2d": ({"TSTEPS": 3, "N": 30}, {"TSTEPS": 2, "N": 6}),
    "fdtd-2d": ({"TMAX": 3, "NX": 27, "NY": 29}, {"TMAX": 2, "NX": 4, "NY": 5}),
    "seidel-2d": ({"TSTEPS": 2, "N": 27}, {"TSTEPS": 2, "N": 6}),
    "lu": ({"N": 29}, {"N": 5}),
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
def test_cyclic_threads_default_block(name):
    # tile 16 with 4 threads per axis: each thread runs several points of its tile
    _run(name, KERNELS[name][0], tile=(16, 16, 16), block=(4, 4, 1), seed=3)
