"""Time loops of stencils (issue 5): what exists today.

``--localise t`` naming a host time loop runs the loop inside one block (seed 001 §5,
:mod:`polymagic.schedule.timeblock`), with the kernel specialised to the ``--size`` values;
the rerunnable callable refuses other values with a one-line error instead of a
failed check.  ``--time-tiling T[,S..]`` tiles isl's skewed permutable band and
launches one kernel per wavefront of tiles (:func:`polymagic.schedule.timeblock.time_tiled_schedule`),
one block per tile: ``t`` (and the statements, or a wavefront of the spatial points)
sequential in every thread with a barrier after each step, the spatial points over the
block's threads (checked parallel with isl; else one thread per tile, with a note);
the tile's data is localised along ``t`` in shared memory (seed 001: the tile's whole
footprint, moved in at first touch, written back once) for 1-d tiles unless
``--shared none``, for 2-d tiles with ``--localise t``.  Legality is checked with isl.
Each launch's instances are an affine set the mapper gives (no floors of the
wavefront for isl's AST generator): jacobi-2d compiles at the tiles 4,32,32.
"""
from __future__ import annotations

from pathlib import Path

import islpy as isl
import numpy as np
import pytest

from polymagic.errors import InputError
from polymagic.options import parse_options
from polymagic.compiler import compile_source
from polymagic.api.function import make_callable
from polymagic.runtime.run import run

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
    from polymagic.schedule.timeblock import band_legal_for_tiling, time_tiling_band
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
    from polymagic.schedule.timeblock import time_tiling_band
    scop, deps = _scop_deps("gemm.c")
    band, why = time_tiling_band(scop, deps)
    # gemm's band is permutable too (no time loop needed): the analysis only says
    # whether a permutable band exists
    assert band is None or band.dim(isl.dim_type.out) >= 2


def _wavefronts(sched, fixed):
    """Distinct wavefront values w (the host launches a wavefront mapping would make)."""
    ctx_set = isl.Set(fixed)
    w = sched.intersect_params(ctx_set.align_params(sched.get_space())).range()
    sets = []
    w.foreach_set(sets.append)
    first = sets[0].project_out(isl.dim_type.set, 1, sets[0].dim(isl.dim_type.set) - 1)
    for s in sets[1:]:
        first = first.union(s.project_out(isl.dim_type.set, 1, s.dim(isl.dim_type.set) - 1))
    first = first.coalesce()
    return first.dim_max_val(0).to_python() - first.dim_min_val(0).to_python() + 1


@pytest.mark.parametrize("name,tiles,fixed,host_launches", [
    ("jacobi-1d.c", (4, 16), "[tsteps, n] -> { : tsteps = 22 and n = 100 }", 44),
    ("jacobi-1d.c", (8, 32), "[tsteps, n] -> { : tsteps = 17 and n = 77 }", 34),
    ("jacobi-2d.c", (4, 16, 16), "[tsteps, n] -> { : tsteps = 40 and n = 50 }", 80),
    ("seidel-2d.c", (4, 16, 16), "[tsteps, n] -> { : tsteps = 9 and n = 40 }", None),
])
def test_wavefront_of_time_tiles_is_legal_and_launches_fewer(name, tiles, fixed,
                                                             host_launches):
    """Time-skewed tiles of isl's permutable band, one launch per wavefront: legal (all
    dependences forward) and the tiles of one wavefront independent, checked with isl;
    the wavefronts are far fewer than the host loop's launches (one per statement per
    step).  The mapping that emits these kernels is planned."""
    from polymagic.schedule.timeblock import time_tiling_band, wavefront_legal, wavefront_tile_map
    scop, deps = _scop_deps(name)
    band, _ = time_tiling_band(scop, deps)
    m = band.dim(isl.dim_type.out)
    sched = wavefront_tile_map(band, tiles, domain=scop.domain)
    assert wavefront_legal(sched, deps.validity, m) == (True, True)
    fronts = _wavefronts(sched, fixed)
    if host_launches is not None:
        assert fronts < host_launches / 2, (fronts, host_launches)
    if fixed.endswith("tsteps = 22 and n = 100 }"):
        # by hand: c0 = floor(t/4) in 0..5, b1 = 2t + i (+1 for S1) in 1..141 so
        # c1 = floor(b1/16) in 0..8: w = c0 + c1 in 0..13
        assert fronts == 14


