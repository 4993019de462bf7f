"""Build and run the CPU emulator of a KIR Program.

:func:`build` prints the program with :func:`polymagic.codegen.emulator.print_emulator_c`
and compiles it with the system C compiler (``cc -O1 -g0 -shared -fPIC``, ``-O0`` for runs of at most
:data:`QUICK_BUILD_INSTANCES` statement instances, plus
``-fopenmp`` in 'openmp' mode, ``-lm``) into a shared library cached on disk by a
hash of (compiler, flags, source) under ``$POLYMAGIC_CACHE`` or
``~/.cache/polymagic`` (subfolder ``emu``).  The source inlines the runtime
(``emu_support.h``), so a runtime change is a new cache entry.

:meth:`EmulatorModule.run` allocates the temp arrays, checks the given arrays,
calls ``pm_entry`` through ctypes and returns an :class:`EmuResult`; a race, an
out-of-bounds access or a divergent barrier raises :class:`EmulatorError` with the
runtime's one-paragraph message.  Arrays are modified in place (callers pass
copies).

Interrupts: a SIGINT during a run on the main thread (a notebook's stop button,
Ctrl-C) ends it within milliseconds: the fault guard's SIGINT handler sets a flag
that the runtime polls before every launch, block and thread's turn in a barrier
phase and, in 'emulate' mode, every checked global access (``PM_POLL`` in
``emu_support.h``; in 'openmp' mode every thread skips its remaining blocks, and a
thread's turn, unchecked, ends first: long only in a kernel that runs a whole loop
nest in one thread), the run's state is freed
as after an error, and :class:`~polymagic.errors.RunInterrupted` (a
KeyboardInterrupt: IPython shows its one line) is raised; the next run works as
usual.  The arrays the run wrote are copies the caller drops
(:func:`polymagic.runtime.run.execute` writes back only after a checked run), so the
user's arrays are untouched.  See :mod:`polymagic.runtime.guard` for the CPU
reference (stopped at once) and the OpenMP target (runs to its end, then raises).  Why an emulator at all: CI has no GPU, so the adversarial emulator
(blocks and threads in forward, reverse or shuffled order, shadow-memory race
detection, see ``emu_support.h``) is the evidence that generated kernels are right.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np

from .. import kir
from . import ccompile, guard
from ..dtypes import DTYPES
from ..errors import EmulatorError, InputError, UserCodeError
from ..expr import evaluate
from ..scop import Scop
from ..transfers import kernels as K
from ..transfers import session as S
from ..transfers.pack import Staging, allocate, pack, unpack
from ..transfers.plan import TransferPlan
from ..transfers.session import TransferStats
from ..transfers.tiling import Tile
from .tiled import run_tiled

ORDERS = {"forward": 0, "reverse": 1, "shuffle": 2}

_ENTRY_ARGTYPES = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_longlong),
                   ctypes.POINTER(ctypes.c_double), ctypes.c_ulonglong, ctypes.c_int,
                   ctypes.POINTER(ctypes.c_longlong), ctypes.POINTER(ctypes.c_longlong),
                   ctypes.POINTER(ctypes.c_longlong), ctypes.c_char_p, ctypes.c_int]

#: Warp-transaction fields per kernel, in ``pm_entry``'s ``tx`` order.
TX_FIELDS = ("load_requests", "load_sectors", "load_lines",
             "store_requests", "store_sectors", "store_lines")

_LIBS: dict[str, ctypes.CDLL] = {}
_LOCKS: dict[str, threading.Lock] = {}   # the runtime keeps global state: one run per library
_LIBS_LOCK = threading.Lock()


_OMP_USED = False          # an OpenMP build has run in this process


def _fresh_locks_after_fork() -> None:
    """A forked child (the fuzzer's workers, tile_search) inherits the locks in
    whatever state another thread of the parent (a widget's timer running the
    emulator, say) held them: give it unheld ones, or its first run waits forever.
    Likewise the OpenMP runtime is not fork-safe: once the parent has run an
    OpenMP build, a child's parallel region waits forever for the parent's worker
    threads, so the child's OpenMP builds run on one thread."""
    global _LIBS_LOCK
    _LIBS_LOCK = threading.Lock()
    for k in list(_LOCKS):
        _LOCKS[k] = threading.Lock()
    if _OMP_USED:
        for name in ("libgomp.so.1", "libomp.so", "libomp.so.5"):
            try:
                ctypes.CDLL(name).omp_set_num_threads(1)
                break
            except (OSError, AttributeError):
                continue


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_locks_after_fork)


