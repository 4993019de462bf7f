"""Local pointers into the kernel's arrays: ``const double *xs = x + 1``,
``double *row = A[i]``, ``double *p = &A[i][j]``, read or written as ``p[k]``,
``*p`` or ``*(p + k)``.

A local pointer set once, at its declaration, to an element of an array
parameter is a *view*: every ``p[k]`` is the array's element at ``k`` plus the
pointer's offset, in the array's last dimension.  The kernel's AST is rewritten
before it is analysed, so the model, the dependences and the generated code see
plain array accesses (``xs[i - 1]`` is ``x[i - 1 + 1]``); the offset's variables
(loop iterators, sizes, constants) cannot change while the pointer is in scope,
so substituting it at each use is exact.  This is how pet reads pointer
arithmetic on arrays as accesses to the array (Verdoolaege and Grosser,
"Polyhedral Extraction Tool", IMPACT 2012, section 3: "an access through a
pointer ... is treated as an access to the array it points into").

Refused with the reason: a pointer that is reassigned or incremented, one not
set at its declaration, arithmetic on a multi-dimensional array as a whole
(``A + 1`` for ``double A[n][m]``), a pointer used as a number, pointers in
``for`` headers.  A 1-d array or pointer parameter dereferenced is its element
(``*s += x[i]`` is ``s[0] += x[i]``, ``*(x + i)`` is ``x[i]``); other dereferences
stay refused by the statements' rules (use subscripts).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from pycparser import c_ast

from ...errors import UnsupportedError
from .subset import map_children


@dataclass
class _View:
    """``prefix[k + offset]``: prefix names the array (with its leading subscripts)."""
    prefix: c_ast.Node
    offset: c_ast.Node | None


class _Err(Exception):
    def __init__(self, msg: str, node: c_ast.Node):
        super().__init__(msg)
        self.msg, self.node = msg, node


def local_pointers(ast: c_ast.FileAST, source: str) -> c_ast.FileAST:
    """The file AST with the kernel's local pointers and dereferences rewritten as
    array accesses (unchanged when it has none)."""
    funcs = [e for e in ast.ext if isinstance(e, c_ast.FuncDef)]
    if len(funcs) != 1 or not _uses_pointers(funcs[0].body):
        return ast
    fd = funcs[0]
    try:
        body = _Views(_ranks(fd)).node(fd.body)
    except _Err as e:
        coord = getattr(e.node, "coord", None)
        raise UnsupportedError(e.msg, getattr(coord, "line", None),
                               getattr(coord, "column", None), source) from None
    new = c_ast.FuncDef(fd.decl, fd.param_decls, body, fd.coord)
    return c_ast.FileAST([new if e is fd else e for e in ast.ext], ast.coord)


def _uses_pointers(body: c_ast.Node) -> bool:
    """Does the body declare a pointer or dereference one?"""
    return any((isinstance(n, c_ast.Decl) and isinstance(n.type, c_ast.PtrDecl)) or
               (isinstance(n, c_ast.UnaryOp) and n.op == "*") for _, n in _walk(body))


def _walk(node: c_ast.Node):
    for name, child in node.children():
        yield name, child
        yield from _walk(child)


def _ranks(fd: c_ast.FuncDef) -> dict[str, int]:
    """Array and pointer parameters: their number of dimensions."""
    out = {}
    args = fd.decl.type.args.params if fd.decl.type.args is not None else []
    for a in args:
        if not isinstance(a, c_ast.Decl):
            continue
        t, rank = a.type, 0
        while isinstance(t, (c_ast.ArrayDecl, c_ast.PtrDecl)):
            rank, t = rank + 1, t.type
        if rank and isinstance(t, c_ast.TypeDecl):
            out[a.name] = rank
    return out


def _plus(a: c_ast.Node | None, b: c_ast.Node | None, at: c_ast.Node) -> c_ast.Node | None:
    if a is None or b is None:
        return a if b is None else b
    return c_ast.BinaryOp("+", a, b, at.coord)


class _Views:
    """Rewrites one function body; scopes follow C's blocks."""

    def __init__(self, ranks: dict[str, int]):
        self.ranks = ranks
        self.scopes: list[dict[str, _View]] = [{}]

    def lookup(self, name: str) -> _View | None:
        for s in reversed(self.scopes):
            if name in s:
                return s[name]
        return None

    # -- what a pointer expression points at --

    def view_of(self, e: c_ast.Node, at: c_ast.Node) -> _View:
        """The view an initialiser (``x``, ``x + e``, ``&A[i][j]``, ``A[i]``) denotes."""
        if isinstance(e, c_ast.ID):
            v = self.lookup(e.name)
            if v is not None:
                return _View(copy.deepcopy(v.prefix), copy.deepcopy(v.offset))
            rank = self.ranks.get(e.name)
            if rank == 1:
                return _View(e, None)
            if rank:
                raise _Err(f"a pointer to the whole {rank}-d array '{e.name}' is not "
                           f"supported: point into one row (&{e.name}[i][0])", e)
        if isinstance(e, c_ast.BinaryOp) and e.op in ("+", "-"):
            ptr, off = (e.left, e.right)
            if e.op == "+" and not self.is_pointer(ptr):
                ptr, off = off, ptr
            if self.is_pointer(ptr):
                base = self.view_of(ptr, at)
                off = self.node(off)
                if e.op == "-":
                    off = c_ast.UnaryOp("-", off, off.coord)
                return _View(base.prefix, _plus(base.offset, off, e))
        if isinstance(e, c_ast.UnaryOp) and e.op == "&" and isinstance(e.expr, c_ast.ArrayRef):
            base = self.view_of(e.expr.name, at)
            return _View(base.prefix, _plus(base.offset, self.node(e.expr.subscript), e))
        if isinstance(e, c_ast.ArrayRef):
            subs, b = [], e
            while isinstance(b, c_ast.ArrayRef):
                subs.insert(0, b.subscript)
                b = b.name
            if isinstance(b, c_ast.ID) and self.ranks.get(b.name, 0) == len(subs) + 1 and \
                    self.lookup(b.name) is None:
                return _View(self.node(e), None)
        raise _Err("this pointer is not supported: a local pointer must point into an array "
                   "parameter, e.g. const double *xs = x + 1, double *row = A[i] or "
                   "&A[i][j]", e)

    def is_pointer(self, e: c_ast.Node) -> bool:
        if isinstance(e, c_ast.ID):
            return self.lookup(e.name) is not None or e.name in self.ranks
        if isinstance(e, c_ast.BinaryOp) and e.op in ("+", "-"):
            return self.is_pointer(e.left) or (e.op == "+" and self.is_pointer(e.right))
        if isinstance(e, c_ast.UnaryOp) and e.op == "&":
            return True
        if isinstance(e, c_ast.ArrayRef):
            subs, b = 0, e
            while isinstance(b, c_ast.ArrayRef):
                subs, b = subs + 1, b.name
            return isinstance(b, c_ast.ID) and self.ranks.get(b.name, 0) > subs
        return False

    def mentions_view(self, e: c_ast.Node) -> bool:
        """Is ``e`` a local pointer or a 1-d array or pointer parameter (``*s`` is
        ``s[0]``, ``*(x + k)`` is ``x[k]``), or arithmetic on one?"""
        if isinstance(e, c_ast.ID):
            return self.lookup(e.name) is not None or self.ranks.get(e.name) == 1
        if isinstance(e, c_ast.BinaryOp) and e.op in ("+", "-"):
            return self.mentions_view(e.left) or self.mentions_view(e.right)
        return False

    def element(self, v: _View, sub: c_ast.Node | None, at: c_ast.Node) -> c_ast.ArrayRef:
        index = _plus(sub, copy.deepcopy(v.offset), at)
        if index is None:
            index = c_ast.Constant("int", "0", at.coord)
        return c_ast.ArrayRef(copy.deepcopy(v.prefix), index, at.coord)

    # -- the rewrite --

    def declare(self, d: c_ast.Decl) -> None:
        if d.init is None:
            raise _Err(f"local pointer '{d.name}' must be set where it is declared "
                       f"(e.g. const double *{d.name} = x + 1)", d)
        if not isinstance(d.type.type, c_ast.TypeDecl):
            raise _Err(f"pointer to pointer '{d.name}' is not supported", d)
        self.scopes[-1][d.name] = self.view_of(d.init, d)

    def node(self, n):
        if not isinstance(n, c_ast.Node):
            return n
        if isinstance(n, c_ast.Compound):
            self.scopes.append({})
            items = []
            for it in n.block_items or []:
                if isinstance(it, c_ast.Decl) and isinstance(it.type, c_ast.PtrDecl):
                    self.declare(it)
                    continue
                items.append(self.node(it))
            self.scopes.pop()
            return c_ast.Compound(items, n.coord)
        if isinstance(n, c_ast.DeclList) and any(isinstance(d.type, c_ast.PtrDecl)
                                                 for d in n.decls):
            raise _Err("pointers declared in a for header are not supported", n)
        if isinstance(n, c_ast.ArrayRef) and isinstance(n.name, c_ast.ID) and \
                self.lookup(n.name.name) is not None:
            return self.element(self.lookup(n.name.name), self.node(n.subscript), n)
        if isinstance(n, c_ast.UnaryOp) and n.op == "*" and self.mentions_view(n.expr):
            return self.element(self.view_of(n.expr, n), None, n)
        if isinstance(n, c_ast.ID) and self.lookup(n.name) is not None:
            raise _Err(f"local pointer '{n.name}' is used as a value: only its elements "
                       f"({n.name}[k], *{n.name}) may be read or written", n)
        if isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.ID) and \
                self.lookup(n.lvalue.name) is not None:
            raise _Err(f"local pointer '{n.lvalue.name}' is reassigned: only pointers set "
                       "once, where they are declared, are supported", n)
        if isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--") and \
                isinstance(n.expr, c_ast.ID) and self.lookup(n.expr.name) is not None:
            raise _Err(f"local pointer '{n.expr.name}' is incremented: only pointers set "
                       "once, where they are declared, are supported", n)
        return map_children(n, lambda c, _slot, _in_list: self.node(c))
