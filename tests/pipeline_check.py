"""The tests' common end-to-end check of one cell."""
from __future__ import annotations

from polymagic.codegen.nvrtc import compile_cuda
from polymagic.compiler import compile_source
from polymagic.options import Options
from polymagic.runtime.run import run


def check(src: str, sizes: dict, **kw):
    """Emulator == CPU through the pipeline; the CUDA compiles with NVRTC for sm_90.
    Returns the compile."""
    opts = Options(sizes=sizes, target="emulator", **kw)
    compiled = compile_source(src, opts)
    report = run(compiled, opts)
    assert report.ok, f"{report.message} (max rel err {report.max_rel_err})"
    assert ".entry" in compile_cuda(compiled.cuda, "sm_90").decode(errors="replace")
    return compiled
