"""The bad-input corpus (tests/corpus/*.c, *.pycell): every mistake gets a clear error.

Each corpus file is a cell's C source (``.pycell``: a Python function, compiled
with the Python front end, the magic gets ``--python``; not ``.py``, since some are
deliberately not valid Python) behind a header of ``//`` lines (``#`` in Python)::

    // expect: 5:14 non-affine        line:column of the problem (or "-"), key word;
                                      or "ok": the run must succeed and check
    // options: --size N=8 --tile 0   the option line (magic) / arguments (CLI)
    // namespace: {"A": ["float32", [8, 8]], "B": "=A"}   notebook variables
    // inputs: {"A": ["object", [8, 8]]}  an .npz written for the entry; its path
                                      replaces {inputs} in the options
    // via: magic | callable          also through the magic / the bound callable
    // xfail: docs/fuzz-findings.md#7  (optional) an open bug

Namespace values: ``[dtype, shape]`` (seeded random array; a third item
``"readonly"`` makes it read-only, ``"fortran"`` Fortran order, ``"zeros"``
all zeros), ``"=EXPR"`` (an expression of the arrays
before it, e.g. ``"=A"`` or ``"=A.T"``: aliasing), ``"list"``/``"string"`` (not
an array), or a number.

Every entry runs through the API (``parse_options`` → ``compile_source`` →
``run`` with the namespace) in a worker process with a timeout, and, with
``via``, through ``%%polycuda`` in an IPython shell or through the callable the
magic binds.  It must raise a :class:`polymagic.errors.PolymagicError` subclass
(the magic: IPython's ``UsageError``, shown without a traceback) whose message
holds the key word and, for source problems, ``line L, column C``; it must not
hang; and the namespace's arrays must be unchanged afterwards.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from fuzz.pool import Pool

CORPUS = Path(__file__).resolve().parent / "corpus"
TIMEOUT_S = 60


@dataclass
class Entry:
    name: str
    source: str
    line: int | None
    col: int | None
    keyword: str
    options: str = ""
    namespace: dict = field(default_factory=dict)
    via: str = "api"
    xfail: str = ""
    ok: bool = False
    inputs: dict | str | None = None
    language: str = "c"


def parse_entry(path: Path) -> Entry:
    """Read the ``// key: value`` header of a corpus file."""
    source = path.read_text()
    head = {}
    for line in source.splitlines():
        m = re.match(r"(?://|#)\s*(\w+):\s*(.*)$", line)
        if not m:
            break
        head[m.group(1)] = m.group(2).strip()
    where, _, keyword = head["expect"].partition(" ")
    line = col = None
    if where not in ("-", "?:?", "ok"):
        line, col = (int(x) for x in where.split(":"))
    return Entry(path.stem, source, line, col, keyword.strip(), head.get("options", ""),
                 json.loads(head.get("namespace", "{}")), head.get("via", "api"),
                 head.get("xfail", ""), where == "ok",
                 json.loads(head["inputs"]) if "inputs" in head else None,
                 "python" if path.suffix == ".pycell" else "c")


def entries() -> list[Entry]:
    return [parse_entry(p) for p in sorted([*CORPUS.glob("*.c"), *CORPUS.glob("*.pycell")])]


# ---- building the namespace -----------------------------------------------------

def make_value(spec, built: dict, seed: int):
    """One namespace value from its spec (see the module docstring)."""
    if isinstance(spec, list):
        dtype, shape = np.dtype(spec[0]), tuple(spec[1])
        rng = np.random.default_rng(seed)
        if dtype == object:
            a = np.empty(shape, dtype=object)
            a[...] = 1.0
        elif "zeros" in spec[2:]:
            a = np.zeros(shape, dtype)
        else:
            a = (rng.random(shape) * 10).astype(dtype)
        if "fortran" in spec[2:]:
            a = np.asfortranarray(a)
        if "readonly" in spec[2:]:
            a.flags.writeable = False
        return a
    if isinstance(spec, str) and spec.startswith("="):
        return eval(spec[1:], {"np": np}, dict(built))   # noqa: S307 — trusted corpus
    if spec == "list":
        return [[1.0] * 8 for _ in range(8)]
    if spec == "string":
        return "not an array"
    return spec


def make_namespace(specs: dict) -> dict:
    built: dict = {}
    for k, (name, spec) in enumerate(specs.items()):
        built[name] = make_value(spec, built, k)
    return built


def snapshot(ns: dict) -> dict:
    return {k: np.array(v, copy=True) for k, v in ns.items() if isinstance(v, np.ndarray)}


def unchanged(ns: dict, before: dict) -> bool:
    return all(np.array_equal(ns[k], v, equal_nan=v.dtype.kind in "fc")
               if v.dtype != object else bool(np.all(ns[k] == v)) for k, v in before.items())


# ---- the three routes (run inside a worker process) ------------------------------

def write_inputs(e: Entry) -> str:
    """The entry's options, with ``{inputs}`` replaced by the path of an .npz holding
    its ``inputs`` (``"npy"``: a single .npy array; ``"garbage"``: not NumPy at all)."""
    if e.inputs is None:
        return e.options
    import tempfile
    d = tempfile.mkdtemp(prefix="polymagic-corpus-")
    if e.inputs == "garbage":
        path = f"{d}/in.npz"
        with open(path, "wb") as f:
            f.write(b"this is not an npz archive\n" * 4)
    elif e.inputs == "npy":
        path = f"{d}/in.npy"
        np.save(path, np.zeros((8, 8)))
    else:
        path = f"{d}/in.npz"
        np.savez(path, **make_namespace(e.inputs))
    return e.options.replace("{inputs}", path)


