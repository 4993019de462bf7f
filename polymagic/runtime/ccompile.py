"""Compiling generated C into cached shared libraries (CPU reference and emulator).

One place for the C compiler's name (``$CC`` or ``cc``), the on-disk cache
(``$POLYMAGIC_CACHE`` or ``~/.cache/polymagic``), atomic writes (several kernels or
processes may compile at once) and turning a compiler failure into a CompileError
that carries the log; and the check of the arrays whose raw pointers those libraries
receive.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import CompileError, InputError


#: floating-point flags of every C build (the CPU reference, the emulator, the OpenMP
#: target): no contraction of ``a*b + c`` into a fused multiply-add.  GCC contracts
#: by default in GNU C mode wherever the target has FMAs (``-march=native`` on x86,
#: any aarch64 build), and a fused operation rounds once where the reference rounds
#: twice: an ill-conditioned kernel (a Gram-Schmidt on more columns than rows, an LU
#: solve) then differs from the reference far beyond the check's tolerance with
#: nothing wrong in the code (issue 32).  With the same rounding rules everywhere, a
#: target that keeps each element's order of operations matches bit for bit.
FP_FLAGS = ("-ffp-contract=off",)


def cache_dir(sub: str) -> Path:
    """``$POLYMAGIC_CACHE/<sub>`` or ``~/.cache/polymagic/<sub>`` (created)."""
    root = os.environ.get("POLYMAGIC_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "polymagic")
    d = Path(root) / sub
    d.mkdir(parents=True, exist_ok=True)
    return d


def compiler() -> str:
    """The C compiler: ``$CC`` when set, else ``cc``."""
    return os.environ.get("CC") or "cc"


def write_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + "-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        raise CompileError(f"no C compiler: {cmd[0]!r} not found (set $CC) — {what} "
                           "needs one") from None


def shared_library(source: str, flags: Sequence[str], sub: str, stem: str, what: str,
                   optional_flags: Sequence[str] = ()) -> Path:
    """Compile ``source`` with ``flags`` into ``<cache>/<sub>/<stem>-<hash>.so`` (reused
    when it exists).  ``optional_flags`` are dropped on a second try if the compiler
    rejects them (e.g. ``-fopenmp`` without libomp)."""
    cc = compiler()
    key = hashlib.sha256("\0".join([cc, *flags, source]).encode()).hexdigest()[:24]
    d = cache_dir(sub)
    lib = d / f"{stem}-{key}.so"
    if lib.exists():
        return lib
    c_file = write_atomic(d / f"{stem}-{key}.c", source.encode())
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{stem}-{key}-", suffix=".so")
    os.close(fd)
    try:
        cmd = [cc, *flags, "-o", tmp, str(c_file), "-lm"]
        p = _run(cmd, what)
        if p.returncode != 0 and any(f in flags for f in optional_flags):
            retry = [c for c in cmd if c not in optional_flags]
            p2 = _run(retry, what)
            if p2.returncode == 0:
                p = p2
        if p.returncode != 0:
            raise CompileError(f"the C compiler rejected the source of {what} "
                               f"({' '.join(shlex.quote(c) for c in cmd)}):\n"
                               f"{(p.stderr + p.stdout).strip()}")
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return lib


def check_pointer_array(value, want: np.dtype, label: str, who: str) -> None:
    """InputError unless ``value`` is a writeable C-contiguous NumPy array of ``want``:
    a compiled library receives only its data pointer (``label`` names the array in
    the message, ``who`` the library, e.g. 'the emulator')."""
    if not isinstance(value, np.ndarray) or value.dtype != want:
        raise InputError(f"{label}: {who} needs a NumPy array of {want}, got "
                         f"{type(value).__name__} {getattr(value, 'dtype', '')}")
    if not value.flags.c_contiguous or not value.flags.writeable:
        raise InputError(f"{label}: {who} needs a writeable C-contiguous array")