def cache_dir() -> Path:
    """``$POLYMAGIC_CACHE/emu`` or ``~/.cache/polymagic/emu`` (created)."""
    return ccompile.cache_dir("emu")


compiler = ccompile.compiler


#: runs of at most this many statement instances build the emulator at ``-O0``: on
#: this project's 2-core machine (gemm N=64, jacobi-2d, lu; CPU seconds) ``-O0``
#: compiles in 0.20-0.30 s against 0.38-0.51 s at ``-O1``, and runs ~30 % slower
#: (gemm N=128, 2.1 M instances: 0.45 against 0.35 s), so below about 10^6 instances
#: the quicker build wins; larger runs (and every build not told its work) use ``-O1``
QUICK_BUILD_INSTANCES = 1_000_000


def compile_flags(mode: str, extra: tuple[str, ...] = (), quick: bool = False) -> list[str]:
    flags = ["-std=gnu11", "-O0" if quick else "-O1", "-g0", *ccompile.FP_FLAGS, "-shared",
             "-fPIC"]
    if mode == "openmp":
        flags.append("-fopenmp")
    return flags + list(extra)


def build_library(source: str, mode: str, extra_cflags: tuple[str, ...] = (),
                  quick: bool = False) -> Path:
    """Compile ``source`` into a cached shared library; CompileError with the log.

    In 'openmp' mode a compiler without OpenMP support (``-fopenmp`` rejected, e.g.
    clang without libomp) gets a second try without the flag: the pragmas are then
    ignored and blocks run one after the other, still correct, just not parallel.
    """
    return ccompile.shared_library(source, compile_flags(mode, tuple(extra_cflags), quick), "emu",
                                   f"emu-{mode}", "the emulator", optional_flags=("-fopenmp",))


def _load(path: Path) -> tuple[ctypes.CDLL, threading.Lock]:
    with _LIBS_LOCK:
        lib = _LIBS.get(str(path))
        if lib is None:
            lib = _LIBS[str(path)] = ctypes.CDLL(str(path))
            _LOCKS[str(path)] = threading.Lock()
            guard.install(lib)
        return lib, _LOCKS[str(path)]


@dataclass
class EmuResult:
    """What one emulator run did: wall seconds of ``pm_entry``, and per kernel the
    global element loads, stores and launches (loads/stores are 0 in openmp mode).

    With transaction counting (emulate mode, ``transactions=True``)
    ``tx_counters`` holds per kernel the :data:`TX_FIELDS` (seed 003 §6.3: a
    request is one warp's execution of one access site; sectors are the distinct
    32-byte segments it touches, lines the 128-byte ones) and ``tx`` their totals;
    both are None when they were not counted (openmp, disabled, or too much
    memory)."""
    seconds: float
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    loads: int = 0
    stores: int = 0
    launches: int = 0
    tx: dict[str, int] | None = None
    tx_counters: dict[str, dict[str, int]] | None = None


def sum_tx(parts: list) -> dict | None:
    """Field-wise sums of several ``tx`` dicts, or of several ``tx_counters``
    (kernel -> dict); None if any of them is None or there are none."""
    if not parts or any(p is None for p in parts):
        return None
    if all(set(p) <= set(TX_FIELDS) for p in parts):
        return {f: sum(p.get(f, 0) for p in parts) for f in TX_FIELDS}
    out: dict = {}
    for p in parts:
        for k, c in p.items():
            acc = out.setdefault(k, {f: 0 for f in TX_FIELDS})
            for f in TX_FIELDS:
                acc[f] += c[f]
    return out


