"""Small formatting helpers shared by the text and HTML reports."""
from __future__ import annotations

import math


def seconds(s: float | None) -> str:
    """A duration with a readable unit: ``'850 µs'``, ``'12.3 ms'``, ``'1.25 s'``."""
    if s is None or not isinstance(s, (int, float)) or math.isnan(s):
        return "–"
    if s < 0:
        return "–"
    if s == 0:
        return "0"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1.0:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def error(x: float | None) -> str:
    """An error magnitude in short scientific notation (``0`` stays ``0``)."""
    if x is None:
        return "–"
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf"
    if x == 0:
        return "0"
    return f"{x:.2e}"


def index(first: tuple | None) -> str:
    """``('C', (3, 5))`` -> ``'C[3, 5]'``; a 0-d array prints as its name."""
    if not first:
        return ""
    name, idx = first[0], tuple(first[1]) if len(first) > 1 and first[1] is not None else ()
    if not idx:
        return str(name)
    return f"{name}[{', '.join(str(int(i)) for i in idx)}]"


def sizes(d: dict | None) -> str:
    """``{'N': 200, 'alpha': 1.5}`` -> ``'N=200, alpha=1.5'``."""
    if not d:
        return ""
    return ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in d.items())


def check_line(report) -> str:
    """The one-line verdict of the comparison against the CPU reference."""
    if not getattr(report, "checked", True):
        state = "OK (not checked)" if report.ok else "FAILED"
        return f"check: {state}: device result not compared with the CPU reference"
    errs = f"max abs err {error(report.max_abs_err)}, max rel err {error(report.max_rel_err)}"
    if report.ok:
        return f"check: OK: matches the CPU reference ({errs})"
    text = f"check: MISMATCH: {report.mismatches} element(s) differ from the CPU reference ({errs})"
    if report.first_mismatch:
        text += f"; first at {index(report.first_mismatch)}"
    return text


def times(report, compile_s: float | None) -> list[tuple[str, str]]:
    """(label, value) rows of the timing table, in pipeline order."""
    launches = getattr(report, "launches", 0)
    kern = f"{seconds(report.device_s)} ({launches} launch{'es' if launches != 1 else ''})"
    return [
        ("compile", seconds(compile_s)),
        ("CPU reference", seconds(report.cpu_s)),
        (f"device kernels [{report.target}]", kern),
        ("H2D copies", seconds(report.h2d_s) if report.target == "gpu" else "–"),
        ("D2H copies", seconds(report.d2h_s) if report.target == "gpu" else "–"),
    ]


def speedup(report) -> str:
    """``'CPU/device 12.5x'`` when both times are known, else ``''``."""
    try:
        if report.cpu_s and report.device_s and report.device_s > 0:
            return f"{report.cpu_s / report.device_s:.3g}x"
    except TypeError:
        pass
    return ""


def fields(info) -> str:
    """A per-array detail dict as ``key=value`` pairs (floats shortened)."""
    if not isinstance(info, dict):
        return str(info)
    parts = []
    for k, v in info.items():
        if isinstance(v, float):
            v = error(v)
        elif isinstance(v, tuple) and k.startswith("first"):
            v = "[" + ", ".join(str(int(i)) for i in v) + "]"
        parts.append(f"{k}={v}")
    return ", ".join(parts)
