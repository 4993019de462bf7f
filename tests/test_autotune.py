"""``--autotune`` (polymagic/api/autotune.py): candidates, reduced sizes, the emulator
ranking (real runs at small sizes, checked against the CPU), the shared-memory and
time limits, the heat map, the CLI's JSON and the magic's callable."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from polymagic.api import autotune as A
from polymagic.cli import main
from polymagic.frontend import parse
from polymagic.options import Options, parse_options
from polymagic.report import plots as P
from polymagic.runtime.limits import instances

ROOT = Path(__file__).resolve().parents[1]
GEMM = (ROOT / "examples" / "gemm.c").read_text()
JACOBI1 = (ROOT / "examples" / "jacobi-1d.c").read_text()
PNG = b"\x89PNG"
SEQUENTIAL = """void prefix(int N, float A[N]) {
  for (int i = 1; i < N; i++)
    A[i] = A[i - 1] + A[i];
}"""


def test_candidates_grid_around_the_start():
    cands, axes = A.candidates(2, 1, (32, 32, 16), (32, 8), (19, 16, 100), limit=12)
    assert axes == (("tile", 0), ("tile", 1))
    assert cands[0].source == "start" and cands[0].tile == (32, 32, 16)
    assert cands[1].source == "tile search" and cands[1].tile == (19, 16, 100)
    grid = {c.tile[:2] for c in cands if c.source == "grid"}
    assert grid == {(a, b) for a in (16, 32, 64) for b in (16, 32, 64)} - {(32, 32)}
    assert {c.block for c in cands if c.source == "threads"} == {(32, 4), (32, 16)}
    assert len(cands) == 12 and len({(c.tile, c.block) for c in cands}) == 12
    few, _ = A.candidates(2, 1, (32, 32, 16), (32, 8), None, limit=5)
    assert len(few) == 5 and few[0].source == "start"
    # the nearest grid points first: one size changed by a factor of two
    assert all(sum(a != b for a, b in zip(c.tile, (32, 32, 16))) == 1 for c in few[1:])


def test_candidates_of_a_one_member_band_vary_the_threads():
    cands, axes = A.candidates(1, 0, (256,), (256,), None, limit=20)
    assert axes == (("tile", 0), ("block", 0))
    assert {(c.tile, c.block) for c in cands} == {((t,), (b,)) for t in (128, 256, 512)
                                                 for b in (128, 256, 512)}


def test_reduced_sizes_bound_the_emulator_work():
    scop = parse(GEMM)
    small = A.reduced_sizes(scop, {"N": 400}, max_instances=2_000_000)
    assert small == {"N": 100} and instances(scop, small) == 100 ** 3
    assert A.reduced_sizes(scop, {"N": 64}) == {"N": 64}
    jac = parse(JACOBI1)
    s = A.reduced_sizes(jac, {"tsteps": 1000, "n": 100000}, max_instances=1_000_000)
    assert instances(jac, s) <= 1_000_000 and s["n"] >= 8 and s["tsteps"] >= 8


def test_emulator_ranking_chooses_and_draws_a_heat_map():
    # a budget no loaded machine spends: every candidate must run (the default 60 s
    # of wall time can be spent on a busy 2-core machine, issue 18)
    o = Options(sizes={"N": 48}, target="emulator", autotune=True, autotune_candidates=5,
                autotune_budget=3600.0)
    seen = []
    r = A.autotune(GEMM, o, progress=lambda i, n, c: seen.append((i, n, c.label())))
    assert r.mode == "emulator" and [s[0] for s in seen] == [1, 2, 3, 4, 5]
    ran = [c for c in r.candidates if c.ok]
    assert len(ran) == 5                                  # each checked against the CPU
    assert r.best is not None and r.best.score == 1.0
    assert min(c.score for c in ran) == 1.0
    for c in ran:
        assert c.loads > 0 and c.stores == 48 * 48        # C written once per element
        assert c.model_cost and c.blocks >= 1 and c.shared_bytes <= 48 * 1024
        assert c.transactions and c.transactions < c.traffic     # sectors hold 8 floats
    # N=48: the start's 32x32 tiles make 2x2 blocks
    assert r.start.tile == (32, 32, 16) and r.start.blocks == 4
    chosen = r.options(o)
    assert chosen.tile == r.best.tile and chosen.block == r.best.block
    png = P.to_png(P.autotune(r))
    assert png.startswith(PNG)
    d = json.loads(json.dumps(A.AutotuneResult.as_dict(r)))
    assert d["choice"]["tile"] == list(r.best.tile) and len(d["candidates"]) == 5
    _score_is_consistent(r)


def _score_is_consistent(r):
    """Issue 20: one score, made of the numbers the table shows: sectors and model
    cost relative to the least, the share of the GPU filled; the summary's comparison
    with the start uses the same scores."""
    from polymagic.report.text import autotune_lines
    ran = [c for c in r.candidates if c.ok]
    least = min(c.transactions for c in ran)
    cheapest = min(c.model_cost for c in ran)
    raw = {id(c): math.sqrt(c.transactions / least * c.model_cost / cheapest) / c.fill
           for c in ran}
    best = min(raw.values())
    for c in ran:
        assert c.traffic_ratio == pytest.approx(c.transactions / least)
        assert c.cost_ratio == pytest.approx(c.model_cost / cheapest)
        assert 0 < c.fill <= 1
        assert c.score == pytest.approx(raw[id(c)] / best)
    text = "\n".join(autotune_lines(r))
    assert "√(memory sectors × model cost)" in text
    for c in ran:
        assert f"score {c.score:.2f}: {c.transactions:,} sectors (×{c.traffic_ratio:.2f})" in text
    if r.best is not r.start:
        assert f"score 1.00 against the start's {r.start.score:.2f}" in r.summary()
        assert "better than the start" not in r.summary()


def test_shared_memory_limit_and_time_budget():
    o = Options(sizes={"N": 64}, target="emulator", shared_mem=6 * 1024,
                autotune_candidates=12, autotune_budget=3600.0)
    r = A.autotune(GEMM, o)
    over = [c for c in r.candidates if "M_up" in c.skipped]
    assert over                                   # 64x32 tiles need more than 6 KB
    assert all(c.shared_bytes <= 6 * 1024 for c in r.candidates if c.ok)
    o = Options(sizes={"N": 32}, target="emulator", autotune_budget=1e-6,
                autotune_candidates=4)
    r = A.autotune(GEMM, o)
    assert r.candidates[0].ok                     # the start always runs
    assert all("time budget" in c.skipped for c in r.candidates[1:])
    assert r.best is r.start


def test_nothing_to_tune_without_a_parallel_loop():
    r = A.autotune(SEQUENTIAL, Options(sizes={"N": 50}, target="emulator"))
    assert r.best is None and "nothing to tune" in r.notes[0].text
    assert "no candidate" in r.summary()
    assert P.to_png(P.autotune(r)).startswith(PNG)


def test_gpu_mode_times_candidates(monkeypatch):
    """Where CuPy sees a GPU the candidates are timed (run_device's kernel time);
    here the device is a stand-in whose time grows with the tile's first size."""
    from polymagic.runtime import run as rt
    calls = []

    def fake_run_device(compiled, target, options, arrays, ints, scalars, sources=None):
        assert target == "gpu" and ints == {"N": 300}
        calls.append(options.tile)
        return rt.DeviceRun(1e-3 * options.tile[0] / (1 + options.tile[1] / 64))

    monkeypatch.setattr(rt, "choose_target", lambda t: ("gpu", "stand-in"))
    monkeypatch.setattr(rt, "run_device", fake_run_device)
    r = A.autotune(GEMM, Options(sizes={"N": 300}, autotune_candidates=5), reps=2)
    assert r.mode == "gpu" and r.tune_sizes == {"N": 300}
    assert len(calls) == 2 * len([c for c in r.candidates if c.ok])
    fastest = min((c for c in r.candidates if c.ok), key=lambda c: c.seconds)
    assert r.best is fastest and r.best.score == 1.0
    assert all(c.loads is None for c in r.candidates)


def test_cli_autotune_json(capsys):
    rc = main(["run", str(ROOT / "examples" / "gemm.c"), "--size", "N=40", "--target",
               "emulator", "--autotune", "--autotune-candidates", "3", "--json"])
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert rc == 0 and d["ok"]
    at = d["autotune"]
    assert at["mode"] == "emulator" and len(at["candidates"]) == 3
    assert at["choice"]["tile"] in [c["tile"] for c in at["candidates"]]
    assert "autotune 3/3" in err
    # the run used the chosen tile sizes
    t = at["choice"]["tile"]
    assert f"(tile {t[0]}," in d["summary"] or f"tile {t[0]}" in d["summary"]


def test_cli_autotune_text_and_bad_values(capsys):
    rc = main(["run", str(ROOT / "examples" / "gemm.c"), "--size", "N=32", "--target",
               "emulator", "--autotune", "--autotune-candidates", "2"])
    out, _ = capsys.readouterr()
    assert rc == 0 and "autotune: --tile" in out and "(start)" in out
    for bad in (["--autotune-candidates", "0"], ["--autotune-budget", "-1"],
                ["--autotune-budget", "nan"]):
        rc = main(["run", str(ROOT / "examples" / "gemm.c"), "--autotune"] + bad)
        assert rc == 2 and "autotune" in capsys.readouterr().err


def test_options_parse_autotune():
    o = parse_options("--autotune --autotune-candidates 4 --autotune-budget 2.5")
    assert o.autotune and o.autotune_candidates == 4 and o.autotune_budget == 2.5
    assert Options().compile == o.with_(autotune=False).compile   # no effect on the code


def test_magic_autotune_binds_the_chosen_configuration(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    import ipywidgets as W
    import polymagic.magic as magic
    from polymagic.report.html import AutotuneReport
    shown = []
    monkeypatch.setattr(magic, "display", lambda obj, *a, **k: shown.append(obj))
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "polymagic")
    sh.user_ns["A"] = np.ones((40, 40), np.float32)
    try:
        sh.run_cell_magic("polycuda", "--size N=40 --target emulator --autotune "
                          "--autotune-candidates 3", GEMM)
        bars = [o for o in shown if isinstance(o, W.IntProgress)]
        assert len(bars) == 1 and bars[0].value == 3
        reports = [o for o in shown if isinstance(o, AutotuneReport)]
        assert len(reports) == 1
        html = reports[0]._repr_html_()
        assert "data:image/png;base64" in html and "★" in html
        fn = sh.user_ns["gemm"]
        best = fn.autotune_result.best
        assert fn.options.tile == best.tile and fn.options.block == best.block
        assert not fn.options.autotune
        C = np.zeros((40, 40), np.float32)
        rep = fn(C=C, A=np.ones((40, 40), np.float32), B=np.ones((40, 40), np.float32),
                 alpha=1.0, check=True)
        assert rep.ok and np.allclose(C, 40.0)
        np.testing.assert_array_equal(sh.user_ns["A"], 1.0)      # tuning left it alone
    finally:
        sh.user_ns.pop("gemm", None)
        sh.user_ns.pop("A", None)


def test_user_mistakes_are_one_line_errors(capsys):
    path = str(ROOT / "examples" / "gemm.c")
    for argv, words in ((["--size", "N=100000"], "GiB"), ([], "no value for size"),
                        (["--size", "N=1.5"], "must be an integer")):
        rc = main(["run", path, "--autotune"] + argv)
        err = capsys.readouterr().err
        assert rc == 2 and words in err and "Traceback" not in err, err
