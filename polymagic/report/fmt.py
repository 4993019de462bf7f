"""Small formatting helpers shared by the text and HTML reports."""
from __future__ import annotations

import math

from ..runtime.run import RunReport


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


def check_line(report: RunReport) -> str:
    """The one-line verdict of the comparison against the CPU reference."""
    if not report.checked:
        state = "OK (not checked)" if report.ok else "FAILED"
        return f"check: {state}: device result not compared with the CPU reference"
    errs = f"max abs err {error(report.max_abs_err)}, max rel err {error(report.max_rel_err)}"
    if report.ok:
        return f"check: OK: matches the CPU reference ({errs})"
    text = f"check: MISMATCH: {report.mismatches} element(s) differ from the CPU reference ({errs})"
    if report.first_mismatch:
        text += f"; first at {index(report.first_mismatch)}"
    return text


def times(report: RunReport, compile_s: float | None) -> list[tuple[str, str]]:
    """(label, value) rows of the timing table, in pipeline order (the copies only on
    the GPU, the only target that has them)."""
    launches = report.launches
    kern = f"{seconds(report.device_s)} ({launches} launch{'es' if launches != 1 else ''})"
    rows = [
        ("compile", seconds(compile_s)),
        ("CPU reference", seconds(report.cpu_s)),
        (f"kernels on the {report.target}" if report.target != "gpu" else "kernels on the GPU",
         kern),
    ]
    if report.target == "gpu":
        rows += [("H2D copies", seconds(report.h2d_s)), ("D2H copies", seconds(report.d2h_s))]
    return rows


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


#: Warp-transaction fields of an emulator kernel's counters (runtime.emulator.TX_FIELDS).
_TX = ("load_requests", "load_sectors", "load_lines",
       "store_requests", "store_sectors", "store_lines")


def transactions(counters: dict | None) -> dict | None:
    """Warp-transaction totals of an emulator run's counters (seed 003 §6.3), or
    None when they were not counted (GPU, openmp, counting off or gave up).

    ``transactions``: 32-byte sectors of all global loads and stores (what nvprof
    calls gld/gst transactions); ``requests``: warp-wide executions of an access
    site; ``transactions_per_request`` and its load/store parts; ``lines``:
    128-byte lines; ``per_kernel``: the same for each kernel.  Fully coalesced: 4 sectors per request for 4-byte elements
    (32 × 4 B = 128 B), 8 for 8-byte ones; 32 when each thread hits its own sector."""
    per = (counters or {}).get("transactions")
    if per is None:
        return None
    out = _tx_summary({f: sum(int(c.get(f, 0)) for c in per.values()) for f in _TX})
    out["per_kernel"] = {k: _tx_summary({f: int(c.get(f, 0)) for f in _TX})
                         for k, c in per.items()}
    return out


def _tx_summary(t: dict) -> dict:
    """Requests, sectors, lines and per-request ratios of one set of counts."""
    def ratio(a, b):
        return a / b if b else None
    req = t["load_requests"] + t["store_requests"]
    out = {"transactions": t["load_sectors"] + t["store_sectors"], "requests": req,
           "lines": t["load_lines"] + t["store_lines"], **t}
    out["transactions_per_request"] = ratio(out["transactions"], req)
    out["load_transactions_per_request"] = ratio(t["load_sectors"], t["load_requests"])
    out["store_transactions_per_request"] = ratio(t["store_sectors"], t["store_requests"])
    return out


def coalesced_sectors(element_bytes: set[int] | None) -> str:
    """What a fully coalesced warp request touches, for the arrays' element sizes:
    ``"4"`` (4-byte elements: 32 × 4 B = 128 B = 4 sectors), ``"8"`` (8-byte), or
    ``"4 (8 for 8-byte elements)"`` when both occur."""
    sizes = sorted(b for b in (element_bytes or {4}) if b in (4, 8)) or [4]
    if sizes == [4, 8]:
        return "4 (8 for 8-byte elements)"
    return str(sizes[0])


def memory_line(report: RunReport, element_bytes: set[int] | None = None) -> str | None:
    """``memory: N global loads, M stores; S sectors per warp request (...)`` for
    emulator runs (None on the GPU or without counters): what the kernels moved and
    how coalesced it was (:func:`transactions`; the glossary's words)."""
    cnt = report.counters or {}
    if report.target == "gpu" or "loads" not in cnt:
        return None
    text = f"memory: {cnt['loads']:,} global loads, {cnt.get('stores', 0):,} stores"
    tx = transactions(cnt)
    if tx:
        def r(x):
            return "–" if x is None else f"{x:.3g}"
        text += (f"; {r(tx['transactions_per_request'])} sectors per warp request (loads "
                 f"{r(tx['load_transactions_per_request'])}, stores "
                 f"{r(tx['store_transactions_per_request'])}; fully coalesced is "
                 f"{coalesced_sectors(element_bytes)})")
        if len(tx["per_kernel"]) > 1:
            text += "; by kernel: " + ", ".join(
                f"{k} {r(v['transactions_per_request'])}" for k, v in tx["per_kernel"].items())
    return text
