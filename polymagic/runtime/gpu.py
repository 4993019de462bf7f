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

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from .. import kir
from ..errors import CompileError, DeviceError
from ..expr import evaluate
from ..scop import DTYPES

#: NumPy scalar constructors for kernel scalar arguments, by C type.
SCALAR_TYPES = {"float": np.float32, "double": np.float64, "int": np.int32,
                "long": np.int64, "short": np.int16, "char": np.int8,
                "unsigned": np.uint32}

_AVAILABLE: tuple[bool, str] | None = None
_RAW_MODULES: dict[tuple[str, int], object] = {}


# ---- availability --------------------------------------------------------------

def _probe() -> tuple[bool, str]:
    """(usable, why not) — imports CuPy and counts devices, catching everything."""
    try:
        import cupy
    except Exception as e:  # ImportError, or a CuPy built for another CUDA
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
    w = set(extra)
    for k in program.kernels.values():
        w.update(s.assign.target.array for s in kir.walk(k.body) if isinstance(s, kir.Compute))
    return [n for n, a in program.arrays.items() if a.kind == "param" and n in w]


def temp_shape(decl: kir.ArrayDecl, ints: Mapping[str, int]) -> tuple[int, ...]:
    """Shape of a runtime-allocated temp (0-d temps get one element)."""
    shape = tuple(int(evaluate(e, ints)) for e in decl.shape)
    return shape if shape else (1,)


# ---- the module ----------------------------------------------------------------

@dataclass
class GpuResult:
    kernel_s: float          # all launches, between two CUDA events
    h2d_s: float             # copies of the parameter arrays to the device
    d2h_s: float             # copies of the written arrays back
    launches: int
    device_name: str


def _raw_module(cp, source: str, kernel_names: list[str]):
    """One RawModule per (source, device), compiled on first use."""
    key = (source, cp.cuda.Device().id)
    mod = _RAW_MODULES.get(key)
    if mod is None:
        kw = {}
        if 'extern "C"' not in source:   # C++ names are mangled: look them up by expression
            kw["name_expressions"] = list(kernel_names)
        mod = cp.RawModule(code=source, options=("-std=c++14",), **kw)
        _RAW_MODULES[key] = mod
    return mod


def _elapsed(cp, start, end) -> float:
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3


class GpuModule:
    """The compiled kernels plus the host driver, ready to run on the current GPU."""

    def __init__(self, compiled):
        cp = _cupy()
        self.compiled = compiled
        self.program: kir.Program = compiled.program
        self.host = load_host(compiled.host_py)
        self.written = written_arrays(self.program, [
            n for n in compiled.scop.written_arrays()
            if compiled.scop.arrays[n].kind == "param"])
        self.device_name = device_name()
        mod = _raw_module(cp, compiled.cuda, list(self.program.kernels))
        try:
            self.functions = {n: mod.get_function(n) for n in self.program.kernels}
        except Exception as e:
            if type(e).__name__ == "CompileException":
                raise CompileError(f"CuPy/NVRTC could not compile the generated CUDA:\n{e}") from None
            raise

    def _upload(self, cp, arrays: Mapping[str, np.ndarray], ints: Mapping[str, int]) -> dict:
        dev = {}
        for name, decl in self.program.arrays.items():
            if decl.kind == "temp":
                dev[name] = cp.zeros(temp_shape(decl, ints), dtype=DTYPES[decl.ctype])
            else:
                a = arrays[name]
                if a.dtype != np.dtype(DTYPES[decl.ctype]) or not a.flags.c_contiguous:
                    raise DeviceError(f"{name}: expected a C-contiguous {DTYPES[decl.ctype]} array")
                dev[name] = cp.asarray(a)
        return dev

    def _launcher(self, dev: dict, ints: Mapping[str, int], scalars: Mapping[str, float],
                  counter: list[int]) -> Callable:
        program = self.program
        sc = {s: SCALAR_TYPES[program.scalars[s]](scalars[s]) for s in program.scalars}

        def launch(name: str, grid, extra=None) -> None:
            k = program.kernels[name]
            grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
            if min(grid) <= 0:          # an empty launch is not a CUDA launch
                return
            env = {**ints, **(extra or {})}
            args = ([dev[a] for a in k.arrays] + [sc[s] for s in k.scalars]
                    + [np.int32(env[i]) for i in k.ints])
            self.functions[name](grid, tuple(k.block), tuple(args))
            counter[0] += 1
        return launch

    def run(self, arrays: Mapping[str, np.ndarray], ints: Mapping[str, int],
            scalars: Mapping[str, float]) -> GpuResult:
        """Run every launch of the host driver; on success write the results into
        ``arrays`` (in place) and return the timings."""
        cp = _cupy()
        ints = {k: int(v) for k, v in ints.items()}
        ev = [cp.cuda.Event() for _ in range(6)]
        try:
            ev[0].record()
            dev = self._upload(cp, arrays, ints)
            ev[1].record()
            counter = [0]
            ev[2].record()
            self.host(dict(ints), self._launcher(dev, ints, scalars, counter))
            ev[3].record()
            ev[3].synchronize()              # surfaces asynchronous launch errors here
            ev[4].record()
            results = {n: dev[n].get() for n in self.written}
            ev[5].record()
            times = [_elapsed(cp, ev[i], ev[i + 1]) for i in (0, 2, 4)]
        except Exception as e:
            if type(e).__name__ == "CompileException":
                raise CompileError(f"CuPy/NVRTC could not compile the generated CUDA:\n{e}") from None
            if type(e).__module__.startswith("cupy"):   # CUDA driver/runtime errors
                raise DeviceError(f"the GPU run failed: {type(e).__name__}: {e}") from e
            raise                                       # a polymagic bug: keep the traceback
        for n, r in results.items():
            arrays[n][...] = r
        return GpuResult(kernel_s=times[1], h2d_s=times[0], d2h_s=times[2],
                         launches=counter[0], device_name=self.device_name)


__all__ = ["gpu_available", "unavailable_reason", "GpuModule", "GpuResult", "device_name",
           "load_host", "written_arrays", "temp_shape", "SCALAR_TYPES"]
