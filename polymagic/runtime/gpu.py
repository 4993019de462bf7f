"""Run the generated CUDA on a real GPU through CuPy.

This is the only module that imports CuPy, and it does so lazily: polymagic must
import, compile and emulate on machines without CuPy or without a GPU.
:func:`gpu_available` answers whether this module can be used at all and never
raises.

:class:`GpuModule` loads ``compiled.cuda`` as a ``cupy.RawModule`` (one per source
and device, compiled once per process) and the host driver ``compiled.host_py``
(see docs/interfaces.md): the driver calls ``launch(kernel, grid, extra_ints)``
for every kernel launch, in order.  :meth:`GpuModule.run` copies the parameter
arrays to the device, runs the driver between two CUDA events (``kernel_s``: every
launch, including the Python driver's own overhead between launches, which is
what a user of the generated host code pays), copies back the arrays that kernels
write, and only then writes them into the caller's arrays.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

import numpy as np

from .. import kir
from ..dtypes import DTYPES
from ..errors import CompileError, DeviceError
from ..transfers import session as S
from ..transfers.pack import Staging, allocate, pack, unpack
from ..transfers.plan import TransferPlan
from ..transfers.session import TransferStats
from ..transfers.tiling import Tile
from .tiled import run_tiled

if TYPE_CHECKING:            # CuPy itself is imported lazily (see _cupy)
    import cupy

_AVAILABLE: tuple[bool, str] | None = None
_RAW_MODULES: dict[tuple[str, int], object] = {}
_OPTIN: dict[int, int | None] = {}      # dynamic shared-memory opt-in limit, by device

#: the PyPI package with the CUDA runtime headers NVRTC needs (the ``gpu`` extra)
HEADERS_PACKAGE = "nvidia-cuda-runtime-cu12"
#: CUDA errors after which the context is dead (every later call fails the same way)
STICKY = ("ILLEGAL_ADDRESS", "ILLEGAL_INSTRUCTION", "MISALIGNED_ADDRESS", "LAUNCH_FAILED",
          "HARDWARE_STACK_ERROR", "INVALID_PC", "ECC_UNCORRECTABLE", "ASSERT",
          "unspecified launch failure", "illegal memory access")


# ---- availability --------------------------------------------------------------

def _probe() -> tuple[bool, str]:
    """(usable, why not) — imports CuPy and counts devices, catching everything."""
    try:
        import cupy
    except ModuleNotFoundError:
        return False, "CuPy is not installed"
    except Exception as e:  # a CuPy built for another CUDA, a broken install
        return False, f"CuPy is not importable ({type(e).__name__}: {e})".strip()
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, no device, ...
        return False, f"no GPU visible to CuPy ({e})"
    if n < 1:
        return False, "no GPU visible to CuPy"
    return True, ""


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one GPU (cached; never raises)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            _AVAILABLE = _probe()
        except Exception as e:  # pragma: no cover - belt and braces
            _AVAILABLE = (False, f"GPU probe failed: {e}")
    return _AVAILABLE[0]


def unavailable_reason() -> str:
    """Why :func:`gpu_available` is False ("" when a GPU is usable)."""
    gpu_available()
    assert _AVAILABLE is not None
    return _AVAILABLE[1]


def _cupy():
    if not gpu_available():
        raise DeviceError(f"the GPU target needs CuPy and a GPU: {unavailable_reason()}")
    import cupy
    return cupy


def device_name() -> str:
    """Name of the current CUDA device (e.g. "NVIDIA H100 80GB HBM3")."""
    cp = _cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props.get("name", b"GPU")
    return name.decode(errors="replace") if isinstance(name, bytes) else str(name)


# ---- the host driver -----------------------------------------------------------

def _tdiv(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _tmod(a: int, b: int) -> int:
    """C remainder (sign of the dividend)."""
    return a - b * _tdiv(a, b)


def load_host(host_py: str) -> Callable:
    """Execute the host driver's source and return its ``host(ints, launch)``."""
    ns: dict = {"_tdiv": _tdiv, "_tmod": _tmod, "floord": lambda a, b: a // b}
    exec(compile(host_py, "<polymagic host driver>", "exec"), ns)
    try:
        return ns["host"]
    except KeyError:
        raise CompileError("the host driver defines no host(ints, launch)") from None


def written_arrays(program: kir.Program, extra: list[str] = ()) -> list[str]:
    """Parameter arrays that some kernel writes (plus ``extra``), in Program order."""
    w = S.written_param_arrays(program) | set(extra)
    return [n for n, a in program.arrays.items() if a.kind == "param" and n in w]


def scalar_argument(ctype: str, value: float) -> np.generic:
    """A kernel's scalar argument: ``value`` as the NumPy scalar of its C type."""
    return np.dtype(DTYPES[ctype]).type(value)


# ---- the module ----------------------------------------------------------------

@dataclass
class GpuResult:
    kernel_s: float          # all launches, between two CUDA events
    h2d_s: float             # packing + copies of the buffers to the device
    d2h_s: float             # copies of the written regions back + unpacking
    launches: int
    device_name: str
    transfers: TransferStats


def headers_include() -> str | None:
    """The ``include`` folder of the :data:`HEADERS_PACKAGE` wheel when installed
    (``nvidia/cuda_runtime/include``), else None."""
    import importlib.util
    import os
    try:
        spec = importlib.util.find_spec("nvidia.cuda_runtime")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        inc = os.path.join(root, "include")
        if os.path.isfile(os.path.join(inc, "cuda_runtime.h")):
            return inc
    return None


def _compile_options() -> tuple[str, ...]:
    """NVRTC options: C++14, and the wheel's CUDA headers when CuPy may not find them."""
    inc = headers_include()
    return ("-std=c++14",) + ((f"-I{inc}",) if inc else ())


def setup_error(e: BaseException):
    """A one-paragraph error for a GPU set-up failure, or None when ``e`` is not one:
    CuPy raises a plain ``RuntimeError("Failed to find CUDA headers")`` (or NVRTC
    cannot open ``vector_types.h``) when the CUDA runtime headers are missing."""
    text = str(e)
    if "Failed to find CUDA headers" in text or (
            "cannot open source file" in text and ("vector_types.h" in text
                                                   or "cuda_runtime" in text)):
        return DeviceError(
            "CuPy cannot find the CUDA runtime headers it compiles kernels against: "
            f"pip install {HEADERS_PACKAGE} (part of polymagic[gpu]), or set CUDA_PATH to "
            "a CUDA toolkit")
    if type(e).__name__ == "CompileException":
        return CompileError(f"CuPy/NVRTC could not compile the generated CUDA:\n{e}")
    return None


def _raw_module(cp, source: str, kernel_names: list[str]):
    """One RawModule per (source, device), compiled on first use."""
    key = (source, cp.cuda.Device().id)
    mod = _RAW_MODULES.get(key)
    if mod is None:
        kw = {}
        if 'extern "C"' not in source:   # C++ names are mangled: look them up by expression
            kw["name_expressions"] = list(kernel_names)
        mod = cp.RawModule(code=source, options=_compile_options(), **kw)
        _RAW_MODULES[key] = mod
    return mod


def shared_optin_limit(cp) -> int | None:
    """The most dynamic shared memory a block of the current device may opt in to
    (``cudaDevAttrMaxSharedMemoryPerBlockOptin``: 227 KB on an H100, 99 KB on an
    RTX 4090), read from the device once; None when CuPy does not say."""
    dev = cp.cuda.Device()
    if dev.id not in _OPTIN:
        try:
            _OPTIN[dev.id] = int(dev.attributes["MaxSharedMemoryPerBlockOptin"])
        except Exception:        # noqa: BLE001 - an old CuPy, a stand-in
            _OPTIN[dev.id] = None
    return _OPTIN[dev.id]


def forget_modules() -> None:
    """Drop every cached RawModule: after a sticky CUDA error their context is dead."""
    _RAW_MODULES.clear()


def _call(fn, grid, k: kir.Kernel, args: tuple, limit: int | None = None) -> None:
    """Launch ``fn``; a kernel whose buffers live in dynamic shared memory (over 48 KB
    per block) first opts in (``cudaFuncAttributeMaxDynamicSharedMemorySize``, CuPy's
    ``max_dynamic_shared_size_bytes``) and is launched with that many bytes; more
    than the device's opt-in ``limit`` is a DeviceError."""
    if not k.dynamic_shared:
        fn(grid, tuple(k.block), args)
        return
    if limit is not None and k.dynamic_shared > limit:
        raise DeviceError(
            f"kernel {k.name} needs {k.dynamic_shared} bytes of shared memory per block; "
            f"this GPU allows {limit}: compile with --shared-mem {limit // 1024}KB or less")
    if getattr(fn, "max_dynamic_shared_size_bytes", 0) < k.dynamic_shared:
        fn.max_dynamic_shared_size_bytes = k.dynamic_shared
    fn(grid, tuple(k.block), args, shared_mem=k.dynamic_shared)


def _elapsed(cp, start, end) -> float:
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3


def _pointer(buf, offset_bytes: int):
    """A device pointer argument: ``buf``'s address plus ``offset_bytes`` (which may
    point before the buffer: only packed slots are ever dereferenced), passed by
    value as 8 bytes, which every CuPy version accepts for a pointer parameter."""
    return np.uint64((int(buf.data.ptr) + int(offset_bytes)) % 2**64)


def _download(src, out: np.ndarray, stream) -> None:
    """Asynchronous device-to-host copy into (pinned) ``out`` on ``stream``."""
    try:
        src.get(stream=stream, out=out, blocking=False)
    except TypeError:           # CuPy < 11 has no ``blocking``: a synchronous copy
        src.get(stream=stream, out=out)


def _pinned_empty(cp):
    """``empty(n, dtype)`` in page-locked host memory (fast, asynchronous copies),
    falling back to pageable memory."""
    try:
        import cupyx
        return lambda n, dtype: cupyx.empty_pinned((n,), dtype=dtype)
    except Exception:       # pragma: no cover - old CuPy
        return np.empty


class GpuModule:
    """The compiled kernels plus the host driver, ready to run on the current GPU.

    Arrays reach the device as compact buffers planned by
    :mod:`polymagic.transfers` from the arguments' real layouts (seed 002 §4): the
    kernels run the variant of the Program whose strides are int parameters
    (:func:`polymagic.transfers.kernels.layout_program`), packed host staging
    buffers (pinned) go up with one copy each, and only the written device ranges
    come back.  With ``device_mem`` smaller than the buffers, launches run in tiles
    (§4.4), the next tile's upload overlapping the current tile's kernel on a
    second CUDA stream when their data do not conflict and both fit."""

    def __init__(self, compiled):
        _cupy()                         # no CuPy: the error now, not at the first run
        self.compiled = compiled
        self.program: kir.Program = compiled.program
        self.scop = compiled.scop
        self.host = load_host(compiled.host_py)
        self.written = written_arrays(self.program, [
            n for n in compiled.scop.written_arrays()
            if compiled.scop.arrays[n].kind == "param"])
        self.device_name = device_name()
        self._fns: dict[str, dict] = {}
        self._mods: dict[str, object] = {}
        self.functions = self._functions(self.program, compiled.cuda)

    def _functions(self, program: kir.Program, source: str | None = None) -> dict:
        """Kernel functions of ``program`` (a variant), compiled once per source."""
        if source is None:
            from ..codegen.cuda import print_cuda
            source = print_cuda(program)
        fns = self._fns.get(source)
        if fns is None:
            cp = _cupy()
            mod = _raw_module(cp, source, list(program.kernels))
            try:
                fns = {n: mod.get_function(n) for n in program.kernels}
            except Exception as e:
                err = setup_error(e)
                if err is not None:
                    _RAW_MODULES.pop((source, cp.cuda.Device().id), None)
                    raise err from None
                raise
            self._fns[source] = fns
            self._mods[source] = mod
        return fns

    def _upload_constants(self, program: kir.Program, sources) -> None:
        """Copy the arrays read from ``__constant__`` memory (seed 004 §4.2) to their
        symbols (``RawModule.get_global``) before the launches; an array larger than
        the symbol compiled for it is refused with the sizes to recompile with."""
        if not program.constants:
            return
        from ..codegen.cuda import print_cuda
        source = self.compiled.cuda if program is self.program else print_cuda(program)
        self._functions(program, source)
        mod = self._mods[source]
        for name, c in program.constants.items():
            host = np.ascontiguousarray(np.asarray(sources[name]),
                                        dtype=DTYPES[c.ctype]).reshape(-1)
            if host.size > c.capacity:
                raise DeviceError(
                    f"{name}: {host.size} elements do not fit the __constant__ symbol "
                    f"{c.name} compiled for at most {c.capacity} (constant memory holds 64 KB): "
                    f"compile again with these sizes (--size)")
            ptr = mod.get_global(c.name)
            ptr.copy_from_host(host.ctypes.data, host.nbytes)

    def _temps(self, cp, ints: Mapping[str, int]) -> dict:
        """The runtime-allocated temps, zero-filled on the device."""
        return {n: cp.zeros(S.temp_shape(d, ints), dtype=DTYPES[d.ctype])
                for n, d in self.program.arrays.items() if d.kind == "temp"}

    def run(self, arrays: Mapping[str, np.ndarray], ints: Mapping[str, int],
            scalars: Mapping[str, float], sources: Mapping[str, np.ndarray] | None = None,
            device_mem: int | None = None) -> GpuResult:
        """Run every launch of the host driver on data read from ``sources``
        (default ``arrays``: any NumPy views of the declared shapes and dtypes);
        on success scatter the written regions into ``arrays`` (in place) and return
        the timings and the transfer statistics."""
        cp = _cupy()
        sources = arrays if sources is None else sources
        ints = {k: int(v) for k, v in ints.items()}
        for name in S.kernel_param_arrays(self.program):
            decl = self.program.arrays[name]
            a = sources[name]
            if a.dtype != np.dtype(DTYPES[decl.ctype]):
                raise DeviceError(f"{name}: expected a {DTYPES[decl.ctype]} array")
        try:
            ses = S.plan_session(self.program, self.scop, sources, ints)
            need = ses.plan.bytes_h2d + S.temps_nbytes(self.program, ints)
            if device_mem is None or need <= device_mem:
                return self._run_session(cp, ses, arrays, sources, ints, scalars)
            return self._run_tiled(cp, arrays, sources, ints, scalars, device_mem)
        except Exception as e:
            err = setup_error(e)
            if err is not None:
                raise err from None
            if type(e).__module__.startswith("cupy"):   # CUDA driver/runtime errors
                if any(k in str(e) for k in STICKY):
                    self.forget()
                    raise DeviceError(
                        f"the GPU run failed: {type(e).__name__}: {e} (the CUDA context is "
                        "now unusable: restart the kernel or process to use the GPU again)"
                    ) from e
                raise DeviceError(f"the GPU run failed: {type(e).__name__}: {e}") from e
            raise                                       # a polymagic bug: keep the traceback

    def forget(self) -> None:
        """Drop this module's and the process's compiled modules (a dead context)."""
        self._fns.clear()
        self._mods.clear()
        forget_modules()

    def _run_session(self, cp, ses: S.Session, arrays, sources, ints,
                     scalars) -> GpuResult:
        """One plan for the whole run: the buffers go up once, every launch runs on
        them, the written ranges come back once."""
        from ..codegen.host import print_host_python
        stats = TransferStats.of_run(self.program, sources)
        stats.add_plan(ses.plan, sources)
        stats.buffers = ses.plan.describe()
        variant = ses.variant
        fns = self._functions(variant)
        host = load_host(print_host_python(variant)) if variant is not self.program else self.host
        t0 = time.perf_counter()
        staging = allocate(ses.plan, None, empty=_pinned_empty(cp))
        pack(ses.plan, sources, staging)
        stats.pack_s = time.perf_counter() - t0
        ev = [cp.cuda.Event() for _ in range(6)]
        ev[0].record()
        dev = [cp.empty(st.component.nbytes, dtype=cp.uint8) for st in staging]
        for d, st in zip(dev, staging):
            d.set(st.raw)
        ev[1].record()
        args = {}
        for n, lay in ses.plan.layouts.items():
            args[n] = _pointer(dev[lay.component], lay.offset * lay.itemsize)
        keep = []
        for n in ses.unused:
            keep.append(cp.zeros(1, dtype=DTYPES[variant.arrays[n].ctype]))
            args[n] = keep[-1]
        args.update(self._temps(cp, ints))
        self._upload_constants(variant, sources)
        counter = [0]
        ev[2].record()
        host(dict(ses.ints), self._launcher(variant, fns, args, ses.ints, scalars, counter))
        ev[3].record()
        ev[3].synchronize()                  # surfaces asynchronous launch errors here
        ev[4].record()
        for d, st in zip(dev, staging):
            isz = st.itemsize
            for lo, hi in st.component.d2h:
                d[lo * isz:hi * isz].get(out=st.raw[lo * isz:hi * isz])
        ev[5].record()
        times = [_elapsed(cp, ev[i], ev[i + 1]) for i in (0, 2, 4)]
        t2 = time.perf_counter()
        unpack(ses.plan, staging, arrays)
        stats.unpack_s = time.perf_counter() - t2
        stats.launches = counter[0]
        return GpuResult(kernel_s=times[1], h2d_s=times[0], d2h_s=times[2],
                         launches=counter[0], device_name=self.device_name, transfers=stats)

    def _launcher(self, program: kir.Program, fns: dict, args: dict, ints: Mapping[str, int],
                  scalars: Mapping[str, float], counter: list[int]) -> Callable:
        """The ``launch(kernel, grid, extra_ints)`` the host driver calls, in order.

        A host loop makes every launch go through here (jacobi-1d: two per time step;
        the first H100 run measured ~14 us of GPU time per launch), so the work that
        does not change between launches is done once per kernel, on its first launch
        (:func:`_prepare`): the function, block, shared-memory opt-in and the argument
        tuple, whose ints only change where the driver passes its loop counters.

        Not done (no GPU to check it on): a CUDA graph.  The driver never reads
        device data, so a run's launches are known before the first one; but
        capturing them (``cupy.cuda.Stream.begin_capture``) still makes one CuPy
        call per launch, so a graph only pays when it is replayed: by a later run
        with the same ints, scalars and device pointers (the buffers would have to
        be kept per module), or by a host loop whose launches repeat with the same
        arguments (jacobi-1d's two per time step: one captured period launched
        ``tsteps`` times, or doubled by capturing graph launches)."""
        sc = {s: scalar_argument(program.scalars[s], scalars[s]) for s in program.scalars}
        limit = shared_optin_limit(_cupy())
        ready: dict[str, _Prepared] = {}

        def launch(name: str, grid, extra=None) -> None:
            p = ready.get(name)
            if p is None:
                p = ready[name] = _prepare(program.kernels[name], fns[name], args, sc, ints,
                                           limit)
            if len(grid) == 3:
                gx, gy, gz = grid
            else:
                gx, gy, gz = tuple(grid) + (1,) * (3 - len(grid))
            if gx <= 0 or gy <= 0 or gz <= 0:     # an empty launch is not a CUDA launch
                return
            a = p.with_ints(extra) if extra or p.args is None else p.args
            if p.shared:
                p.fn((int(gx), int(gy), int(gz)), p.block, a, shared_mem=p.shared)
            else:
                p.fn((int(gx), int(gy), int(gz)), p.block, a)
            counter[0] += 1
        return launch

    def _run_tiled(self, cp, arrays, sources, ints, scalars, device_mem: int) -> GpuResult:
        """Every launch in tiles of blocks whose buffers fit ``device_mem`` (§4.4)."""
        stats = TransferStats.of_run(self.program, sources)
        device = _GpuTiles(self, cp, sources, scalars)
        wall = run_tiled(self.program, self.host, device, sources, arrays, ints, device_mem,
                         stats)
        # tiles overlap transfers with kernels: report kernel time and the rest as copies
        rest = max(0.0, wall - device.kernel_s)
        return GpuResult(kernel_s=device.kernel_s, h2d_s=rest / 2, d2h_s=rest / 2,
                         launches=stats.launches, device_name=self.device_name,
                         transfers=stats)


@dataclass(frozen=True)
class _Prepared:
    """One kernel's launch, ready but for its grid: ``args`` with the run's ints
    (None when some int parameter only comes from the driver's loop counters)."""
    fn: Callable
    block: tuple[int, ...]
    shared: int                     # dynamic shared memory bytes (0: static only)
    head: tuple                     # the pointer and scalar arguments
    ints: tuple[np.int32 | None, ...]   # the int parameters' run values, in order
    at: dict[str, int]              # an int parameter's position in ``ints``
    needs: frozenset[str]           # the int parameters only the driver can give
    args: tuple | None

    def with_ints(self, extra: Mapping[str, int]) -> tuple:
        """The arguments with the driver's per-launch ints (its loop counters)."""
        if self.needs and not self.needs <= extra.keys():
            raise KeyError(min(self.needs - extra.keys()))
        vals = list(self.ints)
        for x, v in extra.items():
            i = self.at.get(x)
            if i is not None:
                vals[i] = np.int32(v)
        return self.head + tuple(vals)


def _prepare(k: kir.Kernel, fn, args: Mapping, sc: Mapping, ints: Mapping[str, int],
             limit: int | None) -> _Prepared:
    """Everything about launching ``k`` that is the same for every launch of a run;
    the shared-memory opt-in (as :func:`_call`) happens here, once."""
    if k.dynamic_shared:
        if limit is not None and k.dynamic_shared > limit:
            raise DeviceError(
                f"kernel {k.name} needs {k.dynamic_shared} bytes of shared memory per "
                f"block; this GPU allows {limit}: compile with --shared-mem "
                f"{limit // 1024}KB or less")
        if getattr(fn, "max_dynamic_shared_size_bytes", 0) < k.dynamic_shared:
            fn.max_dynamic_shared_size_bytes = k.dynamic_shared
    head = tuple([args[x] for x in k.arrays] + [sc[s] for s in k.scalars])
    vals = tuple(np.int32(ints[i]) if i in ints else None for i in k.ints)
    needs = frozenset(i for i in k.ints if i not in ints)
    return _Prepared(fn, tuple(k.block), k.dynamic_shared, head, vals,
                     {x: n for n, x in enumerate(k.ints)}, needs,
                     None if needs else head + vals)


@dataclass
class _GpuTile:
    """A tile in flight on its stream."""
    dev: list[cupy.ndarray]      # its device buffers, alive until the tile is waited for
    started: tuple[cupy.cuda.Event, cupy.cuda.Event]   # recorded around its kernel
    done: cupy.cuda.Event        # recorded after its copies back


class _GpuTiles:
    """The GPU as a :class:`~polymagic.runtime.tiled.TileDevice`: pinned staging
    buffers; a tile's upload, kernel and download go on one of two CUDA streams in
    turn, so the next tile's upload overlaps the current tile's kernel."""
    overlap = True

    def __init__(self, module: GpuModule, cp, sources: Mapping[str, np.ndarray],
                 scalars: Mapping[str, float]):
        self.module, self.cp, self.sources, self.scalars = module, cp, sources, scalars
        self.kernel_s = 0.0

    def prepare(self, variant: kir.Program, ints: Mapping[str, int]) -> None:
        """Compile the variant, allocate the temps, upload the constants."""
        cp = self.cp
        self.variant = variant
        self.fns = self.module._functions(variant)
        self.temps = self.module._temps(cp, ints)
        self.streams = [cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)]
        self.empty = _pinned_empty(cp)
        self.sc = {s: scalar_argument(variant.scalars[s], self.scalars[s])
                   for s in variant.scalars}
        self.module._upload_constants(variant, self.sources)
        self.limit = shared_optin_limit(cp)
        # the zeroing of the temps and the constants' upload ran on the legacy stream,
        # which non-blocking streams do not wait for: finish them before any tile
        cp.cuda.Device().synchronize()

    def allocate(self, plan: TransferPlan, ints: Mapping[str, int]) -> list[Staging]:
        return allocate(plan, None, empty=self.empty)

    def start(self, index: int, kernel: str, tile: Tile, plan: TransferPlan,
              staging: list[Staging], ints: dict[str, int]) -> _GpuTile:
        cp, k = self.cp, self.variant.kernels[kernel]
        s = self.streams[index % 2]
        with s:
            dev = [cp.empty(st.component.nbytes, dtype=cp.uint8) for st in staging]
            for d, st in zip(dev, staging):
                d.set(st.raw, stream=s)
            args = []
            for a in k.arrays:
                if self.variant.arrays[a].kind == "temp":
                    args.append(self.temps[a])
                elif a in plan.layouts:
                    lay = plan.layouts[a]
                    args.append(_pointer(dev[lay.component], lay.offset * lay.itemsize))
                else:
                    args.append(np.uint64(0))
            args += [self.sc[x] for x in k.scalars] + [np.int32(ints[x]) for x in k.ints]
            started = (cp.cuda.Event(), cp.cuda.Event())
            started[0].record(s)
            _call(self.fns[kernel], tuple(tile.count), k, tuple(args), self.limit)
            started[1].record(s)
            for d, st in zip(dev, staging):
                isz = st.itemsize
                for lo, hi in st.component.d2h:
                    _download(d[lo * isz:hi * isz], st.raw[lo * isz:hi * isz], s)
            done = cp.cuda.Event()
            done.record(s)
        return _GpuTile(dev, started, done)

    def wait(self, job: _GpuTile, staging: list[Staging]) -> None:
        job.done.synchronize()
        self.kernel_s += _elapsed(self.cp, job.started[0], job.started[1])

    def synchronize(self) -> None:
        self.cp.cuda.Device().synchronize()


__all__ = ["gpu_available", "unavailable_reason", "GpuModule", "GpuResult", "device_name",
           "load_host", "written_arrays", "scalar_argument"]
