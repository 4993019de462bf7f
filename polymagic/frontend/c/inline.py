"""Helper functions of a cell: which function is the kernel, and the inlining of
the others into it, before the loop nest is analysed.

The rule for the kernel: the one function of the cell that no other function of
the cell calls (functions called from it are its helpers).  Two such functions
are an error, so is a cell where every function is called (recursion).

A helper that returns a value is inlined where it is called, as one C
expression: its body may declare and assign its own scalar variables, branch with
``if``/``else`` and ``return`` anywhere, but has no loops, writes no array and
calls only math functions and other helpers.  The body is executed symbolically
(each variable's value is an expression of the parameters; an ``if`` merges the
two branches' values with ``?:``, an early ``return`` becomes a guarded value).

A ``void`` helper called as a statement is inlined as a block of the kernel (its
loops become loops of the nest): array parameters take the passed array's name,
scalar parameters the argument, or a local copy of it when the body assigns the
parameter or the argument reads an array; its locals are renamed away from the
kernel's names.  Both are how pet (Verdoolaege and Grosser, "Polyhedral
Extraction Tool", IMPACT 2012, section 3) treats calls: the callee's body is
inlined into the SCoP so that its accesses are the caller's.

C's conversions are kept exactly: an argument is cast to its parameter's type
and the value to the return type unless the types are known to be equal (so the
emulator and the GPU compute what the CPU reference computes).  Array (or
pointer) parameters take the name of the kernel's array passed to them.
Nodes of the inlined expression keep their coordinates, so later errors point at
the helper's line (and arguments at the call).

Refused, with the reason: recursion (direct or mutual), function pointers,
value helpers with loops or that write arrays, a value helper's unused value, a
void helper used as a value, ``return`` before a void helper's end.
"""
from __future__ import annotations

import copy

from pycparser import c_ast

from ... import expr as E
from ...errors import UnsupportedError
from .subset import ELEM_TYPES, MATH_FUNCS, call_args, call_name, map_children, type_name

#: Rank of the arithmetic types in C's usual conversions.
_RANK = {"int": 0, "long": 1, "float": 2, "double": 3}
_ALWAYS = "always"           # the guard of a value that is returned on every path


class _Err(Exception):
    """A located refusal, turned into UnsupportedError by :func:`split_kernel`."""

    def __init__(self, msg: str, node: c_ast.Node | None):
        super().__init__(msg)
        self.msg, self.node = msg, node


def split_kernel(ast: c_ast.FileAST, source: str, constants) -> c_ast.FileAST:
    """The cell's file AST with only the kernel function, every call to a helper
    in it replaced by the helper's inlined expression (or, for a void helper, its
    inlined block).  Declarations from outside the cell (``#line`` markers of
    other files: the typedef prelude) are dropped."""
    try:
        return _split(ast, _constant_types(constants))
    except _Err as e:
        coord = getattr(e.node, "coord", None)
        raise UnsupportedError(e.msg, getattr(coord, "line", None),
                               getattr(coord, "column", None), source) from None


def _in_cell(node: c_ast.Node) -> bool:
    coord = getattr(node, "coord", None)
    return coord is None or coord.file in ("<cell>", "")


def _constant_types(constants) -> dict[str, str | None]:
    """The C type of each ``#define`` constant (an int, or a float/double literal)."""
    out = {}
    for name, e in dict(constants).items():
        if isinstance(e, E.Int):
            out[name] = "int"
        elif isinstance(e, E.Float):
            out[name] = "float" if e.text.rstrip().endswith(("f", "F")) else "double"
        else:
            out[name] = None
    return out


