"""Per-sub-tile shared-memory copies only where they pay (:mod:`polymagic.memory.staging`).

The first H100 run measured lu at n = 400 at 105 ms with its sub-tiled copies of
``A[i][j]`` and ``A[i][k]`` and 24.6 ms without, fdtd-2d at 11.4 ms with ``sh1_ex``
against 6.2 ms.  Checked here: the exact decisions (rule per refused partition, the
buffers kept, rule R0 per block), that the kernels whose copies all go lose their
sub-tile loop, that the
reuse that pays is kept (gemm, syrk), emulator == CPU and NVRTC for the changed kernels.
"""
from __future__ import annotations

import pathlib

import pytest

from polymagic.codegen.nvrtc import compile_cuda
from polymagic.compiler import compile_source
from polymagic.options import Options
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _plans(name: str, **kw):
    c = compile_source((EXAMPLES / f"{name}.c").read_text(), Options(**kw))
    return c, {k[len("pm_"):]: p for k, p in c.mapping.plans.items()}


def test_lu_stages_only_the_broadcast_row():
    """A[i][j] (read and written by one thread), A[i][k] (one element per thread) and
    S0's A[i][j]: R1; the pivot row A[k][j] and A[k][k], read by every thread: kept."""
    _, plans = _plans("lu", sizes={"n": 400})
    mem = plans["kernel0"].memory
    assert list(mem.unstaged) == [("A", "R1")] * 3
    assert sorted((b.name, b.extents) for b in mem.buffers) == [
        ("sh0_A_2", (1, 16)), ("sh0_A_3", (1, 1))]


def test_fdtd_2d_kernel1_stages_nothing_and_is_not_sub_tiled():
    _, plans = _plans("fdtd-2d", sizes={"tmax": 100, "nx": 200, "ny": 240})
    k1 = plans["kernel1"]
    assert list(k1.memory.unstaged) == [("ex", "R3"), ("ey", "R1"), ("hz", "R1")]
    assert not k1.memory.buffers and not k1.sub_tiles
    # kernel 0, per block: ex[i][j] = ex[i][j] - ... reads and writes each element in
    # one instance (R0); hz[i][j] and hz[i][j-1] per block: not judged by R3
    assert sorted(b.name for b in plans["kernel0"].memory.buffers) == ["sh0_hz"]
    assert list(plans["kernel0"].memory.unstaged) == [("ex", "R0")]


def test_trmm_scaling_kernel_stages_nothing_and_the_broadcast_stays():
    src = (EXAMPLES.parent / "benchmarks" / "kernels" / "trmm.c").read_text()
    c = compile_source(src, Options(sizes={"m": 200, "n": 240}))
    k0, k1 = (c.mapping.plans[f"pm_kernel{k}"].memory for k in (0, 1))
    assert [b.name for b in k0.buffers] == ["sh0_A"] and list(k0.unstaged) == []
    assert k1.buffers == () and list(k1.unstaged) == [("B", "R0")]


@pytest.mark.parametrize("name, kw, buffers", [
    # outer-product reuse: A[i][k] across j, B[k][j] across i
    ("gemm", {"sizes": {"N": 37}, "registers": False}, ["sh0_A", "sh0_B", "sh0_C"]),
    ("syrk", {"sizes": {"n": 40, "m": 30}}, ["sh0_A_0", "sh0_A_1", "sh0_C"]),
    ("gemm", {}, ["sh0_A", "sh0_B"]),
])
def test_reuse_across_threads_stays_staged(name, kw, buffers):
    _, plans = _plans(name, **kw)
    (plan,) = plans.values()
    assert list(plan.memory.unstaged) == []
    assert sorted(b.name for b in plan.memory.buffers) == buffers


def test_shared_all_stages_everything():
    _, plans = _plans("lu", sizes={"n": 40}, shared="all")
    assert list(plans["kernel0"].memory.unstaged) == []


@pytest.mark.parametrize("name, sizes", [
    ("lu", {"n": 37}),
    ("fdtd-2d", {"tmax": 3, "nx": 19, "ny": 23}),
    ("trmm", {"m": 23, "n": 35}),
])
def test_changed_kernels_match_the_cpu_and_compile(name, sizes):
    opts = Options(sizes=sizes, target="emulator")
    path = EXAMPLES / f"{name}.c"
    if not path.exists():
        path = EXAMPLES.parent / "benchmarks" / "kernels" / f"{name}.c"
    c = compile_source(path.read_text(), opts)
    r = run(c, opts)
    assert r.ok, r.message
    ptx = compile_cuda(c.cuda, "sm_90").decode(errors="replace")
    for k in c.program.kernels:
        assert f".entry {k}" in ptx


@pytest.mark.parametrize("name, prefix", [
    ("benchmarks/kernels/heat-3d.c",      # A: seven neighbours; B: one write (R0)
     "[tsteps, n] -> { S0[t, i, j, k] -> [t, floor(i/4), floor(j/8), floor(k/32)] }"),
    ("examples/jacobi-2d.c",
     "[tsteps, n] -> { S0[t, i, j] -> [t, floor(i/32), floor(j/32)];"
     " S1[t, i, j] -> [t, floor(i/32), floor(j/32)] }"),
    ("examples/gemm.c", "[N] -> { S0[i, j, k] -> [floor(i/32), floor(j/32)] }"),
])
def test_rule_r0_pair_by_pair_equals_the_union_of_all_pairs(name, prefix):
    """Rule R0 tests the references pair by pair and stops at the first pair of a
    block's instances sharing an element (issue 22: a twentieth of a heat-3d tile
    change); its verdict is that of every pair at once, the union of the uses."""
    import islpy as isl

    from polymagic.frontend import parse
    from polymagic.memory.scratchpad import data_spaces, partition
    from polymagic.memory.staging import no_reuse
    scop = parse((pathlib.Path(__file__).resolve().parent.parent / name).read_text())
    pre = isl.UnionMap(prefix).intersect_domain(scop.domain)
    verdicts = []
    for part in partition(data_spaces(scop, pre)):
        uses = None
        for d in part.spaces:
            rel = isl.UnionMap.from_map(scop.statement(d.stmt).accesses[d.ref].relation
                                        .intersect_domain(pre.domain().extract_set(
                                            scop.statement(d.stmt).domain.get_space())))
            uses = rel if uses is None else uses.union(rel)
        pairs = uses.apply_range(uses.reverse()).intersect(pre.apply_range(pre.reverse()))
        once = pairs.subtract(pre.domain().identity()).intersect_params(scop.context).is_empty()
        verdicts.append(no_reuse(scop, part, pre).rule)
        assert verdicts[-1] == ("R0" if once else None), (part.array, len(part.spaces))
    assert None in verdicts and ("R0" in verdicts) == ("heat-3d" in name)
