"""Statements: the dispatch over a function body, the errors for C outside the
subset, and assignments, each of which becomes one Scop statement.

A statement ``Sk`` (``k`` in textual order) gets the domain of its enclosing loops
and conditions, its position in the original 2d+1 schedule, its body as an
:class:`~polymagic.expr.Assign` and its accesses: for ``a op= b`` the target is
read first and written last; ``A[i]++`` is ``A[i] += 1``.
"""
from __future__ import annotations

import copy

import islpy as isl
from pycparser import c_ast

from ... import expr as E
from ...errors import SourceError
from ...scop import RETURN, Access, Statement
from .subset import ASSIGN_OPS, MATH_FUNCS, SIDE_EFFECT_FUNCS, call_name
from .symbols import BuilderState


class Statements(BuilderState):
    """Rules for statements and assignments."""

    def body(self, fd: c_ast.FuncDef) -> None:
        """The function body (a compound statement)."""
        items = fd.body.block_items or []
        for k, item in enumerate(items):
            last = k == len(items) - 1
            if isinstance(item, c_ast.Return) and item.expr is None and last:
                continue
            if isinstance(item, c_ast.Return) and self.returns is not None and last:
                item = c_ast.Assignment("=", c_ast.ArrayRef(
                    c_ast.ID(RETURN, item.coord), c_ast.Constant("int", "0", item.coord),
                    item.coord), item.expr, item.coord)
            self.stmt(item)
        if self.returns is not None and not (items and isinstance(items[-1], c_ast.Return)
                                             and items[-1].expr is not None):
            self.err(f"'{fd.decl.name}' returns {self.returns}: its last statement must be "
                     "return with the value (the only return of the function)",
                     items[-1] if items else fd)

    def stmt(self, n: c_ast.Node) -> None:
        """Dispatch one statement."""
        self.node = n
        if isinstance(n, c_ast.Compound):
            self.scopes.append({})
            for item in n.block_items or []:
                self.stmt(item)
            self.scopes.pop()
        elif isinstance(n, c_ast.Decl):
            self.local_decl(n)
        elif isinstance(n, c_ast.DeclList):
            for d in n.decls:
                self.local_decl(d)
        elif isinstance(n, c_ast.For):
            self.for_loop(n)
        elif isinstance(n, c_ast.If):
            self.if_stmt(n)
        elif isinstance(n, c_ast.Assignment):
            self.assignment(n)
        elif isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--"):
            self.incdec(n)
        elif isinstance(n, (c_ast.EmptyStatement, c_ast.Pragma)):
            pass
        else:
            self.unsupported_stmt(n)

    def unsupported_stmt(self, n: c_ast.Node) -> None:
        """A clear error for statements outside the affine subset."""
        kinds = {c_ast.While: "while loops", c_ast.DoWhile: "do-while loops",
                 c_ast.Break: "break", c_ast.Continue: "continue", c_ast.Goto: "goto",
                 c_ast.Switch: "switch", c_ast.Label: "labels", c_ast.Case: "switch",
                 c_ast.Default: "switch"}
        for cls, what in kinds.items():
            if isinstance(n, cls) and what.endswith("while loops"):
                self.err(f"{what} are not supported: their trip count is known only at run "
                         "time, and the polyhedral model needs for loops with affine bounds "
                         "and if statements (static control flow); write a for loop", n)
            if isinstance(n, cls):
                self.err(f"{what} are not supported: only for loops with affine bounds "
                         "and if statements (static control flow)"
                         if what.endswith("s") else
                         f"{what} is not supported: only for loops with affine bounds and "
                         "if statements (static control flow)", n)
        if isinstance(n, c_ast.Return):
            if n.expr is not None and self.returns is None:
                self.err("return with a value in a void function: declare the function's "
                         "return type (double f(...)), or write the result to an array", n)
            self.err("return is only allowed as the last statement of the function", n)
        if isinstance(n, c_ast.FuncCall):
            self.call_error(n)
        self.err("this statement has no effect or is not supported: statements must "
                 "assign to an array element or a local scalar", n)

    def call_error(self, n: c_ast.FuncCall) -> None:
        """Reject a call that is not a pure math function."""
        name = call_name(n)
        if name is None:
            self.err("calls through function pointers are not supported", n)
        if name in MATH_FUNCS:
            self.err(f"the result of {name}() is unused", n)
        if name in SIDE_EFFECT_FUNCS:
            self.err(f"call to {name}() is not supported: calls with side effects cannot "
                     "run on the GPU", n)
        self.err(f"call to unknown function {name}(): only math functions "
                 f"({', '.join(sorted(MATH_FUNCS))}) may be called", n)

    # -- assignments --

    def assignment(self, n: c_ast.Assignment) -> None:
        if n.op not in ASSIGN_OPS:
            self.err(f"assignment operator {n.op} is not supported", n)
        self.emit(n, n.lvalue, n.op, n.rvalue)

    def incdec(self, n: c_ast.UnaryOp) -> None:
        """``A[i]++`` as ``A[i] += 1``."""
        op = "+=" if "+" in n.op else "-="
        at = n if n.op.startswith("p") else self.prefix_op(n)
        self.emit(n, n.expr, op, c_ast.Constant("int", "1", n.coord), at=at)

    def emit(self, n: c_ast.Node, lhs: c_ast.Node, op: str, rhs: c_ast.Node,
             decl: bool = False, at: c_ast.Node | None = None) -> None:
        """One Statement: domain, schedule position, body and accesses."""
        if isinstance(rhs, c_ast.Assignment):
            rhs = self.chained(lhs, rhs)
        name = f"S{len(self.statements)}"
        self.acc = []
        self.ref_may = False
        target, wrel = self.target(lhs)
        gather = self.ref_may
        if op != "=":
            self.acc.append(Access(target.array, wrel, False, gather))
        value = self.value(rhs)
        guard = self.guard_of()          # frontend/c/mayaccess: may-writes, atomics
        atomic = None
        if gather:
            fused = self.guarded_extremum(target, op, value, guard)
            if fused is not None:        # if (v > h[b]) h[b] = v: h[b] = max(h[b], v)
                value, atomic, guard = fused[0], fused[1], None
            else:
                atomic = self.atomic_op(target, op, value)
        w_at = next((k for k, a in enumerate(self.acc) if a.guard), len(self.acc))
        self.acc.insert(w_at, Access(target.array, wrel, True, gather or guard is not None))
        accs = [Access(a.array, a.relation.set_tuple_name(isl.dim_type.in_, name), a.is_write,
                       a.may, a.guard)
                for a in self.acc]
        self.acc = None
        text = self.text((at or n).coord, decl)
        if decl:
            text = f"{self.lookup(lhs.name).ctype} {text}"
        self.statements.append(Statement(
            name, tuple(self.iters), self.dom.set_tuple_name(name), E.Assign(target, op, value),
            accs, n.coord.line, text, guard, atomic))
        self.sched.append(self.prefix + [self.pos[-1]])
        self.pos[-1] += 1

    def chained(self, lhs: c_ast.Node, inner: c_ast.Assignment) -> c_ast.Node:
        """``a = b = e`` (or ``a += b = e``...) in its sequential meaning: the inner
        assignment is a statement of its own, emitted first, and the outer one reads
        the inner target back -- its new value, converted to its type as C's value
        of an assignment is.  Refused where the outer target's subscripts read the
        inner target (C leaves that order unsequenced)."""
        written = self.base_name(inner.lvalue)
        if written is not None and isinstance(lhs, c_ast.ArrayRef) and any(
                isinstance(x, c_ast.ID) and x.name == written
                for x in _ids(lhs) if x is not self.base(lhs)):
            self.err(f"the subscripts of this assignment read '{written}', which the "
                     "chained assignment writes (unsequenced in C); write the two "
                     "assignments as statements of their own", lhs)
        self.assignment(inner)
        return copy.deepcopy(inner.lvalue)

    @staticmethod
    def base(n: c_ast.Node) -> c_ast.Node:
        """The array (or variable) an lvalue names."""
        while isinstance(n, c_ast.ArrayRef):
            n = n.name
        return n

    def base_name(self, n: c_ast.Node) -> str | None:
        b = self.base(n)
        return b.name if isinstance(b, c_ast.ID) else None

    def target(self, lhs: c_ast.Node) -> tuple[E.Access, isl.Map]:
        """The written element: an array element or a local scalar."""
        if isinstance(lhs, c_ast.ID):
            sym = self.lookup(lhs.name)
            if sym is None:
                self.err(f"undeclared variable '{lhs.name}'", lhs, SourceError)
            if sym.kind in ("size", "scalar"):
                self.err(f"assignment to function parameter '{lhs.name}' is not supported: "
                         "parameters passed by value are read-only", lhs)
            if sym.kind == "array":
                self.err(f"cannot assign to the whole array '{lhs.name}'", lhs)
            if sym.kind == "iter":
                self.err(f"loop iterator '{lhs.name}' is modified in the loop body", lhs)
            if sym.kind == "itervar":
                self.err(f"'{lhs.name}' is a loop iterator and can only be set by its for "
                         "statement", lhs)
            return self.temp_access(sym, lhs)
        if isinstance(lhs, c_ast.ArrayRef):
            acc, rel = self.array_ref(lhs)
            if self.lookup(acc.array).const:
                self.err(f"assignment to const array '{acc.array}'", lhs)
            return acc, rel
        if isinstance(lhs, c_ast.UnaryOp) and lhs.op == "*":
            self.err("pointer dereference is not supported: use array subscripts",
                     self.prefix_op(lhs))
        if isinstance(lhs, c_ast.StructRef):
            self.err("struct/union members are not supported", lhs)
        self.err("the left-hand side must be an array element or a local variable", lhs)

    def text(self, coord, decl: bool) -> str:
        """The statement as written: from its start to the ``;`` (or ``,`` in a
        declaration), whitespace collapsed."""
        line, col = coord.line - 1, coord.column - 1
        chars, depth = [], 0
        while line < len(self.lines):
            for ch in self.lines[line][col:]:
                if ch in "([{":
                    depth += 1
                elif ch in ")]}" and decl and depth == 0:
                    # a parameter copied by an inlined helper (frontend/c/inline.py)
                    return " ".join("".join(chars).split()) + ";"
                elif ch in ")]}":
                    depth -= 1
                elif depth == 0 and (ch == ";" or (decl and ch == ",")):
                    return " ".join("".join(chars).split()) + ";"
                chars.append(ch)
            chars.append(" ")
            line, col = line + 1, 0
        return " ".join("".join(chars).split())


def _ids(n: c_ast.Node) -> list[c_ast.ID]:
    """Every identifier under ``n``."""
    out = [n] if isinstance(n, c_ast.ID) else []
    for _, child in n.children():
        out += _ids(child)
    return out