def transaction_summary(tx: Mapping[str, int] | None) -> dict | None:
    """Totals plus ratios from warp-transaction counts (None stays None):
    ``transactions`` (sectors, loads and stores), ``requests`` and
    ``transactions_per_request`` overall and for loads/stores (seed 003 §6.3's
    gld/gst_transactions_per_request, counted in 32-byte sectors: a fully
    coalesced request of 32 threads takes 32 × 4 B / 32 B = 4 sectors (1 line) for
    fp32 and 8 sectors (2 lines) for fp64; one sector per thread, 32, when every
    thread's element lies in its own sector)."""
    if tx is None:
        return None
    out = dict(tx)
    req = tx["load_requests"] + tx["store_requests"]
    sec = tx["load_sectors"] + tx["store_sectors"]
    out["requests"] = req
    out["transactions"] = sec
    out["transactions_per_request"] = sec / req if req else None
    out["load_transactions_per_request"] = (tx["load_sectors"] / tx["load_requests"]
                                            if tx["load_requests"] else None)
    out["store_transactions_per_request"] = (tx["store_sectors"] / tx["store_requests"]
                                             if tx["store_requests"] else None)
    return out


def array_shape(decl: kir.ArrayDecl, ints: Mapping[str, int]) -> tuple[int, ...]:
    """Extents of an array for the given size parameters."""
    return tuple(int(evaluate(e, ints)) for e in decl.shape)


def array_span(decl: kir.ArrayDecl, ints: Mapping[str, int]) -> int:
    """Elements the array's (possibly strided) layout spans: 1 + Σ (n_k - 1)·s_k."""
    shape = array_shape(decl, ints)
    if any(n == 0 for n in shape):
        return 0
    strides = tuple(int(evaluate(e, ints)) for e in decl.strides)
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def temp_array(decl: kir.ArrayDecl, ints: Mapping[str, int]) -> np.ndarray:
    """A zero-filled temp array as the kernels address it (flat)."""
    shape = array_shape(decl, ints) or (1,)
    if any(n < 0 for n in shape):
        raise InputError(f"temp array {decl.name}: negative extent in {shape}")
    span = array_span(decl, ints)
    return np.zeros(max(span, int(np.prod(shape))) if span else 1,
                    dtype=np.dtype(DTYPES[decl.ctype]))


