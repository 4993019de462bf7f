"""The lowering's shortcuts for the explorer's regeneration speed (issue 7 item 1)
print exactly what the slow path prints.

:func:`polymagic.lower.subscripts.drop_domain` drops the domain of a one-piece
subscript before isl pulls it back and prints it at an AST point (the domain holds
every instance printed there, so isl's expression is the same); these tests compile
programs with buffers over clamped border blocks (lu's triangular partitions,
fdtd-2d's stencil halos, 2mm's sub-tiles) both ways (``Options.exact_subscripts``:
the slow path) and compare the CUDA text.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic.options import Options
from polymagic.compiler import compile_source

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("name,tile", [("lu", (12,)), ("fdtd-2d", (12,)), ("2mm", (16,)),
                                       ("jacobi-2d", (20,)), ("gemm", (24,))])
def test_subscripts_without_their_domains_print_the_same(name, tile):
    source = (EXAMPLES / f"{name}.c").read_text()
    # the two compiles share parse, dependences and schedule (the same schedule is
    # what makes the comparison exact); the lowering is not cached: each runs its path
    fast = compile_source(source, Options(tile=tile)).cuda
    slow = compile_source(source, Options(tile=tile, exact_subscripts=True)).cuda
    assert fast == slow
