"""Compile CUDA C++ to PTX with NVRTC, without a GPU.

The tests use this to check that every generated kernel compiles for the
architectures we target (sm_80, sm_90) on machines that have no GPU and no CuPy:
NVRTC is a plain library (``nvidia-cuda-nvrtc``) reached through
``cuda.bindings.nvrtc`` (cuda-python).  The GPU runtime itself compiles through
CuPy's ``RawModule``; this module never touches a device.
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


def compile_cuda(source: str, arch: str = "sm_90", name: str = "polymagic.cu",
                 extra_options: tuple[str, ...] = ()) -> bytes:
    """Compile CUDA source for ``arch`` (``sm_80``, ``sm_90``, ``compute_90``...) and
    return the PTX.  A compilation error raises :class:`CompileError` carrying the
    NVRTC program log with the generated source numbered below it."""
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
        return _ptx(nvrtc, prog)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def numbered(source: str) -> str:
    """The source with line numbers, so compiler messages can be located."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


__all__ = ["compile_cuda", "available", "version", "numbered", "BASE_OPTIONS"]