def _split(ast: c_ast.FileAST, constants: dict[str, str | None]) -> c_ast.FileAST:
    ext = [e for e in ast.ext if _in_cell(e)]
    funcs = {e.decl.name: e for e in ext if isinstance(e, c_ast.FuncDef)}
    if len(funcs) <= 1 and not any(_calls(f) & set(funcs) for f in funcs.values()):
        _check_function_pointers(list(funcs.values()))
        return c_ast.FileAST([e for e in ext if not _prototype(e, funcs)], ast.coord)
    _check_function_pointers(list(funcs.values()))
    _check_recursion(funcs)
    called = set().union(*(_calls(f) & set(funcs) for f in funcs.values()))
    roots = [f for f in funcs.values() if f.decl.name not in called]
    void = [f for f in roots if type_name(f.decl.type.type) == "void"]
    if len(void) > 1:
        raise _Err(f"only one function per cell may be the kernel, but '{void[0].decl.name}' "
                   f"and '{void[1].decl.name}' are both void functions that no other function "
                   "calls: the kernel is the void function of the cell that no other calls, "
                   "and the others (helpers) are inlined where it calls them", void[1])
    roots = void or roots[-1:]
    kernel = roots[0]
    inl = _Inliner(funcs, constants, kernel)
    kernel = _rewrite(kernel, inl.kernel_call, {**constants, **_kernel_types(kernel)})
    keep = []
    for e in ext:
        if isinstance(e, c_ast.FuncDef):
            if e.decl.name == kernel.decl.name:
                keep.append(kernel)
        elif not _prototype(e, funcs):
            keep.append(e)
    return c_ast.FileAST(keep, ast.coord)


def _prototype(e: c_ast.Node, funcs: dict) -> bool:
    """Is ``e`` a declaration of a function the cell defines?"""
    return isinstance(e, c_ast.Decl) and isinstance(e.type, c_ast.FuncDecl) and e.name in funcs


# ---- the call graph ----------------------------------------------------------------

class _Calls(c_ast.NodeVisitor):
    def __init__(self):
        self.calls: list[c_ast.FuncCall] = []

    def visit_FuncCall(self, n):
        self.calls.append(n)
        self.generic_visit(n)


def _call_nodes(f: c_ast.Node) -> list[c_ast.FuncCall]:
    v = _Calls()
    v.visit(f)
    return v.calls


def _calls(f: c_ast.FuncDef) -> set[str]:
    return {call_name(c) for c in _call_nodes(f.body) if call_name(c)}


def _check_recursion(funcs: dict[str, c_ast.FuncDef]) -> None:
    """Refuse a call that closes a cycle of the cell's call graph."""
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for c in _call_nodes(funcs[name].body):
            callee = call_name(c)
            if callee not in funcs:
                continue
            if state.get(callee) == 1:
                cycle = path[path.index(callee):] + [callee] if callee in path else [callee]
                how = ("calls itself" if cycle == [callee, callee] or len(cycle) == 1 else
                       "is recursive through " + " -> ".join(cycle))
                raise _Err(f"recursion is not supported: '{callee}' {how}; helper functions "
                           "are inlined into the loop nest, which needs a finite call tree "
                           "(write the recursion as a for loop in the kernel)", c)
            if callee not in state:
                visit(callee, path + [callee])
        state[name] = 2

    for name in funcs:
        if name not in state:
            visit(name, [name])


def _is_function_pointer(t: c_ast.Node) -> bool:
    while isinstance(t, (c_ast.PtrDecl, c_ast.ArrayDecl)):
        t = t.type
        if isinstance(t, c_ast.FuncDecl):
            return True
    return False


def _check_function_pointers(funcs: list[c_ast.FuncDef]) -> None:
    """Refuse function-pointer parameters, variables and calls."""
    for f in funcs:
        args = f.decl.type.args.params if f.decl.type.args is not None else []
        decls = [a for a in args if isinstance(a, c_ast.Decl)]
        decls += [d for d in _decls(f.body)]
        for d in decls:
            if _is_function_pointer(d.type):
                raise _Err(f"function pointer '{d.name}' is not supported: the called code "
                           "must be known when the kernel is compiled (call a helper "
                           "function of the cell by its name instead)", d)
        for c in _call_nodes(f.body):
            if call_name(c) is None:
                raise _Err("calls through function pointers are not supported: the called "
                           "code must be known when the kernel is compiled (call a helper "
                           "function of the cell by its name)", c)


class _Decls(c_ast.NodeVisitor):
    def __init__(self):
        self.decls: list[c_ast.Decl] = []

    def visit_Decl(self, n):
        self.decls.append(n)
        self.generic_visit(n)


