"""A SIGINT (a notebook's stop button, Ctrl-C) ends a long run of compiled code
promptly: the emulator in both modes and the CPU reference stop within the bound
below where the uninterrupted run takes many times longer (about 15 s each on an
idle 2-core machine), the caller's arrays are untouched, and the next run works.
The OpenMP target runs to its end and then raises (see polymagic.runtime.guard).

The bound is generous (seconds, where the stop takes milliseconds) so that a loaded
machine does not trip it; a run that ignored the signal would either finish without
raising or take the full run's time.
"""
from __future__ import annotations

import os
import pathlib
import signal
import sys
import threading
import time

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

from polymagic import cli
from polymagic.helper_process import run_bounded
from polymagic.isl_util import in_child
from polymagic.compiler import compile_source
from polymagic.errors import RunInterrupted
from polymagic.options import Options
from polymagic.runtime import run as rt
from polymagic.runtime.emulator import build
from polymagic.runtime.openmp import module as openmp_module
from polymagic.runtime.run import cpu_reference, with_cpu_code

GEMM_C = pathlib.Path(__file__).resolve().parent.parent / "examples" / "gemm.c"
GEMM = GEMM_C.read_text()
BOUND_S = 5.0          # signal to raise; the stop itself takes milliseconds


@pytest.fixture(autouse=True)
def python_sigint():
    """Python's own SIGINT handler (a background job's shell may have set SIG_IGN,
    which polymagic leaves alone)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


class Interrupter:
    """SIGINT to this process ``delay`` seconds after the main thread entered the
    function ``inside`` ("module.function": the compiled call's Python caller: builds and compiles
    before it take what time they take), from a timer thread, as a notebook's
    kernel gets it; ``sent`` is when it went."""

    def __init__(self, delay: float, inside: str):
        self.delay, self.inside = delay, inside
        self.sent: float | None = None
        self.done = threading.Event()
        self.main = threading.main_thread().ident
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _in_call(self) -> bool:
        f = sys._current_frames().get(self.main)
        while f is not None:
            code = f.f_code
            if f"{os.path.basename(code.co_filename)[:-3]}.{code.co_name}" == self.inside:
                return True
            f = f.f_back
        return False

    def _watch(self) -> None:
        while not self._in_call():
            if self.done.wait(0.01):
                return
        if self.done.wait(self.delay):
            return
        self.sent = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    def __enter__(self) -> "Interrupter":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()

    def latency(self) -> float:
        assert self.sent is not None, "the run ended before the signal was sent"
        return time.perf_counter() - self.sent


def _arrays(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {a: rng.random((n, n), dtype=np.float32) for a in ("A", "B", "C")}


def test_emulator_run_stops_and_leaves_the_arrays_alone():
    options = Options(target="emulator", sizes={"N": 640, "alpha": 1.5})
    compiled = compile_source(GEMM, options)
    ns = _arrays(640)
    before = {k: v.copy() for k, v in ns.items()}
    with Interrupter(0.5, "emulator.run_pointers") as stop:
        with pytest.raises(RunInterrupted, match="stopped by an interrupt") as info:
            rt.run(compiled, options, ns)       # ~16 s uninterrupted (reference 0.3 s)
        assert stop.latency() < BOUND_S
    assert "nothing was written back" in str(info.value)
    for k in ns:
        np.testing.assert_array_equal(ns[k], before[k])
    small = Options(target="emulator", sizes={"N": 48, "alpha": 1.5})
    ns = _arrays(48, seed=1)
    want = ns["C"] + np.float32(1.5) * ns["A"] @ ns["B"]
    report = rt.run(compile_source(GEMM, small), small, ns)
    assert report.ok and report.checked
    np.testing.assert_allclose(ns["C"], want, rtol=1e-4)


def test_emulator_openmp_mode_stops_every_thread():
    compiled = compile_source(GEMM, Options(target="emulator"))
    mod = build(compiled.program, "openmp")
    mod.run(_arrays(16), {"N": 16}, {"alpha": 1.0})             # built, warm
    with Interrupter(0.5, "emulator.run_pointers") as stop:
        with pytest.raises(RunInterrupted, match="OpenMP target"):
            mod.run(_arrays(1800), {"N": 1800}, {"alpha": 1.0})  # ~15 s uninterrupted
        assert stop.latency() < BOUND_S
    ns = _arrays(40, seed=2)
    want = ns["C"] + ns["A"] @ ns["B"]
    mod.run(ns, {"N": 40}, {"alpha": 1.0})
    np.testing.assert_allclose(ns["C"], want, rtol=1e-4)


def test_cpu_reference_stops_at_once():
    ref = cpu_reference(compile_source(GEMM, Options(target="emulator")).scop)
    ns = _arrays(2000)
    with Interrupter(0.5, "guard.call") as stop:
        with pytest.raises(RunInterrupted, match="the CPU reference"):
            ref.run({"N": 2000, "alpha": 1.0, **ns})            # ~15 s uninterrupted
        assert stop.latency() < BOUND_S
    ns = _arrays(40, seed=3)
    want = ns["C"] + ns["A"] @ ns["B"]
    ref.run({"N": 40, "alpha": 1.0, **ns})
    np.testing.assert_allclose(ns["C"], want, rtol=1e-4)


def test_openmp_target_finishes_then_stops():
    """The OpenMP target cannot be left early (its worker threads): it runs to its
    end, then the interrupt is raised; nothing breaks for the next run."""
    compiled = with_cpu_code(compile_source(GEMM, Options(target="openmp")))
    mod = openmp_module(compiled.scop, compiled.cpu)
    with Interrupter(0.02, "openmp.run"):
        with pytest.raises(RunInterrupted, match="the OpenMP target"):
            mod.run({"N": 2000, "alpha": 1.0, **_arrays(2000)})
    ns = _arrays(40, seed=6)
    want = ns["C"] + ns["A"] @ ns["B"]
    mod.run({"N": 40, "alpha": 1.0, **ns})
    np.testing.assert_allclose(ns["C"], want, rtol=1e-4)


def test_cli_says_what_it_stopped(capsys):
    with Interrupter(0.3, "emulator.run_pointers"):
        rc = cli.main(["run", str(GEMM_C), "--size", "N=640", "--target", "emulator"])
    assert rc == 130
    err = capsys.readouterr().err
    assert "polymagic: interrupted: the emulator was stopped by an interrupt" in err
    assert "Traceback" not in err


def test_no_handler_is_left_behind():
    """After runs, interrupted or not, SIGINT is Python's again."""
    ref = cpu_reference(compile_source(GEMM, Options(target="emulator")).scop)
    ref.run({"N": 8, "alpha": 1.0, **_arrays(8)})
    with pytest.raises(KeyboardInterrupt) as info:
        signal.raise_signal(signal.SIGINT)
    assert type(info.value) is KeyboardInterrupt