def test_wavefront_of_the_unskewed_band_is_refused():
    from polymagic.schedule.timeblock import wavefront_legal, wavefront_tile_map
    scop, deps = _scop_deps("jacobi-1d.c")
    plain = isl.MultiUnionPwAff(
        "[tsteps, n] -> [{ S0[t, i] -> [(t)]; S1[t, i] -> [(t)] }, "
        "{ S0[t, i] -> [(i)]; S1[t, i] -> [(i)] }]")
    assert wavefront_legal(wavefront_tile_map(plain, (4, 8)), deps.validity, 2) == (False, False)
    with pytest.raises(ValueError, match="positive tile sizes"):
        wavefront_tile_map(plain, (4,))


# ---- --time-tiling: generated code through the existing mapping ---------------------

def _tt(name, sizes, tiles, extra=()):
    opts = ["--size", sizes, "--target", "emulator", *extra]
    if tiles:
        opts += ["--time-tiling", tiles]
    options = parse_options(opts)
    from polymagic.runtime.run import run
    compiled = compile_source((EXAMPLES / name).read_text(), options)
    return compiled, run(compiled, options, {})


@pytest.mark.parametrize("sizes,tiles", [("tsteps=22,n=100", "4,16"),
                                         ("tsteps=7,n=53", "4,16"),   # 7 % 4, 53 % 16
                                         ("tsteps=1,n=5", "4,16"),
                                         ("tsteps=13,n=97", "5,24")])
def test_jacobi_1d_time_tiled_matches_cpu_with_a_launch_per_wavefront(sizes, tiles):
    compiled, rep = _tt("jacobi-1d.c", sizes, tiles)
    assert rep.ok and rep.checked, rep
    steps = int(sizes.split(",")[0].split("=")[1])
    assert any(n.startswith("time tiling: tiles") for n in compiled.note_lines)
    assert rep.launches < 2 * steps or steps == 1   # host loop: 2 launches per step
    if sizes == "tsteps=22,n=100":
        assert rep.launches <= 15                   # 14 wavefronts (test above), +1 bound


def test_seidel_2d_time_tiled_matches_cpu():
    compiled, rep = _tt("seidel-2d.c", "tsteps=5,n=23", "2,8,8", ("--shared", "none"))
    assert rep.ok and rep.checked
    assert rep.launches < 5 * 21                    # host order: a launch per wavefront of points


def test_time_tiling_refused_with_a_note_keeps_the_host_loop():
    compiled, rep = _tt("sor-1d-seq.c", "m=7,n=30", "4,4,4,4")
    assert rep.ok
    assert any(n.startswith("--time-tiling not applied") for n in compiled.note_lines)


def test_time_tiling_options():
    assert parse_options("--time-tiling 4,16").time_tiling == (4, 16)
    assert parse_options("--no-time-tiling").time_tiling == ()
    assert parse_options("").time_tiling == ()
    assert parse_options("--time-tiling 4").compile != parse_options("").compile
    from polymagic.errors import OptionsError
    for bad in ("--time-tiling 0", "--time-tiling x",
                "--time-tiling 4 --no-time-tiling"):    # contradictory (issue 18)
        with pytest.raises(OptionsError):
            parse_options(bad)


@pytest.mark.parametrize("name,tiles", [("jacobi-1d.c", "4,16"), ("jacobi-2d.c", "4,32,32")])
def test_time_tiled_cuda_compiles_with_nvrtc(name, tiles):
    from polymagic.codegen.nvrtc import compile_cuda
    compiled = compile_source((EXAMPLES / name).read_text(),
                              parse_options(["--time-tiling", tiles]))
    ptx = compile_cuda(compiled.cuda, "compute_80").decode(errors="replace")
    assert all(f".entry {k}" in ptx for k in compiled.program.kernels)


def test_time_tiling_too_costly_falls_back_to_the_host_time_loop():
    """When isl's AST generation of the skewed tiles exceeds the budget (with and
    without localisation): the steps run in the host time loop, as without the option,
    with a note saying why (fuzz finding 43: a one-line error after 21 s before), and
    the emulator matches the CPU."""
    options = parse_options(["--size", "tsteps=9,n=37", "--time-tiling", "3,8",
                             "--target", "emulator"])
    options = options.with_(time_tiling_operations=1000)
    source = (EXAMPLES / "jacobi-1d.c").read_text()
    compiled = compile_source(source, options)
    (note,) = [n for n in compiled.notes if "--time-tiling dropped" in str(n)]
    assert note.kind == "fallback" and "1000 isl operations" in str(note)
    host = compile_source(source, options.with_(time_tiling=()))
    assert compiled.cuda == host.cuda
    report = run(compiled, options)
    assert report.ok, report.message


