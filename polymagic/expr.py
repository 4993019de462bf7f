"""The small expression language shared by the Scop (statement bodies) and the Kernel IR.

Statement bodies coming from any front end (C, later Python) are trees of these
nodes; the Kernel IR reuses them for loop bounds, guards and subscripts, so both
printers (CUDA and the emulator's C) print one and the same tree.

Conventions
-----------
* ``Access.index`` holds one expression per array dimension (not linearised);
  printers linearise with the array's strides (see :func:`linearize`).
* Integer operators follow C: ``/`` truncates toward zero, ``%`` takes the sign of
  the dividend.  Floor division coming from isl's AST (``fdiv_q``) is the call
  ``floord(a, b)``; isl's non-negative remainder is ``Call('pm_mod', (a, b))``.
* ``min``/``max`` are calls; printers map them to type-generic macros.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping


class Expr:
    """Base class of expression nodes (immutable, hashable)."""

    def children(self) -> tuple["Expr", ...]:
        return ()


@dataclass(frozen=True)
class Int(Expr):
    value: int


@dataclass(frozen=True)
class Float(Expr):
    """A floating-point literal, kept as written (``1.5``, ``2.0f``) so that every
    printer reproduces the user's C semantics (double vs float literal)."""
    text: str


@dataclass(frozen=True)
class Var(Expr):
    """An iterator, loop variable, size parameter, scalar parameter or mapped id."""
    name: str


@dataclass(frozen=True)
class Access(Expr):
    array: str
    index: tuple[Expr, ...]

    def children(self):
        return self.index


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # '-', '+', '!', '~'
    a: Expr

    def children(self):
        return (self.a,)


@dataclass(frozen=True)
class Binary(Expr):
    op: str  # + - * / % < <= > >= == != && || & | ^ << >>
    a: Expr
    b: Expr

    def children(self):
        return (self.a, self.b)


@dataclass(frozen=True)
class Call(Expr):
    """A math function (sqrt, exp, ...), ``min``/``max``, ``floord`` or ``pm_mod``."""
    func: str
    args: tuple[Expr, ...]

    def children(self):
        return self.args


@dataclass(frozen=True)
class Cond(Expr):
    cond: Expr
    a: Expr
    b: Expr

    def children(self):
        return (self.cond, self.a, self.b)


@dataclass(frozen=True)
class Cast(Expr):
    ctype: str
    a: Expr

    def children(self):
        return (self.a,)


@dataclass(frozen=True)
class Assign:
    """One statement instance's effect: ``target op value`` (op is '=', '+=', ...)."""
    target: Access
    op: str
    value: Expr


def walk(e: Expr) -> Iterator[Expr]:
    """Pre-order traversal (with a stack: nested generators cost a frame per level
    and per node, a visible part of the lowering's passes)."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(x.children()))


def accesses(e: Expr) -> list[Access]:
    return [x for x in walk(e) if isinstance(x, Access)]


def map_expr(e: Expr, f: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild ``e`` bottom-up; ``f`` returns a replacement or None to keep a node."""
    r = f(e)
    if r is not None:
        return r
    if isinstance(e, Access):
        return Access(e.array, tuple(map_expr(i, f) for i in e.index))
    if isinstance(e, Unary):
        return Unary(e.op, map_expr(e.a, f))
    if isinstance(e, Binary):
        return Binary(e.op, map_expr(e.a, f), map_expr(e.b, f))
    if isinstance(e, Call):
        return Call(e.func, tuple(map_expr(a, f) for a in e.args))
    if isinstance(e, Cond):
        return Cond(map_expr(e.cond, f), map_expr(e.a, f), map_expr(e.b, f))
    if isinstance(e, Cast):
        return Cast(e.ctype, map_expr(e.a, f))
    return e


def substitute(e: Expr, values: Mapping[str, Expr]) -> Expr:
    """Replace variables by expressions (used to put loop variables for iterators)."""
    return map_expr(e, lambda x: values.get(x.name) if isinstance(x, Var) else None)


def substitute_assign(s: Assign, values: Mapping[str, Expr]) -> Assign:
    t = substitute(s.target, values)
    assert isinstance(t, Access)
    return Assign(t, s.op, substitute(s.value, values))


def add(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Int) and isinstance(b, Int):
        return Int(a.value + b.value)
    if isinstance(b, Int) and b.value == 0:
        return a
    if isinstance(a, Int) and a.value == 0:
        return b
    return Binary("+", a, b)


def mul(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Int) and isinstance(b, Int):
        return Int(a.value * b.value)
    if isinstance(b, Int) and b.value == 1:
        return a
    if isinstance(a, Int) and a.value == 1:
        return b
    if (isinstance(a, Int) and a.value == 0) or (isinstance(b, Int) and b.value == 0):
        return Int(0)
    return Binary("*", a, b)


