"""Host driver printer: the Program's host statements as a Python function.

The GPU runtime executes it with a ``launch`` callback (see docs/interfaces.md):
host loops (e.g. time loops that carry dependences, seed 004 §4.1) run in Python,
and each :class:`kir.Launch` becomes ``launch(name, (gx, gy, gz), {host vars})``.
"""
from __future__ import annotations

import keyword

from .. import kir
from ..expr import Int, PyPrinter

_PRELUDE = '''def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _tmod(a, b):
    return a - b * _tdiv(a, b)

'''


#: names the host function itself uses: a size parameter or host variable so named
#: (C allows ``int lambda``, ``int launch``) is renamed in the Python (issue 18)
_HOST_NAMES = frozenset({"ints", "launch", "range", "min", "max", "abs", "_tdiv", "_tmod",
                         "host"}) | frozenset(keyword.kwlist)


def _host_names(program: kir.Program) -> dict[str, str]:
    """The Python names of the size parameters and host variables that would clash
    with Python's keywords or the host function's own names (``pm_py_<name>``: the
    ``pm_`` namespace is the generated code's, see :mod:`polymagic.names`)."""
    used = set(program.size_params)
    for s in kir.walk(program.host):
        if isinstance(s, kir.Loop):
            used.add(s.var)
        elif isinstance(s, kir.Let):
            used.add(s.var)
    return {n: f"pm_py_{n}" for n in sorted(used & _HOST_NAMES)}


def print_host_python(program: kir.Program) -> str:
    """Python source defining ``host(ints, launch)`` for ``program``."""
    pr = PyPrinter(_host_names(program))
    lines = [_PRELUDE, "def host(ints, launch):"]
    for p in program.size_params:
        lines.append(f"    {pr.names.get(p, p)} = ints[{p!r}]")
    body = _stmts(program, program.host, pr, 1)
    lines.extend(body or ["    pass"])
    return "\n".join(lines) + "\n"


def _stmts(program: kir.Program, body: list[kir.Stmt], pr: PyPrinter, depth: int) -> list[str]:
    ind = "    " * depth
    out: list[str] = []
    for s in body:
        if isinstance(s, kir.Loop):
            out.append(f"{ind}for {pr.names.get(s.var, s.var)} in range({pr(s.lower)}, {pr(s.upper)} + 1, {s.step}):")
            out.extend(_stmts(program, s.body, pr, depth + 1) or [f"{ind}    pass"])
        elif isinstance(s, kir.If) and s.cond == Int(1) and not s.orelse:
            out.extend(_stmts(program, s.then, pr, depth))    # a C scope; Python has none
        elif isinstance(s, kir.If):
            out.append(f"{ind}if {pr(s.cond)}:")
            out.extend(_stmts(program, s.then, pr, depth + 1) or [f"{ind}    pass"])
            if s.orelse:
                out.append(f"{ind}else:")
                out.extend(_stmts(program, s.orelse, pr, depth + 1))
        elif isinstance(s, kir.Let):
            out.append(f"{ind}{pr.names.get(s.var, s.var)} = {pr(s.value)}")
        elif isinstance(s, kir.Launch):
            k = program.kernels[s.kernel]
            extra = [v for v in k.ints if v not in program.size_params]
            grid = ", ".join(pr(g) for g in s.grid)
            env = "{" + ", ".join(f"{v!r}: {pr.names.get(v, v)}" for v in extra) + "}"
            out.append(f"{ind}launch({s.kernel!r}, ({grid}), {env})")
        else:
            raise TypeError(f"unexpected host statement {s!r}")
    return out