# ---- one block per time tile, threads inside it, localisation along t ---------------

@pytest.mark.parametrize("name,order", [("jacobi-1d.c", "statements"),
                                        ("jacobi-2d.c", "statements"),
                                        ("fdtd-2d.c", "statements"),
                                        ("seidel-2d.c", "wavefront"),
                                        ("sor-1d.c", None)])
def test_points_of_a_tile_parallel_at_fixed_t(name, order):
    """isl decides how a tile's points run on its block: Jacobi-like stencils with the
    statements in sequence and the spatial points parallel, Gauss-Seidel (in place)
    with a wavefront of the spatial points, 1d-SOR not at all (its only spatial point
    loop is sequential at fixed t: one thread per tile)."""
    from polymagic.schedule.timeblock import intra_tile_order, time_tiling_band, wavefront_tile_map
    scop, deps = _scop_deps(name)
    band, _ = time_tiling_band(scop, deps)
    m = band.dim(isl.dim_type.out)
    found = intra_tile_order(wavefront_tile_map(band, (2,) + (8,) * (m - 1),
                                                domain=scop.domain), deps.validity, m)
    if order is None:
        assert found is None
    else:
        _, nseq, text = found
        assert nseq == {"statements": 2, "wavefront": 3}[order]
        assert ("wavefront" in text) == (order == "wavefront")


def _kernel_text(compiled):
    return "\n".join(k.summary for k in compiled.program.kernels.values())


@pytest.mark.parametrize("sizes,tiles", [("tsteps=22,n=100", "4,16"),
                                         ("tsteps=13,n=97", "5,24"),
                                         ("tsteps=9,n=200", "4")])
def test_jacobi_1d_tile_on_a_block_localised_loads_less_than_the_host_loop(sizes, tiles):
    """One block per tile with the tile's A and B kept in shared memory along t: the
    emulator (races, uninitialised shared reads) agrees with the CPU, and the global
    loads fall below the host loop's (which reads every element once per step
    through its per-tile buffers) and far below the same tiles without localisation."""
    tiled, rep = _tt("jacobi-1d.c", sizes, tiles)
    assert rep.ok and rep.checked
    assert "one block per time tile" in _kernel_text(tiled)
    assert any("the tile's whole footprint" in n for n in tiled.note_lines)
    assert "__syncthreads" in tiled.cuda
    _, host = _tt("jacobi-1d.c", sizes, None)
    _, plain = _tt("jacobi-1d.c", sizes, tiles, ("--shared", "none"))
    assert host.ok and plain.ok
    loads = lambda r: r.counters["loads"]
    assert loads(rep) < loads(host) < loads(plain), (loads(rep), loads(host), loads(plain))
    if sizes == "tsteps=22,n=100":
        # measured: 1742 localised, 4400 host loop, 12936 without localisation; the
        # stores fall too (each written element once per tile: 1566 against 4312)
        assert loads(rep) < 0.5 * loads(host)
        assert rep.counters["stores"] < 0.5 * host.counters["stores"]


@pytest.mark.parametrize("name,sizes,tiles", [
    ("jacobi-2d.c", "tsteps=5,n=23", "2,8,8"),
    ("seidel-2d.c", "tsteps=5,n=23", "2,8,8"),
    ("gauss-seidel-2d.c", "m=3,n=17", "2,8,8"),
    ("fdtd-2d.c", "tmax=4,nx=19,ny=21", "2,8,8")])
def test_2d_stencils_tile_on_a_block_match_cpu(name, sizes, tiles):
    """2-d stencils (sizes not multiples of the tiles) on one block per tile, under
    the code-generation budget that one thread per tile exceeded for jacobi-2d and
    fdtd-2d; emulator == CPU."""
    compiled, rep = _tt(name, sizes, tiles, ("--shared", "none"))
    assert rep.ok and rep.checked, rep
    assert "one block per time tile" in _kernel_text(compiled)
    assert "__syncthreads" in compiled.cuda


@pytest.mark.parametrize("sizes", ["m=7,n=30", "m=9,n=41"])
def test_sor_1d_time_tiled_keeps_a_thread_per_tile(sizes):
    compiled, rep = _tt("sor-1d.c", sizes, "4,8")
    assert rep.ok and rep.checked
    assert any("no parallel level inside a tile" in n for n in compiled.note_lines)