class EmulatorModule:
    """A compiled emulator ('emulate') or OpenMP ('openmp') build of a Program."""

    def __init__(self, program: kir.Program, mode: str, source: str, path: Path):
        self.program = program
        self.mode = mode
        self.source = source
        self.path = path
        lib, _ = _load(path)
        self._lib = lib
        fn = lib.pm_guarded_pm_entry
        # a private function object, so argtypes never clash between modules
        self._entry = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                       *_ENTRY_ARGTYPES)(ctypes.cast(fn, ctypes.c_void_p).value)

    def _who(self) -> str:
        return "the OpenMP target" if self.mode == "openmp" else "the emulator"

    def _arrays(self, arrays: Mapping[str, np.ndarray], ints: Mapping[str, int]) -> list[np.ndarray]:
        out = []
        for name, decl in self.program.arrays.items():
            try:
                want = np.dtype(DTYPES[decl.ctype])
            except KeyError:
                raise InputError(f"array {name}: C type {decl.ctype!r} is not supported "
                                 f"by the emulator") from None
            if decl.kind == "temp":
                out.append(temp_array(decl, ints))
                continue
            span = array_span(decl, ints)
            if name not in arrays:
                raise InputError(f"the emulator needs array {name!r}")
            a = arrays[name]
            ccompile.check_pointer_array(a, want, f"array {name}", "the emulator")
            rowmajor = tuple(decl.strides) == tuple(kir.row_major_strides(decl.shape))
            if (a.size != span) if rowmajor else (a.size < span):
                raise InputError(f"array {name}: {a.size} elements given, the declaration "
                                 f"{name}{''.join(f'[{n}]' for n in array_shape(decl, ints))} "
                                 f"needs {span}")
            out.append(a)
        return out

    def run(self, arrays: Mapping[str, np.ndarray], ints: Mapping[str, int],
            scalars: Mapping[str, float] | None = None, seed: int = 0,
            order: str = "shuffle", transactions: bool = True) -> EmuResult:
        """Run the host program once; arrays are modified in place.

        ``order``: 'forward', 'reverse' or 'shuffle' (blocks of a launch and threads
        of a barrier phase; ``seed`` seeds the shuffle).  ``transactions``: count
        warp transactions too (emulate mode; each array is its own allocation, so
        element 0 is at device byte 0).  Raises EmulatorError with
        the runtime's message on a race, an out-of-bounds access or a divergent
        barrier; InputError when the arrays do not fit the declarations.
        """
        p = self.program
        scalars = scalars or {}
        self._check_values(ints, scalars, order)
        env = {n: int(ints[n]) for n in p.size_params}
        env.update({k: int(v) for k, v in ints.items() if k not in env})
        arrs = self._arrays(arrays, env)
        return self.run_pointers([a.ctypes.data for a in arrs], env, scalars, seed, order,
                                 transactions=transactions)

    def _check_values(self, ints: Mapping[str, int], scalars: Mapping[str, float],
                      order: str) -> None:
        """Every size and scalar has a value and the order is known (InputError)."""
        if order not in ORDERS:
            raise InputError(f"unknown emulator order {order!r} (forward, reverse, shuffle)")
        missing = [n for n in self.program.size_params if n not in ints] + \
                  [n for n in self.program.scalars if n not in scalars]
        if missing:
            raise InputError(f"the emulator needs a value for {', '.join(missing)}")

    def run_pointers(self, pointers: list[int], ints: Mapping[str, int],
                     scalars: Mapping[str, float] | None = None, seed: int = 0,
                     order: str = "shuffle", base_bytes: list[int] | None = None,
                     transactions: bool = True) -> EmuResult:
        """Run the host program on raw data pointers, one per ``program.arrays``
        entry (temps included), which the caller keeps alive.  This is how packed
        device buffers reach the emulator (:mod:`polymagic.transfers`): each pointer
        is the buffer slot of the array's subscript 0 and the strides are kernel
        ints, so the kernels run the remapped address arithmetic.

        ``base_bytes``: per array, the device byte offset of that slot from the
        start of its (256-byte aligned) device buffer, as the GPU runtime passes it
        (default 0: each array its own allocation); warp transactions are counted
        on these addresses when ``transactions`` (emulate mode only)."""
        p = self.program
        scalars = scalars or {}
        self._check_values(ints, scalars, order)
        if len(pointers) != len(p.arrays):
            raise InputError(f"the emulator needs {len(p.arrays)} array pointers, got {len(pointers)}")
        env = {n: int(ints[n]) for n in p.size_params}
        ptrs = (ctypes.c_void_p * max(1, len(pointers)))(*[int(x) for x in pointers])
        iv = (ctypes.c_longlong * max(1, len(p.size_params)))(*[env[n] for n in p.size_params])
        sv = (ctypes.c_double * max(1, len(p.scalars)))(*[float(scalars[n]) for n in p.scalars])
        nk = len(p.kernels)
        cnt = (ctypes.c_longlong * max(1, 3 * nk))()
        count_tx = transactions and self.mode == "emulate"
        tx = (ctypes.c_longlong * max(1, 6 * nk))() if count_tx else None
        if base_bytes is not None and len(base_bytes) != len(p.arrays):
            raise InputError(f"the emulator needs {len(p.arrays)} base offsets, got {len(base_bytes)}")
        base = (ctypes.c_longlong * max(1, len(p.arrays)))(*[int(b) for b in base_bytes]) \
            if base_bytes is not None else None
        err = ctypes.create_string_buffer(4096)
        if self.mode == "openmp":
            note_openmp_used()
        fault = (ctypes.c_int * 2)()
        with _LOCKS[str(self.path)], guard.interruptible(self._lib, self._who()):
            t0 = time.perf_counter()
            rc = self._entry(fault, ptrs, iv, sv, ctypes.c_ulonglong(int(seed) & (2**64 - 1)),
                             ORDERS[order], cnt, base, tx, err, len(err))
            dt = time.perf_counter() - t0
        if rc < 0:
            raise UserCodeError(guard.fault_message(fault[0], fault[1], None, self._who()),
                                fault[0], fault[1])
        if rc != 0:
            msg = err.value.decode(errors="replace") or "the emulator failed (no message)"
            raise EmulatorError(msg)
        res = EmuResult(seconds=dt)
        counted = tx is not None and all(tx[i] >= 0 for i in range(6 * nk))
        if counted:
            res.tx = {f: 0 for f in TX_FIELDS}
            res.tx_counters = {}
        for i, name in enumerate(p.kernels):
            c = {"loads": int(cnt[3 * i]), "stores": int(cnt[3 * i + 1]),
                 "launches": int(cnt[3 * i + 2])}
            if counted:
                t = res.tx_counters[name] = {f: int(tx[6 * i + j])
                                             for j, f in enumerate(TX_FIELDS)}
                for f in TX_FIELDS:
                    res.tx[f] += t[f]
            res.counters[name] = c
            res.loads += c["loads"]
            res.stores += c["stores"]
            res.launches += c["launches"]
        return res


