"""Compile CUDA C++ to PTX with NVRTC, without a GPU.

The tests use this to check that every generated kernel compiles for the
architectures we target (sm_80, sm_90) on machines that have no GPU and no CuPy:
NVRTC is a plain library (``nvidia-cuda-nvrtc``) reached through
``cuda.bindings.nvrtc`` (cuda-python).  The GPU runtime itself compiles through
CuPy's ``RawModule``; this module never touches a device.

:func:`compile_cubin` returns the machine code (an sm_90 cubin) instead of the PTX,
for static performance figures read from the disassembly
(``benchmarks/static_perf.py``, issue 16 item 7).
"""
from __future__ import annotations

from ..errors import CompileError

#: Options every compilation gets (besides the architecture).  Fast math stays off:
#: results are compared with the CPU reference, so we want IEEE division and sqrt.
BASE_OPTIONS: tuple[str, ...] = ("-std=c++14",)


def _nvrtc():
    """Import NVRTC bindings lazily; CompileError when they are missing."""
    try:
        from cuda.bindings import nvrtc
    except Exception as e:  # ImportError, or a missing/broken libnvrtc
        raise CompileError(f"NVRTC is not available (pip install cuda-bindings "
                           f"nvidia-cuda-nvrtc): {e}") from None
    return nvrtc


def available() -> bool:
    """True when NVRTC can be loaded and answers a version query (never raises)."""
    try:
        nvrtc = _nvrtc()
        err, _major, _minor = nvrtc.nvrtcVersion()
        return err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    except Exception:
        return False


def version() -> tuple[int, int] | None:
    """NVRTC's (major, minor), or None when it is unavailable."""
    try:
        nvrtc = _nvrtc()
        err, major, minor = nvrtc.nvrtcVersion()
        return (major, minor) if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else None
    except Exception:
        return None


def _check(nvrtc, result, what: str) -> None:
    """Raise CompileError for an NVRTC call that did not succeed."""
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(result)
        raise CompileError(f"NVRTC {what} failed: {msg.decode(errors='replace')}")


def _text(buf: bytes) -> str:
    return buf.rstrip(b"\0").decode(errors="replace")


def _log(nvrtc, prog) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buf = b" " * size
    (err,) = nvrtc.nvrtcGetProgramLog(prog, buf)
    return _text(buf) if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else ""


def _ptx(nvrtc, prog) -> bytes:
    err, size = nvrtc.nvrtcGetPTXSize(prog)
    _check(nvrtc, err, "nvrtcGetPTXSize")
    buf = b" " * size
    (err,) = nvrtc.nvrtcGetPTX(prog, buf)
    _check(nvrtc, err, "nvrtcGetPTX")
    return buf.rstrip(b"\0")


def _compile(source: str, arch: str, name: str, extra_options: tuple[str, ...],
             output) -> tuple[bytes, str]:
    """Compile with NVRTC and return ``output(nvrtc, prog)`` (the PTX or the cubin)
    and the program log; a compilation error raises :class:`CompileError` carrying
    the log with the source numbered below it."""
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}".encode()]
        opts += [o.encode() for o in BASE_OPTIONS + tuple(extra_options)]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = _log(nvrtc, prog)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"NVRTC could not compile the generated CUDA for {arch}:\n"
                               f"{log.strip()}\n\n{numbered(source)}")
        return output(nvrtc, prog), log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def compile_cuda(source: str, arch: str = "sm_90", name: str = "polymagic.cu",
                 extra_options: tuple[str, ...] = ()) -> bytes:
    """Compile CUDA source for ``arch`` (``sm_80``, ``sm_90``, ``compute_90``...) and
    return the PTX.  A compilation error raises :class:`CompileError` carrying the
    NVRTC program log with the generated source numbered below it."""
    return _compile(source, arch, name, extra_options, _ptx)[0]


def _cubin(nvrtc, prog) -> bytes:
    err, size = nvrtc.nvrtcGetCUBINSize(prog)
    _check(nvrtc, err, "nvrtcGetCUBINSize")
    if size == 0:
        raise CompileError("NVRTC produced no cubin: give a real architecture (sm_XY), "
                           "not a virtual one (compute_XY)")
    buf = b" " * size
    (err,) = nvrtc.nvrtcGetCUBIN(prog, buf)
    _check(nvrtc, err, "nvrtcGetCUBIN")
    return buf


def compile_cubin_with_log(source: str, arch: str = "sm_90", name: str = "polymagic.cu",
                           extra_options: tuple[str, ...] = ()) -> tuple[bytes, str]:
    """Compile CUDA source to machine code for the real architecture ``arch``
    (``sm_90``...) with the options of :func:`compile_cuda`; return the cubin (an ELF
    image, for ``nvdisasm``/``cuobjdump``) and NVRTC's program log.  With
    ``extra_options=("--ptxas-options=-v",)`` the log carries ptxas's resource usage
    (registers, spill bytes, stack frame, shared memory per kernel), which is what
    ``benchmarks/static_perf.py`` reads; the cubin itself does not depend on it.
    NVRTC compiles PTX to SASS itself when the architecture is a real one
    (``nvrtcGetCUBIN``), so no driver, GPU or ptxas binary is needed."""
    return _compile(source, arch, name, extra_options, _cubin)


def compile_cubin(source: str, arch: str = "sm_90", name: str = "polymagic.cu",
                  extra_options: tuple[str, ...] = ()) -> bytes:
    """The cubin (sm_90 machine code, an ELF image) of CUDA source: see
    :func:`compile_cubin_with_log`.  A compilation error raises :class:`CompileError`."""
    return compile_cubin_with_log(source, arch, name, extra_options)[0]


def numbered(source: str) -> str:
    """The source with line numbers, so compiler messages can be located."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


__all__ = ["compile_cuda", "compile_cubin", "compile_cubin_with_log", "available", "version", "numbered", "BASE_OPTIONS"]
