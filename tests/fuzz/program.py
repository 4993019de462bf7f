"""The fuzzer's program model: a small structured AST of affine C functions.

Programs are kept structured (not as text) so the shrinker can delete statements,
unwrap loops and drop subscript terms, and so that every variant is still valid C
that stays inside its arrays: array extents and subscript offsets are *derived*
when rendering (:func:`render`), from interval bounds of every subscript over the
loop ranges (:func:`array_layout`).  A shrunk program therefore never indexes out
of bounds, whatever was removed.

Names: size parameters are ints (``N``, ``M``, ``K``, ``T``), assumed >= 1;
scalars are doubles; arrays are ``double``/``float``/``int``; local scalars are
declared with an initial value by :class:`Decl` and referenced as rank-0 refs.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator, Union

# ---- affine forms ------------------------------------------------------------------

Lin = dict  # name -> coefficient, the constant under key "1"; affine in sizes only


@dataclass(frozen=True)
class Aff:
    """sum(coef * var) + const over loop iterators and size parameters."""
    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def var(name: str, coef: int = 1, const: int = 0) -> "Aff":
        return Aff(((name, coef),), const)

    def names(self) -> set[str]:
        return {v for v, _ in self.terms}

    def plus(self, other: "Aff") -> "Aff":
        coefs: dict[str, int] = {}
        for v, c in self.terms + other.terms:
            coefs[v] = coefs.get(v, 0) + c
        return Aff(tuple((v, c) for v, c in coefs.items() if c), self.const + other.const)

    def substitute(self, name: str, by: "Aff") -> "Aff":
        """Replace variable ``name`` by the affine form ``by``."""
        out = Aff((), self.const)
        for v, c in self.terms:
            out = out.plus(Aff(tuple((w, c * d) for w, d in by.terms), c * by.const)
                           if v == name else Aff(((v, c),)))
        return out

    def render(self) -> str:
        parts: list[str] = []
        for v, c in self.terms:
            mag = abs(c)
            text = v if mag == 1 else f"{mag} * {v}"
            parts.append(("- " if c < 0 else "+ ") + text)
        if self.const or not parts:
            parts.append(("- " if self.const < 0 else "+ ") + str(abs(self.const)))
        s = " ".join(parts)
        return s[2:] if s.startswith("+ ") else "-" + s[2:]


@dataclass(frozen=True)
class Bound:
    """A loop bound: one affine form, or ``min``/``max`` of two."""
    args: tuple[Aff, ...]
    op: str = ""                 # "" (one arg), "min" or "max"

    def render(self) -> str:
        if not self.op:
            return self.args[0].render()
        return f"{self.op}({', '.join(a.render() for a in self.args)})"

    def names(self) -> set[str]:
        return set().union(*(a.names() for a in self.args))

    def substitute(self, name: str, by: Aff) -> "Bound":
        return Bound(tuple(a.substitute(name, by) for a in self.args), self.op)


@dataclass(frozen=True)
class Cmp:
    """``lhs op rhs`` (op in < <= > >= == !=), or ``lhs % mod == rhs.const`` when mod."""
    lhs: Aff
    op: str
    rhs: Aff
    mod: int = 0

    def render(self) -> str:
        if self.mod:
            return f"({self.lhs.render()}) % {self.mod} {self.op} {self.rhs.render()}"
        return f"{self.lhs.render()} {self.op} {self.rhs.render()}"

    def names(self) -> set[str]:
        return self.lhs.names() | self.rhs.names()

    def substitute(self, name: str, by: Aff) -> "Cmp":
        return Cmp(self.lhs.substitute(name, by), self.op, self.rhs.substitute(name, by),
                   self.mod)


# ---- values ------------------------------------------------------------------------

@dataclass(frozen=True)
class Ref:
    """An array element ``A[s0][s1]`` or, with no subscripts, a local scalar."""
    array: str
    subs: tuple[Aff, ...] = ()

    def substitute(self, name: str, by: Aff) -> "Ref":
        return Ref(self.array, tuple(s.substitute(name, by) for s in self.subs))


@dataclass(frozen=True)
class Scalar:
    """A double scalar parameter."""
    name: str

    def substitute(self, name: str, by: Aff) -> "Scalar":
        return self


@dataclass(frozen=True)
class Call:
    """``fmax(a, b)`` / ``fmin(a, b)`` of two refs."""
    fn: str
    args: tuple[Ref, ...]

    def substitute(self, name: str, by: Aff) -> "Call":
        return Call(self.fn, tuple(a.substitute(name, by) for a in self.args))


Factor = Union[Ref, Scalar, Call]


@dataclass(frozen=True)
class Term:
    """``coef * f1 * f2 ...`` (a constant when there are no factors)."""
    coef: float
    factors: tuple[Factor, ...] = ()

    def substitute(self, name: str, by: Aff) -> "Term":
        return Term(self.coef, tuple(f.substitute(name, by) for f in self.factors))


@dataclass(frozen=True)
class Value:
    """A floating-point right-hand side: a sum of terms."""
    terms: tuple[Term, ...]

    def substitute(self, name: str, by: Aff) -> "Value":
        return Value(tuple(t.substitute(name, by) for t in self.terms))

    def refs(self) -> Iterator[Ref]:
        for t in self.terms:
            for f in t.factors:
                if isinstance(f, Ref):
                    yield f
                elif isinstance(f, Call):
                    yield from f.args


@dataclass(frozen=True)
class IntValue:
    """An int right-hand side ``((r1 + r2 + const) / div) % mod`` (mod 0: none)."""
    refs_: tuple[Ref, ...]
    const: int = 0
    div: int = 1
    mod: int = 0

    def substitute(self, name: str, by: Aff) -> "IntValue":
        return replace(self, refs_=tuple(r.substitute(name, by) for r in self.refs_))

    def refs(self) -> Iterator[Ref]:
        yield from self.refs_


# ---- statements --------------------------------------------------------------------

@dataclass(frozen=True)
class Stmt:
    """``target op value;`` with op in = += *=."""
    target: Ref
    op: str
    value: Union[Value, IntValue]

    def substitute(self, name: str, by: Aff) -> "Stmt":
        return Stmt(self.target.substitute(name, by), self.op, self.value.substitute(name, by))


@dataclass(frozen=True)
class Decl:
    """``ctype name = init;`` — a local scalar, visible to the rest of its block."""
    name: str
    ctype: str
    init: Value

    def substitute(self, name: str, by: Aff) -> "Decl":
        return Decl(self.name, self.ctype, self.init.substitute(name, by))


@dataclass(frozen=True)
class Loop:
    """``for`` over [lo, hi) (``strict``) or [lo, hi]; counts down when ``down``."""
    var: str
    lo: Bound
    hi: Bound
    body: tuple["Node", ...]
    step: int = 1
    down: bool = False
    strict: bool = True

    def substitute(self, name: str, by: Aff) -> "Loop":
        return replace(self, lo=self.lo.substitute(name, by), hi=self.hi.substitute(name, by),
                       body=tuple(n.substitute(name, by) for n in self.body))


@dataclass(frozen=True)
class If:
    """``if (c1 && c2) {then} else {orelse}``."""
    conds: tuple[Cmp, ...]
    then: tuple["Node", ...]
    orelse: tuple["Node", ...] = ()

    def substitute(self, name: str, by: Aff) -> "If":
        return If(tuple(c.substitute(name, by) for c in self.conds),
                  tuple(n.substitute(name, by) for n in self.then),
                  tuple(n.substitute(name, by) for n in self.orelse))


Node = Union[Stmt, Decl, Loop, If]


@dataclass(frozen=True)
class ArrayDef:
    name: str
    ctype: str                   # double | float | int
    rank: int


@dataclass(frozen=True)
class Program:
    """One C function: sizes (name -> value used for runs), scalars, arrays, body."""
    sizes: tuple[tuple[str, int], ...]
    scalars: tuple[str, ...]
    arrays: tuple[ArrayDef, ...]
    body: tuple[Node, ...]
    name: str = "fz"
    origin: dict = field(default_factory=dict, compare=False, hash=False)

    def size_values(self) -> dict[str, int]:
        return dict(self.sizes)

    def array(self, name: str) -> ArrayDef | None:
        return next((a for a in self.arrays if a.name == name), None)


# ---- traversal ---------------------------------------------------------------------

def walk(nodes: tuple[Node, ...]) -> Iterator[Node]:
    """Every node, pre-order."""
    for n in nodes:
        yield n
        if isinstance(n, Loop):
            yield from walk(n.body)
        elif isinstance(n, If):
            yield from walk(n.then)
            yield from walk(n.orelse)


def statements(nodes: tuple[Node, ...]) -> list[Stmt]:
    return [n for n in walk(nodes) if isinstance(n, Stmt)]


def node_refs(n: Node) -> Iterator[Ref]:
    """Refs read or written directly by a statement or declaration."""
    if isinstance(n, Stmt):
        yield n.target
        yield from n.value.refs()
    elif isinstance(n, Decl):
        yield from n.init.refs()


def scalars_used(nodes: tuple[Node, ...]) -> set[str]:
    out = set()
    for n in walk(nodes):
        value = n.value if isinstance(n, Stmt) else n.init if isinstance(n, Decl) else None
        if isinstance(value, Value):
            out |= {f.name for t in value.terms for f in t.factors if isinstance(f, Scalar)}
    return out


# ---- interval bounds and array layout --------------------------------------------

def _lin_add(a: Lin, b: Lin, k: int = 1) -> Lin:
    out = dict(a)
    for name, c in b.items():
        out[name] = out.get(name, 0) + k * c
    return out


def _lin_cw(a: Lin, b: Lin, pick) -> Lin:
    """Coefficient-wise max/min; an upper/lower bound of max/min for sizes >= 0."""
    return {n: pick(a.get(n, 0), b.get(n, 0)) for n in set(a) | set(b)}


def interval(aff: Aff, env: dict[str, tuple[Lin, Lin]]) -> tuple[Lin, Lin]:
    """Bounds (affine in the sizes) of ``aff`` when iterators lie in their ranges."""
    lo: Lin = {"1": aff.const}
    hi: Lin = {"1": aff.const}
    for v, c in aff.terms:
        if v in env:
            vl, vh = env[v]
            lo = _lin_add(lo, vl if c > 0 else vh, c)
            hi = _lin_add(hi, vh if c > 0 else vl, c)
        else:
            lo = _lin_add(lo, {v: c})
            hi = _lin_add(hi, {v: c})
    return lo, hi


def bound_range(b: Bound, env) -> tuple[Lin, Lin]:
    """A lower and an upper bound of a loop bound expression."""
    ivs = [interval(a, env) for a in b.args]
    lo, hi = ivs[0]
    if b.op == "min":
        for l2, _ in ivs[1:]:
            lo = _lin_cw(lo, l2, min)
    elif b.op == "max":
        for _, h2 in ivs[1:]:
            hi = _lin_cw(hi, h2, max)
    return lo, hi


def loop_range(loop: Loop, env) -> tuple[Lin, Lin]:
    """Range of the loop's iterator whenever its body runs."""
    lo, _ = bound_range(loop.lo, env)
    _, hi = bound_range(loop.hi, env)
    return lo, _lin_add(hi, {"1": -1 if loop.strict else 0})