#: pm_entry's parameters, for its guarded wrapper (see _ENTRY_ARGTYPES)
_ENTRY_PARAMS = [("void **", "arrays"), ("const long long *", "ints"),
                 ("const double *", "scalars"), ("unsigned long long", "seed"),
                 ("int", "order"), ("long long *", "counters"), ("const long long *", "base"),
                 ("long long *", "tx"), ("char *", "err"), ("int", "errlen")]


def guarded_source(source: str) -> str:
    """The emulator C with the fault guard: ``pm_guarded_pm_entry(fault, ...)`` runs
    ``pm_entry`` and, after a SIGFPE/SIGSEGV/SIGBUS in the user's expressions, frees
    the run's state and returns -1 (:mod:`polymagic.runtime.guard`)."""
    return (source + guard.GUARD_C + _OMP_UNWIND
            + guard.wrapper_c("pm_entry", _ENTRY_PARAMS, returns="int",
                              on_fault="pm_omp_unwind(); pm_cleanup();"))


#: After a trap inside an OpenMP parallel region (run on one thread, see
#: one_thread) the calling thread jumped out of the region without ending it:
#: end the regions it is still in, or every later region in the process would be
#: nested (and run on one thread).
_OMP_UNWIND = r"""
#ifdef _OPENMP
#include <omp.h>
void GOMP_parallel_end(void);
static int pm_omp_level0;
#define PM_OMP_MARK() (pm_omp_level0 = omp_get_level())
static void pm_omp_unwind(void) { while (omp_get_level() > pm_omp_level0) GOMP_parallel_end(); }
#else
#define PM_OMP_MARK() ((void)0)
static void pm_omp_unwind(void) {}
#endif
"""


def build(program: kir.Program, mode: str = "emulate", *,
          extra_cflags: tuple[str, ...] = (), quick: bool = False) -> EmulatorModule:
    """Print and compile ``program`` for ``mode`` ('emulate' or 'openmp'); cached.

    ``extra_cflags`` (e.g. ``("-DPM_MAX_PHASES=100",)``) are for tests; ``quick``:
    at ``-O0``, for small runs (:data:`QUICK_BUILD_INSTANCES`)."""
    from ..codegen.emulator import print_emulator_c
    source = guarded_source(print_emulator_c(program, mode))
    path = build_library(source, mode, tuple(extra_cflags), quick)
    return EmulatorModule(program, mode, source, path)


# ---- packed device buffers (seed 002 §4) ---------------------------------------------

_VARIANTS: dict[tuple, EmulatorModule] = {}


