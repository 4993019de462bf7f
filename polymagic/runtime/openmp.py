"""The CPU target at run time: compile the tiled OpenMP C (:mod:`polymagic.codegen.cpu_c`)
and call it on the caller's arrays (issue 21).

The translation unit is compiled with ``-O3 -march=native -fopenmp`` and the
reference's floating-point rules (no ``-ffast-math``, no contraction of ``a*b + c``
into FMAs: :data:`~polymagic.runtime.ccompile.FP_FLAGS`, so rounding never passes
for wrong code, issue 32) into a
shared library cached on disk like the CPU reference's.  A compiler without OpenMP
(Apple's clang without libomp) rejects ``-fopenmp``: the code is then compiled
without it and runs on one core, the pragmas ignored; :attr:`OpenmpModule.threads`
is 0 then and the report says so.

There are no transfers: the function runs in place on C-contiguous copies of the
arrays, like the reference.  The fault guard of :mod:`.guard` wraps the call; user
code with integer divisions runs on one thread (the guard recovers only the
calling thread, as for the emulator's OpenMP build).
"""
from __future__ import annotations

import ctypes
import os
from typing import Mapping

import numpy as np

from . import ccompile, guard
from .cpu import argtype, load_library
from .emulator import note_openmp_used, one_thread
from ..codegen.cpu_c import CpuCode
from ..dtypes import DTYPES
from ..scop import Scop

#: optimisation flags of the CPU target (see the module docstring)
FLAGS = ("-std=gnu11", "-O3", "-march=native", *ccompile.FP_FLAGS, "-fopenmp", "-shared",
         "-fPIC")


def source_with_guard(scop: Scop, code: CpuCode) -> str:
    """The generated C plus the fault guard and ``pm_guarded_<function>``."""
    params = [("void *" if p.kind == "array" else p.ctype, f"pm_a{k}")
              for k, p in enumerate(scop.params)]
    return (code.source + '#line 1 "polymagic-guard.c"\n' + guard.GUARD_C
            + guard.wrapper_c(code.function, params))


def _passive_waits() -> None:
    """Threads that wait at the end of a parallel loop sleep instead of spinning
    (``OMP_WAIT_POLICY=passive``, unless the user set a policy), read by the OpenMP
    runtime when it is first loaded: on a machine whose cores other processes share,
    a spinning thread burns the time slice the thread it waits for needs (jacobi-2d's
    40 parallel sweeps ran 12x slower than passive on a loaded 2-core machine)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")


class OpenmpModule:
    """One compiled CPU-target library, callable on NumPy arrays."""

    def __init__(self, scop: Scop, code: CpuCode):
        _passive_waits()
        self.scop = scop
        self.code = code
        path = ccompile.shared_library(source_with_guard(scop, code), list(FLAGS), "cpu",
                                       "omp", "the OpenMP target", optional_flags=("-fopenmp",))
        lib = self._lib = load_library(path)
        lib.pm_cpu_threads.restype = ctypes.c_int
        #: threads a parallel loop runs on; 0 when compiled without OpenMP
        self.threads = int(lib.pm_cpu_threads())
        self._scalars = [p for p in scop.params if p.kind != "array"]
        self._n_work = ctypes.c_int.in_dll(lib, "pm_cpu_n_work").value
        self._work = lib.pm_cpu_fork_work
        self._work.restype = None
        self._work.argtypes = [*[argtype(p) for p in self._scalars],
                               ctypes.POINTER(ctypes.c_double)]
        fn = getattr(lib, f"pm_guarded_{code.function}")
        self._fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                    *[argtype(p) for p in scop.params])(
            ctypes.cast(fn, ctypes.c_void_p).value)

    def run(self, args: Mapping[str, object]) -> float:
        """Call the function on ``args`` (arrays C-contiguous, modified in place);
        returns the call's seconds."""
        argv = []
        for p in self.scop.params:
            v = args[p.name]
            if p.kind == "array":
                ccompile.check_pointer_array(v, np.dtype(DTYPES[p.ctype]), p.name,
                                             "the OpenMP target")
                argv.append(ctypes.c_void_p(v.ctypes.data))
            else:
                argv.append(argtype(p)(v))
        note_openmp_used()
        with one_thread(bool(guard.integer_divisions(self.scop))):
            # a SIGINT is raised after the call, which runs to its end (guard.py)
            return guard.call(self._fn, argv, self.scop, "the OpenMP target", self._lib)

    def fork_work(self, args: Mapping[str, object]) -> list[float]:
        """Per parallel loop, its statement instances per fork at the sizes in
        ``args`` (what the function compares with ``cpu_cost.MIN_WORK``)."""
        if not self._n_work:
            return []
        out = (ctypes.c_double * self._n_work)()
        self._work(*[argtype(p)(args[p.name]) for p in self._scalars], out)
        return list(out)

    def describe_decisions(self, args: Mapping[str, object]) -> str:
        """Which loops ran parallel at these sizes, for the report ("" when none)."""
        return self.code.decisions(self.fork_work(args), self.threads)

    def describe_threads(self) -> str:
        return (f"up to {self.threads} OpenMP thread(s) (fewer while other processes "
                "keep the cores busy: OpenMP's dynamic adjustment)" if self.threads else
                "compiled without OpenMP (the compiler rejected -fopenmp): one core")


_MODULES: dict[tuple[str, str], OpenmpModule] = {}


def module(scop: Scop, code: CpuCode) -> OpenmpModule:
    """The compiled module of ``code`` (built once per process)."""
    key = (scop.source, code.source)
    mod = _MODULES.get(key)
    if mod is None:
        mod = _MODULES[key] = OpenmpModule(scop, code)
    return mod


__all__ = ["OpenmpModule", "module", "FLAGS", "source_with_guard"]
