"""The benchmark suite: 20 kernels with their sizes, shared by ``benchmarks/run_all.py``
and ``scripts/sanitize.py``.

Kernels are the examples (``examples/*.c``) plus a few more PolyBench-style ones in
``benchmarks/kernels/``: linear algebra, stencils with time loops, data mining.  Each
has three size presets: ``small`` (seconds on the CPU emulator, what the sanitizers
use), ``medium`` and ``large`` (PolyBench MEDIUM / LARGE datasets, for the GPU).
``cublas`` names the cuBLAS (CuPy) equivalent, when there is one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXTRA = ROOT / "benchmarks" / "kernels"


@dataclass(frozen=True)
class Kernel:
    name: str
    path: Path
    category: str                 # linear-algebra | stencil | data-mining
    small: dict
    medium: dict
    large: dict
    cublas: str = ""              # key of run_all.CUBLAS, "" when none
    scalars: dict = field(default_factory=dict)   # fixed scalar values (e.g. float_n = n)
    localise: str = ""            # --localise LOOP for the localisation variant, "" when none

    def sizes(self, preset: str) -> dict:
        sizes = dict(getattr(self, preset))
        for name, of in self.scalars.items():
            sizes[name] = float(sizes[of]) if isinstance(of, str) else of
        return sizes


def _k(name, file, category, small, medium, large, **kw) -> Kernel:
    path = (EXAMPLES if (EXAMPLES / file).exists() else EXTRA) / file
    return Kernel(name, path, category, small, medium, large, **kw)


SUITE: tuple[Kernel, ...] = (
    _k("gemm", "gemm.c", "linear-algebra", {"N": 32}, {"N": 512}, {"N": 2048},
       cublas="gemm_square", localise="k"),
    _k("gemm-polybench", "gemm-polybench.c", "linear-algebra",
       {"ni": 20, "nj": 25, "nk": 30}, {"ni": 200, "nj": 220, "nk": 240},
       {"ni": 1000, "nj": 1100, "nk": 1200}, cublas="gemm_polybench"),
    _k("2mm", "2mm.c", "linear-algebra", {"ni": 16, "nj": 18, "nk": 22, "nl": 24},
       {"ni": 180, "nj": 190, "nk": 210, "nl": 220},
       {"ni": 800, "nj": 900, "nk": 1100, "nl": 1200}, cublas="2mm"),
    _k("3mm", "3mm.c", "linear-algebra", {"ni": 16, "nj": 18, "nk": 20, "nl": 22, "nm": 24},
       {"ni": 180, "nj": 190, "nk": 200, "nl": 210, "nm": 220},
       {"ni": 800, "nj": 900, "nk": 1000, "nl": 1100, "nm": 1200}, cublas="3mm"),
    _k("syrk", "syrk.c", "linear-algebra", {"n": 30, "m": 20}, {"n": 240, "m": 200},
       {"n": 1200, "m": 1000}),
    _k("trmm", "trmm.c", "linear-algebra", {"m": 20, "n": 30}, {"m": 200, "n": 240},
       {"m": 1000, "n": 1200}),
    _k("lu", "lu.c", "linear-algebra", {"n": 40}, {"n": 400}, {"n": 2000}),
    _k("atax", "atax.c", "linear-algebra", {"m": 38, "n": 42}, {"m": 390, "n": 410},
       {"m": 1900, "n": 2100}, cublas="atax"),
    _k("bicg", "bicg.c", "linear-algebra", {"m": 38, "n": 42}, {"m": 390, "n": 410},
       {"m": 1900, "n": 2100}),
    _k("mvt", "mvt.c", "linear-algebra", {"n": 40}, {"n": 400}, {"n": 2000}),
    _k("gesummv", "gesummv.c", "linear-algebra", {"n": 30}, {"n": 250}, {"n": 1300}),
    _k("doitgen", "doitgen.c", "linear-algebra", {"nr": 10, "nq": 8, "np": 12},
       {"nr": 50, "nq": 40, "np": 60}, {"nr": 150, "nq": 140, "np": 160}),
    _k("jacobi-1d", "jacobi-1d.c", "stencil", {"tsteps": 4, "n": 60},
       {"tsteps": 100, "n": 400}, {"tsteps": 500, "n": 2000}, localise="t"),
    _k("jacobi-2d", "jacobi-2d.c", "stencil", {"tsteps": 3, "n": 30},
       {"tsteps": 100, "n": 250}, {"tsteps": 500, "n": 1300}, localise="t"),
    _k("seidel-2d", "seidel-2d.c", "stencil", {"tsteps": 2, "n": 20},
       {"tsteps": 100, "n": 400}, {"tsteps": 500, "n": 2000}),
    _k("fdtd-2d", "fdtd-2d.c", "stencil", {"tmax": 3, "nx": 20, "ny": 30},
       {"tmax": 100, "nx": 200, "ny": 240}, {"tmax": 500, "nx": 1000, "ny": 1200}),
    _k("heat-3d", "heat-3d.c", "stencil", {"tsteps": 2, "n": 10},
       {"tsteps": 100, "n": 40}, {"tsteps": 500, "n": 120}),
    _k("conv2d", "conv2d.c", "stencil", {"ni": 32, "nj": 40}, {"ni": 1024, "nj": 1024},
       {"ni": 4096, "nj": 4096}),
    _k("covariance", "covariance.c", "data-mining", {"m": 28, "n": 32},
       {"m": 240, "n": 260}, {"m": 1200, "n": 1400}, scalars={"float_n": "n"}),
    _k("correlation", "correlation.c", "data-mining", {"m": 28, "n": 32},
       {"m": 240, "n": 260}, {"m": 1200, "n": 1400}, scalars={"float_n": "n"}),
)

PRESETS = ("small", "medium", "large")


def select(names: list[str] | None) -> list[Kernel]:
    """The kernels named (all when ``names`` is empty); unknown names raise."""
    if not names:
        return list(SUITE)
    by_name = {k.name: k for k in SUITE}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown kernel(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(by_name)}")
    return [by_name[n] for n in names]


def size_args(sizes: dict) -> list[str]:
    return ["--size", ",".join(f"{k}={v}" for k, v in sizes.items())]
