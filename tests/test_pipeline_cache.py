"""The compiler's caches are keyed by the stage inputs themselves: the schedule stage
reads only :class:`~polymagic.options.ScheduleOptions` (its cache key), every field
of it changes the key, and every option the scheduler reads is one of its fields, so
a cached schedule never comes from other settings; the compile cache is keyed by
:class:`~polymagic.options.CompileOptions`."""
from __future__ import annotations

import dataclasses
import pathlib
import re

from polymagic.compiler import clear_caches, compile_source
from polymagic.options import CompileOptions, Options, ScheduleOptions

ROOT = pathlib.Path(__file__).resolve().parent.parent
GEMM = (ROOT / "examples" / "gemm.c").read_text()


def _other(name: str, value):
    """A value of field ``name`` other than ``value``."""
    if isinstance(value, bool):
        return not value
    special = {"mapping": "single", "localise_loop": "t", "layout": (("A", (1, 2)),)}
    if name in special:
        return special[name]
    if value == ():
        return (4,)
    return value * 2


def test_every_option_the_scheduler_reads_is_a_schedule_option():
    text = "".join(p.read_text() for p in (ROOT / "polymagic/schedule").glob("*.py"))
    read = set(re.findall(r"\boptions\.(\w+)", text)) | set(
        re.findall(r"getattr\(options, \"(\w+)\"", text))
    have = {f.name for f in dataclasses.fields(ScheduleOptions)}
    assert read <= have, sorted(read - have)


def test_every_schedule_option_changes_the_key():
    base = ScheduleOptions()
    for f in dataclasses.fields(ScheduleOptions):
        other = base.with_(**{f.name: _other(f.name, getattr(base, f.name))})
        assert other != base and hash(other) != hash(base), f.name


def test_the_schedule_options_are_read_off_the_compile_options():
    """Each schedule option has a compile option of the same name (localise: the
    loop of ``--localise LOOP``), so every compile keys its schedule completely."""
    compile_names = {f.name for f in dataclasses.fields(CompileOptions)}
    for f in dataclasses.fields(ScheduleOptions):
        assert f.name in compile_names or f.name == "localise_loop", f.name
    o = CompileOptions(localise=("t", 2), require_gain=False, time_tiling=(8,))
    s = o.schedule
    assert (s.localise_loop, s.require_gain, s.time_tiling) == ("t", False, (8,))
    assert Options(tile=(16, 16)).compile.schedule == ScheduleOptions()   # tiles: not read


def test_compile_options_are_the_compile_cache_key(fresh_cache):
    """Same compile options: the same compile; a tile change re-runs the lowering and
    the printers only (the stage log says which stages came from the cache)."""
    a = compile_source(GEMM, Options(sizes={"N": 64}, device_sms=0))
    assert compile_source(GEMM, Options(sizes={"N": 64}, device_sms=0).compile) is a
    # sizes: not read here (without the device model, mapping.grid_fill reads them)
    assert compile_source(GEMM, Options(sizes={"N": 80}, device_sms=0)) is a
    assert compile_source(GEMM, Options(sizes={"N": 80})) is not a
    assert a.options == Options(sizes={"N": 64}, device_sms=0).compile
    assert [s.name for s in a.stages] == ["parse", "dependences", "schedule", "lowering",
                                          "cuda", "host"]
    assert not any(s.cached for s in a.stages)
    b = compile_source(GEMM, Options(sizes={"N": 64}, device_sms=0, tile=(16, 16)))
    assert b is not a
    assert [s.name for s in b.stages if s.cached] == ["parse", "dependences", "schedule"]
    c = compile_source(GEMM, Options(sizes={"N": 64}, device_sms=0, require_gain=False))
    assert [s.name for s in c.stages if s.cached] == ["parse", "dependences"]
    clear_caches()
    assert compile_source(GEMM, Options(sizes={"N": 64}, device_sms=0)) is not a


def test_options_hash_and_read_like_before():
    o = Options(tile=[16, 16], sizes={"N": 64}, target="emulator")
    assert o.tile == (16, 16) and o.compile.tile == (16, 16) and o.run.target == "emulator"
    assert o.sizes["N"] == 64 and o.sizes.get("M") is None and "N" in o.sizes
    assert dict(o.sizes) == {"N": 64} and o.sizes == {"N": 64}
    assert hash(o) == hash(Options(tile=(16, 16), sizes={"N": 64}, target="emulator"))
    p = o.with_(sizes={"N": 8}, quiet=True)
    assert p.compile.sizes == p.run.sizes == {"N": 8} and p.report.quiet
    assert o.compile.with_(shared="none").shared == "none"


def test_show_stages_lists_each_stage_with_its_result():
    from polymagic.report.views import view
    c = compile_source(GEMM, Options(sizes={"N": 64}))
    text = view("stages", c).text
    lines = text.splitlines()
    assert [ln.split()[0] for ln in lines] == ["parse", "dependences", "schedule",
                                               "lowering", "cuda", "host"], text
    assert "gemm: 1 statement(s)" in lines[0] and "kernel(s)" in lines[3]
