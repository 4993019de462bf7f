"""Delinearisation: flat subscripts of one-dimensional arrays (``A[i*n + k]``,
``M[(b*n + i)*n + j]``, ``x[IDX(i, j)]`` with ``#define IDX(i, j) ((i)*m + (j))``)
recovered as multi-dimensional accesses (``A[i][k]``, ``M[b][i][j]``, ``x[i][j]``).

A product of an iterator and a size parameter is not affine, so the polyhedral
model cannot analyse ``A[i*n + k]`` as written.  Following Grosser, Ramanujam,
Pouchet, Sadayappan and Pop, "Optimistic delinearization of parametrically sized
arrays" (ICS 2015), which is what LLVM Polly does:

1. every subscript of the array is read as a multivariate polynomial in the loop
   iterators and the size parameters (section 3); affine pieces that are not sums
   of products (``j / 2``, ``min(j, m)``) stay whole, as opaque terms;
2. the *parametric terms* are the products of size parameters multiplying an
   iterator: the loops' strides through the flat buffer (section 4.1);
3. the dimension sizes follow from the terms (section 4.2, Polly's
   ``findArrayDimensions``): sorted by their number of factors, the smallest term
   divides all the others and is the innermost size, and the quotients, with
   constants dropped, give the outer sizes recursively;
4. each subscript is divided by the sizes, innermost first: the remainders are
   the inner subscripts and the last quotient the outermost one (section 4.3):
   ``b*n*n + i*n + j`` is ``[b][i][j]`` of an array ``[?][n][n]``;
5. the split is exact when every inner subscript stays in ``0 <= s < size`` over
   the iteration domain (section 5, the delinearisation conditions): then the flat
   and the multi-dimensional index name the same elements, and dependences on one
   are dependences on the other.  :mod:`.pointers` checks the conditions with isl
   over the statements' domains, refuses a split that is never exact, and records
   the others for the run time, which knows the sizes
   (:class:`polymagic.scop.FlatLayout`).

The pass rewrites the kernel's AST before it is analysed (like :mod:`.views`), so
the model, the dependences and the generated code see ``A[i][k]`` of an array
whose inner extents are the sizes, exactly as for a declared ``A[n][n]``; the
generated kernels index it row-major (``A[i * n + k]``), i.e. the caller's flat
buffer.  Arrays whose subscripts are already affine (``A[i*N + j]`` with a
``#define N``) are left as they are; an affine subscript written with products that
cancel (``(0*n + 2)*m``) is rewritten as the affine sum it is.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable

from pycparser import c_ast, c_generator

from ... import expr as E
from ...errors import UnsupportedError
from .source import const_expr
from .subset import INT_TYPES, type_name

#: a monomial: the sorted names multiplied (repeats for powers); () is the constant
Mono = tuple[str, ...]
Poly = dict[Mono, int]


@dataclass
class Split:
    """How one array's flat subscripts were split."""
    name: str
    sizes: tuple[Mono, ...]                     # inner dimensions' sizes, outer first
    #: id of each rewritten access node -> (the access as written, as split, line,
    #: the user's column, each subscript as split)
    texts: dict[int, tuple[str, str, int, int, tuple[str, ...]]] = field(default_factory=dict)

    @property
    def size_exprs(self) -> tuple[E.Expr, ...]:
        return tuple(_mono_expr(m) for m in self.sizes)


def delinearise(ast: c_ast.FileAST, source: str, constants: dict[str, E.Expr],
                user_column: Callable[[int, int], int]
                ) -> tuple[c_ast.FileAST, dict[str, Split]]:
    """The file AST with the flat subscripts of 1-d arrays split, and each split
    array's :class:`Split` (nothing changes when no subscript needs it);
    ``user_column`` maps a column of the preprocessed text to the user's."""
    funcs = [e for e in ast.ext if isinstance(e, c_ast.FuncDef)]
    if len(funcs) != 1:
        return ast, {}
    fd = funcs[0]
    flat, sizes = _signature(fd)
    if not flat:
        return ast, {}
    refs: dict[str, list[c_ast.ArrayRef]] = {}
    _collect(fd.body, flat, refs)
    d = _Delin(source, constants, sizes, user_column)
    splits = {}
    for name, nodes in refs.items():
        s = d.plan(name, nodes)
        if s is not None:
            splits[name] = s
    if not d.parts:
        return ast, {}
    body = d.rewrite(fd.body, splits)
    new = c_ast.FuncDef(fd.decl, fd.param_decls, body, fd.coord)
    return c_ast.FileAST([new if e is fd else e for e in ast.ext], ast.coord), splits


