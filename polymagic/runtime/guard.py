"""Compiled user code never kills the process: faults become errors.

The CPU reference, the emulator and the OpenMP target run code compiled from the
user's C in this process (through ctypes).  An integer division by zero, an
``INT_MIN / -1`` or a wild pointer in that code raises SIGFPE, SIGSEGV, SIGBUS or
(a trap the compiler put at a provable division by zero) SIGILL, which would kill Python (in a notebook: the kernel, and the user's work with it).

Every such library gets :data:`GUARD_C` and a wrapper (:func:`wrapper_c`) around its
entry point: the wrapper ``sigsetjmp``\\s, calls the entry point, and a handler for
the four signals ``siglongjmp``\\s back to it with the signal and its code, which
:func:`fault_message` turns into a one-paragraph error naming the statements that
can fault.  The handler is installed once per library (``pm_guard_install``) and
chains to the handler it replaced when the fault is not under one of its own
wrappers (another library's, or none: then the default action), so faulthandler and
other libraries keep working.  The jump buffer is per thread: a fault in an OpenMP
worker thread (not the calling one) still takes the default action; the static
checks of :mod:`polymagic.runtime.faults` refuse the common case (a divisor that is
a size given as 0) before anything runs.

The arrays a faulting call wrote are copies: callers write results back only after
a successful run and check.

Interrupts (:func:`interruptible`): Python runs its SIGINT handler only between
bytecodes, so a notebook's stop button (or Ctrl-C) would wait for a long C call to
return.  Around a call made on the main thread (the only one Python delivers signals
to) the library's own SIGINT handler replaces Python's and sets a flag; Python's
is put back after the call, which then raises :class:`~polymagic.errors.RunInterrupted`
(a KeyboardInterrupt) in place of Python's handler.  What stops how soon:

- the emulator polls the flag per launch, block and thread's turn and ('emulate'
  mode) per checked access (``emu_support.h``): it stops within milliseconds, on
  every OpenMP thread, its run state freed;
- the CPU reference (the user's code as written, which cannot poll) is left by a
  ``siglongjmp`` from the handler, as after a fault: immediate;
- the OpenMP target is neither (a jump out of a parallel region would strand its
  worker threads): it runs to its end (it is the fast one), then the interrupt is
  raised, nothing written back.

When Python's SIGINT disposition is SIG_IGN or SIG_DFL nothing is installed, and a
call from another thread (a widget's timer) keeps Python's handler too.
"""
from __future__ import annotations

import contextlib
import ctypes
import signal
import threading
import time
from typing import Iterator, Sequence

from .. import expr as E
from ..errors import RunInterrupted, UserCodeError
from ..scop import Scop