def test_jacobi_2d_tiles_localised_when_asked():
    """``--localise t`` with 2-d time tiles (slow for isl, so not the default): the
    tile's A and B live in shared memory for all its steps; emulator == CPU (sizes
    not multiples of the tiles) and the global loads fall to about a third of the
    same tiles' without localisation.  Tiles 2,4,4: isl's AST generation for the
    localised tile costs about 23 CPU s here and about 100 s at 2,6,6 or 2,8,8 whatever
    the sizes (where the loads fall to about a quarter: 5,480 against 22,050 at
    tsteps=5, n=23; docs/testing.md, "What lives in benchmarks instead")."""
    tiled, rep = _tt("jacobi-2d.c", "tsteps=4,n=15", "2,4,4", ("--localise", "t"))
    assert rep.ok and rep.checked
    assert any("the tile's whole footprint" in n for n in tiled.note_lines), tiled.note_lines
    _, plain = _tt("jacobi-2d.c", "tsteps=4,n=15", "2,4,4", ("--shared", "none"))
    assert rep.counters["loads"] < 0.4 * plain.counters["loads"]


# ---- jacobi-2d at the tile sizes: each launch as an affine set ----------------

@pytest.mark.parametrize("sizes", ["tsteps=9,n=37", "tsteps=8,n=70"])
def test_jacobi_2d_tiles_4_32_32_compile_under_the_budget_and_match_cpu(sizes):
    """jacobi-2d, tiles 4,32,32 (the issue's headline stencil): the kernel's tree for
    one launch is cut by the mapper's affine launch set (wavefront = host value, tile
    coordinates = block ids) and the host scans a box of wavefronts, so isl's AST
    generator never projects the wavefront's floors; this used to exceed
    Options.time_tiling_operations (3,000,000) at these tiles, now it stays inside it
    (measured: 0.7 s of compilation).  Emulator == CPU at sizes not multiples of the
    tiles; without shared memory (``--shared none``) every step reads its five
    neighbours from global memory (5 loads per point and step, the count of the host
    loop without buffers), more than the host loop's per-tile shared buffers (by
    default the tiles keep their data in shared memory and load far less:
    tests/test_time_tile_footprint.py)."""
    compiled, rep = _tt("jacobi-2d.c", sizes, "4,32,32", ("--shared", "none"))
    assert rep.ok and rep.checked, rep
    assert "one block per time tile" in _kernel_text(compiled)
    assert "pm_h0" in compiled.cuda              # the wavefront, a kernel parameter
    t, n = (int(kv.split("=")[1]) for kv in sizes.split(","))
    points = 2 * t * (n - 2) ** 2                # S0 and S1, every step
    assert rep.counters["loads"] == 5 * points
    assert rep.counters["stores"] == points
    _, host = _tt("jacobi-2d.c", sizes, None)
    assert host.ok
    # measured: 110,250 against 27,378 (tsteps=9, n=37); 369,920 against 87,616
    assert host.counters["loads"] < rep.counters["loads"]


def test_time_tiled_launch_set_is_the_wavefront_of_the_block():
    """The mapper's launch set (:func:`polymagic.mapping.time_kernels.wavefront_launch`) selects,
    among a block's instances, exactly those of the launch's wavefront: checked with
    isl against the prefix schedule, on jacobi-1d and jacobi-2d."""
    from polymagic.deps import compute_dependences
    from polymagic.frontend import parse
    from polymagic.lower.per_kernel import kernel_marks
    from polymagic.mapping import map_schedule
    from polymagic.schedule import compute_schedule
    for name, tiles in (("jacobi-1d.c", "3,8"), ("jacobi-2d.c", "2,8,8")):
        options = parse_options(["--time-tiling", tiles, "--shared", "none"])
        scop = parse((EXAMPLES / name).read_text())
        deps = compute_dependences(scop)
        mapping = map_schedule(scop, compute_schedule(scop, deps, options.compile.schedule),
                               options.compile)
        (mark, plan), = mapping.plans.items()
        assert plan.launch_domain is not None
        node = kernel_marks(mapping.schedule)[mark]
        block = node.child(0).filter_get_filter()          # tile coordinates = block ids
        prefix = node.get_prefix_schedule_union_map().intersect_domain(block)
        fixed = isl.UnionSet(isl.Set("[pm_h0] -> { [w] : w = pm_h0 }"))
        exact = prefix.intersect_range(fixed.align_params(prefix.get_space())).domain()
        launch = plan.launch_domain.align_params(exact.get_space()).intersect(block)
        assert exact.is_equal(launch.align_params(exact.get_space())), name
