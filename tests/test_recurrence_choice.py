"""The default mapping of an in-place recurrence, chosen by the cost model of
:mod:`polymagic.compiler.recurrence` (issue 16, item 6): the choice, the launches
and global loads the emulator counts against the model's, and emulator == CPU."""
from __future__ import annotations

from pathlib import Path

import pytest

from polymagic.compiler import compile_source
from polymagic.compiler.recurrence import MODEL_SIZE, choose
from polymagic.deps import compute_dependences
from polymagic.frontend import parse
from polymagic.options import CompileOptions, Options, parse_options
from polymagic.runtime.run import run
from polymagic.schedule import compute_schedule

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: the examples with a host wavefront, at small sizes (one block wins there)
WAVEFRONTS = [("sor-1d.c", {"m": 16, "n": 512}, "2k + i", 541),
              ("gauss-seidel-2d.c", {"m": 4, "n": 32}, "2k + i", 37),
              ("seidel-2d.c", {"tsteps": 4, "n": 32}, "4t + 2i + j", 100)]


def _source(name: str) -> str:
    return (EXAMPLES / name).read_text()


def _run(name: str, sizes: dict, **kw):
    options = Options(sizes=sizes, target="emulator", **kw)
    compiled = compile_source(_source(name), options)
    return compiled, run(compiled, options)


def _choose(name: str, sizes: dict, **kw):
    """The model's choice without compiling any candidate."""
    options = CompileOptions(sizes=sizes, **kw)
    scop = parse(_source(name), "c")
    deps = compute_dependences(scop, options.deps)
    return choose(scop, deps, compute_schedule(scop, deps, options.schedule), options)


@pytest.mark.parametrize("name,sizes,loop,wavefront_launches", WAVEFRONTS)
def test_small_recurrence_runs_in_one_block(name, sizes, loop, wavefront_launches):
    compiled, rep = _run(name, sizes)
    choice = compiled.recurrence
    assert choice is not None and choice.chosen == "block" and choice.loop == loop
    assert choice.at_given_sizes and dict(choice.sizes) == sizes
    assert rep.ok and rep.max_abs_err == 0
    # the model's figures are the emulator's: one launch, each element loaded once
    assert rep.launches == choice.choice.launches == 1
    assert rep.counters["loads"] == choice.choice.loads
    assert choice.candidate("wavefront").launches == wavefront_launches
    # one note, typed fields: what was chosen, against what
    notes = [n for n in compiled.notes if n.stage == "recurrence"]
    assert len(notes) == 1 and notes[0].kind == "decision" and notes[0].subject == loop
    assert "1 launch" in notes[0].text and f"{wavefront_launches} launches" in notes[0].text
    wave = choice.candidate("wavefront")
    assert choice.choice.seconds < wave.seconds


@pytest.mark.parametrize("name,sizes,loop,wavefront_launches", WAVEFRONTS)
def test_forced_wavefront_matches_the_model(name, sizes, loop, wavefront_launches):
    """The host wavefront (today's mapping, the policy ``recurrence="wavefront"``):
    the model's launches and loads are the emulator's."""
    model = _choose(name, sizes).candidate("wavefront")
    compiled, rep = _run(name, sizes, recurrence="wavefront")
    assert compiled.recurrence is None and compiled.mapping.host_loops == [loop]
    assert rep.ok
    assert rep.launches == model.launches == wavefront_launches
    assert rep.counters["loads"] == model.loads


@pytest.mark.parametrize("name,sizes", [
    ("sor-1d.c", {"m": 5, "n": 37}), ("sor-1d.c", {"m": 1, "n": 1}),
    ("sor-1d.c", {"m": 1, "n": 3}),
    ("gauss-seidel-2d.c", {"m": 5, "n": 37}), ("gauss-seidel-2d.c", {"m": 1, "n": 2}),
    ("seidel-2d.c", {"tsteps": 5, "n": 37}), ("seidel-2d.c", {"tsteps": 1, "n": 3})])
def test_odd_sizes_match_cpu(name, sizes):
    compiled, rep = _run(name, sizes)
    assert compiled.recurrence is not None
    assert rep.ok and rep.max_abs_err == 0
    assert rep.launches == compiled.recurrence.choice.launches


def test_large_sizes_keep_the_gpu_busy():
    """At a GPU size one block gives up too much parallelism (and its data no longer
    fits in shared memory): the model picks the time tiles, and the wavefront over
    the one block."""
    choice = _choose("seidel-2d.c", {"tsteps": 100, "n": 4096})
    assert choice.chosen == "tiles"
    block, wave = choice.candidate("block"), choice.candidate("wavefront")
    assert not block.localised and block.seconds > wave.seconds
    assert wave.launches == 4 * 99 + 2 * 4093 + 4093 + 1


def test_sizes_not_given_use_the_model_size():
    choice = _choose("sor-1d.c", {})
    assert choice is not None and not choice.at_given_sizes
    assert dict(choice.sizes) == {"m": MODEL_SIZE, "n": MODEL_SIZE}
    # unknown sizes: the one block is not localised (its extents are unknown), and
    # the time tiles (seconds of isl code generation) are not a candidate
    assert not choice.candidate("block").localised
    assert choice.candidate("tiles") is None
    assert _choose("seidel-2d.c", {}).chosen in ("wavefront", "block")


@pytest.mark.parametrize("args", [["--no-localise"], ["--localise", "i"],
                                  ["--time-tiling", "4"], ["--tile", "auto"],
                                  ["--device-mem", "64KB"]])
def test_explicit_options_win(args):
    options = parse_options(args + ["--size", "m=16,n=512"])
    assert _choose("sor-1d.c", dict(options.sizes), **{
        k: getattr(options.compile, k) for k in ("localise", "localise_auto", "time_tiling",
                                                 "tile_auto", "device_mem")}) is None


def test_plain_time_loops_are_not_recurrences():
    """jacobi's host loop ``t`` is a time loop over parallel sweeps, not a wavefront."""
    assert _choose("jacobi-1d.c", {"tsteps": 16, "n": 512}) is None
    assert _choose("sor-1d-seq.c", {"m": 16, "n": 512}) is None


def test_forced_tiles_match_cpu():
    compiled, rep = _run("sor-1d.c", {"m": 5, "n": 37}, recurrence="tiles")
    assert compiled.recurrence.chosen == "tiles" and compiled.recurrence.forced
    assert rep.ok and rep.max_abs_err == 0
    assert rep.launches == 3


def test_choice_is_keyed_by_the_sizes():
    """The choice depends on the sizes, so the compile cache keys by them."""
    small = compile_source(_source("sor-1d.c"), CompileOptions(sizes={"m": 4, "n": 16}))
    unsized = compile_source(_source("sor-1d.c"), CompileOptions())
    assert small.recurrence.at_given_sizes and not unsized.recurrence.at_given_sizes
    assert small is not unsized


def test_bound_callable_recompiles_for_other_sizes():
    """The one block is specialised to the cell's sizes: the callable compiles the
    function again for other sizes (the model may choose differently there)."""
    import numpy as np
    from polymagic.api.function import make_callable
    options = Options(sizes={"m": 4, "n": 16}, target="emulator")
    compiled = compile_source(_source("sor-1d.c"), options)
    assert compiled.program.specialised == {"m": 4, "n": 16}
    fn = make_callable(compiled, options)
    A = np.random.default_rng(1).random(38)
    rep = fn(m=5, n=37, A=A, check=True)
    assert rep.ok and rep.launches == 1
