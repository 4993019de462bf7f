"""The exploration widgets (report/widgets.py), driven programmatically: set control
values, assert the regenerated code, plan and pictures; the debouncing, the Run and
Compare buttons, ``--explore`` in the magic, ``.explore()`` on the callable, and one
run in a real Jupyter kernel where widget updates arrive as comm messages."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from polymagic.options import Options
from polymagic.report.widgets import TABS, Debouncer, Explorer, explore

ROOT = Path(__file__).resolve().parents[1]
GEMM = (ROOT / "examples" / "gemm.c").read_text()
# gemm's default is an 8 x 8 register tile of 128 x 128 (mapping/register_tiles.py); the
# explorer's mechanics are checked from the 32 x 32 tile with 32 x 8 threads
PNG = b"\x89PNG"


@pytest.fixture
def ex():
    return Explorer(GEMM, Options(sizes={"N": 64}, tile=(32, 32), target="emulator"), debounce_s=0)


def test_controls_follow_the_band(ex):
    c = ex.controls
    assert [c[f"tile{j}"].description for j in range(3)] == ["i (block)", "j (block)",
                                                              "k (sub-tile)"]
    assert [c[f"tile{j}"].value for j in range(3)] == [32, 32, 16]
    assert (c["block_x"].value, c["block_y"].value, c["block_z"].value) == (32, 8, 1)
    assert c["shared"].value == "auto" and c["shared_mem"].value == 48
    assert "tile 32, 8 threads" in ex.compiled.summary
    assert "__global__" in ex.cuda.value and "sh0_A[32][16]" in ex.memory.value


def test_tile_slider_regenerates_code_and_plan(ex):
    cuda0 = ex.cuda.value
    ex.controls["tile0"].value = 16
    assert "i→block.y/thread.y (tile 16, 8 threads)" in ex.compiled.summary
    assert ex.cuda.value != cuda0
    # C lives in registers across k: no duplicate shared buffer (seed 004 §4.2)
    assert "sh0_C" not in ex.memory.value and "sh0_A[16][16]" in ex.memory.value
    ex.controls["tile2"].value = 8                              # the k sub-tile
    assert "sub-tile 8" in ex.compiled.summary and "sh0_A[16][8]" in ex.memory.value
    assert "tile 16 -&gt; blockIdx.y" in ex.mapping.value


def test_shared_toggle_and_limit(ex):
    ex.controls["shared"].value = "none"
    assert "__shared__" not in ex.compiled.cuda
    assert "0 buffer(s)" in ex.memory.value
    ex.controls["shared"].value = "auto"
    assert "__shared__" in ex.compiled.cuda
    ex.controls["shared_mem"].value = 2                        # 2 KB: buffers dropped
    assert "M_up = 2 KB" in ex.memory.value and "dropped" in ex.memory.value


def test_threads_per_block(ex):
    ex.controls["block_x"].value = 16
    assert "block 16x8x1" in ex.compiled.summary
    before = ex.cuda.value
    ex.controls["block_x"].value = 1024                        # 1024 x 8 threads: refused
    assert ex.error and "1024" in ex.error and "error" in ex.status.value
    assert ex.cuda.value == before                             # views keep the last good code
    ex.controls["block_x"].value = 32
    assert ex.error is None and "block 32x8x1" in ex.compiled.summary


def test_regeneration_with_a_cached_compile_is_fast(ex):
    from cpu_clock import cpu_seconds   # CPU time: a loaded machine slows the wall clock
    ex.controls["tile0"].value = 16
    c0 = cpu_seconds()
    ex.controls["tile0"].value = 32                             # back: compile cached
    t = ex.timings[-1]
    assert t["compile_cached"] and not t["picture"]
    assert cpu_seconds() - c0 < 0.5, ex.timings


def test_pictures_are_drawn_when_shown_and_cached(ex):
    assert bytes(ex.picture.value) == b""                              # Pictures tab not shown yet
    ex.tabs.selected_index = TABS.index("Pictures")
    first = bytes(ex.picture.value)
    assert first.startswith(PNG)
    ex.controls["tile1"].value = 16                             # shown: redrawn at once
    assert ex.timings[-1]["picture"] and bytes(ex.picture.value) != first
    ex.controls["tile1"].value = 32                             # back: the cached PNG
    assert bytes(ex.picture.value) == first
    ex.picture_kind.value = "tile footprint"
    assert bytes(ex.picture.value).startswith(PNG) and bytes(ex.picture.value) != first
    ex.picture_kind.value = "tile search"                       # nothing searched yet
    assert "Search tile sizes" in ex.picture_note.value
    ex.tabs.selected_index = 0
    ex.controls["tile1"].value = 8                              # hidden: not drawn ...
    assert not ex.timings[-1]["picture"]
    ex.picture_kind.value = "iteration space"
    ex.tabs.selected_index = TABS.index("Pictures")             # ... until shown
    assert bytes(ex.picture.value).startswith(PNG)


def test_tile_search_button():
    ex = Explorer(GEMM, Options(sizes={"N": 128}, tile=(32, 32), target="emulator"), debounce_s=0)
    r = ex.search_tiles()
    assert ex.picture_kind.value == "tile search" and bytes(ex.picture.value).startswith(PNG)
    if r.searched:
        ex.apply_search()
        assert tuple(ex.controls[f"tile{j}"].value for j in range(3)) == r.tile[:3]
        assert ex.current.tile == r.tile[:3]


def test_run_and_compare_leave_the_namespace_alone():
    rng = np.random.default_rng(0)
    ns = {"A": rng.random((48, 48), dtype=np.float32), "B": rng.random((48, 48), dtype=np.float32),
          "C": np.zeros((48, 48), np.float32), "alpha": 1.5}
    keep = {k: v.copy() for k, v in ns.items() if isinstance(v, np.ndarray)}
    ex = Explorer(GEMM, Options(sizes={"N": 48}, tile=(32, 32), target="emulator"), namespace=ns,
                  debounce_s=0)
    report = ex.run()
    assert report.ok and report.target == "emulator"
    assert ex.tabs.selected_index == TABS.index("Timings")
    assert "check: OK" in ex.times_table.value and bytes(ex.times_picture.value).startswith(PNG)
    assert "H2D" in ex.memory.value                              # transfer volumes after a run
    out = ex.compare_shared()
    assert set(out) == {"none", "auto", "all"}
    assert out["none"].counters["loads"] > out["auto"].counters["loads"]
    assert bytes(ex.traffic_picture.value).startswith(PNG)
    for k, v in keep.items():
        np.testing.assert_array_equal(ns[k], v)


def test_device_memory_limit_splits_runs():
    ex = Explorer(GEMM, Options(sizes={"N": 128}, tile=(32, 32), target="emulator"), debounce_s=0)
    assert ex.controls["device_mem"].value == 0 and ex.current.device_mem is None
    ex.set(device_mem=64 << 10)
    assert ex.current.device_mem == 64 << 10
    report = ex.run()
    assert report.ok and report.transfers["mode"] == "tiled"
    assert "launch tile(s) within --device-mem" in ex.memory.value


def test_debouncer_runs_once_after_a_burst():
    calls = []
    d = Debouncer(0.6, lambda: calls.append(time.perf_counter()))
    t0 = time.perf_counter()
    for _ in range(5):
        d()
        time.sleep(0.02)
    assert d.pending
    deadline = time.perf_counter() + 120     # a hang guard, not a time limit (issue 18)
    while not calls and time.perf_counter() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    assert len(calls) == 1 and calls[0] - t0 >= 0.6 + 4 * 0.02
    assert not d.pending


def test_debounced_explorer_regenerates_once():
    ex = Explorer(GEMM, Options(sizes={"N": 64}, tile=(32, 32), target="emulator"), debounce_s=1.0)
    n = len(ex.timings)
    for v in (8, 12, 16, 20):
        ex.controls["tile0"].value = v
    assert len(ex.timings) == n and "regenerating" in ex.status.value
    deadline = time.perf_counter() + 600     # a hang guard: a loaded machine is slow
    while len(ex.timings) == n and time.perf_counter() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    assert len(ex.timings) == n + 1
    assert "tile 20, 8 threads" in ex.compiled.summary


def test_magic_explore_displays_the_explorer(monkeypatch, capsys):
    from IPython.core.interactiveshell import InteractiveShell
    import polymagic.magic as magic
    shown = []
    monkeypatch.setattr(magic, "display", lambda obj, *a, **k: shown.append(obj))
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "polymagic")
    try:
        sh.run_cell_magic("polycuda", "--size N=32 --target emulator --explore", GEMM)
        explorers = [o for o in shown if isinstance(o, Explorer)]
        assert len(explorers) == 1
        assert "planned" not in capsys.readouterr().out
        e = explorers[0]
        assert e.runs and next(iter(e.runs.values())).ok        # the magic's run is listed
        bundle = e._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle
        fn = sh.user_ns["gemm"]
        e2 = fn.explore(debounce_s=0)
        assert isinstance(e2, Explorer) and e2.compiled.scop.name == "gemm"
        assert e.autotuner is not None and e2.autotuner is not None   # the api plugs it in
        e2.controls["tile1"].value = 8
        assert "tile 8" in e2.compiled.summary
    finally:
        sh.user_ns.pop("gemm", None)


def test_explore_function_on_compiled():
    from polymagic.compiler import compile_source
    o = Options(sizes={"N": 40}, tile=(32, 32))
    e = explore(compile_source(GEMM, o), o, debounce_s=0)
    assert e.controls["tile0"].value == 32 and e.timings


def test_updates_from_a_real_kernel_are_debounced(tmp_path):
    """Widget updates sent to a Jupyter kernel as comm messages (what a browser does):
    a burst of three slider values gives one regeneration, with the last value."""
    jc = pytest.importorskip("jupyter_client.manager")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    km, kc = jc.start_new_kernel(startup_timeout=600, kernel_name="python3", env=env,
                                   cwd=str(tmp_path))
    try:
        def run(code: str, timeout: float = 600) -> str:   # hang guards, not time limits
            msg_id = kc.execute(code)
            out = []
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                m = kc.get_iopub_msg(timeout=timeout)
                if m["parent_header"].get("msg_id") != msg_id:
                    continue
                t = m["msg_type"]
                if t == "stream":
                    out.append(m["content"]["text"])
                elif t == "error":
                    raise AssertionError("\n".join(m["content"]["traceback"]))
                elif t == "status" and m["content"]["execution_state"] == "idle":
                    return "".join(out)
            raise TimeoutError(code)

        run("from polymagic.report.widgets import Explorer\n"
            "from polymagic.options import Options\n"
            f"ex = Explorer(open({str(ROOT / 'examples' / 'gemm.c')!r}).read(), "
            "Options(sizes={'N': 64}, tile=(32, 32)), debounce_s=1.0)")
        mid = run("print(ex.controls['tile0'].model_id)").strip()
        for v in (8, 12, 16):
            kc.shell_channel.send(kc.session.msg("comm_msg", {
                "comm_id": mid, "data": {"method": "update", "state": {"value": v},
                                         "buffer_paths": []}}))
            time.sleep(0.05)
        out = ""
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            time.sleep(0.5)
            out = run("print(len(ex.timings), ex.controls['tile0'].value, "
                      "ex.current.tile, ex.error)")
            if out.startswith("2 "):
                break
        assert out.split()[:2] == ["2", "16"], out
        assert "(16, 32, 16)" in out and out.strip().endswith("None")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_stage_toggles_follow_the_options_fields(ex):
    """Mapping, registers, localisation and reductions: wired to their Options field
    where it exists, else disabled with a tooltip naming the issue they arrive with."""
    from polymagic.options import option_names
    from polymagic.report.widgets import STAGE_TOGGLES
    have = option_names()
    for name, (names, _what, issue) in STAGE_TOGGLES.items():
        c = ex.controls[name]
        wired = any(n in have for n in names)
        assert c.disabled == (not wired), name
        if not wired:
            assert f"arrives with issue {issue}" in c.tooltip
    if "mapping" in have:
        assert ex.current.mapping == ex.controls["mapping"].value
        other = [v for v in ex.controls["mapping"].options if v != ex.current.mapping][0]
        ex.controls["mapping"].value = other
        assert ex.current.mapping == other and f"mapping {other}" in ex.timings[-1]["options"]
    if "localise" in have:                      # --localise LOOP[:w]
        assert ex.current.localise is None and ex.controls["localise"].value is None
        ex.controls["localise"].value = ("k", 1)
        assert ex.current.localise == ("k", 1) and ex.error is None
        ex.controls["localise"].value = None
        assert ex.current.localise is None
    if "registers" in have:
        ex.controls["registers"].value = False
        assert ex.current.registers is False
        ex.controls["registers"].value = True
        assert ex.current.registers is True


def test_seed_pictures_and_autotune_in_the_explorer():
    from polymagic.api.autotune import autotune
    ex = Explorer(GEMM, Options(sizes={"N": 32}, tile=(32, 32), target="emulator", autotune_candidates=3),
                  debounce_s=0, autotuner=autotune)
    ex.tabs.selected_index = TABS.index("Pictures")
    for kind in ("schedules", "localisation"):
        ex.picture_kind.value = kind
        assert bytes(ex.picture.value).startswith(PNG) and ex.error is None, kind
    ex.picture_kind.value = "autotune"                          # nothing tuned yet
    assert "Autotune" in ex.picture_note.value
    r = ex.autotune()
    assert r.best is not None and len(r.candidates) == 3
    assert ex.picture_kind.value == "autotune" and bytes(ex.picture.value).startswith(PNG)
    assert ex.current.tile == r.best.tile[:len(ex.band)]
    assert ex.current.block[:len(r.best.block)] == r.best.block


def test_tile_change_regenerates_code_from_the_cached_schedule():
    """A tile change re-runs only the mapping and code generation: the Scop,
    dependences and schedule come from the stage cache (the compile's stage log says
    so), and the views read the mapping the compile kept instead of mapping again."""
    from polymagic.report import explore as E
    ex = Explorer(GEMM, Options(sizes={"N": 64}, tile=(32, 32), target="emulator"), debounce_s=0)
    mapped = dict(E.MAPPING_RUNS)
    ran = lambda: [s.name for s in ex.compiled.stages if not s.cached]     # noqa: E731
    cuda0, code0 = ex.cuda.value, ex.compiled.cuda
    ex.set(tile0=24)                       # a configuration not seen before
    assert not ex.timings[-1]["compile_cached"]
    assert ex.compiled.cuda != code0 and ex.cuda.value != cuda0
    assert "tile 24" in ex.compiled.summary and "sh0_A[24]" in ex.memory.value
    assert ran() == ["lowering", "cuda", "host"]   # Scop, deps, schedule: cached
    assert E.MAPPING_RUNS["fresh"] == mapped["fresh"]             # the kept mapping is read
    assert E.mapping_of(ex.compiled, ex.current).source is ex.compiled.mapping
    ex.set(tile0=40)
    assert ran() == ["lowering", "cuda", "host"]
    assert "tile 40" in ex.compiled.summary