def row_major_strides(shape: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """Element strides of a C array with the given extents (last dimension contiguous)."""
    strides: list[Expr] = []
    s: Expr = Int(1)
    for ext in reversed(shape):
        strides.append(s)
        s = mul(s, ext)
    return tuple(reversed(strides))


def linearize(index: tuple[Expr, ...], strides: tuple[Expr, ...],
              offset: Expr = Int(0)) -> Expr:
    """offset + Σ index_k · stride_k: the element offset of a multi-dimensional access."""
    e: Expr = offset
    for i, s in zip(index, strides):
        e = add(e, mul(i, s))
    return e


# ---- printing ------------------------------------------------------------------

_PREC = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
         "<": 7, "<=": 7, ">": 7, ">=": 7, "<<": 8, ">>": 8,
         "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}


@dataclass
class CPrinter:
    """Prints expressions as C (also valid CUDA).

    ``names`` renames variables (e.g. mapped ids to ``threadIdx.x``); ``access``
    prints an array access (it receives the Access and the printer, so it can
    linearise and instrument); ``funcs`` renames calls (``min`` -> ``pm_min``).
    """
    names: Mapping[str, str] = field(default_factory=dict)
    access: Callable[[Access, "CPrinter"], str] | None = None
    funcs: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, e: Expr) -> str:
        return self.expr(e)

    def expr(self, e: Expr, prec: int = 0) -> str:
        if isinstance(e, Int):
            s = str(e.value)
            return f"({s})" if e.value < 0 and prec > 0 else s
        if isinstance(e, Float):
            return e.text
        if isinstance(e, Var):
            return self.names.get(e.name, e.name)
        if isinstance(e, Access):
            if self.access is None:
                return e.array + "".join(f"[{self.expr(i)}]" for i in e.index)
            return self.access(e, self)
        if isinstance(e, Unary):
            return f"{e.op}{self.expr(e.a, 11)}" if prec <= 11 else f"({e.op}{self.expr(e.a, 11)})"
        if isinstance(e, Binary):
            p = _PREC[e.op]
            s = f"{self.expr(e.a, p)} {e.op} {self.expr(e.b, p + 1)}"
            return f"({s})" if p < prec else s
        if isinstance(e, Call):
            f = self.funcs.get(e.func, e.func)
            return f"{f}({', '.join(self.expr(a) for a in e.args)})"
        if isinstance(e, Cond):
            s = f"{self.expr(e.cond, 1)} ? {self.expr(e.a, 1)} : {self.expr(e.b, 1)}"
            return f"({s})"                  # always: ?: binds looser than any operator
        if isinstance(e, Cast):
            return f"(({e.ctype}){self.expr(e.a, 12)})"
        raise TypeError(f"cannot print {e!r}")


@dataclass
class PyPrinter:
    """Prints integer expressions (host-side: grid sizes, host loop bounds) as Python."""
    names: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, e: Expr) -> str:
        if isinstance(e, Int):
            return f"({e.value})"
        if isinstance(e, Var):
            return self.names.get(e.name, e.name)
        if isinstance(e, Unary):
            op = {"!": "not "}.get(e.op, e.op)
            return f"({op}{self(e.a)})"
        if isinstance(e, Binary):
            if e.op == "/":
                return f"_tdiv({self(e.a)}, {self(e.b)})"
            if e.op == "%":
                return f"_tmod({self(e.a)}, {self(e.b)})"
            op = {"&&": "and", "||": "or"}.get(e.op, e.op)
            return f"({self(e.a)} {op} {self(e.b)})"
        if isinstance(e, Call):
            if e.func == "floord":
                return f"({self(e.args[0])} // {self(e.args[1])})"
            if e.func == "pm_mod":
                return f"({self(e.args[0])} % {self(e.args[1])})"
            if e.func in ("min", "max"):
                return f"{e.func}({', '.join(self(a) for a in e.args)})"
            raise TypeError(f"no host form for call {e.func}")
        if isinstance(e, Cond):
            return f"({self(e.a)} if {self(e.cond)} else {self(e.b)})"
        if isinstance(e, Cast):
            return self(e.a)
        raise TypeError(f"cannot print {e!r} for the host")


def evaluate(e: Expr, env: Mapping[str, int | float]) -> int | float:
    """Evaluate an integer expression (shapes, grid sizes) with C semantics for / and %."""
    if isinstance(e, Int):
        return e.value
    if isinstance(e, Float):
        return float(e.text.rstrip("fFlL"))
    if isinstance(e, Var):
        try:
            return env[e.name]
        except KeyError:
            raise KeyError(f"no value for {e.name}") from None
    if isinstance(e, Unary):
        v = evaluate(e.a, env)
        return {"-": lambda: -v, "+": lambda: v, "!": lambda: int(not v), "~": lambda: ~v}[e.op]()
    if isinstance(e, Binary):
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        if e.op == "/":
            if isinstance(a, int) and isinstance(b, int):
                q = abs(a) // abs(b)
                return q if (a >= 0) == (b >= 0) else -q
            return a / b
        if e.op == "%":
            if isinstance(a, int) and isinstance(b, int):
                r = abs(a) % abs(b)
                return r if a >= 0 else -r
            import math
            return math.fmod(a, b)
        ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
               "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b),
               ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
               "&&": lambda: int(bool(a) and bool(b)), "||": lambda: int(bool(a) or bool(b)),
               "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
               "<<": lambda: a << b, ">>": lambda: a >> b}
        return ops[e.op]()
    if isinstance(e, Call):
        args = [evaluate(x, env) for x in e.args]
        if e.func == "min":
            return min(args)
        if e.func == "max":
            return max(args)
        if e.func == "floord":
            return args[0] // args[1]
        if e.func == "pm_mod":
            return args[0] % args[1]
        import math
        return getattr(math, e.func.rstrip("f") if e.func.endswith("f") and e.func != "fabsf" else e.func.replace("fabsf", "fabs"))(*args)
    if isinstance(e, Cond):
        return evaluate(e.a, env) if evaluate(e.cond, env) else evaluate(e.b, env)
    if isinstance(e, Cast):
        v = evaluate(e.a, env)
        return int(v) if e.ctype in ("int", "long", "long long", "short", "char", "unsigned") else float(v)
    raise TypeError(f"cannot evaluate {e!r}")