def _module(program: kir.Program, mode: str, cache: dict | None = None,
            quick: bool = False) -> EmulatorModule:
    """The build of a KIR variant, once per (source, mode, quick) in ``cache``."""
    from ..codegen.emulator import print_emulator_c
    cache = _VARIANTS if cache is None else cache
    key = ("emu-variant", print_emulator_c(program, mode), mode, quick)
    mod = cache.get(key)
    if mod is None:
        mod = cache[key] = build(program, mode, quick=quick)
    return mod


def _openmp_runtime() -> ctypes.CDLL | None:
    for name in ("libgomp.so.1", "libomp.so", "libomp.so.5"):
        try:
            lib = ctypes.CDLL(name)
            lib.omp_get_max_threads.restype = ctypes.c_int
            return lib
        except (OSError, AttributeError):
            continue
    return None


def note_openmp_used() -> None:
    """An OpenMP build is about to run in this process (the emulator's OpenMP mode,
    the OpenMP target): a child forked later runs its OpenMP code on one thread
    (:func:`_fresh_locks_after_fork`)."""
    global _OMP_USED
    _OMP_USED = True


@contextlib.contextmanager
def one_thread(on: bool):
    """OpenMP parallel regions started from this thread run on one thread while
    ``on``: the fault guard can only recover the calling thread, so a user's code
    with integer divisions (which may trap on data the static checks cannot see)
    runs where a trap is an error, not the end of the process."""
    omp = _openmp_runtime() if on else None
    if omp is None:
        yield
        return
    before = omp.omp_get_max_threads()
    omp.omp_set_num_threads(1)
    try:
        yield
    finally:
        omp.omp_set_num_threads(before)


def run_transferred(program: kir.Program, scop: Scop | None, mode: str,
                    sources: Mapping[str, np.ndarray],
                    results: Mapping[str, np.ndarray], ints: Mapping[str, int],
                    scalars: Mapping[str, float] | None = None, seed: int = 0,
                    order: str = "shuffle", device_mem: int | None = None,
                    cache: dict | None = None,
                    transactions: bool = True,
                    work: int | None = None) -> tuple[EmuResult, TransferStats]:
    """Run ``program`` the way the GPU runtime does, on packed device buffers.

    The transfer plan (:mod:`polymagic.transfers`) is built from the real layouts
    of ``sources`` (any NumPy views); the same host-side packing code as the GPU
    path fills the staging buffers, which are the emulator's device memory; the
    kernels index them through the planned layouts; the written regions are
    unpacked into ``results`` (arrays of the declared shapes, modified in place).
    In 'emulate' mode the buffers carry sentinel guard zones: a write outside the
    packed elements raises EmulatorError, a read of an unpacked slot yields NaN.
    With ``device_mem`` smaller than the run's buffers, launches run in tiles with
    their own transfers (§4.4, :func:`polymagic.runtime.tiled.run_tiled`).  Builds
    are kept in ``cache`` (a dict; default: one per process).  Warp transactions
    are counted (``transactions``, emulate mode) on the device addresses: element 0
    of each array at its layout's offset in its buffer.  ``work``: the run's
    statement instances, when known (a small run builds at ``-O0``:
    :data:`QUICK_BUILD_INSTANCES`).
    """
    quick = mode == "emulate" and work is not None and work <= QUICK_BUILD_INSTANCES
    try:
        with one_thread(mode == "openmp" and scop is not None
                         and bool(guard.integer_divisions(scop))):
            return _run_transferred(program, scop, mode, sources, results, ints, scalars,
                                    seed, order, device_mem, cache, transactions, quick)
    except UserCodeError as e:
        if scop is None or not e.signal:
            raise
        who = "the OpenMP target" if mode == "openmp" else "the emulator"
        raise UserCodeError(guard.fault_message(e.signal, e.code, scop, who),
                            e.signal, e.code) from None