GUARD_C = r"""
/* ---- polymagic fault guard (polymagic/runtime/guard.py) ---- */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#ifndef PM_GUARD_STOP_DECLARED           /* the emulator's runtime declares it earlier */
#define PM_GUARD_STOP_DECLARED 1
static volatile sig_atomic_t pm_guard_stop;
#endif
static __thread sigjmp_buf *pm_guard_jb;
static __thread volatile int pm_guard_sig, pm_guard_code;
static struct sigaction pm_guard_old[4];
static const int pm_guard_sigs[4] = {SIGFPE, SIGSEGV, SIGBUS, SIGILL};

static void pm_guard_handler(int sig, siginfo_t *si, void *uc) {
  if (pm_guard_jb) {
    pm_guard_sig = sig;
    pm_guard_code = si ? si->si_code : 0;
    siglongjmp(*pm_guard_jb, 1);
  }
  for (int i = 0; i < 4; i++) {          /* not ours: the handler we replaced */
    if (pm_guard_sigs[i] != sig) continue;
    struct sigaction *o = &pm_guard_old[i];
    if (o->sa_flags & SA_SIGINFO) { if (o->sa_sigaction) { o->sa_sigaction(sig, si, uc); return; } }
    else if (o->sa_handler != SIG_DFL && o->sa_handler != SIG_IGN) { o->sa_handler(sig); return; }
  }
  signal(sig, SIG_DFL);                  /* the default action once we return */
}

int pm_guard_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = pm_guard_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 4; i++)
    if (sigaction(pm_guard_sigs[i], &sa, &pm_guard_old[i]) != 0) return -1;
  return 0;
}

/* ---- SIGINT (a notebook's stop button, Ctrl-C) during a call ----
 * pm_guard_int_begin installs pm_guard_int_handler in place of Python's own
 * handler (only when that is a handler, not SIG_IGN or SIG_DFL) and
 * pm_guard_int_end puts it back, returning whether a SIGINT came.  The handler
 * sets pm_guard_stop, which the emulator polls (per block, phase, thread call and
 * checked access) to end the run; with async (the CPU reference: the user's code
 * as written, which cannot poll) it also siglongjmps out of the call on the calling
 * thread, as after a fault (a SIGINT delivered to another thread is passed on to
 * it).  Python then raises the interrupt itself. */
static struct sigaction pm_guard_old_int;
static volatile sig_atomic_t pm_guard_async, pm_guard_int_on;
static pthread_t pm_guard_caller;

static void pm_guard_int_handler(int sig, siginfo_t *si, void *uc) {
  (void)si; (void)uc;
  pm_guard_stop = 1;
  if (!pm_guard_async) return;
  if (!pthread_equal(pthread_self(), pm_guard_caller)) { pthread_kill(pm_guard_caller, sig); return; }
  if (pm_guard_jb) { pm_guard_sig = SIGINT; pm_guard_code = 0; siglongjmp(*pm_guard_jb, 1); }
}

int pm_guard_int_begin(int async) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = pm_guard_int_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  pm_guard_stop = 0;
  pm_guard_async = async;
  pm_guard_caller = pthread_self();
  if (sigaction(SIGINT, &sa, &pm_guard_old_int) != 0) return 0;
  if (!(pm_guard_old_int.sa_flags & SA_SIGINFO) && (pm_guard_old_int.sa_handler == SIG_IGN ||
                                                   pm_guard_old_int.sa_handler == SIG_DFL)) {
    sigaction(SIGINT, &pm_guard_old_int, NULL);   /* ignored or fatal: leave it so */
    return 0;
  }
  pm_guard_int_on = 1;
  return 1;
}

int pm_guard_int_end(void) {
  if (pm_guard_int_on) sigaction(SIGINT, &pm_guard_old_int, NULL);
  pm_guard_int_on = 0;
  pm_guard_async = 0;
  int stop = pm_guard_stop;
  pm_guard_stop = 0;
  return stop;
}

#define PM_GUARDED(call, on_fault)                                        \
  do {                                                                    \
    sigjmp_buf pm_jb_;                                                    \
    sigjmp_buf *volatile pm_prev_ = pm_guard_jb;                          \
    if (sigsetjmp(pm_jb_, 1) == 0) {                                      \
      pm_guard_jb = &pm_jb_;                                              \
      if (pm_guard_stop && pm_guard_async) {  /* stopped before it began */ \
        pm_guard_sig = SIGINT; pm_guard_code = 0; siglongjmp(pm_jb_, 1);  \
      }                                                                   \
      call;                                                               \
      pm_guard_jb = pm_prev_;                                             \
    } else {                                                              \
      pm_guard_jb = pm_prev_;                                             \
      fault[0] = pm_guard_sig;                                            \
      fault[1] = pm_guard_code;                                           \
      on_fault;                                                           \
    }                                                                     \
  } while (0)
"""


def wrapper_c(name: str, params: Sequence[tuple[str, str]], returns: str = "void",
              on_fault: str = "") -> str:
    """``int pm_guarded_<name>(int *fault, <params>)``: calls ``name`` under the guard.

    ``params``: (C type, name) pairs of the entry point's arguments; returns 0, the
    entry point's own (int) result, or -1 after a fault with ``fault[0]`` the signal
    and ``fault[1]`` its ``si_code``.  ``on_fault``: C run after a fault (a clean-up)."""
    decl = ", ".join(f"{t} {n}" for t, n in params)
    args = ", ".join(n for _, n in params)
    call = f"pm_rc_ = {name}({args})" if returns != "void" else f"{name}({args})"
    return (f"\nint pm_guarded_{name}(int *fault{', ' if decl else ''}{decl}) {{\n"
            "  volatile int pm_rc_ = 0;\n"
            "#ifdef PM_OMP_MARK\n  PM_OMP_MARK();\n#endif\n"
            f"  PM_GUARDED({call}, {{ {on_fault} pm_rc_ = -1; }});\n"
            "  return pm_rc_;\n}\n")


def install(lib: ctypes.CDLL) -> None:
    """Install the library's fault handler (once, right after loading it)."""
    lib.pm_guard_install.restype = ctypes.c_int
    lib.pm_guard_install()


FPE_INTDIV, FPE_INTOVF = 1, 2


def _what(sig: int, code: int) -> str:
    if sig == signal.SIGFPE:
        if code == FPE_INTOVF:
            return "integer overflow in a division (INT_MIN / -1)"
        return "integer division or modulo by zero (or INT_MIN / -1)"
    if sig == signal.SIGSEGV:
        return "an invalid memory access (segmentation fault)"
    if sig == signal.SIGBUS:
        return "a misaligned or unmapped memory access (bus error)"
    if sig == signal.SIGILL:
        return ("a trap the C compiler put where the code has undefined behaviour "
                "(e.g. a division by zero it could prove)")
    return f"signal {sig}"


