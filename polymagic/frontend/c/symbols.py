"""Symbols and scopes of the C front end: what a name means where, and the state
of the walk over one function.

A name is a size parameter (an isl parameter), a floating-point scalar, an array,
a loop iterator (a set dimension of the enclosing domain), a variable declared
before the loop that sets it, or a local scalar expanded into a temp array
(:class:`Temp`, one element per iteration of its enclosing loops).  Scopes nest
like C's blocks; a declaration may not hide a parameter, an iterator or a
``#define`` constant, so every name of a statement has one meaning in the model.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl
from pycparser import c_ast

from ... import expr as E
from ...errors import UnsupportedError
from ...scop import Access, Array, Param, Statement
from .source import Preprocessed


@dataclass
class Temp:
    """A local scalar expanded into a temp array."""
    array: str
    ctype: str
    mins: list[isl.PwAff]        # per enclosing iterator: its minimum (over params)
    min_exprs: list[E.Expr]


@dataclass
class Sym:
    kind: str                    # 'size' 'scalar' 'array' 'iter' 'itervar' 'local'
    name: str
    ctype: str = ""
    pos: int = -1                # iterator: set dimension; size: parameter position
    rank: int = 0                # array: number of dimensions
    const: bool = False          # array declared const
    temp: Temp | None = None


class NonAffine(Exception):
    """An expression outside the affine subset: why, and the culprit node."""

    def __init__(self, reason: str, node: c_ast.Node):
        super().__init__(reason)
        self.reason, self.node = reason, node


class Modifies(c_ast.NodeVisitor):
    """Finds an assignment or ++/-- of one variable."""

    def __init__(self, name: str):
        self.name, self.hit, self.shadow = name, None, False

    def visit_Decl(self, n):
        if n.name == self.name and self.hit is None:
            self.hit, self.shadow = n, True
        self.generic_visit(n)

    def visit_Assignment(self, n):
        if isinstance(n.lvalue, c_ast.ID) and n.lvalue.name == self.name and self.hit is None:
            self.hit = n
        self.generic_visit(n)

    def visit_UnaryOp(self, n):
        if (n.op in ("++", "--", "p++", "p--") and isinstance(n.expr, c_ast.ID)
                and n.expr.name == self.name and self.hit is None):
            self.hit = n
        self.generic_visit(n)


class Names(c_ast.NodeVisitor):
    """All identifiers of a function, and the names that loops assign in their init."""

    def __init__(self):
        self.ids: set[str] = set()
        self.loop_assigned: set[str] = set()
        self.loop_declared: set[str] = set()
        self.declared: dict[str, c_ast.Decl] = {}    # first declaration of each name

    def visit_ID(self, n):
        self.ids.add(n.name)

    def visit_Decl(self, n):
        if n.name:
            self.ids.add(n.name)
            self.declared.setdefault(n.name, n)
        self.generic_visit(n)

    def visit_For(self, n):
        if isinstance(n.init, c_ast.Assignment) and isinstance(n.init.lvalue, c_ast.ID):
            self.loop_assigned.add(n.init.lvalue.name)
        if isinstance(n.init, c_ast.DeclList):
            self.loop_declared.update(d.name for d in n.init.decls if d.name)
        self.generic_visit(n)


class BuilderState:
    """What the walk of one function accumulates (the Scop's pieces, the scopes,
    the enclosing loops' domain and schedule position), and the located errors and
    name lookup every rule uses.  The rules are mixins on top of it
    (:class:`polymagic.frontend.c.Builder`)."""

    def __init__(self, source: str, pre: Preprocessed):
        self.source = source
        self.lines = pre.text.split("\n")
        self.constants = pre.constants
        self.values = pre.values
        self.ctx = isl.DEFAULT_CONTEXT
        self.params: list[Param] = []
        self.returns: str | None = None            # the returned C type (None: void)
        self.arrays: dict[str, Array] = {}
        self.size_params: list[str] = []
        self.scopes: list[dict[str, Sym]] = [{}]
        self.statements: list[Statement] = []
        self.sched: list[list[int | str]] = []
        self.iters: list[str] = []
        self.prefix: list[int | str] = []
        self.pos: list[int] = [0]
        self.names = Names()
        self.iterator_ctypes: dict[str, str] = {}   # loop iterator -> C type (narrowest)
        self.taken: set[str] = set()
        self.acc: list[Access] | None = None      # accesses of the statement being built
        self.node: c_ast.Node | None = None       # statement being handled (for errors)
        self.context: isl.Set | None = None       # set by signature()
        self.dom: isl.Set | None = None           # enclosing loops and conditions

    # -- errors and lookup --

    def err(self, msg: str, node: c_ast.Node | None = None, cls=UnsupportedError):
        """Raise a located error (at ``node``, or at the statement being handled)."""
        coord = node.coord if node is not None else None
        if coord is None and self.node is not None:
            coord = self.node.coord
        line = coord.line if coord is not None else None
        col = coord.column if coord is not None else None
        raise cls(msg, line, col, self.source)

    def prefix_op(self, node: c_ast.UnaryOp) -> c_ast.Node:
        """A node located at the operator of a prefix unary operation (pycparser
        locates the operand)."""
        coord = node.coord
        try:
            line = self.lines[coord.line - 1]
            k = coord.column - 2
            while k >= 0 and line[k] in " \t(":
                k -= 1
            op = node.op.lstrip("p")
            if k >= 0 and line[:k + 1].endswith(op):
                col = k + 2 - len(op)
                return c_ast.ID(op, type(coord)(coord.file, coord.line, col))
        except (AttributeError, IndexError, TypeError):
            pass
        return node

    def lookup(self, name: str) -> Sym | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def declare(self, sym: Sym, node: c_ast.Node) -> None:
        """Bind a name in the innermost scope, refusing to hide constants/params."""
        if sym.name in self.constants:
            self.err(f"'{sym.name}' is a #define constant and cannot be declared", node)
        old = self.lookup(sym.name)
        if old is not None and old.kind in ("size", "scalar", "array") and old.temp is None:
            self.err(f"declaration of '{sym.name}' hides the function parameter of that name",
                     node)
        if old is not None and old.kind == "iter":
            self.err(f"declaration of '{sym.name}' hides the loop iterator of that name", node)
        if sym.name in self.scopes[-1] and len(self.scopes) > 1:
            self.err(f"'{sym.name}' is declared twice", node)
        self.scopes[-1][sym.name] = sym