def test_notebook_stop_shows_one_line(capsys):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "polymagic")
    ns = _arrays(640, seed=4)
    before = {k: v.copy() for k, v in ns.items()}
    shell.user_ns.update(ns, alpha=0.5)
    try:
        with Interrupter(0.5, "emulator.run_pointers") as stop:
            result = shell.run_cell("%%polycuda --size N=640 --target emulator\n" + GEMM)
            assert stop.latency() < BOUND_S
        assert isinstance(result.error_in_exec, RunInterrupted)
        out = capsys.readouterr()
        shown = out.out + out.err
        assert "KeyboardInterrupt: the emulator was stopped by an interrupt" in shown
        assert "Traceback" not in shown and "emulator.py" not in shown
        for k in ns:
            np.testing.assert_array_equal(shell.user_ns[k], before[k])
        small = _arrays(40, seed=5)
        want = small["C"] + np.float32(0.5) * small["A"] @ small["B"]
        shell.user_ns.update(small)
        shell.run_cell_magic("polycuda", "--size N=40 --target emulator", GEMM)
        np.testing.assert_allclose(shell.user_ns["C"], want, rtol=1e-4)
    finally:
        for name in ("A", "B", "C", "alpha", "gemm"):
            shell.user_ns.pop(name, None)


# ---- the isl helper process and in_child's children -----------------------------
# Jupyter's stop button signals the kernel's whole process group, forked helpers too.

def own_pid() -> int:
    return os.getpid()


def late_echo(seconds: float, value: str) -> str:
    time.sleep(seconds)
    return value


def test_helper_ignores_the_process_groups_sigint():
    """Before: the helper raised KeyboardInterrupt in its copy of the owner's stack
    and, in a notebook, went on as a second kernel on the same sockets."""
    pid = run_bounded(own_pid, (), 30)
    os.kill(pid, signal.SIGINT)
    time.sleep(0.2)
    assert run_bounded(own_pid, (), 30) == pid


def test_interrupted_helper_call_leaves_no_stale_reply():
    with Interrupter(0.3, "helper_process.run_bounded"):
        with pytest.raises(KeyboardInterrupt):
            run_bounded(late_echo, (1.5, "the interrupted call's"), 30)
    assert run_bounded(late_echo, (0.0, "this call's"), 30) == "this call's"


def test_interrupted_in_child_ends_its_child():
    with Interrupter(0.3, "isl_util.in_child") as stop:
        with pytest.raises(KeyboardInterrupt):
            in_child(lambda: late_echo(30.0, "never"), 60)
        assert stop.latency() < BOUND_S