def _run_transferred(program: kir.Program, scop: Scop | None, mode: str,
                     sources: Mapping[str, np.ndarray], results: Mapping[str, np.ndarray],
                     ints: Mapping[str, int], scalars: Mapping[str, float] | None, seed: int,
                     order: str, device_mem: int | None, cache: dict | None,
                     transactions: bool, quick: bool = False
                     ) -> tuple[EmuResult, TransferStats]:
    """:func:`run_transferred` without the naming of a fault's statements."""
    ints = {k: int(v) for k, v in ints.items()}
    stats = TransferStats.of_run(program, sources)
    ses = S.plan_session(program, scop, sources, ints)
    need = ses.plan.bytes_h2d + S.temps_nbytes(program, ints)
    if device_mem is None or need <= device_mem:
        return _run_session(program, ses, mode, sources, results, scalars, seed, order,
                            cache, transactions, stats, quick)
    from ..codegen.host import print_host_python
    from .gpu import load_host
    device = _EmulatorTiles(program, mode, cache, scalars, seed, order, transactions, quick)
    run_tiled(program, load_host(print_host_python(program)), device, sources, results,
              ints, device_mem, stats)
    return device.result(stats.launches), stats


def _run_session(program: kir.Program, ses: S.Session, mode: str, sources: Mapping[str, np.ndarray],
                 results: Mapping[str, np.ndarray], scalars: Mapping[str, float] | None,
                 seed: int, order: str, cache: dict | None, transactions: bool,
                 stats: TransferStats, quick: bool = False) -> tuple[EmuResult, TransferStats]:
    """One plan for the whole run: pack once, run every launch, unpack once."""
    stats.add_plan(ses.plan, sources)
    stats.buffers = ses.plan.describe()
    mod = _module(ses.variant, mode, cache, quick)
    staging = allocate(ses.plan, _guards(program, ses.plan, ses.ints, mode))
    t0 = time.perf_counter()
    pack(ses.plan, sources, staging)
    stats.pack_s = time.perf_counter() - t0
    temps = {n: temp_array(d, ses.ints) for n, d in mod.program.arrays.items()
             if d.kind == "temp"}
    keep: list[np.ndarray] = []
    r = mod.run_pointers(_pointers(mod.program, ses.plan, staging, temps, keep), ses.ints,
                         scalars, seed, order, base_bytes=_base_bytes(mod.program, ses.plan),
                         transactions=transactions)
    _check_guards(staging, mode)
    t0 = time.perf_counter()
    unpack(ses.plan, staging, results)
    stats.unpack_s = time.perf_counter() - t0
    stats.launches = r.launches
    return r, stats


@dataclass
class _EmuTile:
    """A tile the emulator has run (it runs a tile to the end as it starts it)."""
    result: EmuResult
    keep: list[np.ndarray]


