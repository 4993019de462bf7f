"""Machine-readable report (``--json``): one flat, JSON-safe dict.

Scripts depend on these keys; add keys freely, never rename or remove one.
Non-finite floats (nan, inf) become ``null`` so the output is strict JSON.
"""
from __future__ import annotations

import math
from typing import Any

from .. import kir
from ..compiler import Compiled
from ..runtime.run import RunReport
from . import fmt


def clean(x: Any) -> Any:
    """Recursively turn numpy scalars, tuples and non-finite floats into JSON values."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [clean(v) for v in x]
    item = getattr(x, "item", None)          # numpy scalar
    if callable(item) and getattr(x, "shape", None) == ():
        return clean(item())
    tolist = getattr(x, "tolist", None)      # numpy array
    if callable(tolist):
        return clean(tolist())
    return str(x)


def _first_mismatch(first) -> dict | None:
    if not first:
        return None
    return {"array": str(first[0]), "index": [int(i) for i in (first[1] or ())]}


def shared_bytes(program: kir.Program) -> int:
    """The largest shared memory any kernel's block declares (bytes)."""
    import numpy as np
    from ..dtypes import DTYPES
    best = 0
    for k in program.kernels.values():
        total = 0
        for d in k.shared:
            n = 1
            for e in d.shape:
                n *= e
            total += n * np.dtype(DTYPES[d.ctype]).itemsize
        best = max(best, total)
    return best


def to_json(report: RunReport, compiled: Compiled) -> dict:
    """The report as a dict for ``json.dumps`` (keys documented in README.md)."""
    program = compiled.program
    kernels = program.kernels
    tx = fmt.transactions(report.counters) if report.target != "gpu" else None
    return clean({
        "ok": bool(report.ok),
        "function": compiled.scop.name,
        "target": report.target,
        "target_note": report.target_note,
        "checked": bool(report.checked),
        "max_abs_err": report.max_abs_err,
        "max_rel_err": report.max_rel_err,
        "mismatches": report.mismatches,
        "first_mismatch": _first_mismatch(report.first_mismatch),
        "kernels": report.launches,
        "kernel_names": list(kernels),
        "compile_s": compiled.compile_s,
        "cpu_s": report.cpu_s,
        "device_s": report.device_s,
        "h2d_s": report.h2d_s,
        "d2h_s": report.d2h_s,
        "bytes_h2d": report.bytes_h2d,
        "bytes_d2h": report.bytes_d2h,
        "transfers": report.transfers,
        "sizes": report.sizes,
        "summary": compiled.summary,
        "notes": [str(n) for n in compiled.notes],
        "note_records": [n.as_dict() for n in compiled.notes],
        "per_array": report.per_array,
        "counters": report.counters,
        "shared_bytes": shared_bytes(program),
        "global_loads": (report.counters or {}).get("loads") if report.target != "gpu" else None,
        "global_stores": (report.counters or {}).get("stores") if report.target != "gpu" else None,
        "global_transactions": (tx or {}).get("transactions"),
        "transactions_per_request": (tx or {}).get("transactions_per_request"),
        "transactions": tx,
        "wrote_back": report.wrote_back,
        "returned": report.returned,
        "message": report.message,
    })
