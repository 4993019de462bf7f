"""A pool of forked worker processes that run jobs with a per-case timeout.

A *job* is ``(function, args, expected count)``; the function is a generator
that runs in a worker and yields either a :class:`~.case.Case` (announcing the
case it starts: a timeout is blamed on it) or a result pair ``(case, outcome)``.
The pool streams results back over pipes.  The timeout is CPU time (the worker's
and its waited-for children's, read from ``/proc``), so a loaded machine, where a
case gets a fraction of a core, does not trip it; a worker that sleeps (a
deadlock) is caught by a wall-clock cap of ``wall_factor`` (20) times the timeout:
20, not less, because at a load of 10 on 2 cores a case gets a fifth of a core or
less, and a case near its CPU limit must not be caught by the wall clock.  A
worker past either gets SIGUSR1 (:mod:`faulthandler` writes its Python stack, so the
timeout says where it hung) and is then killed and replaced.  Why processes, and
why kill: a hang inside isl or inside generated C cannot be interrupted from
Python.  Workers are forked (monkeypatches of the parent apply: the planted-bug
test relies on it) and not daemonic (the pipeline may start processes itself).
"""
from __future__ import annotations

import faulthandler
import multiprocessing
import os
import re
import signal
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Callable, Iterable, Iterator

from .case import Case, Outcome


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
    cpu_since: float = 0.0
    done_cases: int = 0


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds of process ``pid`` and its waited-for children (None: unknown)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15)
    return sum(int(x) for x in fields[11:15]) / _TICK


class Pool:
    """Worker processes (fork) that run jobs with a per-case timeout.

    ``imap(jobs)`` takes (function, args, expected case count) triples and yields
    (job index, [(case, outcome), ...]) as jobs finish.  A worker silent for more
    than ``timeout`` seconds is killed: the case it was running becomes a
    ``timeout`` failure.  Workers are replaced after ``recycle`` cases (loaded
    libraries and caches otherwise pile up).  ``workers=0`` runs in process,
    without timeouts.  ``timeout`` is CPU seconds; ``wall_factor`` × ``timeout``
    wall seconds catch a worker that hangs without using the CPU."""

    def __init__(self, workers: int = 2, timeout: float = 120.0, recycle: int = 200,
                 setup: Callable | None = None, wall_factor: float = 20.0):
        self.n = workers
        self.timeout = timeout
        self.wall_factor = wall_factor
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
                    w.cpu_since = cpu_seconds(w.process.pid) or 0.0
                    w.conn.send(w.job[:2])
            busy = [w for w in self.workers if w.job is not None]
            ready = wait([w.conn for w in busy], timeout=1.0)
            for w in busy:
                if w.conn in ready:
                    result = self._receive(w)
                elif self._overdue(w):
                    result = self._timed_out(w)
                else:
                    continue
                if result is not None:
                    yield w.job_id, result
                    w.job = None

    def _overdue(self, w: _Worker) -> bool:
        """Past the CPU-time limit, or past the wall-clock cap (or, without /proc,
        past the timeout in wall-clock time)."""
        wall = time.monotonic() - w.since
        cpu = cpu_seconds(w.process.pid)
        if cpu is None:
            return wall > self.timeout
        return cpu - w.cpu_since > self.timeout or wall > self.timeout * self.wall_factor

    def _receive(self, w: _Worker) -> list | None:
        """Handle one message; the job's results when it ended."""
        try:
            kind, payload = w.conn.recv()
        except (EOFError, OSError):
            return self._replace(w, "crash:worker-died", "the worker process died")
        w.since = time.monotonic()
        w.cpu_since = cpu_seconds(w.process.pid) or 0.0
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
        got = self._replace(w, "timeout", f"no answer within {self.timeout:.0f} s of CPU time"
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