def access_intervals(program: Program) -> dict[tuple[str, int], list[tuple[Lin, Lin]]]:
    """(array, dim) -> the intervals of every subscript in that dimension."""
    out: dict[tuple[str, int], list[tuple[Lin, Lin]]] = {}

    def visit(nodes, env):
        for n in nodes:
            if isinstance(n, Loop):
                visit(n.body, {**env, n.var: loop_range(n, env)})
            elif isinstance(n, If):
                visit(n.then, env)
                visit(n.orelse, env)
            else:
                for r in node_refs(n):
                    for d, s in enumerate(r.subs):
                        out.setdefault((r.array, d), []).append(interval(s, env))
    visit(program.body, {})
    return out


@dataclass(frozen=True)
class Layout:
    """Per array dimension: the offset added to every subscript and the extent."""
    offset: dict
    extent: dict


def array_layout(program: Program) -> Layout:
    """Offsets making every subscript >= 0 and extents covering the largest one,
    both affine in the sizes with non-negative coefficients (valid for sizes >= 1)."""
    ivs = access_intervals(program)
    offset, extent = {}, {}
    for a in program.arrays:
        for d in range(a.rank):
            pairs = ivs.get((a.name, d), [({"1": 0}, {"1": 0})])
            off: Lin = {}
            for lo, _ in pairs:
                off = _lin_cw(off, {n: -c for n, c in lo.items()}, max)
            off = {n: max(0, c) for n, c in off.items()}
            ext: Lin = {}
            for _, hi in pairs:
                ext = _lin_cw(ext, _lin_add(hi, off), max)
            ext = {n: max(0, c) for n, c in ext.items()}
            ext["1"] = ext.get("1", 0) + 1
            offset[(a.name, d)], extent[(a.name, d)] = off, ext
    return Layout(offset, extent)


