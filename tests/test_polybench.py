"""The PolyBench/C 4.2 collection (issue 32): the suite's 30 kernels as it writes them.

Each ``tests/polybench/<name>.c`` is the suite's kernel function behind a copy of its
header's macros (``DATA_TYPE``, ``SCALAR_VAL``, ``POLYBENCH_2D`` parameters that are
constant-size arrays, ``_PB_N`` bounds that are the int parameters, ``#pragma scop``,
``static void kernel_<name>``).  Every kernel runs at its MINI dataset, picked the way
a user would (``#define MINI_DATASET`` before the file), on the emulator and on
``--target openmp``, and must match the CPU reference.  Kernels whose seeded random
inputs make no numerical sense get the suite's own ``init_array`` values
(``tests/polybench/inputs.py``).  ``benchmarks/polybench_openmp.py`` times them at
MEDIUM.
"""
from __future__ import annotations

import importlib.util
import pathlib
import re

import pytest

from polymagic import expr as E
from polymagic.compiler import compile_source
from polymagic.options import Options
from polymagic.runtime.run import run

#: kernels waiting on a fix (strict xfail: an unexpected pass fails); none since the
#: issue-32 front-end features (typedefs, local arrays, chained assignments) and the
#: OpenMP C's ``pm_c`` loop iterators landed
PENDING: dict[str, str] = {}
PENDING_OPENMP: dict[str, str] = {}

HERE = pathlib.Path(__file__).resolve().parent


def _load_inputs():
    spec = importlib.util.spec_from_file_location("polybench_inputs",
                                                  HERE / "polybench" / "inputs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


pb = _load_inputs()


def _params(targets: tuple[str, ...]) -> list:
    out = []
    for target in targets:
        for name in pb.KERNELS:
            reason = PENDING.get(name) or (PENDING_OPENMP.get(name) if target == "openmp"
                                           else None)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, target, id=f"{name}-{target}", marks=marks))
    return out


def _run(name: str, target: str, dataset: str = "MINI_DATASET"):
    sizes = pb.sizes(name, dataset)
    opts = Options(sizes=sizes, target=target, cpu_code=target == "openmp")
    compiled = compile_source(pb.source(name, dataset), opts)
    report = run(compiled, opts, pb.inputs(name, sizes))
    assert report.checked and report.target == target
    assert report.ok, f"{name} on {target}: {report.message} (max rel err {report.max_rel_err})"
    return compiled, report


def test_the_collection_is_complete():
    """30 kernels, one file each, no file left out of the list."""
    files = {p.stem for p in (HERE / "polybench").glob("*.c")}
    assert len(pb.KERNELS) == 30 and files == set(pb.KERNELS)


@pytest.mark.parametrize("name", pb.KERNELS)
def test_written_as_the_suite_writes_it(name):
    """The suite's shape: dataset blocks, its macros, a static kernel_ function whose
    body is a scop, every loop bound through a _PB_ macro or a size constant."""
    text = pb.path(name).read_text()
    for ds in pb.DATASETS:
        assert pb.sizes(name, ds), ds
    assert "#define DATA_TYPE" in text and "POLYBENCH_LOOP_BOUND" in text
    fn = name.replace("-", "_")
    assert re.search(rf"static\s+void kernel_{fn}\(", text)
    assert "#pragma scop" in text and "#pragma endscop" in text
    assert re.search(r"POLYBENCH_[123]D\(", text)
    assert "_PB_" in text.split("#pragma scop")[1]


@pytest.mark.parametrize("name, target", _params(("emulator", "openmp")))
def test_kernel_matches_reference(name, target):
    _run(name, target)


def test_default_dataset_is_small():
    """Without a dataset macro the header picks SMALL, as the suite's picks LARGE."""
    sizes = pb.sizes("gemm", "SMALL_DATASET")
    opts = Options(sizes=sizes, target="openmp", cpu_code=True)
    compiled = compile_source(pb.path("gemm").read_text(), opts)
    assert compiled.scop.arrays["C"].shape == (E.Int(60), E.Int(70))
    report = run(compiled, opts)
    assert report.ok, report.message


def test_openmp_loop_iterators_leave_user_scalars_alone():
    """Found by deriche (``c1 = c2 = 1``): isl's default loop iterators ``c0, c1, ...``
    shadowed a user's scalar named ``c1``; the OpenMP C's are ``pm_c<depth>``."""
    src = ("void clash(int n, float c1, float A[n][n], float B[n][n]) {\n"
           "  for (int i = 0; i < n; i++)\n"
           "    for (int j = 0; j < n; j++)\n"
           "      B[i][j] = c1 * A[i][j];\n"
           "}\n")
    opts = Options(sizes={"n": 40}, target="openmp", cpu_code=True)
    report = run(compile_source(src, opts), opts)
    assert report.ok, report.message