def _decls(node: c_ast.Node) -> list[c_ast.Decl]:
    v = _Decls()
    v.visit(node)
    return v.decls


# ---- types (only to leave out casts that change nothing) ----------------------------

def _scalar_type(t: c_ast.Node) -> str | None:
    return ELEM_TYPES.get(type_name(t) or "")


def _decl_type(t: c_ast.Node):
    """'double' for a scalar, ('array', 'double') for an array or pointer, else None."""
    if isinstance(t, (c_ast.ArrayDecl, c_ast.PtrDecl)):
        while isinstance(t, (c_ast.ArrayDecl, c_ast.PtrDecl)):
            t = t.type
        elem = _scalar_type(t)
        return ("array", elem) if elem else None
    return _scalar_type(t)


def _kernel_types(f: c_ast.FuncDef) -> dict:
    """Name -> type of the kernel's parameters and locals (None where a name has
    several types)."""
    out: dict = {}
    args = f.decl.type.args.params if f.decl.type.args is not None else []
    for d in [a for a in args if isinstance(a, c_ast.Decl)] + _decls(f.body):
        t = _decl_type(d.type)
        out[d.name] = t if out.get(d.name, t) == t else None
    return out


def _literal_type(c: c_ast.Constant) -> str | None:
    t = c.type
    if t in ("float", "double"):
        return t
    if t in ("int", "char"):
        return "int"
    if t in ("long int", "long long int"):
        return "long"
    return None


