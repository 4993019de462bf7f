"""Python front-end errors (issue 18): every one located at a line AND a column,
one paragraph, no traceback; malformed annotations refused; the plain-Python
fallback of a ``--python`` cell never shows a chained traceback and leaves the
arrays untouched when the function fails."""
from __future__ import annotations

import numpy as np
import pytest

from polymagic.errors import PolymagicError, SourceError, UnsupportedError
from polymagic.frontend.python import parse_python

BODY = "\n    for i in range(N):\n        A[i] = 1.0\n"


@pytest.mark.parametrize("ann,col,word", [
    ("'double[N]['", 18, "malformed array annotation"),
    ("'double[N]]'", 18, "malformed array annotation"),
    ("'double[N]x'", 18, "malformed array annotation"),
    ("'double N]'", 18, "unsupported annotation"),
    ("'double[]'", 18, "needs extents"),
    ("'double[N][+]'", 18, "not an expression"),
    ("'complex[N]'", 18, "unknown element type"),
    ("list", 18, "unsupported annotation"),
    ("'double[M]'", 1, "not an int parameter"),
])
def test_bad_annotation_is_located(ann, col, word):
    src = f"def f(N: int, A: {ann}):" + BODY
    with pytest.raises(UnsupportedError) as e:
        parse_python(src)
    assert word in str(e.value)
    assert e.value.line == 1 and e.value.col == col, str(e.value)
    assert f"line 1, column {col}" in str(e.value)


@pytest.mark.parametrize("src,line,col,word", [
    ("def f(N: int, A: 'double[N]'):\n    for i in range(N)\n        A[i] = 1.0\n", 2, 22,
     "syntax error"),
    ("def f(N: int, A: 'double[N]'):\n    A[0] = (1.0\n", 2, 12, "never closed"),
    ("def f(N, A: 'double[N]'):" + BODY, 1, 7, "has no type"),
    ("def f(N: int, A: 'double[N]'):\n    while N > 0:\n        A[0] = 1.0\n", 2, 5,
     "while"),
    ("def f(N: int, A: 'double[N]'):\n    for i in range(N):\n        A[i * i] = 1.0\n", 3, 9,
     "non-affine"),
    ("def f(N: int, pm_x: 'double[N]'):\n    pass\n", 1, 15, "reserved"),
    ("x = 1\ndef f(N: int, A: 'double[N]'):" + BODY, 1, 1, "one function"),
    ("def f(N: int, A: 'double[N]'):" + BODY + "def g():\n    pass\n", 1, 1,
     "exactly one function"),
])
def test_python_errors_have_line_and_column(src, line, col, word):
    with pytest.raises(SourceError) as e:
        parse_python(src)
    msg = str(e.value)
    assert word in msg and "Traceback" not in msg, msg
    assert e.value.line == line and (col == 0 or e.value.col == col), msg
    assert e.value.col is not None and f"line {e.value.line}, column {e.value.col}" in msg


RET = "def f(N: int, A: 'double[N]'){ann}:" + BODY + "    return {value}\n"


@pytest.mark.parametrize("ann,value,word", [
    ("", "A", "returns the array A"),
    (" -> 'double[N]'", "A", "returns the array A"),
    (" -> float", "A[1:3]", "returns the array A"),
    (" -> float", "2.0 * A", "returns the array A"),
    (" -> float", "A[0], A[1]", "returns several values"),
    (" -> 'double[N]'", "A[0]", "annotated -> double[N]"),
])
def test_returned_array_is_refused_at_its_return(ann, value, word):
    """Only one scalar comes back: the error is at the return statement (line 4,
    column 5), not at the signature's missing annotation."""
    with pytest.raises(UnsupportedError) as e:
        parse_python(RET.format(ann=ann, value=value))
    msg = str(e.value)
    assert word in msg and "only one scalar" in msg and "written in place" in msg, msg
    assert (e.value.line, e.value.col) == (4, 5) and "line 4, column 5" in msg


def _magic(cell: str, ns: dict):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "polymagic")
    shell.user_ns.update(ns)
    try:
        with capture_output() as out:
            result = shell.run_cell(cell)
    finally:
        for k in ns:
            shell.user_ns.pop(k, None)
    return result, out.stdout + out.stderr


def test_magic_syntax_error_is_one_paragraph():
    result, text = _magic("%%polycuda --python --size N=8\n"
                          "def f(N: int, A: 'double[N]'):\n    for i in range(N)\n"
                          "        A[i] = 1.0\n", {"A": np.zeros(8)})
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert "Traceback" not in text and "During handling" not in text, text
    assert "line 2, column 22" in text


def test_magic_plain_python_failure_leaves_arrays_untouched():
    a = np.arange(8.0)
    result, text = _magic("%%polycuda --python --size N=8\n"
                          "def f(N: int, A: 'double[N]'):\n    for i in range(N):\n"
                          "        A[i] = 0.0\n        A[i * i] = 1.0\n", {"A": a})
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert "Traceback" not in text and "IndexError" in text and "line 4 of the cell" in text
    assert np.array_equal(a, np.arange(8.0))


def test_magic_malformed_annotation_is_named_and_falls_back():
    a = np.zeros(8)
    result, text = _magic("%%polycuda --python --size N=8\n"
                          "def f(N: int, A: 'double[N]['):\n    for i in range(N):\n"
                          "        A[i] = 2.0\n", {"A": a})
    assert result.error_in_exec is None, text
    assert "malformed array annotation" in text and "line 1, column 18" in text
    assert np.all(a == 2.0)          # ran as plain Python, as seed 002 §2.3 says


def test_plain_python_errors_are_polymagic_errors():
    from polymagic.api.python import run_as_python
    from polymagic.options import parse_options
    err = SourceError("x", 1, 1)
    with pytest.raises(PolymagicError):
        run_as_python("def f(:\n  pass\n", parse_options(""), {}, err)
    with pytest.raises(PolymagicError, match="ZeroDivisionError"):
        run_as_python("def f(N: int):\n    x = 1 / 0\n", parse_options("--size N=2"), {}, err)
