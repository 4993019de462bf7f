"""Hygienic names: the generated identifiers never capture or shadow the user's.

Generated code mixes the user's identifiers (parameters, arrays, expanded locals)
with its own: loop iterators ``pm_c3``, register arrays ``pm_r0_C``, helper macros
``pm_min``, the emulator's runtime (``pm_*``/``PM_*``), shared buffers ``sh0_A``,
localised buffers ``lc0_A`` and kernels ``kernel0``.  Two rules keep them apart
(issue 18: a parameter named ``sh0_A`` was shadowed inside the kernel, silently):

* the ``pm_`` namespace (any case) and ``__`` belong to the generated code, and a
  few names the printed CUDA/C needs as they are (CUDA's built-in variables, the
  macros of the C headers the emulator and the CPU reference include) may not
  name the user's variables: the front ends refuse them, naming the declaration
  (and isl's keywords may not name a size parameter or a loop iterator);
* the short stems of shared and localised buffers stay readable (``sh0_A``) unless
  a user identifier begins with them; then that compile names its buffers in the
  reserved namespace instead (``pm_sh0_A``), consistently in the CUDA, the emulator
  C, the OpenMP C and the host code, which all print the buffer's one name.

Kernel names (``kernel0``) need no rule: they are only ever referred to by
strings (the launch), and inside a kernel a parameter of the same name merely
hides the kernel's own function name, which the kernel never uses.
"""
from __future__ import annotations

from collections.abc import Iterable

#: the prefix of every name the generated code makes for itself (iterators, registers,
#: kernel marks ``pm_kernel0``, runtime helpers)
GENERATED_PREFIX = "pm_"
#: prefixes of the generated code's namespace (C reserves ``__`` for the compiler)
RESERVED_PREFIXES = (GENERATED_PREFIX, "__")
#: CUDA built-in variables the kernels read by name
CUDA_BUILTINS = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"})
#: object-like macros of the headers the emulator and the CPU reference include
#: (<math.h>, <limits.h>, <stdio.h>, <stdlib.h>, <stdint.h>, ...): a variable so
#: named would be replaced by the preprocessor
HEADER_MACROS = frozenset({
    "NULL", "EOF", "BUFSIZ", "FILENAME_MAX", "RAND_MAX", "EXIT_SUCCESS", "EXIT_FAILURE",
    "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF", "M_PI", "M_E", "M_SQRT2", "M_LN2",
    "FP_NAN", "FP_INFINITE", "FP_ZERO", "FP_NORMAL", "FP_SUBNORMAL",
    "CHAR_BIT", "INT_MAX", "INT_MIN", "UINT_MAX", "LONG_MAX", "LONG_MIN", "ULONG_MAX",
    "LLONG_MAX", "LLONG_MIN", "SHRT_MAX", "SHRT_MIN", "SIZE_MAX", "INT32_MAX", "INT32_MIN",
    "INT64_MAX", "INT64_MIN", "MAP_FAILED", "MAP_PRIVATE", "MAP_ANONYMOUS", "PROT_NONE",
    "PROT_READ", "PROT_WRITE"})

#: words isl's parser takes as keywords: a size parameter or loop iterator so named
#: makes the polyhedral model unreadable
ISL_KEYWORDS = frozenset({"min", "max", "floor", "ceil", "mod", "exists", "and", "or", "not",
                          "implies", "true", "false", "infty", "NaN", "rat", "ceild", "floord"})


def generated(stem: str) -> str:
    """The generated code's name for ``stem``: ``pm_<stem>`` (``kernel0`` ->
    ``pm_kernel0``), in the namespace no user identifier may enter."""
    return GENERATED_PREFIX + stem


def is_generated(name: str) -> bool:
    """Is ``name`` in the generated code's namespace (``pm_...``, as written: the user's
    ``PM_x`` is refused by the front ends, see :func:`reserved_reason`)?"""
    return name.startswith(GENERATED_PREFIX)


def strip_generated(name: str) -> str:
    """``name`` without the generated prefix (``pm_kernel0`` -> ``kernel0``, the name
    the reports and the Kernel IR give a kernel); a name without it is returned as
    it is."""
    return name.removeprefix(GENERATED_PREFIX)


def reserved_reason(name: str) -> str | None:
    """Why ``name`` may not name a user's variable, or None when it may."""
    if name.lower().startswith(GENERATED_PREFIX):
        return (f"the name {name!r} is reserved: names beginning with 'pm_' (in any case) "
                "belong to the code polymagic generates; rename it")
    if name.startswith("__"):
        return (f"the name {name!r} is reserved: names beginning with '__' belong to the "
                "C and CUDA compilers; rename it")
    if name in CUDA_BUILTINS:
        return (f"the name {name!r} is a CUDA built-in variable that the generated kernels "
                "use; rename it")
    if name in HEADER_MACROS:
        return (f"the name {name!r} is a macro of the C headers the generated code "
                "includes; rename it")
    return None


def isl_keyword_reason(name: str) -> str | None:
    """Why ``name`` may not name a size parameter or a loop iterator (those become
    dimensions of isl sets, whose parser takes ``min``, ``mod``... as keywords), or
    None.  Arrays and floating-point scalars may be so named."""
    if name in ISL_KEYWORDS:
        return (f"the name {name!r} is a keyword of the polyhedral library (isl) that "
                "models the loops, and cannot name a size parameter or a loop iterator; "
                "rename it")
    return None


def user_identifiers(scop) -> frozenset[str]:
    """Every identifier of the user's that generated code may print or must not hide:
    the function, its parameters, arrays (expanded locals too), constants and loop
    iterators."""
    names = {scop.name, *(p.name for p in scop.params), *scop.arrays, *scop.constants,
             *scop.iterator_ctypes}
    for s in scop.statements:
        names.update(s.iterators)
    return frozenset(names)


def clashes(stem: str, user: Iterable[str]) -> bool:
    """Does a user identifier begin with ``stem`` (so that a generated name
    ``<stem>...`` could be one of the user's)?"""
    return any(u.startswith(stem) for u in user)


def buffer_stem(scop, stem: str) -> str:
    """``stem`` (``sh0``, ``sh0t1``, ``lc0``) for the buffers of one kernel, or
    ``pm_<stem>`` when a user identifier begins with it (see the module docstring)."""
    return generated(stem) if clashes(stem, user_identifiers(scop)) else stem


__all__ = ["GENERATED_PREFIX", "RESERVED_PREFIXES", "CUDA_BUILTINS", "HEADER_MACROS",
           "ISL_KEYWORDS", "generated", "is_generated", "strip_generated", "reserved_reason",
           "isl_keyword_reason", "user_identifiers", "clashes", "buffer_stem"]
