"""The PolyBench/C 4.2 collection of ``tests/polybench/``: names, sizes, inputs.

Shared by ``tests/test_polybench.py`` and ``benchmarks/polybench_openmp.py``.

* :data:`KERNELS`: the 30 kernels, one ``<name>.c`` each, written as the suite
  writes them (its header's macros, ``static void kernel_<name>``, ``#pragma scop``,
  constant-size arrays, ``_PB_N`` loop bounds that are the int parameters).
* :func:`source`: a file's text with ``#define <DATASET>`` put first, as a user
  would pick a dataset in a cell; :func:`sizes`: that dataset's values of the
  size parameters, read from the file's own ``#ifdef <DATASET>`` block (one
  source of truth), lower-cased as the kernel's int parameters.
* :func:`inputs`: arrays and scalars for kernels whose seeded random inputs make
  no numerical sense (a matrix that is not positive definite for cholesky, a
  triangular solve whose values grow without bound, ...), each written after
  the suite's ``init_array`` for that kernel.  The others run on polymagic's
  seeded random inputs.
"""
from __future__ import annotations

import pathlib
import re
from typing import Callable

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent

KERNELS = ("correlation", "covariance", "gemm", "gemver", "gesummv", "symm", "syr2k",
           "syrk", "trmm", "2mm", "3mm", "atax", "bicg", "doitgen", "mvt", "cholesky",
           "durbin", "gramschmidt", "lu", "ludcmp", "trisolv", "deriche",
           "floyd-warshall", "nussinov", "adi", "fdtd-2d", "heat-3d", "jacobi-1d",
           "jacobi-2d", "seidel-2d")

DATASETS = ("MINI_DATASET", "SMALL_DATASET", "MEDIUM_DATASET")


def path(name: str) -> pathlib.Path:
    return HERE / f"{name}.c"


def source(name: str, dataset: str = "MINI_DATASET", defines: dict | None = None) -> str:
    """The kernel's file with ``#define dataset`` (and any ``defines``, which set
    the size macros themselves, as ``-DN=...`` would) put before its first line."""
    head = f"#define {dataset}\n" + "".join(f"#define {k} {v}\n"
                                            for k, v in (defines or {}).items())
    return head + path(name).read_text()


def sizes(name: str, dataset: str = "MINI_DATASET") -> dict[str, int]:
    """The size parameters' values for ``dataset``: the file's ``# define NI 20``
    lines under ``# ifdef dataset``, as ``{"ni": 20}``."""
    text = path(name).read_text()
    block = re.search(rf"#\s*ifdef {dataset}\n(.*?)#\s*endif", text, re.S)
    if block is None:
        raise KeyError(f"{name}.c has no {dataset} block")
    return {m.group(1).lower(): int(m.group(2))
            for m in re.finditer(r"#\s*define\s+(\w+)\s+(\d+)", block.group(1))}


# ---- inputs after the suite's init_array ---------------------------------------

def _positive_definite(n: int) -> np.ndarray:
    """cholesky's, lu's and ludcmp's A: a lower triangle made positive definite by
    B = A A^T (the suite's init_array)."""
    i, j = np.indices((n, n))
    a = np.where(j <= i, (-j % n) / n + 1.0, 0.0)
    np.fill_diagonal(a, 1.0)
    return a @ a.T


def _correlation(s: dict[str, int]) -> dict:
    m, n = s["m"], s["n"]
    i, j = np.indices((n, m))
    return {"float_n": float(n), "data": (i * j) / m + i}


def _covariance(s: dict[str, int]) -> dict:
    m, n = s["m"], s["n"]
    i, j = np.indices((n, m))
    return {"float_n": float(n), "data": (i * j) / m}


def _cholesky(s: dict[str, int]) -> dict:
    return {"A": _positive_definite(s["n"])}


def _ludcmp(s: dict[str, int]) -> dict:
    n = s["n"]
    fn = float(n)
    b = (np.arange(n) + 1) / fn / 2.0 + 4
    return {"A": _positive_definite(n), "b": b, "x": np.zeros(n), "y": np.zeros(n)}


def _durbin(s: dict[str, int]) -> dict:
    n = s["n"]
    return {"r": (n + 1 - np.arange(n)).astype(np.float64)}


def _gramschmidt(s: dict[str, int]) -> dict:
    m, n = s["m"], s["n"]
    i, j = np.indices((m, n))
    return {"A": ((i * j) % m) / m * 100 + 10, "Q": np.zeros((m, n)), "R": np.zeros((n, n))}


def _trisolv(s: dict[str, int]) -> dict:
    n = s["n"]
    i, j = np.indices((n, n))
    return {"x": np.full(n, -999.0), "b": np.arange(n, dtype=np.float64),
            "L": np.where(j <= i, (i + n - j + 1) * 2.0 / n, 0.0)}


def _deriche(s: dict[str, int]) -> dict:
    w, h = s["w"], s["h"]
    i, j = np.indices((w, h))
    return {"alpha": 0.25,
            "imgIn": (((313 * i + 991 * j) % 65536) / np.float32(65535.0)).astype(np.float32)}


def _floyd_warshall(s: dict[str, int]) -> dict:
    n = s["n"]
    i, j = np.indices((n, n))
    path_ = i * j % 7 + 1
    far = ((i + j) % 13 == 0) | ((i + j) % 7 == 0) | ((i + j) % 11 == 0)
    return {"path": np.where(far, 999, path_).astype(np.int32)}


def _nussinov(s: dict[str, int]) -> dict:
    n = s["n"]
    return {"seq": ((np.arange(n) + 1) % 4).astype(np.int8),
            "table": np.zeros((n, n), dtype=np.int32)}


def _adi(s: dict[str, int]) -> dict:
    n = s["n"]
    i, j = np.indices((n, n))
    return {"u": (i + n - j) / n}


#: kernel -> its inputs at given sizes (arrays by C name, scalars as numbers)
INITS: dict[str, Callable[[dict[str, int]], dict]] = {
    "correlation": _correlation, "covariance": _covariance, "cholesky": _cholesky,
    "lu": _cholesky, "ludcmp": _ludcmp, "durbin": _durbin, "gramschmidt": _gramschmidt,
    "trisolv": _trisolv, "deriche": _deriche, "floyd-warshall": _floyd_warshall,
    "nussinov": _nussinov, "adi": _adi,
}


def inputs(name: str, s: dict[str, int]) -> dict:
    """Fresh inputs for ``name`` at sizes ``s`` (empty: polymagic's seeded random)."""
    init = INITS.get(name)
    if init is None:
        return {}
    return {k: np.ascontiguousarray(v) if isinstance(v, np.ndarray) else v
            for k, v in init(s).items()}
