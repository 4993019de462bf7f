"""The function, its parameters and its local declarations.

The signature gives the Scop's parameters: ``int``/``long`` arguments are size
parameters (isl parameters, assumed >= 1 when an extent uses them), ``float``/
``double`` arguments are scalars, arrays declared with their extents
(``double A[n][m]``) are the arrays.  A local scalar becomes a temp array with one
element per iteration of the loops enclosing its declaration (index ``iterator -
min``), so each statement instance has its own copy; declared outside all loops
it is 0-d.  A local ``int`` set by a later ``for`` is that loop's iterator.
"""
from __future__ import annotations

import islpy as isl
from pycparser import c_ast

from ... import expr as E
from ...errors import SourceError
from ...isl_util import pw_aff_to_expr
from ...scop import RETURN, Array, Param
from .source import literal
from .subset import (ARRAY_ELEM_TYPES, ELEM_TYPES, FLOAT_TYPES, INT_TYPES, RESERVED,
                     call_args, call_name, is_struct, type_name)
from .symbols import BuilderState, Sym, Temp


class Declarations(BuilderState):
    """Rules for the function, its parameters and local declarations."""

    def function(self, ast: c_ast.FileAST) -> c_ast.FuncDef:
        """The one function of the cell; anything else at file level is rejected."""
        funcs = [e for e in ast.ext if isinstance(e, c_ast.FuncDef)]
        for e in ast.ext:
            if isinstance(e, c_ast.Pragma):
                continue
            if isinstance(e, c_ast.FuncDef) and e is funcs[0]:
                continue
            if isinstance(e, c_ast.FuncDef):
                self.err("only one function per cell is supported (found a second one, "
                         f"'{e.decl.name}')", e)
            if isinstance(e, c_ast.Decl) and isinstance(e.type, (c_ast.Struct, c_ast.Union)):
                self.err("struct/union types are not supported", e)
            if isinstance(e, c_ast.Decl) and isinstance(e.type, c_ast.FuncDecl):
                self.err(f"function declarations are not supported (declares '{e.name}'); "
                         "the cell must define every function it calls", e)
            self.err("global declarations are not supported; put everything in the "
                     "function (sizes as int parameters, constants as #define)", e)
        if not funcs:
            raise SourceError("the cell must contain one C function, "
                              "e.g. void kernel(int n, double A[n]) { ... }",
                              1, None, self.source)
        return funcs[0]

    def signature(self, fd: c_ast.FuncDef) -> None:
        """Parameters -> Params, Arrays and the context."""
        ftype = fd.decl.type
        returned = type_name(ftype.type) if isinstance(ftype.type, c_ast.TypeDecl) else None
        if returned != "void" and returned not in ELEM_TYPES:
            self.err(f"return type of '{fd.decl.name}' is not supported: return void, or "
                     "one float, double, int or long value", ftype.type)
        args = ftype.args.params if ftype.args is not None else []
        if len(args) == 1 and isinstance(args[0], c_ast.Typename) and \
                type_name(args[0].type) == "void":
            args = []
        for a in args:
            self.param(a)
        if returned != "void":
            self.return_param(ELEM_TYPES[returned], fd)
        self.taken = set(self.names.ids) | set(self.constants) | RESERVED
        pspace = isl.Space.create_from_names(self.ctx, set=[], params=self.size_params).params()
        self.context = isl.Set.universe(pspace)
        ls = isl.LocalSpace.from_space(pspace)
        used = {v.name for arr in self.arrays.values() for ext in arr.shape
                for v in E.walk(ext) if isinstance(v, E.Var)}
        for k, p in enumerate(self.size_params):
            if p in used:
                c = isl.Constraint.inequality_alloc(ls).set_coefficient_val(
                    isl.dim_type.param, k, 1).set_constant_val(-1)
                self.context = self.context.add_constraint(c)
        self.dom = isl.Set.universe(
            isl.Space.create_from_names(self.ctx, set=[], params=self.size_params))

    def param(self, a: c_ast.Node) -> None:
        """One parameter."""
        if isinstance(a, c_ast.EllipsisParam):
            self.err("variadic functions are not supported", a)
        if not isinstance(a, c_ast.Decl) or not a.name:
            self.err("every parameter needs a type and a name", a)
        t = a.type
        if isinstance(t, c_ast.ArrayDecl) and self._has_ptr(t):
            self.err(f"pointer parameter '{a.name}' is not supported: declare arrays with "
                     f"their sizes, e.g. double {a.name}[n]", a)
        if is_struct(t) or (isinstance(t, c_ast.ArrayDecl) and is_struct(self._elem(t))):
            self.err(f"struct/union parameter '{a.name}' is not supported", a)
        if a.name in self.constants:
            self.err(f"parameter '{a.name}' has the name of a #define constant", a)
        if self.lookup(a.name) is not None:
            self.err(f"parameter '{a.name}' is declared twice", a)
        if isinstance(t, c_ast.ArrayDecl):
            return self.array_param(a)
        if isinstance(t, c_ast.PtrDecl):
            return self.pointer_param(a)      # frontend/c/pointers.py
        tn = type_name(t)
        if tn in INT_TYPES:
            self.size_params.append(a.name)
            self.params.append(Param(a.name, "size", INT_TYPES[tn]))
            self.scopes[0][a.name] = Sym("size", a.name, INT_TYPES[tn],
                                         pos=len(self.size_params) - 1)
        elif tn in FLOAT_TYPES:
            self.params.append(Param(a.name, "scalar", tn))
            self.scopes[0][a.name] = Sym("scalar", a.name, tn)
        else:
            self.err(f"parameter '{a.name}' has unsupported type '{tn}': use int/long "
                     "for sizes, float/double for scalars, and arrays like double A[n]", a)

    def return_param(self, ctype: str, fd: c_ast.FuncDef) -> None:
        """A returned value: the one-element array :data:`~polymagic.scop.RETURN`
        after the user's parameters, which ``return e;`` (the body's last statement)
        writes (:meth:`~.statements.Statements.body`)."""
        self.returns = ctype
        self.params.append(Param(RETURN, "array", ctype))
        self.arrays[RETURN] = Array(RETURN, ctype, (E.Int(1),), "param", fd.coord.line)
        self.scopes[0][RETURN] = Sym("array", RETURN, ctype, rank=1)

    @staticmethod
    def _elem(t: c_ast.Node) -> c_ast.Node:
        while isinstance(t, c_ast.ArrayDecl):
            t = t.type
        return t

    def _has_ptr(self, t: c_ast.Node) -> bool:
        return isinstance(self._elem(t), c_ast.PtrDecl)

    def array_param(self, a: c_ast.Decl) -> None:
        """``double A[n][m]`` -> Param(kind='array') and Array(kind='param')."""
        dims, t = [], a.type
        while isinstance(t, c_ast.ArrayDecl):
            if t.dim is None:
                self.err(f"array parameter '{a.name}' needs an extent in every dimension, "
                         f"e.g. double {a.name}[n][m]", t)
            dims.append(self.extent(t.dim))
            t = t.type
        tn = type_name(t)
        if tn not in ARRAY_ELEM_TYPES:
            self.err(f"array '{a.name}' has unsupported element type '{tn}' "
                     "(use float, double, int, long or char)", a)
        ctype = ARRAY_ELEM_TYPES[tn]
        self.params.append(Param(a.name, "array", ctype))
        self.arrays[a.name] = Array(a.name, ctype, tuple(dims), "param", a.coord.line)
        rank = self.flat_rank(a.name) if len(dims) == 1 else len(dims)   # delinearised
        self.scopes[0][a.name] = Sym("array", a.name, ctype, rank=rank,
                                     const="const" in (a.quals or []))

    def extent(self, node: c_ast.Node) -> E.Expr:
        """An array extent: integer expression of earlier int parameters and constants."""
        if isinstance(node, c_ast.Constant):
            lit = literal(node)
            if isinstance(lit, E.Int):
                return lit
        elif isinstance(node, c_ast.ID):
            if node.name in self.constants and isinstance(self.values[node.name], int):
                return E.Int(self.values[node.name])
            sym = self.lookup(node.name)
            if sym is not None and sym.kind == "size":
                return E.Var(node.name)
            if sym is None and node.name not in self.constants:
                self.err(f"array extent uses '{node.name}', which is not an earlier int "
                         "parameter or #define constant (size parameters must come before "
                         "the arrays that use them)", node)
        elif isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-", "*", "/", "%"):
            return E.Binary(node.op, self.extent(node.left), self.extent(node.right))
        elif isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            return E.Unary(node.op, self.extent(node.expr))
        elif isinstance(node, c_ast.FuncCall) and call_name(node) in ("min", "max"):
            args = call_args(node)
            if len(args) == 2:
                return E.Call(call_name(node), tuple(self.extent(x) for x in args))
        self.err("array extent must be an integer expression of earlier int parameters "
                 "and #define constants", node)

    # -- local declarations --

    def local_decl(self, d: c_ast.Decl) -> None:
        """A local scalar (expanded into a temp array) or a pre-declared loop iterator."""
        self.node = d
        t = d.type
        if isinstance(t, c_ast.ArrayDecl):
            return self.local_array(d)          # frontend/c/local_arrays.py
        if isinstance(t, c_ast.PtrDecl):
            self.err(f"pointers are not supported ('{d.name}')", d)
        if isinstance(t, c_ast.FuncDecl):
            self.err(f"function declarations are not supported ('{d.name}')", d)
        if is_struct(t) or isinstance(t, (c_ast.Struct, c_ast.Union)):
            self.err("struct/union types are not supported", d)
        if set(d.storage or []) & {"static", "extern"}:
            self.err(f"{d.storage[0]} local variables are not supported ('{d.name}')", d)
        tn = type_name(t)
        ctype = ELEM_TYPES.get(tn or "")
        if ctype is None:
            self.err(f"local variable '{d.name}' has unsupported type '{tn}' "
                     "(use int, long, float or double)", d)
        if d.name in self.names.loop_assigned and ctype in ("int", "long"):
            if d.init is not None:
                self.err(f"'{d.name}' is used as a loop iterator; declare it without an "
                         "initial value", d)
            return self.declare(Sym("itervar", d.name, ctype), d)
        if isinstance(d.init, c_ast.InitList):
            self.err("initializer lists are not supported", d.init)
        sym = Sym("local", d.name, ctype, temp=self.new_temp(d.name, ctype, d))
        self.declare(sym, d)
        if d.init is not None:
            self.emit(d, c_ast.ID(d.name, d.coord), "=", d.init, decl=True)

    def new_temp(self, name: str, ctype: str, node: c_ast.Node) -> Temp:
        """A temp array with one element per iteration of the enclosing loops."""
        aname = self.temp_name(name)
        self.taken.add(aname)
        mins, min_exprs, shape = [], [], []
        dom = self.dom
        for p in range(len(self.iters)):
            if dom.is_empty():
                mn = isl.PwAff.val_on_domain(isl.Set.universe(self.context.get_space()), 0)
                ext: E.Expr = E.Int(1)
            else:
                mn, mx = dom.dim_min(p), dom.dim_max(p)
                # 0 for the sizes where the loop does not run (not a negative extent:
                # fuzz finding 25)
                zero = isl.PwAff.val_on_domain(isl.Set.universe(self.context.get_space()), 0)
                ext = pw_aff_to_expr(mx.sub(mn).add_constant_val(1).union_max(zero),
                                     self.context)
            mins.append(mn)
            min_exprs.append(pw_aff_to_expr(mn, self.context) if not dom.is_empty() else E.Int(0))
            shape.append(ext)
        self.arrays[aname] = Array(aname, ctype, tuple(shape), "temp", node.coord.line)
        return Temp(aname, ctype, mins, min_exprs)

    def temp_name(self, name: str) -> str:
        """The variable's own name unless it clashes with a parameter, an array, a
        loop iterator, a constant or a built-in; then name_1, name_2, ..."""
        clash = (name in self.arrays or name in self.constants or name in RESERVED
                 or name in self.names.loop_assigned or name in self.names.loop_declared
                 or any(p.name == name for p in self.params))
        if not clash:
            return name
        k = 1
        while f"{name}_{k}" in self.taken or f"{name}_{k}" in self.arrays:
            k += 1
        return f"{name}_{k}"