def _join(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return None
    return a if _RANK[a] >= _RANK[b] else b


def type_of(node: c_ast.Node, types: dict, funcs: dict) -> str | None:
    """The C type of an expression where it is plainly known, else None."""
    if isinstance(node, c_ast.Constant):
        return _literal_type(node)
    if isinstance(node, c_ast.ID):
        t = types.get(node.name)
        return t if isinstance(t, str) else None
    if isinstance(node, c_ast.ArrayRef):
        base = node
        while isinstance(base, c_ast.ArrayRef):
            base = base.name
        t = types.get(base.name) if isinstance(base, c_ast.ID) else None
        return t[1] if isinstance(t, tuple) else None
    if isinstance(node, c_ast.Cast):
        return _scalar_type(node.to_type.type)
    if isinstance(node, c_ast.UnaryOp):
        if node.op == "!":
            return "int"
        return type_of(node.expr, types, funcs) if node.op in ("-", "+", "~") else None
    if isinstance(node, c_ast.BinaryOp):
        if node.op in ("<", "<=", ">", ">=", "==", "!=", "&&", "||"):
            return "int"
        a, b = type_of(node.left, types, funcs), type_of(node.right, types, funcs)
        return a if node.op in ("<<", ">>") else _join(a, b)
    if isinstance(node, c_ast.TernaryOp):
        return _join(type_of(node.iftrue, types, funcs), type_of(node.iffalse, types, funcs))
    if isinstance(node, c_ast.FuncCall):
        name = call_name(node)
        if name in funcs:
            return _scalar_type(funcs[name].decl.type.type)
        if name in ("min", "max"):
            args = call_args(node)
            return _join(*(type_of(a, types, funcs) for a in args)) if len(args) == 2 else None
        if name == "abs":
            return "int"
        if name in MATH_FUNCS:
            return "float" if name.endswith("f") and name[:-1] in MATH_FUNCS else "double"
    return None


def _cast(ctype: str, node: c_ast.Node, types: dict, funcs: dict) -> c_ast.Node:
    """``(ctype)(node)`` unless node has that type already."""
    if type_of(node, types, funcs) == ctype:
        return node
    coord = node.coord
    tn = c_ast.Typename(None, [], None, c_ast.TypeDecl(
        None, [], None, c_ast.IdentifierType([ctype], coord), coord), coord)
    return c_ast.Cast(tn, node, coord)


# ---- rewriting ----------------------------------------------------------------------

def _rewrite(node, call, types):
    """A copy of ``node`` with every FuncCall ``c`` replaced by ``call(c, types,
    statement)`` (``statement`` when the call is a statement of a block)."""
    def walk(n, stmt=False):
        if isinstance(n, c_ast.FuncCall):
            args = n.args
            if args is not None:
                args = c_ast.ExprList([walk(a) for a in args.exprs], args.coord)
            new = c_ast.FuncCall(n.name, args, n.coord)
            return call(new, types, stmt)
        if not isinstance(n, c_ast.Node):
            return n
        return map_children(n, lambda c, slot, in_list: walk(c, stmt=isinstance(
            n, c_ast.Compound) if in_list else isinstance(
            n, (c_ast.Compound, c_ast.If, c_ast.For)) and slot in ("iftrue", "iffalse", "stmt")))
    return walk(node)


class _Helper:
    """One helper compiled to an expression of its parameters."""

    def __init__(self, fd: c_ast.FuncDef, params: list[tuple[str, object]],
                 ret: str, value: c_ast.Node):
        self.fd, self.params, self.ret, self.value = fd, params, ret, value


class _Inliner:
    """Compiles helpers (once each) and replaces calls to them."""

    def __init__(self, funcs: dict[str, c_ast.FuncDef], constants: dict[str, str | None],
                 kernel: c_ast.FuncDef):
        self.funcs, self.constants = funcs, constants
        self.done: dict[str, _Helper] = {}
        self.used = {n.name for n in _ids(kernel)} | {d.name for d in _decls(kernel)} | \
            set(constants) | set(funcs) | set(MATH_FUNCS)

    # -- at a call --

    def kernel_call(self, call: c_ast.FuncCall, types: dict, stmt: bool) -> c_ast.Node:
        name = call_name(call)
        if name not in self.funcs:
            return call
        void = type_name(self.funcs[name].decl.type.type) == "void"
        if stmt and void:
            return self.inline_statements(call, types)
        if stmt:
            raise _Err(f"the value of helper '{name}' is unused: a helper that returns a "
                       "value is inlined as an expression; assign its value in the kernel "
                       "(or make it void)", call)
        return self.inline(call, types)

    def inline_statements(self, call: c_ast.FuncCall, types: dict) -> c_ast.Compound:
        """A void helper's body as a block of the kernel: array parameters take the
        passed array's name, scalar parameters the argument (or a local copy of it
        when the body assigns the parameter or the argument reads an array, which
        the body might write), locals get names unused in the kernel."""
        name = call_name(call)
        fd = self.funcs[name]
        params, decls = self.signature(fd), self.signature_decls(fd)
        args = call_args(call)
        if len(args) != len(params):
            raise _Err(f"{name}() takes {len(params)} argument(s), got {len(args)}", call)
        body = fd.body.block_items or []
        for k, s in enumerate(body):
            if isinstance(s, c_ast.Return) and (s.expr is not None or k != len(body) - 1):
                raise _Err(f"helper '{name}': return is only allowed as its last statement "
                           "(a void helper is inlined as a block of the kernel)", s)
        body = [s for s in body if not isinstance(s, c_ast.Return)]
        assigned = _assigned(fd.body)
        env: dict = {}
        new_types: dict = {}
        copies: list[c_ast.Node] = []
        for (p, t), a, d in zip(params, args, decls):
            if isinstance(t, tuple):
                if not isinstance(a, c_ast.ID):
                    raise _Err(f"argument '{p}' of {name}() must be the name of an array "
                               "(pointer arithmetic is not supported)", a)
                env[p] = a
            elif p in assigned or _reads_array(a):
                fresh = self.fresh(p)
                new_types[fresh] = t
                copies.append(c_ast.Decl(fresh, [], [], [], [], c_ast.TypeDecl(
                    fresh, [], None, c_ast.IdentifierType([t], d.coord), d.coord),
                    _cast(t, a, types, self.funcs), None, d.coord))
                env[p] = c_ast.ID(fresh, d.coord)
            else:
                env[p] = _cast(t, a, types, self.funcs)
        renames = {}
        for d in _decls(fd.body):
            if d.name not in renames:
                renames[d.name] = self.fresh(d.name)
                new_types[renames[d.name]] = _decl_type(d.type)
            env[d.name] = c_ast.ID(renames[d.name], d.coord)
        for n in _ids(fd.body):
            if n.name not in env and n.name not in self.constants:
                raise _Err(f"helper '{name}': uses '{n.name}', which is not its parameter, "
                           "its local variable or a #define constant", n)
        block = _substitute(c_ast.Compound(body, fd.body.coord), env)
        _rename_decls(block, renames)
        block = c_ast.Compound(copies + (block.block_items or []), call.coord)
        return _rewrite(block, self.kernel_call, {**types, **new_types})

    def fresh(self, name: str) -> str:
        """``name``, or ``name_1``, ``name_2``...: a name the kernel does not use yet."""
        k, out = 0, name
        while out in self.used:
            k += 1
            out = f"{name}_{k}"
        self.used.add(out)
        return out

    def inline(self, call: c_ast.FuncCall, types: dict) -> c_ast.Node:
        """The helper's value with the call's arguments substituted."""
        name = call_name(call)
        if type_name(self.funcs[name].decl.type.type) == "void":
            raise _Err(f"helper '{name}' returns void: it can be called as a statement, not "
                       "used as a value", call)
        h = self.helper(name)
        args = call_args(call)
        if len(args) != len(h.params):
            raise _Err(f"{name}() takes {len(h.params)} argument(s), got {len(args)}", call)
        env = {}
        for (p, t), a in zip(h.params, args):
            if isinstance(t, tuple):
                if not isinstance(a, c_ast.ID):
                    raise _Err(f"argument '{p}' of {name}() must be the name of an array "
                               "(pointer arithmetic is not supported)", a)
                env[p] = a
            else:
                env[p] = _cast(t, a, types, self.funcs)
        return _substitute(h.value, env)

    # -- compiling a helper --

    def helper(self, name: str) -> _Helper:
        if name not in self.done:
            self.done[name] = self.compile(self.funcs[name])
        return self.done[name]

    @staticmethod
    def signature_decls(fd: c_ast.FuncDef) -> list[c_ast.Node]:
        """The parameter declarations (none for ``(void)``)."""
        args = fd.decl.type.args.params if fd.decl.type.args is not None else []
        if len(args) == 1 and isinstance(args[0], c_ast.Typename) and \
                type_name(args[0].type) == "void":
            args = []
        return list(args)

    def signature(self, fd: c_ast.FuncDef) -> list[tuple[str, object]]:
        """(name, type) of each parameter; a type is a scalar C type or ('array', T)."""
        params: list[tuple[str, object]] = []
        for a in self.signature_decls(fd):
            t = _decl_type(a.type) if isinstance(a, c_ast.Decl) and a.name else None
            if t is None:
                raise _Err(f"parameter of helper '{fd.decl.name}' has an unsupported type "
                           "(use int, long, float, double or arrays of them)", a)
            params.append((a.name, t))
        return params

    def compile(self, fd: c_ast.FuncDef) -> _Helper:
        name = fd.decl.name
        ret = _scalar_type(fd.decl.type.type)
        if ret is None:
            raise _Err(f"helper function '{name}' must return int, long, float or double "
                       "(helpers are inlined as expressions)", fd.decl.type.type)
        params, args = self.signature(fd), self.signature_decls(fd)
        run = _Run(self, name, {**self.constants, **dict(params)}, ret)
        env = {p: c_ast.ID(p, a.coord) for (p, _), a in zip(params, args)}
        run.block(fd.body.block_items or [], env)
        if run.ret is None or run.ret[0] is not _ALWAYS:
            raise _Err(f"helper '{name}' can reach its end without returning a value", fd.body)
        return _Helper(fd, params, ret, _cast(ret, run.ret[1], run.types, self.funcs))


def _substitute(node: c_ast.Node, env: dict) -> c_ast.Node:
    """A deep copy of node with the IDs named in env replaced (call names kept)."""
    if isinstance(node, c_ast.ID):
        return copy.deepcopy(env[node.name]) if node.name in env else copy.copy(node)
    if not isinstance(node, c_ast.Node):
        return node
    new = copy.copy(node)
    for slot in node.__slots__:
        if slot in ("coord", "__weakref__"):
            continue
        v = getattr(node, slot, None)
        if isinstance(node, c_ast.FuncCall) and slot == "name":
            continue
        if isinstance(v, c_ast.Node):
            setattr(new, slot, _substitute(v, env))
        elif isinstance(v, list):
            setattr(new, slot, [_substitute(x, env) for x in v])
    return new


class _Run:
    """Symbolic execution of a helper's loop-free body."""

    _LOOPS = {c_ast.For: "a for loop", c_ast.While: "a while loop",
              c_ast.DoWhile: "a do-while loop"}

    def __init__(self, inl: _Inliner, name: str, types: dict, ret_type: str):
        self.inl, self.name, self.types, self.ret_type = inl, name, dict(types), ret_type
        self.ret: tuple | None = None      # (guard, value): value returned where guard holds

    def err(self, what: str, node: c_ast.Node):
        raise _Err(f"helper '{self.name}': {what}", node)

    def value(self, node: c_ast.Node, env: dict) -> c_ast.Node:
        """An expression of the body in terms of the parameters (helpers inlined)."""
        for n in _ids(node):
            if n.name not in env and n.name not in self.inl.constants:
                self.err(f"uses '{n.name}', which is not its parameter, its local variable "
                         "or a #define constant", n)
            if n.name in env and env[n.name] is None:
                self.err(f"uses '{n.name}' before it is set", n)
        e = _substitute(node, env)
        return _rewrite(e, lambda c, types, stmt: self.inl.inline(c, types)
                        if call_name(c) in self.inl.funcs else c, self.types)

    def block(self, items: list, env: dict) -> dict:
        for s in items:
            env = self.stmt(s, env)
            if self.ret is not None and self.ret[0] is _ALWAYS:
                break
        return env

    def stmt(self, s: c_ast.Node, env: dict) -> dict:
        if isinstance(s, c_ast.Decl):
            t = _scalar_type(s.type)
            if t is None:
                self.err(f"local variable '{s.name}' must be an int, long, float or double",
                         s)
            env = {**env, s.name: None}
            self.types[s.name] = t
            if s.init is not None:
                env[s.name] = _cast(t, self.value(s.init, env), self.types, self.inl.funcs)
            return env
        if isinstance(s, c_ast.DeclList):
            for d in s.decls:
                env = self.stmt(d, env)
            return env
        if isinstance(s, c_ast.Assignment) or (isinstance(s, c_ast.UnaryOp) and s.op in
                                               ("++", "--", "p++", "p--")):
            return self.assign(s, env)
        if isinstance(s, c_ast.If):
            return self.branch(s, env)
        if isinstance(s, c_ast.Compound):
            inner = self.block(s.block_items or [], dict(env))
            return {k: inner[k] for k in env}
        if isinstance(s, c_ast.Return):
            if s.expr is None:
                self.err("return without a value", s)
            v = _cast(self.ret_type, self.value(s.expr, env), self.types, self.inl.funcs)
            if self.ret is None:
                self.ret = (_ALWAYS, v)
            else:
                self.ret = (_ALWAYS, c_ast.TernaryOp(self.ret[0], self.ret[1], v, s.coord))
            return env
        if isinstance(s, (c_ast.EmptyStatement, c_ast.Pragma)):
            return env
        for cls, what in self._LOOPS.items():
            if isinstance(s, cls):
                self.err(f"{what} is not supported in a helper function: only loop-free "
                         "helpers are inlined (put the loop in the kernel)", s)
        if isinstance(s, c_ast.FuncCall):
            self.err("a call as a statement has no effect here (helpers may not have side "
                     "effects)", s)
        self.err("only declarations, assignments to its own variables, if/else and return "
                 "are supported in a helper function", s)

    def assign(self, s: c_ast.Node, env: dict) -> dict:
        if isinstance(s, c_ast.Assignment):
            lhs, op, rhs = s.lvalue, s.op, s.rvalue
        else:
            lhs, op, rhs = s.expr, "+=" if "+" in s.op else "-=", c_ast.Constant(
                "int", "1", s.coord)
        if not isinstance(lhs, c_ast.ID) or lhs.name not in env or \
                isinstance(self.types.get(lhs.name), tuple):
            self.err("helpers may only assign their own scalar variables (writes to arrays "
                     "belong in the kernel)", lhs)
        if op != "=":
            rhs = c_ast.BinaryOp(op[:-1], lhs, rhs, s.coord)
        t = self.types[lhs.name]
        return {**env, lhs.name: _cast(t, self.value(rhs, env), self.types, self.inl.funcs)}

    def branch(self, s: c_ast.If, env: dict) -> dict:
        cond = self.value(s.cond, env)
        ret0 = self.ret
        env1 = self.block([s.iftrue], dict(env))
        ret1, self.ret = self.ret, ret0
        env2 = self.block([s.iffalse], dict(env)) if s.iffalse is not None else env
        ret2 = self.ret
        self.ret = _merge_ret(cond, ret1, ret2, s)
        return {k: env1[k] if env1[k] is env2[k] else _tern(cond, env1[k], env2[k], s)
                for k in env}


def _tern(cond, a, b, at):
    if a is None or b is None:
        return a if b is None else b
    return c_ast.TernaryOp(copy.deepcopy(cond), a, b, at.coord)


def _merge_ret(cond, r1, r2, at):
    """The return state after ``if (cond)`` whose branches ended in r1 and r2."""
    if r1 is r2:
        return r1
    zero = c_ast.Constant("int", "0", at.coord)
    one = c_ast.Constant("int", "1", at.coord)
    g1 = None if r1 is None else (one if r1[0] is _ALWAYS else r1[0])
    g2 = None if r2 is None else (one if r2[0] is _ALWAYS else r2[0])
    if r1 is not None and r2 is not None and r1[0] is _ALWAYS and r2[0] is _ALWAYS:
        guard = _ALWAYS
    elif g1 is one and g2 is None:
        guard = copy.deepcopy(cond)
    else:
        guard = c_ast.TernaryOp(copy.deepcopy(cond), g1 or zero, g2 or zero, at.coord)
    if r1 is None:
        value = r2[1]
    elif r2 is None:
        value = r1[1]
    else:
        value = c_ast.TernaryOp(copy.deepcopy(cond), r1[1], r2[1], at.coord)
    return guard, value


def _rename_decls(node: c_ast.Node, renames: dict[str, str]) -> None:
    """Rename, in place, the variables that ``node`` declares."""
    for d in _decls(node):
        if d.name in renames:
            d.name = renames[d.name]
            t = d.type
            while not isinstance(t, c_ast.TypeDecl) and hasattr(t, "type"):
                t = t.type
            if isinstance(t, c_ast.TypeDecl):
                t.declname = d.name


def _assigned(node: c_ast.Node) -> set[str]:
    """The variables assigned (``=``, ``op=``, ``++``, ``--``) in ``node``."""
    out: set[str] = set()

    class V(c_ast.NodeVisitor):
        def visit_Assignment(self, n):
            if isinstance(n.lvalue, c_ast.ID):
                out.add(n.lvalue.name)
            self.generic_visit(n)

        def visit_UnaryOp(self, n):
            if n.op in ("++", "--", "p++", "p--") and isinstance(n.expr, c_ast.ID):
                out.add(n.expr.name)
            self.generic_visit(n)

    V().visit(node)
    return out


def _reads_array(node: c_ast.Node) -> bool:
    """Does the expression read an array element?"""
    return isinstance(node, c_ast.ArrayRef) or \
        any(isinstance(n, c_ast.ArrayRef) for _, n in _all_nodes(node))


def _all_nodes(node: c_ast.Node):
    for name, child in node.children():
        yield name, child
        yield from _all_nodes(child)


class _Ids(c_ast.NodeVisitor):
    def __init__(self):
        self.ids: list[c_ast.ID] = []

    def visit_ID(self, n):
        self.ids.append(n)

    def visit_FuncCall(self, n):
        if n.args is not None:
            self.visit(n.args)


def _ids(node: c_ast.Node) -> list[c_ast.ID]:
    v = _Ids()
    v.visit(node)
    return v.ids
