"""A helper process kept between calls, for computations bounded by CPU time.

isl's scheduler ignores isl's operation budget in its integer programs (fuzz finding
32), so it runs in a process that can be killed (:func:`polymagic.isl_util.in_child`).
A fresh ``fork`` per call costs the child about 25 ms of CPU time after a few compiles
(issue 22: 0.85 s over the 33 kernels of ``benchmarks/compile_time.py``, 8 % of a
median compile): the kernel copies the parent's page tables, and every page the
child's allocator or Python's reference counts touch is copied on write.  This
helper is forked once and then serves calls: after its first call its pages are its
own.

A call sends ``(fn, args, seconds)`` (``fn`` a module-level function, everything
picklable: isl objects travel as their text) and gets back ``fn(*args)``.  The limit
is the helper's CPU time during the call (a ``SIGPROF`` interval timer, whose default
action ends the helper), as :func:`~polymagic.isl_util.in_child`'s: a loaded machine
changes neither the results nor which calls give up (issue 18).  A helper that blocks
is killed after :data:`~polymagic.isl_util.WALL_FACTOR` times the limit of wall time.
A killed helper is forked again at the next call; a process forked from the owner
forks its own when it needs one.  Without ``fork``, inside the helper, or when the fork
fails, the call runs as :func:`~polymagic.isl_util.in_child` would.
"""
from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import islpy as isl

from .isl_util import WALL_FACTOR, TimedOut, fork_quietly, in_child

_HEADER = struct.Struct("<Q")


@dataclass
class _Helper:
    pid: int
    owner: int            # the process that forked it (a child of that one must not talk to it)
    requests: int         # pipe ends, the owner's side
    replies: int
    reported: float = 0.0  # CPU seconds of its calls so far, as it measured them


_helper: _Helper | None = None
_lock = threading.Lock()


def run_bounded(fn: Callable[..., Any], args: tuple, seconds: float) -> Any:
    """``fn(*args)`` in the helper process, given ``seconds`` of CPU time.  Raises
    :class:`~polymagic.isl_util.TimedOut` past the limit, ``isl.Error`` when ``fn``
    raised (any exception, its text kept)."""
    with _lock:
        helper = _started()
        if helper is None:
            return in_child(lambda: fn(*args), seconds)
        try:
            _send(helper.requests, pickle.dumps((fn, args, seconds)))
            reply = _receive(helper.replies, time.monotonic() + seconds * WALL_FACTOR + 1.0)
        except OSError:
            reply = None
        except BaseException:        # a KeyboardInterrupt: its reply must not answer the next call
            _stop()
            raise
        if reply is None:            # it ended (its timer), or blocked past the wall limit
            status = _stop()
            if os.WIFSIGNALED(status) and \
                    os.WTERMSIG(status) not in (signal.SIGPROF, signal.SIGKILL):
                raise isl.Error("the helper process ended without a result")
            raise TimedOut(f"gave up after {seconds:g} s of CPU time")
        kind, value, used = pickle.loads(reply)
        helper.reported += used
    if kind == "late":
        raise TimedOut(f"gave up after {seconds:g} s of CPU time")
    if kind == "error":
        raise isl.Error(value)
    return value


def helper_seconds() -> float:
    """The CPU time the running helper spent on this process's calls.  A helper's CPU
    time counts in ``RUSAGE_CHILDREN`` only once it has ended and been waited for, so
    until then this is the share to add (then it is 0 again)."""
    helper = _helper
    return helper.reported if helper is not None and helper.owner == os.getpid() else 0.0


def _started() -> _Helper | None:
    """The helper, forked now if there is none (None when it cannot be)."""
    global _helper
    if _helper is not None:
        return _helper if _helper.owner == os.getpid() else None    # (in the helper)
    if not hasattr(os, "fork"):
        return None
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    try:
        pid = fork_quietly()
    except OSError:
        for fd in (req_r, req_w, rep_r, rep_w):
            os.close(fd)
        return None
    if pid == 0:
        os.close(req_w)
        os.close(rep_r)
        _become_helper(req_r, rep_w)
    os.close(req_r)
    os.close(rep_w)
    _helper = _Helper(pid, os.getpid(), req_w, rep_r)
    return _helper


def _stop() -> int:
    """Close the pipes to the helper, kill it and reap it; returns its wait status."""
    global _helper
    helper, _helper = _helper, None
    for fd in (helper.requests, helper.replies):
        os.close(fd)
    try:
        os.kill(helper.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return os.waitpid(helper.pid, 0)[1]


def _after_fork_in_child() -> None:
    """A forked child (``in_child``'s, a tile-search worker) shares neither its
    parent's helper nor its lock (another thread may hold it at the fork): it closes
    its copies of the pipes, so the helper still ends with its owner, and forks a
    helper of its own if it needs one."""
    global _helper, _lock
    if _helper is not None and _helper.owner > 0:
        for fd in (_helper.requests, _helper.replies):
            try:
                os.close(fd)
            except OSError:
                pass
    _helper, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _become_helper(requests: int, replies: int) -> None:
    """In the forked helper: a call it serves runs nested calls as
    :func:`~polymagic.isl_util.in_child` does (no helper of its own)."""
    global _helper
    _helper = _Helper(-1, -1, -1, -1)
    # a notebook's stop button signals the kernel's whole process group: the owner
    # handles it; anything escaping here would unwind into the copy of the owner's
    # stack (in a notebook: a second kernel on the same sockets)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _serve(requests, replies)
    finally:
        os._exit(0)


def _serve(requests: int, replies: int) -> None:
    """The helper's loop: one call per request until the owner closes the pipe."""
    signal.signal(signal.SIGPROF, signal.SIG_DFL)          # the timer ends the helper
    while True:
        data = _receive(requests, None)
        if data is None:
            os._exit(0)
        start = _cpu()
        try:
            fn, args, seconds = pickle.loads(data)
            signal.setitimer(signal.ITIMER_PROF, max(seconds, 1e-6))   # 0 would disarm it
            value = fn(*args)
            signal.setitimer(signal.ITIMER_PROF, 0)
            used = _cpu() - start
            late = used > seconds                           # (the timer ticks coarser)
            out = pickle.dumps(("late", None, used) if late else ("ok", value, used))
        except BaseException as e:  # noqa: BLE001 - reported to the owner
            signal.setitimer(signal.ITIMER_PROF, 0)
            out = pickle.dumps(("error", f"{type(e).__name__}: {e}", _cpu() - start))
        _send(replies, out)


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _send(fd: int, payload: bytes) -> None:
    view = memoryview(_HEADER.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int, deadline: float | None) -> bytes | None:
    """One message from ``fd``; None at the end of the pipe or past ``deadline``."""
    header = _read(fd, _HEADER.size, deadline)
    if header is None:
        return None
    return _read(fd, _HEADER.unpack(header)[0], deadline)


def _read(fd: int, size: int, deadline: float | None) -> bytes | None:
    chunks, left = [], size
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                return None
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