def _integer(e: E.Expr, scop: Scop) -> bool:
    """Whether C evaluates ``e`` in an integer type (roughly: no float operand)."""
    ints = ("int", "long", "short", "char", "unsigned", "long long", "unsigned long")
    if isinstance(e, E.Int):
        return True
    if isinstance(e, (E.Float, E.Call)):
        return False
    if isinstance(e, E.Var):
        p = next((p for p in scop.params if p.name == e.name), None)
        return p is None or p.kind == "size" or p.ctype in ints
    if isinstance(e, E.Access):
        a = scop.arrays.get(e.array)
        return a is not None and a.ctype in ints
    if isinstance(e, E.Cast):
        return getattr(e, "ctype", "double") in ints
    if isinstance(e, E.Unary):
        return _integer(e.a, scop)
    if isinstance(e, E.Binary):
        if e.op in ("<", "<=", ">", ">=", "==", "!=", "&&", "||"):
            return True
        return _integer(e.a, scop) and _integer(e.b, scop)
    return all(_integer(c, scop) for c in e.children())


def integer_divisions(scop: Scop) -> list[tuple[object, E.Binary]]:
    """(statement, node) of every integer ``/`` or ``%`` in the statements' bodies."""
    out = []
    for s in scop.statements:
        body = s.body
        if body.op in ("/=", "%=") and _integer(body.target, scop):
            out.append((s, E.Binary(body.op[0], body.target, body.value)))
        for root in (body.target, body.value):
            for node in E.walk(root):
                if isinstance(node, E.Binary) and node.op in ("/", "%") \
                        and _integer(node, scop):
                    out.append((s, node))
    return out


def fault_message(sig: int, code: int, scop: Scop | None, who: str) -> str:
    """One paragraph: what the fault was, where it can come from, that nothing was
    written back."""
    text = f"{who} stopped on {_what(sig, code)} in the function's code"
    if scop is not None:
        text = f"{who} stopped on {_what(sig, code)} running {scop.name}"
        if sig in (signal.SIGFPE, signal.SIGILL):
            cands = []
            for s, node in integer_divisions(scop):
                where = f"{s.name}, line {s.line}: {s.text.strip()}"
                if where not in cands:
                    cands.append(where)
            if len(cands) == 1:
                text += f", in {cands[0]}"
            elif cands:
                text += "; the integer divisions are in " + "; ".join(cands)
        elif sig in (signal.SIGSEGV, signal.SIGBUS):
            text += " (a subscript outside its array at these sizes?)"
    return text + ". The process survived and nothing was written back to your arrays."


__all__ = ["GUARD_C", "wrapper_c", "install", "fault_message", "integer_divisions",
           "call", "interruptible", "interrupted"]


def interrupted(who: str, seconds: float) -> RunInterrupted:
    """The interrupt to raise after a stopped call.  A program's own Python SIGINT
    handler (not Python's default) runs first, as if the signal came after the call:
    what it raises propagates; the run is abandoned either way."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not signal.default_int_handler:
        signal.raise_signal(signal.SIGINT)
    return RunInterrupted(f"{who} was stopped by an interrupt (SIGINT) after {seconds:.1f} s; "
                          "nothing was written back to your arrays")


@contextlib.contextmanager
def interruptible(lib: ctypes.CDLL, who: str, asynchronous: bool = False) -> Iterator[None]:
    """Around one guarded call of ``lib``: a SIGINT ends it (the emulator polls; with
    ``asynchronous`` the handler jumps out of the call, for code that cannot poll),
    then :class:`RunInterrupted` is raised here, ahead of any error the call raised.
    Only on the main thread, and only where Python handles SIGINT (module docstring)."""
    begin = getattr(lib, "pm_guard_int_begin", None)
    if begin is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    t0 = time.perf_counter()
    begin(ctypes.c_int(int(asynchronous)))
    try:
        yield
    except BaseException:
        if lib.pm_guard_int_end():
            raise interrupted(who, time.perf_counter() - t0) from None
        raise
    if lib.pm_guard_int_end():
        raise interrupted(who, time.perf_counter() - t0)


def call(fn, argv: Sequence[object], scop: Scop | None, who: str,
         lib: ctypes.CDLL | None = None, asynchronous: bool = False) -> float:
    """Call a guarded entry point (its first argument the ``int[2]`` fault record the
    wrapper fills); returns the call's seconds, or raises :class:`UserCodeError`
    naming the fault in the user's terms (:func:`fault_message`).  With ``lib`` (the
    entry point's library) a SIGINT during the call raises :class:`RunInterrupted`
    (:func:`interruptible`)."""
    fault = (ctypes.c_int * 2)()
    with interruptible(lib, who, asynchronous) if lib is not None else contextlib.nullcontext():
        t0 = time.perf_counter()
        rc = fn(fault, *argv)
        dt = time.perf_counter() - t0
        if rc != 0:
            raise UserCodeError(fault_message(fault[0], fault[1], scop, who), fault[0], fault[1])
    return dt
