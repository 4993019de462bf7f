"""The CPU reference: the user's own C function, compiled with the system compiler.

Every device result is compared with what the *original* source computes, so the
reference must be exactly what the user wrote: ``scop.source`` is compiled as is
(its ``#include``s and ``#define``s kept) behind a small prelude that adds
``<math.h>`` and ``#ifndef``-guarded ``min``/``max`` macros, which polyhedral
examples commonly use without declaring.

The shared library is cached on disk by a hash of (prelude + source, compiler,
flags) under ``$POLYMAGIC_CACHE`` or ``~/.cache/polymagic``; it is written to a
temporary name and renamed, so concurrent kernels/processes never load a half
written file.  The function is called through ctypes with the arguments in
``scop.params`` order; arrays are passed as data pointers and modified in place.

``opt`` selects the optimisation flags (``"-O2"`` for checking, ``"-O3"`` or
``"-O3 -march=native"`` for benchmark baselines); no OpenMP is ever enabled, so
the reference is a plain sequential run.
"""
from __future__ import annotations

import ctypes
import shlex
from pathlib import Path
from typing import Mapping

import numpy as np

from . import ccompile, guard
from ..dtypes import DTYPES
from ..errors import CompileError, InputError, UnsupportedError
from ..scop import Param, Scop

PRELUDE = """\
/* polymagic CPU reference prelude */
#include <math.h>
#ifndef min
#define min(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef max
#define max(a, b) ((a) > (b) ? (a) : (b))
#endif
#line 1 "cell.c"
"""

#: ctypes types of scalar arguments, by C type.
CTYPES = {"int": ctypes.c_int, "long": ctypes.c_long, "short": ctypes.c_short,
          "char": ctypes.c_byte, "unsigned": ctypes.c_uint,
          "float": ctypes.c_float, "double": ctypes.c_double}

_LIBS: dict[str, ctypes.CDLL] = {}   # loaded libraries by path (a CDLL cannot be unloaded)


def cache_dir() -> Path:
    """Where compiled references live: ``$POLYMAGIC_CACHE/cpu`` (or ``~/.cache/...``)."""
    return ccompile.cache_dir("cpu")


compiler = ccompile.compiler


def compile_flags(opt: str = "-O2") -> list[str]:
    """Flags of a reference build (``opt`` may hold several flags, e.g. "-O3 -march=native")."""
    return ["-std=gnu11", *shlex.split(opt), *ccompile.FP_FLAGS, "-shared", "-fPIC"]


def reference_source(source: str, scop: Scop | None = None) -> str:
    """The translation unit compiled for the reference: prelude + the user's source,
    and with ``scop`` the fault guard and ``pm_guarded_<name>`` wrapping the
    function (:mod:`polymagic.runtime.guard`)."""
    text = PRELUDE + source + ("" if source.endswith("\n") else "\n")
    if scop is None:
        return text
    params = [("void *" if p.kind == "array" else _c_type(p), f"pm_a{k}")
              for k, p in enumerate(scop.params)]
    # the user's function under a name of the generated namespace: a function named
    # like a C library one (free, abort, exp, signal) would clash with its header's
    # declaration or interpose it in the library, the guard's calls included
    # (issue 18: a function named abort killed the process)
    rename = f"#define {scop.name} pm_user_{scop.name}\n"
    head, line_mark = PRELUDE.rsplit("#line 1", 1)
    return (head + rename + "#line 1" + line_mark + source
            + ("" if source.endswith("\n") else "\n")
            + f"#undef {scop.name}\n#line 1 \"polymagic-guard.c\"\n" + guard.GUARD_C
            + (_returning(scop, params) if scop.returns else rename)
            + guard.wrapper_c(scop.name, params) + f"#undef {scop.name}\n")