def _signature(fd: c_ast.FuncDef) -> tuple[set[str], set[str]]:
    """The 1-d array parameters (pointers ``T *p`` and ``T p[e]``) and the int size
    parameters."""
    flat, sizes = set(), set()
    args = fd.decl.type.args.params if fd.decl.type.args is not None else []
    for a in args:
        if not isinstance(a, c_ast.Decl) or not a.name:
            continue
        t = a.type
        if isinstance(t, (c_ast.PtrDecl, c_ast.ArrayDecl)) and isinstance(t.type, c_ast.TypeDecl):
            flat.add(a.name)
        elif type_name(t) in INT_TYPES:
            sizes.add(a.name)
    return flat, sizes


def _collect(n: c_ast.Node, flat: set[str], out: dict[str, list[c_ast.ArrayRef]]) -> None:
    """Every outermost subscript chain on a 1-d array, by array (in source order)."""
    if isinstance(n, c_ast.ArrayRef):
        b = n
        while isinstance(b, c_ast.ArrayRef):
            b = b.name
        if isinstance(b, c_ast.ID) and b.name in flat:
            out.setdefault(b.name, []).append(n)
        b = n
        while isinstance(b, c_ast.ArrayRef):       # subscripts may hold accesses too
            _collect(b.subscript, flat, out)
            b = b.name
        return
    for _, c in n.children():
        _collect(c, flat, out)


# ---- polynomials -------------------------------------------------------------------

def _add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + sign * c
    return {m: c for m, c in out.items() if c}


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in a.items():
        for m2, c2 in b.items():
            m = tuple(sorted(m1 + m2))
            out[m] = out.get(m, 0) + c1 * c2
    return {m: c for m, c in out.items() if c}


def _divides(d: Mono, m: Mono) -> bool:
    rest = list(m)
    for x in d:
        if x not in rest:
            return False
        rest.remove(x)
    return True


def _quotient(m: Mono, d: Mono) -> Mono:
    rest = list(m)
    for x in d:
        rest.remove(x)
    return tuple(rest)


def _divide(p: Poly, d: Mono) -> tuple[Poly, Poly]:
    """``p = q * d + r`` where ``r`` holds the monomials ``d`` does not divide."""
    q, r = {}, {}
    for m, c in p.items():
        if _divides(d, m):
            q[_quotient(m, d)] = c
        else:
            r[m] = c
    return q, r


def find_sizes(terms: set[Mono]) -> tuple[Mono, ...] | None:
    """The inner dimensions' sizes (outer first) from the parametric terms, or None
    when one term does not divide the next (Grosser et al. 2015, section 4.2;
    Polly's ``findArrayDimensionsRec``)."""
    ordered = sorted(terms, key=lambda t: (-len(t), t))
    step = ordered[-1]
    if len(ordered) == 1:
        return (step,)
    rest = set()
    for t in ordered:
        if not _divides(step, t):
            return None
        q = _quotient(t, step)
        if q:
            rest.add(q)
    inner = find_sizes(rest) if rest else ()
    return None if inner is None else (*inner, step)


def _mono_expr(m: Mono) -> E.Expr:
    out: E.Expr | None = None
    for x in m:
        out = E.Var(x) if out is None else E.Binary("*", out, E.Var(x))
    return out if out is not None else E.Int(1)


# ---- the pass ----------------------------------------------------------------------

class _Fail(Exception):
    pass