class _EmulatorTiles:
    """The emulator as a :class:`~polymagic.runtime.tiled.TileDevice`: the staging
    buffers are its device memory (with guard zones in 'emulate' mode), each tile
    runs the launch's own build of the tiled variant, tiles one after the other;
    the per-kernel counters of the tiles add up into one :class:`EmuResult`."""
    overlap = False

    def __init__(self, program: kir.Program, mode: str, cache: dict | None,
                 scalars: Mapping[str, float] | None, seed: int, order: str,
                 transactions: bool, quick: bool = False):
        self.program, self.mode, self.cache, self.scalars = program, mode, cache, scalars
        self.quick = quick
        self.seed, self.order, self.transactions = seed, order, transactions
        self.variant: kir.Program | None = None
        self.temps: dict[str, np.ndarray] = {}
        self.modules: dict[str, EmulatorModule] = {}
        self.total = EmuResult(seconds=0.0)
        self.txs: list[dict[str, dict[str, int]] | None] = []

    def prepare(self, variant: kir.Program, ints: Mapping[str, int]) -> None:
        """The temps stay resident across the launches (as the GPU keeps them)."""
        self.variant = variant
        self.temps = {n: temp_array(d, ints) for n, d in self.program.arrays.items()
                      if d.kind == "temp"}

    def allocate(self, plan: TransferPlan, ints: Mapping[str, int]) -> list[Staging]:
        return allocate(plan, _guards(self.program, plan, ints, self.mode))

    def _launch_module(self, kernel: str) -> EmulatorModule:
        """The build of the one-kernel program of ``kernel``'s launches."""
        mod = self.modules.get(kernel)
        if mod is None:
            mod = self.modules[kernel] = _module(K.launch_program(self.variant, kernel),
                                                 self.mode, self.cache, self.quick)
        return mod

    def start(self, index: int, kernel: str, tile: Tile, plan: TransferPlan,
              staging: list[Staging], ints: dict[str, int]) -> _EmuTile:
        mod = self._launch_module(kernel)
        keep: list[np.ndarray] = []
        r = mod.run_pointers(_pointers(mod.program, plan, staging, self.temps, keep), ints,
                             self.scalars, self.seed, self.order,
                             base_bytes=_base_bytes(mod.program, plan),
                             transactions=self.transactions)
        self.txs.append(r.tx_counters)
        t = self.total
        t.seconds += r.seconds
        for kn, c in r.counters.items():
            acc = t.counters.setdefault(kn, {})
            for f, v in c.items():
                acc[f] = acc.get(f, 0) + v
        t.loads += r.loads
        t.stores += r.stores
        return _EmuTile(r, keep)

    def wait(self, job: _EmuTile, staging: list[Staging]) -> None:
        _check_guards(staging, self.mode)

    def synchronize(self) -> None:
        pass

    def result(self, launches: int) -> EmuResult:
        """The tiles' counters summed, ``launches`` launches of the host driver."""
        self.total.launches = launches
        self.total.tx_counters = sum_tx(self.txs)
        self.total.tx = sum_tx(list(self.total.tx_counters.values())) \
            if self.total.tx_counters else None
        return self.total


def _guards(program: kir.Program, plan: TransferPlan, ints: Mapping[str, int],
            mode: str) -> dict[str, int] | None:
    """Per planned array, the elements a kernel may address from its pointer: the
    guard zones of its staging buffer ('emulate' mode; None otherwise)."""
    if mode != "emulate":
        return None
    return {n: S.layout_span(program.arrays[n], lay.strides, ints)
            for n, lay in plan.layouts.items()}


def _pointers(program: kir.Program, plan: TransferPlan, staging: list[Staging],
              temps: Mapping[str, np.ndarray], keep: list[np.ndarray]) -> list[int]:
    """One pointer per array of ``program``: its slot in the packed buffers, its
    temp, or a dummy element (kept alive in ``keep``) for arrays no access reaches
    at these sizes."""
    out = []
    for n, decl in program.arrays.items():
        if decl.kind == "temp":
            out.append(temps[n].ctypes.data)
        elif n in plan.layouts:
            lay = plan.layouts[n]
            out.append(staging[lay.component].pointer(lay))
        else:
            keep.append(np.zeros(1, dtype=DTYPES[decl.ctype]))
            out.append(keep[-1].ctypes.data)
    return out


def _base_bytes(program: kir.Program, plan: TransferPlan) -> list[int]:
    """Per array of ``program``: the device byte offset of its element 0 inside its
    buffer (``layout.offset`` slots; the GPU runtime passes the buffer address plus
    this), 0 for temps and unplanned arrays (their own allocations)."""
    out = []
    for n in program.arrays:
        lay = plan.layouts.get(n)
        out.append(int(lay.offset) * int(lay.itemsize) if lay is not None else 0)
    return out


def _check_guards(staging: list[Staging], mode: str) -> None:
    """EmulatorError when a kernel wrote into a guard zone ('emulate' mode)."""
    if mode != "emulate":
        return
    for st in staging:
        if not st.guards_intact():
            raise EmulatorError(f"a kernel wrote outside the packed elements of device buffer "
                                f"{st.component.index} ({', '.join(st.component.arrays)}): "
                                f"the transfer plan's address mapping is wrong")


__all__ = ["build", "EmulatorModule", "EmuResult", "run_transferred", "TX_FIELDS", "sum_tx",
           "transaction_summary", "build_library", "cache_dir",
           "ORDERS", "array_shape", "array_span"]