def _returning(scop: Scop, params: list[tuple[str, str]]) -> str:
    """A function that returns a value: ``pm_returning_<name>`` takes the parameters
    and the :data:`~polymagic.scop.RETURN` array last, calls the user's function and
    stores what it returns there; the guard's wrapper calls it in the function's
    place."""
    decl = ", ".join(f"{t} {n}" for t, n in params)
    args = ", ".join(n for _, n in params[:-1])
    return (f"static void pm_returning_{scop.name}({decl}) {{\n"
            f"  *({scop.returns} *){params[-1][1]} = pm_user_{scop.name}({args});\n}}\n"
            f"#define {scop.name} pm_returning_{scop.name}\n")


def _c_type(p: Param) -> str:
    argtype(p)                       # UnsupportedError for a type ctypes cannot pass
    return p.ctype


def build_library(source: str, opt: str = "-O2") -> Path:
    """Compile ``source`` (already with the prelude) into a shared library, cached
    on disk by hash; returns its path.  CompileError carries the compiler log."""
    return ccompile.shared_library(source, compile_flags(opt), "cpu", "ref",
                                   "the CPU reference")


def load_library(path: Path) -> ctypes.CDLL:
    lib = _LIBS.get(str(path))
    if lib is None:
        lib = _LIBS[str(path)] = ctypes.CDLL(str(path))
        if hasattr(lib, "pm_guard_install"):
            guard.install(lib)
    return lib


def argtype(p: Param):
    """The ctypes type one parameter is passed as (arrays as data pointers)."""
    if p.kind == "array":
        return ctypes.c_void_p
    try:
        return CTYPES[p.ctype]
    except KeyError:
        raise UnsupportedError(f"parameter {p.name}: C type {p.ctype!r} is not supported "
                               f"by the CPU reference") from None


class CpuReference:
    """The user's C function, compiled once, callable on NumPy arrays.

    ``CpuReference(scop).run({"N": 64, "alpha": 1.5, "A": a, ...})`` calls the
    function with the arguments in signature order and returns the seconds the
    call took; arrays are modified in place.
    """

    def __init__(self, scop: Scop, opt: str = "-O2"):
        if scop.language != "c":
            raise UnsupportedError(f"no CPU reference for {scop.language!r} sources yet")
        self.scop = scop
        self.opt = opt
        self.source = reference_source(scop.source, scop)
        self.path = build_library(self.source, opt)
        lib = self._lib = load_library(self.path)
        try:
            fn = getattr(lib, f"pm_guarded_{scop.name}")
        except AttributeError:
            raise CompileError(f"the compiled reference has no function {scop.name!r} "
                               f"(is it static?)") from None
        # a private function object, so argtypes never clash between references
        self._fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                    *[argtype(p) for p in scop.params])(
            ctypes.cast(fn, ctypes.c_void_p).value)

    def arguments(self, args: Mapping[str, object]) -> list:
        """The ctypes argument list in signature order; checks what it is given."""
        missing = [p.name for p in self.scop.params if p.name not in args]
        if missing:
            raise InputError(f"{self.scop.name}: no value for {', '.join(missing)}")
        return [self._argument(p, args[p.name]) for p in self.scop.params]

    def _argument(self, p: Param, value):
        if p.kind != "array":
            return argtype(p)(value)
        ccompile.check_pointer_array(value, np.dtype(DTYPES[p.ctype]), p.name,
                                     "the CPU reference")
        return ctypes.c_void_p(value.ctypes.data)

    def run(self, args: Mapping[str, object]) -> float:
        """Call the function (arrays modified in place); returns the call's seconds.
        UserCodeError when the user's code faults (division by zero, ...);
        RunInterrupted, at once, on a SIGINT (:func:`guard.interruptible`)."""
        argv = self.arguments(args)
        return guard.call(self._fn, argv, self.scop, "the CPU reference", self._lib,
                          asynchronous=True)


__all__ = ["CpuReference", "build_library", "reference_source", "cache_dir",
           "compile_flags", "PRELUDE"]