def lin_aff(lin: Lin) -> Aff:
    return Aff(tuple((n, c) for n, c in sorted(lin.items()) if n != "1" and c),
               lin.get("1", 0))


def lin_eval(lin: Lin, sizes: dict[str, int]) -> int:
    return sum(c * (1 if n == "1" else sizes[n]) for n, c in lin.items())


# ---- rendering ---------------------------------------------------------------------

def _coef(c: float) -> str:
    text = repr(float(c))
    return text if ("." in text or "e" in text) else text + ".0"


class _Printer:
    """Renders a Program as C, with derived offsets and extents."""

    def __init__(self, program: Program):
        self.p = program
        self.layout = array_layout(program)
        self.lines: list[str] = []

    def ref(self, r: Ref) -> str:
        if not r.subs:
            return r.array
        subs = [s.plus(lin_aff(self.layout.offset[(r.array, d)])) for d, s in enumerate(r.subs)]
        return r.array + "".join(f"[{s.render()}]" for s in subs)

    def factor(self, f: Factor) -> str:
        if isinstance(f, Ref):
            return self.ref(f)
        if isinstance(f, Scalar):
            return f.name
        return f"{f.fn}({', '.join(self.ref(a) for a in f.args)})"

    def value(self, v) -> str:
        if isinstance(v, IntValue):
            parts = [self.ref(r) for r in v.refs_] + ([str(v.const)] if v.const or not v.refs_ else [])
            text = f"({' + '.join(parts)}) / {v.div}" if v.div != 1 else " + ".join(parts)
            return f"({text}) % {v.mod}" if v.mod else text
        terms = []
        for t in v.terms:
            terms.append(" * ".join([_coef(t.coef)] + [self.factor(f) for f in t.factors]))
        return " + ".join(terms) if terms else "0.0"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def node(self, n: Node, depth: int) -> None:
        if isinstance(n, Stmt):
            self.emit(depth, f"{self.ref(n.target)} {n.op} {self.value(n.value)};")
        elif isinstance(n, Decl):
            self.emit(depth, f"{n.ctype} {n.name} = {self.value(n.init)};")
        elif isinstance(n, Loop):
            self.emit(depth, self.loop_head(n) + " {")
            self.block(n.body, depth + 1)
            self.emit(depth, "}")
        else:
            self.emit(depth, f"if ({' && '.join(c.render() for c in n.conds)}) {{")
            self.block(n.then, depth + 1)
            if n.orelse:
                self.emit(depth, "} else {")
                self.block(n.orelse, depth + 1)
            self.emit(depth, "}")

    def loop_head(self, n: Loop) -> str:
        v, step = n.var, (f"{n.var}++" if n.step == 1 else f"{n.var} += {n.step}")
        if not n.down:
            return f"for (int {v} = {n.lo.render()}; {v} {'<' if n.strict else '<='} " \
                   f"{n.hi.render()}; {step})"
        start = n.hi.render() + (" - 1" if n.strict else "")
        step = f"{v}--" if n.step == 1 else f"{v} -= {n.step}"
        return f"for (int {v} = {start}; {v} >= {n.lo.render()}; {step})"

    def block(self, nodes, depth: int) -> None:
        for n in nodes:
            self.node(n, depth)

    def signature(self) -> str:
        used = used_names(self.p)
        params = [f"int {s}" for s, _ in self.p.sizes if s in used]
        params += [f"double {s}" for s in self.p.scalars if s in used]
        for a in self.p.arrays:
            if a.name in used:
                dims = "".join(f"[{lin_aff(self.layout.extent[(a.name, d)]).render()}]"
                               for d in range(a.rank))
                params.append(f"{a.ctype} {a.name}{dims}")
        return f"void {self.p.name}({', '.join(params)})"

    def render(self) -> str:
        self.lines = [self.signature() + " {"]
        self.block(self.p.body, 1)
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"


