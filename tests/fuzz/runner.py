"""Run fuzz cases: in process (:func:`run_case`), in a pool of worker processes
with per-case timeouts (:class:`Pool`), and as a seeded campaign (:func:`campaign`).

A case passes when ``polymagic.runtime.run.run`` reports ``ok``: the device
target's result equals the CPU reference within the runtime's tolerances and
the emulator found no race, out-of-bounds access or divergent barrier.  Any
other outcome is a failure with a *signature* (its kind, e.g. ``mismatch``,
``emulator:race``, ``crash:KeyError``) that shrinking must preserve.

Batching: one job is one program with several option combinations, run by one
worker, so the CPU reference is built once per program and one emulator build
serves every run-time option (target order, seed) of a mapping.
"""
from __future__ import annotations

import faulthandler
import multiprocessing
import os
import random
import re
import signal
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import wait
from typing import Callable, Iterable, Iterator

import numpy as np

from . import generator, space
from .program import Program, render, used_sizes

#: Outcome kinds that are not failures.
PASS = "pass"
SKIPPED = "skipped"          # never ran (its worker timed out on an earlier case)
REFUSED = "refused"          # a clear user-level refusal of a resource limit option

#: Options whose small values may legitimately be refused ("does not fit").
LIMIT_OPTIONS = ("--device-mem", "--shared-mem")


@dataclass
class Outcome:
    """What one case did."""
    kind: str                    # pass | mismatch | emulator:<what> | compile-error | ...
    message: str = ""
    seconds: float = 0.0
    stage: str = ""              # where it failed: options | compile (pipeline) | run
    where: str = ""              # crash: innermost polymagic frame; compile error: its first error
    code: str = field(default="", repr=False)   # generated CUDA of a failed run (known bugs)

    @property
    def failed(self) -> bool:
        return self.kind not in (PASS, SKIPPED, REFUSED)

    @property
    def signature(self) -> str:
        """What shrinking must preserve: the kind, and for crashes and compile errors
        where they happen (so a shrink cannot drift to another bug)."""
        return f"{self.kind}|{self.where}" if self.where else self.kind


@dataclass
class Case:
    """A program (as source and sizes) plus option arguments."""
    source: str
    sizes: dict
    args: list[str]
    seed: int = -1               # program seed (-1: not generated, e.g. a regression)
    attempt: int = 0

    def cli(self) -> list[str]:
        sizes = ",".join(f"{k}={v}" for k, v in self.sizes.items())
        return list(self.args) + (["--size", sizes] if sizes else [])

    def as_dict(self) -> dict:
        return asdict(self)


# ---- one case, in process -------------------------------------------------------

def _emulator_kind(message: str) -> str:
    low = message.lower()
    for word, kind in (("race", "race"), ("out of bounds", "bounds"), ("out-of-bounds", "bounds"),
                       ("bounds", "bounds"), ("uninit", "uninitialised"),
                       ("barrier", "barrier")):
        if word in low:
            return kind
    return "other"