class _Delin:
    """Plans and applies the splits of one function's arrays."""

    def __init__(self, source: str, constants: dict[str, E.Expr], sizes: set[str],
                 user_column: Callable[[int, int], int]):
        self.source, self.constants, self.size_names = source, constants, sizes
        self.user_column = user_column
        self.parts: dict[int, list[Poly]] = {}        # access node id -> its split
        self.atoms: dict[str, c_ast.Node] = {}        # opaque affine pieces by their text
        self.gen = c_generator.CGenerator()

    def err(self, msg: str, node: c_ast.Node):
        coord = node.coord
        raise UnsupportedError(msg, getattr(coord, "line", None),
                               getattr(coord, "column", None), self.source)

    # -- reading a subscript --

    def poly(self, n: c_ast.Node) -> Poly:
        """The subscript as a polynomial (raises _Fail when it is not one)."""
        c = self.const_int(n)
        if c is not None:
            return {(): c} if c else {}
        if isinstance(n, c_ast.ID):
            return {(n.name,): 1}
        if isinstance(n, c_ast.BinaryOp) and n.op in ("+", "-"):
            return _add(self.poly(n.left), self.poly(n.right), 1 if n.op == "+" else -1)
        if isinstance(n, c_ast.BinaryOp) and n.op == "*":
            return _mul(self.poly(n.left), self.poly(n.right))
        if isinstance(n, c_ast.UnaryOp) and n.op in ("-", "+"):
            p = self.poly(n.expr)
            return {m: -c for m, c in p.items()} if n.op == "-" else p
        if isinstance(n, c_ast.Cast) and type_name(n.to_type.type) in INT_TYPES:
            return self.poly(n.expr)
        if self.products(n) or self.reads_array(n):
            raise _Fail
        key = "@" + self.gen.visit(n)
        self.atoms.setdefault(key, n)
        return {(key,): 1}

    def const_int(self, n: c_ast.Node) -> int | None:
        e = const_expr(n, self.constants)
        if e is None or any(isinstance(x, E.Float) for x in E.walk(e)):
            return None
        try:
            v = E.evaluate(e, {})
        except (ZeroDivisionError, KeyError, TypeError, ValueError):
            return None
        return v if isinstance(v, int) else None

    def products(self, n: c_ast.Node) -> bool:
        """Does ``n`` multiply two non-constant terms somewhere?"""
        if isinstance(n, c_ast.BinaryOp) and n.op == "*" and \
                self.const_int(n.left) is None and self.const_int(n.right) is None:
            return True
        return any(self.products(c) for _, c in n.children())

    @staticmethod
    def reads_array(n: c_ast.Node) -> bool:
        return isinstance(n, c_ast.ArrayRef) or any(
            _Delin.reads_array(c) for _, c in n.children())

    def nonlinear(self, p: Poly) -> bool:
        """A product with a size parameter in it (what needs a split)?"""
        return any(len(m) >= 2 and any(x in self.size_names for x in m) for m in p)

    # -- planning --

    def plan(self, name: str, nodes: list[c_ast.ArrayRef]) -> Split | None:
        """The split of array ``name`` given all its accesses, None when none needs
        it or one cannot be read as a polynomial (the model's own error follows)."""
        polys = []
        for n in nodes:
            if not isinstance(n.name, c_ast.ID):
                continue
            try:
                polys.append((n, self.poly(n.subscript)))
            except _Fail:
                return None
        if not any(self.nonlinear(p) for _, p in polys):
            for n, p in polys:       # products that cancel ((0*n + 2)*m): affine, said so
                if self.products(n.subscript):
                    self.parts[id(n)] = [p]
            return None
        for n in nodes:
            if not isinstance(n.name, c_ast.ID):
                self.err(f"'{name}' is a flat buffer whose subscripts were split into "
                         f"dimensions (e.g. {name}[i*n + j] as {name}[i][j]); it cannot also "
                         f"be used with several subscripts", n)
        terms = set()
        for _, p in polys:
            for m in p:
                params = tuple(x for x in m if x in self.size_names)
                if params and len(params) < len(m):
                    terms.add(params)
        if not terms:
            # constant subscripts in the outer dimensions only (A[2*n*m + 3*m + k]):
            # the products of parameters give the sizes then
            terms = {m for _, p in polys for m in p
                     if m and all(x in self.size_names for x in m)}
        first = next(n for n, p in polys if self.nonlinear(p))
        if not terms:
            self.err(f"cannot delinearise the subscripts of '{name}': no product of a loop "
                     f"iterator and an int size parameter gives the dimension sizes "
                     f"(delinearisation splits subscripts such as {name}[i*n + j])",
                     first.subscript)
        sizes = find_sizes(terms)
        if sizes is None:
            shown = ", ".join(sorted("*".join(t) for t in terms))
            self.err(f"cannot delinearise the subscripts of '{name}': the strides {shown} "
                     "do not divide one another, so they are not the sizes of one "
                     "row-major array (Grosser et al. 2015, section 4.2)", first.subscript)
        split = Split(name, sizes)
        for n, p in polys:
            parts = []
            for s in reversed(sizes):
                p, r = _divide(p, s)
                parts.insert(0, r)
            parts.insert(0, p)
            for k, part in enumerate(parts):
                if any(len(m) > 1 for m in part):
                    what = "outermost" if k == 0 else f"dimension {k} of"
                    self.err(f"cannot delinearise {name}[{self.show(self.poly(n.subscript))}] "
                             f"into dimensions of sizes {', '.join('*'.join(s) for s in sizes)}:"
                             f" the {what} subscript {self.show(part)} is not affine",
                             n.subscript)
            self.parts[id(n)] = parts
        return split

    # -- the rewrite --

    def rewrite(self, body: c_ast.Node, splits: dict[str, Split]) -> c_ast.Node:
        from .subset import map_children

        def node(n):
            if isinstance(n, c_ast.ArrayRef) and id(n) in self.parts and \
                    n.name.name not in splits:          # affine, written with products
                return c_ast.ArrayRef(copy.copy(n.name), self.build(self.parts[id(n)][0],
                                                                    n.subscript), n.coord)
            if isinstance(n, c_ast.ArrayRef) and id(n) in self.parts:
                parts = self.parts[id(n)]
                out: c_ast.Node = copy.copy(n.name)
                for part in parts:
                    out = c_ast.ArrayRef(out, self.build(part, n.subscript), n.coord)
                sp = splits[n.name.name]
                line, col = n.coord.line, self.user_column(n.coord.line, n.coord.column)
                subs = tuple(self.show(p) for p in parts)
                sp.texts[id(out)] = (self.written(n, line, col),
                                     n.name.name + "".join(f"[{t}]" for t in subs),
                                     line, col, subs)
                return out
            return map_children(n, lambda c, _s, _l: node(c))
        return node(body)

    def build(self, p: Poly, at: c_ast.Node) -> c_ast.Node:
        """A C expression of the polynomial (located at ``at``)."""
        out: c_ast.Node | None = None
        for m, c in p.items():
            t: c_ast.Node | None = None
            for x in m:
                f = copy.deepcopy(self.atoms[x]) if x.startswith("@") else c_ast.ID(x, at.coord)
                t = f if t is None else c_ast.BinaryOp("*", t, f, at.coord)
            k = abs(c)
            if t is None or k != 1:
                lit = c_ast.Constant("int", str(k), at.coord)
                t = lit if t is None else c_ast.BinaryOp("*", lit, t, at.coord)
            if out is None:
                out = c_ast.UnaryOp("-", t, at.coord) if c < 0 else t
            else:
                out = c_ast.BinaryOp("-" if c < 0 else "+", out, t, at.coord)
        return out if out is not None else c_ast.Constant("int", "0", at.coord)

    def show(self, p: Poly) -> str:
        """``b*n + i - 1`` for messages."""
        text = ""
        for m, c in p.items():
            names = "*".join(x[1:] if x.startswith("@") else x for x in m)
            k = abs(c)
            t = names if names and k == 1 else (f"{k}*{names}" if names else str(k))
            text = (("-" if c < 0 else "") + t) if not text else \
                f"{text} {'-' if c < 0 else '+'} {t}"
        return text or "0"

    def written(self, n: c_ast.ArrayRef, line_no: int, col: int) -> str:
        """The access as the user wrote it (from the cell's text at its position)."""
        lines = self.source.split("\n")
        line = lines[line_no - 1] if 0 < line_no <= len(lines) else ""
        start = col - 1
        if not line[start:].startswith(n.name.name):
            return f"{n.name.name}[{self.gen.visit(n.subscript)}]"
        depth, k = 0, start + len(n.name.name)
        while k < len(line):
            depth += {"[": 1, "]": -1}.get(line[k], 0)
            if depth == 0:
                return line[start:k + 1]
            k += 1
        return f"{n.name.name}[{self.gen.visit(n.subscript)}]"