def used_names(program: Program) -> set[str]:
    """Sizes, scalars and arrays the body (or the derived extents) mentions."""
    names: set[str] = set(scalars_used(program.body))
    for n in walk(program.body):
        if isinstance(n, Loop):
            names |= n.lo.names() | n.hi.names()
        elif isinstance(n, If):
            for c in n.conds:
                names |= c.names()
        for r in node_refs(n):
            names.add(r.array)
            for s in r.subs:
                names |= s.names()
    layout = array_layout(program)
    for a in program.arrays:
        if a.name in names:
            for d in range(a.rank):
                names |= {k for k, c in layout.extent[(a.name, d)].items() if c and k != "1"}
                names |= {k for k, c in layout.offset[(a.name, d)].items() if c and k != "1"}
    return names


def render(program: Program) -> str:
    """The program as C source (one void function)."""
    return _Printer(program).render()


def used_sizes(program: Program) -> dict[str, int]:
    """The size values of the sizes the rendered function takes."""
    used = used_names(program)
    return {k: v for k, v in program.sizes if k in used}


def array_elements(program: Program) -> int:
    """Total elements of all arrays at the program's sizes."""
    layout = array_layout(program)
    sizes = program.size_values()
    total = 0
    for a in program.arrays:
        n = 1
        for d in range(a.rank):
            n *= max(1, lin_eval(layout.extent[(a.name, d)], sizes))
        total += n
    return total