def via_api(e: Entry, ns: dict):
    from polymagic.options import parse_options
    from polymagic.compiler import compile_source
    from polymagic.runtime.run import run
    opts = parse_options(write_inputs(e))
    return run(compile_source(e.source, opts, language=e.language), opts, namespace=ns)


def via_callable(e: Entry, ns: dict):
    """Compile with the options (no namespace), then call with the arrays."""
    from polymagic.options import parse_options
    from polymagic.compiler import compile_source
    from polymagic.api.function import make_callable
    opts = parse_options(write_inputs(e))
    fn = make_callable(compile_source(e.source, opts, language=e.language), opts)
    return fn(**ns, **({"check": True} if e.ok else {}))


def via_magic(e: Entry, ns: dict):
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "polymagic")
    shell.user_ns.update(ns)
    try:
        line = write_inputs(e)
        if e.language == "python" and "--python" not in line:
            line += " --python"
        return shell.run_cell_magic("polycuda", line, e.source)
    finally:
        for name in ns:
            shell.user_ns.pop(name, None)


ROUTES = {"api": via_api, "callable": via_callable, "magic": via_magic}


def attempt(e: Entry, route: str) -> dict:
    """Run one route; what it raised, whether the arrays survived."""
    ns = make_namespace(e.namespace)
    before = snapshot(ns)
    t0 = time.perf_counter()
    report = None
    try:
        report = ROUTES[route](e, ns)
        exc = None
    except BaseException as x:     # noqa: BLE001 — the test judges the type
        exc = x
    from IPython.core.error import UsageError
    from polymagic.errors import PolymagicError
    return {"route": route, "seconds": time.perf_counter() - t0,
            "raised": type(exc).__name__ if exc else None,
            "polymagic": isinstance(exc, PolymagicError),
            "usage": isinstance(exc, UsageError),
            "line": getattr(exc, "line", None), "col": getattr(exc, "col", None),
            "message": str(exc) if exc else "", "unchanged": unchanged(ns, before),
            "ok": bool(getattr(report, "ok", route == "magic")) if exc is None else False}


def corpus_job(e: Entry):
    """Worker job: the entry through the API and its ``via`` route."""
    routes = ["api"] + ([e.via] if e.via != "api" else [])
    yield e.name, [attempt(e, r) for r in routes]


# ---- the tests ---------------------------------------------------------------------

ENTRIES = entries()


@pytest.fixture(scope="module")
def results() -> dict:
    """Every entry's attempts, run on all cores with a timeout per entry."""
    out: dict = {}
    jobs = [(corpus_job, (e,), 1) for e in ENTRIES]
    with Pool(2, TIMEOUT_S) as pool:
        for k, got in pool.imap(jobs):
            name = ENTRIES[k].name
            out[name] = got[0][1] if got and got[0][0] == name else "timeout"
    return out


def test_corpus_is_large_enough():
    assert len(ENTRIES) >= 250
    assert sum(e.line is not None for e in ENTRIES) >= 50
    assert {e.via for e in ENTRIES} == {"api", "magic", "callable"}


def _param(e: Entry):
    marks = [pytest.mark.xfail(reason=e.xfail, strict=False)] if e.xfail else []
    return pytest.param(e, id=e.name, marks=marks)


@pytest.mark.parametrize("entry", [_param(e) for e in ENTRIES])
def test_bad_input_gives_a_clear_error(entry, results):
    got = results[entry.name]
    assert got != "timeout", f"no answer within {TIMEOUT_S} s"
    if entry.ok:
        for r in got:
            assert r["raised"] is None and r["ok"], f"[{r['route']}] {r['raised']}: {r['message']}"
        return
    for r in got:
        where = f"[{r['route']}] {r['raised']}: {r['message']}"
        if r["route"] == "magic":
            assert r["usage"], f"the magic let a non-UsageError through: {where}"
        else:
            assert r["polymagic"], f"not a PolymagicError: {where}"
        assert entry.keyword.lower() in r["message"].lower(), where
        assert "Traceback" not in r["message"], where
        if entry.line is not None:
            assert f"line {entry.line}, column {entry.col}" in r["message"], where
            if r["route"] != "magic":
                assert (r["line"], r["col"]) == (entry.line, entry.col), where
        assert r["unchanged"], f"the namespace's arrays changed: {where}"


@pytest.mark.parametrize("name", ["syntax-for-missing-semicolon", "alias-same-array",
                                  "option-block-too-many-threads",
                                  "arith-div-data-zeros-magic", "limit-parens-1000-magic"])
def test_notebook_shows_one_paragraph_without_traceback(name):
    """What a notebook user sees: IPython prints the UsageError's message alone (and
    the shell, this process, survives a division by zero in the user's C)."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    e = next(x for x in ENTRIES if x.name == name)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "polymagic")
    ns = make_namespace(e.namespace)
    before = snapshot(ns)
    shell.user_ns.update(ns)
    try:
        with capture_output() as out:
            result = shell.run_cell(f"%%polycuda {e.options}\n{e.source}")
    finally:
        for k in ns:
            shell.user_ns.pop(k, None)
    text = out.stdout + out.stderr
    assert "Traceback" not in text and "UsageError" in text, text
    assert e.keyword.lower() in text.lower()
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert unchanged(ns, before)
