"""Every generated kernel compiles with NVRTC for sm_90 (no GPU needed), and every
example's default code for sm_80 too: the generated CUDA has no architecture-dependent
code (no ``__CUDA_ARCH__``, nothing sm_90-only), so sm_80 of every variant compiled the
same text again (about a third of this file's CPU time).

This test must fail loudly when NVRTC is missing: CI has no GPU, so compiling the
generated CUDA is part of the evidence that it is right.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic.codegen.nvrtc import compile_cuda
from polymagic.options import Options
from polymagic.compiler import compile_source

EXAMPLES = sorted((pathlib.Path(__file__).resolve().parent.parent / "examples").glob("*.c"))
VARIANTS = {"default": Options(), "small-tiles": Options(tile=(8, 8, 8), block=(4, 4, 2)),
            "1d-blocks": Options(tile=(64, 16, 4), block=(64, 1, 1)),
            "no-shared": Options(shared="none"),
            "shared-all": Options(shared="all", tile=(16, 16, 8), block=(16, 8, 1))}


#: the architectures each variant compiles for
ARCHS = {"default": ("sm_80", "sm_90")}

#: (CUDA text, arch) -> PTX: variants that generate the same text for an example (no
#: shared memory to drop, tiles that change nothing) are compiled once per process
_PTX: dict = {}


def _ptx(cuda: str, arch: str) -> str:
    key = (cuda, arch)
    if key not in _PTX:
        _PTX[key] = compile_cuda(cuda, arch).decode(errors="replace")
    return _PTX[key]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_generated_cuda_compiles(path, variant):
    """Every architecture of the variant in one test (one test per arch compiled the
    example twice wherever xdist sent the two to different workers)."""
    compiled = compile_source(path.read_text(), VARIANTS[variant])
    assert "__global__" in compiled.cuda
    assert "__CUDA_ARCH__" not in compiled.cuda      # what makes one arch enough
    for arch in ARCHS.get(variant, ("sm_90",)):
        ptx = _ptx(compiled.cuda, arch)
        for k in compiled.program.kernels:
            assert f".entry {k}(" in ptx or f".entry {k}" in ptx, (arch, k)