def work_estimate(program: Program) -> int:
    """An upper estimate of statement executions at the program's sizes."""
    sizes = program.size_values()

    def visit(nodes, env, mult) -> int:
        total = 0
        for n in nodes:
            if isinstance(n, Loop):
                lo, hi = loop_range(n, env)
                trips = max(0, lin_eval(hi, sizes) - lin_eval(lo, sizes) + 1)
                trips = -(-trips // n.step)
                total += visit(n.body, {**env, n.var: (lo, hi)}, mult * trips)
            elif isinstance(n, If):
                total += visit(n.then, env, mult) + visit(n.orelse, env, mult)
            else:
                total += mult
        return total
    return visit(program.body, {}, 1)


# ---- the same program as Python (the --python front end) -------------------------

class _PyPrinter(_Printer):
    """Renders a Program as a Python function for ``--python``: ``range`` loops,
    ``A[i, j]`` subscripts, ``max``/``min`` for ``fmax``/``fmin``, ``and``."""

    def ref(self, r: Ref) -> str:
        if not r.subs:
            return r.array
        subs = [s.plus(lin_aff(self.layout.offset[(r.array, d)])) for d, s in enumerate(r.subs)]
        return f"{r.array}[{', '.join(s.render() for s in subs)}]"

    def factor(self, f: Factor) -> str:
        if isinstance(f, Call):
            return f"{f.fn[1:]}({', '.join(self.ref(a) for a in f.args)})"
        return super().factor(f)

    def node(self, n: Node, depth: int) -> None:
        if isinstance(n, Stmt):
            self.emit(depth, f"{self.ref(n.target)} {n.op} {self.value(n.value)}")
        elif isinstance(n, Decl):
            self.emit(depth, f"{n.name} = {self.value(n.init)}")
        elif isinstance(n, Loop):
            self.emit(depth, self.loop_head(n) + ":")
            self.block(n.body, depth + 1)
        else:
            self.emit(depth, f"if {' and '.join(c.render() for c in n.conds)}:")
            self.block(n.then, depth + 1)
            if n.orelse:
                self.emit(depth, "else:")
                self.block(n.orelse, depth + 1)

    def loop_head(self, n: Loop) -> str:
        lo, hi = n.lo.render(), n.hi.render()
        if not n.down:
            step = "" if n.step == 1 else f", {n.step}"
            return f"for {n.var} in range({lo}, {hi if n.strict else hi + ' + 1'}{step})"
        start = f"{hi} - 1" if n.strict else hi
        return f"for {n.var} in range({start}, {lo} - 1, -{n.step})"

    def signature(self) -> str:
        used = used_names(self.p)
        params = [f"{s}: int" for s, _ in self.p.sizes if s in used]
        params += [f"{s}: float" for s in self.p.scalars if s in used]
        for a in self.p.arrays:
            if a.name in used:
                dims = "".join(f"[{lin_aff(self.layout.extent[(a.name, d)]).render()}]"
                               for d in range(a.rank))
                params.append(f'{a.name}: "{a.ctype}{dims}"')
        return f"def {self.p.name}({', '.join(params)}):"

    def render(self) -> str:
        self.lines = [self.signature()]
        self.block(self.p.body, 1)
        return "\n".join(self.lines) + "\n"


def python_renderable(program: Program) -> bool:
    """No int arithmetic (Python's / is true division) and no % (not in the
    Python front end)."""
    for n in walk(program.body):
        if isinstance(n, If) and any(c.mod for c in n.conds):
            return False
        if isinstance(n, Stmt) and isinstance(n.value, IntValue):
            return False
    return all(a.ctype != "int" for a in program.arrays)


def render_python(program: Program) -> str | None:
    """The program as a Python function, or None when it has no Python equivalent."""
    return _PyPrinter(program).render() if python_renderable(program) else None


# ---- the same program on flat buffers (issue 19: C as people write it) ------------

class _FlatPrinter(_Printer):
    """Renders a Program as C on flat buffers: every array a pointer parameter
    (``double *A``, ``const`` when only read), its subscripts linearised row-major
    (``A[(i) * N + (j)]``) or, with ``macros``, through an index macro per array
    (``#define A_IDX(i0, i1) ((i0) * ld_A1 + (i1))``).  An inner dimension's stride
    is its size parameter when its extent is exactly one that its subscripts do not
    mention, else a leading-dimension parameter ``ld_A1`` run at the extent plus
    ``pad`` (BLAS's ``lda``: the delinearisation's conditions then hold only for
    the sizes given, a check at run time).  The front end must delinearise every
    access back (polymagic.frontend.c.delinearise)."""

    def __init__(self, program: Program, macros: bool, pad: int):
        super().__init__(program)
        self.macros = macros
        self.stride: dict[tuple[str, int], str] = {}
        self.extra: dict[str, int] = {}          # leading-dimension parameters' values
        self.owner: dict[str, str] = {}          # leading-dimension parameter -> array
        sizes = program.size_values()
        mentioned: dict[tuple[str, int], set[str]] = {}
        for n in walk(program.body):
            for r in node_refs(n):
                for d, s in enumerate(r.subs):
                    mentioned.setdefault((r.array, d), set()).update(s.names())
        for a in program.arrays:
            for d in range(1, a.rank):
                ext = {k: c for k, c in self.layout.extent[(a.name, d)].items() if c}
                name = next(iter(ext)) if len(ext) == 1 else ""
                if name in sizes and ext[name] == 1 and \
                        name not in mentioned.get((a.name, d), set()) and not pad:
                    self.stride[(a.name, d)] = name
                else:
                    ld = f"ld_{a.name}{d}"
                    self.stride[(a.name, d)] = ld
                    self.extra[ld] = lin_eval(self.layout.extent[(a.name, d)], sizes) + pad
                    self.owner[ld] = a.name

    def ref(self, r: Ref) -> str:
        a = self.p.array(r.array)
        if not r.subs or a is None or a.rank < 2:
            return super().ref(r)
        subs = [s.plus(lin_aff(self.layout.offset[(r.array, d)])).render()
                for d, s in enumerate(r.subs)]
        if self.macros:
            return f"{r.array}[{r.array}_IDX({', '.join(subs)})]"
        flat = subs[0]
        for d in range(1, len(subs)):
            flat = f"({flat}) * {self.stride[(r.array, d)]} + ({subs[d]})"
        return f"{r.array}[{flat}]"

    def signature(self) -> str:
        used = used_names(self.p)
        written = {n.target.array for n in walk(self.p.body) if isinstance(n, Stmt)}
        params = [f"int {s}" for s, _ in self.p.sizes if s in used]
        params += [f"int {ld}" for ld in self.extra if self.owner[ld] in used]
        params += [f"double {s}" for s in self.p.scalars if s in used]
        for a in self.p.arrays:
            if a.name in used:
                const = "" if a.name in written else "const "
                params.append(f"{const}{a.ctype} *{a.name}")
        return f"void {self.p.name}({', '.join(params)})"

    def render(self) -> str:
        used = used_names(self.p)
        self.lines = []
        if self.macros:
            for a in self.p.arrays:
                if a.rank >= 2 and a.name in used:
                    args = [f"i{d}" for d in range(a.rank)]
                    flat = "(i0)"
                    for d in range(1, a.rank):
                        flat = f"({flat} * {self.stride[(a.name, d)]} + (i{d}))"
                    self.lines.append(f"#define {a.name}_IDX({', '.join(args)}) {flat}")
        self.lines.append(self.signature() + " {")
        self.block(self.p.body, 1)
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def sizes(self) -> dict[str, int]:
        """The size values the rendered function takes (leading dimensions too)."""
        used = used_names(self.p)
        out = dict(used_sizes(self.p))
        out.update({ld: v for ld, v in self.extra.items() if self.owner[ld] in used})
        return out


def render_flat(program: Program, macros: bool = False, pad: int = 0
                ) -> tuple[str, dict[str, int]]:
    """The program on flat buffers (:class:`_FlatPrinter`) and its sizes."""
    p = _FlatPrinter(program, macros, pad)
    return p.render(), p.sizes()