def crash_site(exc: BaseException) -> str:
    """``file.py:function`` of the innermost polymagic frame of a traceback."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f"{os.sep}polymagic{os.sep}" in f.filename]
    if not frames:
        return ""
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].name}"


def compiler_error(message: str) -> str:
    """The first ``error:`` of a compiler log, without paths, positions and numbers."""
    m = re.search(r"error: ([^\n]*)", message.split("\n", 1)[-1])
    return re.sub(r"\d+", "N", m.group(1)).strip() if m else ""


def classify(exc: BaseException) -> str:
    """The failure kind of an exception raised while running a case."""
    from polymagic import errors
    if isinstance(exc, errors.EmulatorError):
        return "emulator:" + _emulator_kind(str(exc))
    if isinstance(exc, errors.CompileError):
        return "compile-error"
    if isinstance(exc, errors.SourceError):
        return "rejected"                   # the front end refused a generated program
    if isinstance(exc, errors.PolymagicError):
        return "error:" + type(exc).__name__
    return "crash:" + type(exc).__name__


def _refusal(exc: BaseException, case: Case) -> bool:
    """A user error (not an internal one) naming a limit option the case set."""
    from polymagic import errors
    if not isinstance(exc, (errors.DeviceError, errors.OptionsError, errors.InputError)):
        return False
    text = str(exc)
    return any(opt in case.args and opt in text for opt in LIMIT_OPTIONS)


def run_case(case: Case, compile_only: bool = False) -> Outcome:
    """Compile and run one case (only compile with ``compile_only``: enough to
    shrink a failure of the pipeline itself); never raises."""
    from polymagic import pipeline
    from polymagic.options import parse_options
    from polymagic.runtime import run as rt
    t0 = time.perf_counter()
    stage, compiled = "options", None
    try:
        opts = parse_options(case.cli())
        stage = "compile"
        compiled = pipeline.compile_source(case.source, opts)
        if compile_only:
            return Outcome(PASS, "", time.perf_counter() - t0, stage)
        stage = "run"
        report = rt.run(compiled, opts)
    except Exception as e:       # noqa: BLE001 — every failure is an outcome
        kind, msg = classify(e), f"{type(e).__name__}: {e}"
        if _refusal(e, case):
            return Outcome(REFUSED, msg, time.perf_counter() - t0, stage)
        code = compiled.cuda if compiled is not None else ""
        where = ""
        if kind.startswith("crash"):
            msg += "\n" + "".join(traceback.format_exception(e)[-4:])
            where = crash_site(e)
        elif kind == "compile-error":
            where = compiler_error(msg)
        return Outcome(kind, msg, time.perf_counter() - t0, stage, where, code)
    dt = time.perf_counter() - t0
    if report.ok:
        return Outcome(PASS, "", dt, stage)
    return Outcome("mismatch", f"{report.mismatches} mismatches, first at "
                   f"{report.first_mismatch}, max abs err {report.max_abs_err:g}", dt, stage,
                   code=compiled.cuda)


def reference_range(source: str, sizes: dict) -> float:
    """Largest |value| of the CPU reference's outputs on seed-0 random inputs
    (inf when not finite).  Raises what the front end raises."""
    from polymagic.frontend import parse
    from polymagic.options import Options
    from polymagic.runtime import run as rt
    scop = parse(source, "c")
    inputs = rt.gather_inputs(scop, Options(sizes=dict(sizes)), {})
    arrays = {n: a.copy() for n, a in inputs.arrays().items()}
    rt.cpu_reference(scop).run({**inputs.args, **arrays})
    top = 0.0
    for name in scop.written_arrays():
        a = arrays.get(name)
        if a is None or a.size == 0:
            continue
        if not np.all(np.isfinite(a)):
            return float("inf")
        top = max(top, float(np.max(np.abs(a))))
    return top


def in_range(source: str, sizes: dict) -> bool:
    return reference_range(source, sizes) <= generator.MAX_MAGNITUDE


def valid_program(seed: int, attempts: int = 30) -> Program:
    """The first program of ``seed`` whose reference output stays in range (the
    front end's errors propagate: a rejected generated program is a finding)."""
    program = None
    for attempt in range(attempts):
        program = generator.generate(seed, attempt)
        if in_range(render(program), used_sizes(program)):
            return program
    return program


# ---- jobs (run inside workers) ----------------------------------------------------

def program_job(seed: int, arg_lists: list[list[str]]) -> Iterator[tuple[Case, Outcome]]:
    """Generate the program of ``seed`` and run it under each argument list."""
    t0 = time.perf_counter()
    try:
        program = valid_program(seed)
    except Exception as e:       # noqa: BLE001 — e.g. the front end rejects it
        program = generator.generate(seed, 0)
        case = Case(render(program), used_sizes(program), arg_lists[0], seed, 0)
        yield case, Outcome(classify(e), f"{type(e).__name__}: {e}", time.perf_counter() - t0)
        return
    source, sizes = render(program), used_sizes(program)
    for args in arg_lists:
        case = Case(source, sizes, args, seed, program.origin.get("attempt", 0))
        yield case                          # announced: a timeout blames this case
        yield case, run_case(case)


def cases_job(cases: list[Case], compile_only: bool = False) -> Iterator:
    """Run given cases (shrinking candidates, saved regressions); a case whose
    reference output is out of range is an ``out-of-range`` outcome."""
    for case in cases:
        yield case
        yield case, checked_run(case, compile_only)


def checked_run(case: Case, compile_only: bool = False) -> Outcome:
    """:func:`run_case`, after checking the reference output stays in range
    (unless only compiling)."""
    if compile_only:
        return run_case(case, compile_only=True)
    try:
        ok = in_range(case.source, case.sizes)
    except Exception:            # noqa: BLE001 — run_case reports the same error
        ok = True
    if not ok:
        return Outcome("out-of-range", "reference output out of range")
    return run_case(case)


# ---- the worker pool ----------------------------------------------------------------

def _worker_main(conn, setup: Callable | None, stack_file: str) -> None:
    """Worker loop: receive (function, args), stream (case, outcome) pairs back.
    SIGUSR1 writes the Python stack to ``stack_file`` (where a timed-out case hung)."""
    faulthandler.register(signal.SIGUSR1, file=open(stack_file, "w"), all_threads=True)
    if setup is not None:
        setup()
    while True:
        job = conn.recv()
        if job is None:
            return
        fn, args = job
        try:
            for item in fn(*args):
                conn.send(("start", item) if isinstance(item, Case) else ("case", item))
        except Exception as e:   # noqa: BLE001 — report and keep the worker alive
            conn.send(("error", f"{type(e).__name__}: {e}"))
        conn.send(("end", None))


@dataclass
class _Worker:
    process: multiprocessing.Process
    conn: object
    stack_file: str
    job: tuple | None = None
    job_id: int = -1
    current: Case | None = None
    got: list = field(default_factory=list)
    since: float = 0.0
    done_cases: int = 0


class Pool:
    """Worker processes (fork) that run jobs with a per-case timeout.

    ``imap(jobs)`` takes (function, args, expected case count) triples and yields
    (job index, [(case, outcome), ...]) as jobs finish.  A worker silent for more
    than ``timeout`` seconds is killed: the case it was running becomes a
    ``timeout`` failure.  Workers are replaced after ``recycle`` cases (loaded
    libraries and caches otherwise pile up).  ``workers=0`` runs in process,
    without timeouts."""

    def __init__(self, workers: int = 2, timeout: float = 120.0, recycle: int = 200,
                 setup: Callable | None = None):
        self.n = workers
        self.timeout = timeout
        self.recycle = recycle
        self.setup = setup
        self.ctx = multiprocessing.get_context("fork")
        self.workers: list[_Worker] = []

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        fd, stack_file = tempfile.mkstemp(prefix="polymagic-fuzz-stack-", suffix=".txt")
        os.close(fd)
        # not daemonic: the pipeline may start processes of its own (tile search)
        p = self.ctx.Process(target=_worker_main, args=(child, self.setup, stack_file))
        p.start()
        child.close()
        return _Worker(p, parent, stack_file)

    def _kill(self, w: _Worker) -> None:
        if w.process.is_alive():
            os.kill(w.process.pid, signal.SIGKILL)
        w.process.join(5)
        w.conn.close()
        if os.path.exists(w.stack_file):
            os.unlink(w.stack_file)

    @staticmethod
    def _stack(w: _Worker) -> str:
        """The hung worker's Python stack (innermost frames), via faulthandler."""
        try:
            os.kill(w.process.pid, signal.SIGUSR1)
            time.sleep(0.5)
            with open(w.stack_file) as f:
                lines = [ln.strip() for ln in f if ln.strip().startswith("File")]
        except OSError:
            return ""
        return "\n".join(lines[:8])

    def close(self) -> None:
        for w in self.workers:
            try:
                w.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
            w.process.join(5)
            if w.process.is_alive():
                self._kill(w)
        self.workers = []

    def imap(self, jobs: Iterable[tuple]) -> Iterator[tuple[int, list]]:
        if self.n <= 0:
            for k, (fn, args, _count) in enumerate(jobs):
                yield k, [x for x in fn(*args) if not isinstance(x, Case)]
            return
        queue = enumerate(jobs)
        more = True
        while len(self.workers) < self.n:
            self.workers.append(self._spawn())
        while more or any(w.job is not None for w in self.workers):
            for w in self.workers:
                if w.job is None and more:
                    nxt = next(queue, None)
                    if nxt is None:
                        more = False
                        break
                    w.job_id, w.job = nxt
                    w.got, w.current, w.since = [], None, time.monotonic()
                    w.conn.send(w.job[:2])
            busy = [w for w in self.workers if w.job is not None]
            ready = wait([w.conn for w in busy], timeout=1.0)
            for w in busy:
                if w.conn in ready:
                    result = self._receive(w)
                elif time.monotonic() - w.since > self.timeout:
                    result = self._timed_out(w)
                else:
                    continue
                if result is not None:
                    yield w.job_id, result
                    w.job = None

    def _receive(self, w: _Worker) -> list | None:
        """Handle one message; the job's results when it ended."""
        try:
            kind, payload = w.conn.recv()
        except (EOFError, OSError):
            return self._replace(w, "crash:worker-died", "the worker process died")
        w.since = time.monotonic()
        if kind == "start":
            w.current = payload
            return None
        if kind == "case":
            w.got.append(payload)
            w.done_cases += 1
            return None
        if kind == "error":
            w.got.append((w.current, Outcome("crash:job", payload)))
            return None
        got = w.got
        if w.done_cases >= self.recycle:
            w.conn.send(None)
            w.process.join(10)
            self._kill(w)
            self.workers[self.workers.index(w)] = self._spawn()
        return got

    def _timed_out(self, w: _Worker) -> list:
        stack = self._stack(w)
        got = self._replace(w, "timeout", f"no answer within {self.timeout:.0f} s"
                            + (f"; stack (innermost first):\n{stack}" if stack else ""))
        m = re.search(r'polymagic/(?:[^/"]+/)*([^/"]+\.py)", line \d+ in (\w+)', stack)
        got[-1][1].where = f"{m.group(1)}:{m.group(2)}" if m else ""
        return got

    def _replace(self, w: _Worker, kind: str, message: str) -> list:
        """Kill a worker, mark its current case failed, start a new worker."""
        got = list(w.got)
        got.append((w.current, Outcome(kind, message,
                                       self.timeout if kind == "timeout" else 0.0)))
        self._kill(w)
        fresh = self._spawn()
        self.workers[self.workers.index(w)] = fresh
        w.job = None
        return got


# ---- campaigns ----------------------------------------------------------------------

@dataclass
class Failure:
    case: Case | None
    outcome: Outcome

    @property
    def known(self):
        """The already-reported bug this failure matches (see :mod:`.known`), or None."""
        from .known import known
        return known(self.outcome)


@dataclass
class CampaignResult:
    cases: int = 0
    lost: int = 0                # cases never run (their worker timed out earlier)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    programs: int = 0
    kinds: dict = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0

    @property
    def new_failures(self) -> list[Failure]:
        """Failures that match no known open bug."""
        return [f for f in self.failures if f.known is None]

    def summary_line(self, allow_known: bool = False) -> str:
        n = len(self.new_failures if allow_known else self.failures)
        return f"cases {self.cases}, failures {n}, cases/s {self.rate:.2f}"


def program_options(seed: int, mappings: int, runs: int) -> list[list[str]]:
    """The option combinations of one program: ``mappings`` code-changing draws,
    each with ``runs`` run-time draws (runs share one emulator build)."""
    rng = random.Random(f"polymagic-fuzz-options-{seed}")
    out = []
    for _ in range(mappings):
        code = space.draw(rng, code=True)
        for _ in range(runs):
            out.append(code + space.draw(rng, code=False))
    return out


def campaign_jobs(seed: int, mappings: int, runs: int, counter: list[int],
                  more: Callable[[int], bool]) -> Iterator[tuple]:
    """(program_job, args, count) for program seeds seed*1e6 + k, k = counter[0],
    counter[0] + 1, ... while ``more(k)``; ``counter`` keeps k across calls."""
    while more(counter[0]):
        pseed = seed * 1_000_000 + counter[0]
        counter[0] += 1
        yield program_job, (pseed, program_options(pseed, mappings, runs)), mappings * runs


def campaign(cases: int, seed: int = 0, workers: int = 2, time_budget: float | None = None,
             mappings: int = 2, runs: int = 3, timeout: float = 120.0,
             log: Callable[[str], None] | None = None,
             on_failure: Callable[[Failure], None] | None = None,
             stop_on_failure: bool = False) -> CampaignResult:
    """Run about ``cases`` cases (whole programs; stops early at ``time_budget``
    seconds, or at the first failure with ``stop_on_failure``) and return the
    counts and the failures."""
    per = mappings * runs
    res = CampaignResult()
    t0 = time.monotonic()
    counter = [0]
    stop = (lambda: bool(res.failures)) if stop_on_failure else None
    with Pool(workers, timeout) as pool:
        # rounds: cases lost to a timeout are made up for by another round
        while res.cases < cases and not (stop and stop()) and \
                (time_budget is None or time.monotonic() - t0 <= time_budget):
            jobs = campaign_jobs(seed, mappings, runs, counter,
                                 lambda k: k * per - res.lost < cases)
            for results in pool.imap(_budgeted(jobs, t0, time_budget, stop)):
                _tally(res, results[1], per, on_failure)
                if log and res.programs % 25 == 0:
                    log(f"  {res.cases} cases, {len(res.failures)} failures, "
                        f"{time.monotonic() - t0:.0f} s")
    res.seconds = time.monotonic() - t0
    return res


def _tally(res: CampaignResult, results: list, per: int,
           on_failure: Callable[[Failure], None] | None) -> None:
    """Count one program's outcomes into ``res``."""
    res.programs += 1
    res.lost += per - len(results)
    for case, outcome in results:
        if outcome.kind == SKIPPED:
            continue
        res.cases += 1
        res.kinds[outcome.kind] = res.kinds.get(outcome.kind, 0) + 1
        if outcome.failed:
            f = Failure(case, outcome)
            res.failures.append(f)
            if on_failure:
                on_failure(f)


def _budgeted(jobs: Iterator, t0: float, budget: float | None,
              stop: Callable[[], bool] | None = None) -> Iterator:
    """Stop handing out jobs once ``budget`` seconds have passed or ``stop()``."""
    for job in jobs:
        if budget is not None and time.monotonic() - t0 > budget:
            return
        if stop is not None and stop():
            return
        yield job
