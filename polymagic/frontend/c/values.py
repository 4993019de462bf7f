"""Values: right-hand sides and subscripts as :mod:`polymagic.expr` trees.

Any C expression of the subset may appear in a value, data-dependent ones
included (``x = c ? a : b``): constants by value, iterators and parameters as
variables, array elements and local scalars as accesses, which are recorded as
reads of the statement being built.  Pointers, embedded assignments and
increments, and calls other than the math functions are rejected.
"""
from __future__ import annotations

from pycparser import c_ast

from ... import expr as E
from ...errors import SourceError
from ...scop import Access
from .source import literal
from .subset import ELEM_TYPES, MATH_FUNCS, VALUE_BINOPS, call_args, call_name, type_name
from .symbols import BuilderState


class Values(BuilderState):
    """Rules for values."""

    def value(self, node: c_ast.Node) -> E.Expr:
        """A right-hand side (or subscript) as an Expr; array reads are recorded."""
        if isinstance(node, c_ast.Constant):
            lit = literal(node)
            if lit is None:
                self.err(f"unsupported literal {node.value}", node)
            return lit
        if isinstance(node, c_ast.ID):
            return self.value_id(node)
        if isinstance(node, c_ast.ArrayRef):
            acc, rel = self.array_ref(node)
            if self.acc is not None:
                self.acc.append(Access(acc.array, rel, False, self.ref_may))
            return acc
        if isinstance(node, c_ast.BinaryOp) and node.op in VALUE_BINOPS:
            return E.Binary(node.op, self.value(node.left), self.value(node.right))
        if isinstance(node, c_ast.UnaryOp):
            return self.value_unary(node)
        if isinstance(node, c_ast.TernaryOp):
            return E.Cond(self.value(node.cond), self.value(node.iftrue),
                          self.value(node.iffalse))
        if isinstance(node, c_ast.Cast):
            return self.value_cast(node)
        if isinstance(node, c_ast.FuncCall):
            return self.value_call(node)
        self.value_error(node)

    def value_error(self, node: c_ast.Node) -> None:
        if isinstance(node, c_ast.Assignment):
            self.err("assignment inside an expression is not supported (only a chain "
                     "of assignments as a statement, a = b = e;): write it as a "
                     "statement of its own", node)
        if isinstance(node, c_ast.ExprList):
            self.err("the comma operator is not supported", node)
        if isinstance(node, c_ast.StructRef):
            self.err("struct/union members are not supported", node)
        self.err("unsupported expression", node)

    def value_id(self, node: c_ast.ID) -> E.Expr:
        """Constants by value, iterators/parameters as Var, locals as temp reads."""
        if node.name in self.constants:
            return self.constants[node.name]
        sym = self.lookup(node.name)
        if sym is None:
            self.err(f"undeclared variable '{node.name}'", node, SourceError)
        if sym.kind in ("iter", "size", "scalar"):
            return E.Var(node.name)
        if sym.kind == "array":
            self.err(f"array '{sym.name}' is used without subscripts", node)
        if sym.kind == "itervar":
            self.err(f"loop iterator '{node.name}' is used outside its loop", node)
        acc, rel = self.temp_access(sym, node)
        if self.acc is not None:
            self.acc.append(Access(acc.array, rel, False))
        return acc

    def value_unary(self, node: c_ast.UnaryOp) -> E.Expr:
        """- + ! ~; pointers and embedded ++/-- are rejected."""
        op = node.op
        if op in ("-", "+", "!", "~"):
            return E.Unary(op, self.value(node.expr))
        at = self.prefix_op(node) if op in ("&", "*", "++", "--", "sizeof") else node
        if op == "&":
            self.err("address-of (&) is not supported: there are no pointers", at)
        if op == "*":
            self.err("pointer dereference is not supported: use array subscripts", at)
        if op in ("++", "--", "p++", "p--"):
            self.err("increment/decrement inside an expression is not supported; "
                     "write it as its own statement", at)
        self.err(f"operator {op} is not supported", at)

    def value_cast(self, node: c_ast.Cast) -> E.Expr:
        """Casts to float/double/int/long."""
        t = node.to_type.type
        if isinstance(t, c_ast.PtrDecl):
            self.err("pointer casts are not supported", node)
        tn = type_name(t)
        ctype = ELEM_TYPES.get(tn or "")
        if ctype is None:
            self.err(f"cast to unsupported type '{tn}'", node)
        return E.Cast(ctype, self.value(node.expr))

    def value_call(self, node: c_ast.FuncCall) -> E.Expr:
        name = call_name(node)
        if name not in MATH_FUNCS:
            self.call_error(node)
        args = call_args(node)
        if len(args) != MATH_FUNCS[name]:
            self.err(f"{name}() takes {MATH_FUNCS[name]} argument(s), got {len(args)}", node)
        return E.Call(name, tuple(self.value(a) for a in args))
