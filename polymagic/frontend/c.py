"""The C front end: the text of one ``%%polycuda`` cell -> :class:`polymagic.scop.Scop`.

The cell holds optional ``#define``/``#include`` lines and one ``void`` function
whose body is a static control part: ``for`` loops with affine bounds, ``if``
statements with affine conditions, and assignments to array elements or local
scalars.  pycparser parses the C; this module walks its AST and builds the
polyhedral model with islpy.

Decisions other stages rely on
------------------------------
* Statements are ``S0, S1, ...`` in textual order; their set dimensions are named
  after the loop iterators and their parameters are all ``int``/``long`` arguments
  in signature order.
* A local scalar becomes an ``Array(kind='temp')`` named after the variable when that
  name is unique in the function (else ``name_1``, ``name_2``, ...).  Declared inside
  loops it has one element per iteration of the loops enclosing its declaration
  (index ``iterator - min``); declared outside all loops it is 0-d (shape ``()``).
* ``#define NAME value`` constants are substituted by value (``Int``/``Float`` as
  written); ``min``/``max`` are :class:`~polymagic.expr.Call` nodes whether they come
  from a macro ``#define min(a,b) ...`` or are used without one.
* ``a += b`` is an :class:`~polymagic.expr.Assign` with op ``'+='``; its target is
  both read (first access) and written (last access).  ``A[i]++`` is ``A[i] += 1``.
* ``const`` and ``restrict`` qualifiers on array parameters are accepted and
  ignored (a ``const`` array may not be written); pointer parameters are rejected.

Preprocessing keeps the user's line numbers and columns: comments are blanked in
place, ``#include``/``#pragma`` lines are blanked, numeric ``#define`` constants
and ``min``/``max`` macros are handled here.  Only other macros (and ``#if``/``#ifdef``)
go through the system C preprocessor (``cc -E``), and only lines it actually changed
take its output.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

import islpy as isl
from pycparser import c_ast, c_parser
from pycparser.c_parser import ParseError

from .. import expr as E
from ..errors import SourceError, UnsupportedError
from ..isl_util import pw_aff_to_expr
from ..scop import Access, Array, Param, Scop, Statement

MATH_FUNCS = {name: arity for base, arity in [
    ("sqrt", 1), ("exp", 1), ("log", 1), ("fabs", 1), ("pow", 2), ("fmax", 2),
    ("fmin", 2), ("sin", 1), ("cos", 1), ("tan", 1), ("tanh", 1), ("floor", 1),
    ("ceil", 1)] for name in (base, base + "f")}
MATH_FUNCS.update({"abs": 1, "min": 2, "max": 2})

_SIDE_EFFECT_FUNCS = {"printf", "fprintf", "puts", "malloc", "calloc", "realloc", "free",
                      "memcpy", "memset", "rand", "srand", "exit", "abort", "scanf"}
_CMP = {"<": "lt_set", "<=": "le_set", ">": "gt_set", ">=": "ge_set",
        "==": "eq_set", "!=": "ne_set"}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
_VALUE_BINOPS = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||",
                 "&", "|", "^", "<<", ">>"}
_INT_TYPES = {"int": "int", "signed": "int", "signed int": "int", "long": "long",
              "long int": "long", "long long": "long", "long long int": "long",
              "signed long": "long"}
_FLOAT_TYPES = {"float": "float", "double": "double"}
_ELEM_TYPES = {**_FLOAT_TYPES, "int": "int", "signed": "int", "signed int": "int",
               "long": "long", "long int": "long", "long long": "long"}
_RESERVED = set(MATH_FUNCS) | {"floord", "pm_mod", "threadIdx", "blockIdx", "blockDim",
                               "gridDim"}


# ---- preprocessing ---------------------------------------------------------------

@dataclass
class _Pre:
    """The preprocessed text (same line count as the source) and the constants."""
    text: str
    constants: dict[str, E.Expr] = field(default_factory=dict)
    values: dict[str, int | float] = field(default_factory=dict)


def _blank_comments(src: str) -> str:
    """Replace comments by spaces (newlines kept) so positions do not move;
    pycparser does not accept comments."""
    out = list(src)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = ["\n" if ch == "\n" else " " for ch in src[i:j]]
            i = j
        else:
            i += 1
    return "".join(out)


def _logical_lines(lines: list[str]) -> list[tuple[int, int, str]]:
    """Directive lines joined over backslash continuations: (first, last, text)."""
    out, i = [], 0
    while i < len(lines):
        first, text = i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        out.append((first, i, text))
        i += 1
    return out


_DEFINE = re.compile(r"\s*#\s*define\s+([A-Za-z_]\w*)(\([^)]*\))?\s*(.*)$")


def _const_define(body: str, known: dict[str, E.Expr]) -> E.Expr | None:
    """The value of ``#define NAME body`` when body is a constant expression."""
    if not body.strip():
        return None
    try:
        ast = c_parser.CParser().parse(f"double __pm_v = ({body});", filename="<define>")
        node = ast.ext[0].init
    except (ParseError, AttributeError, IndexError):
        return None
    e = _const_expr(node, known)
    if e is None:
        return None
    try:
        E.evaluate(e, {})
    except (KeyError, TypeError, ZeroDivisionError, ValueError, AttributeError):
        return None
    return e


def _const_expr(node: c_ast.Node, known: dict[str, E.Expr]) -> E.Expr | None:
    """A compile-time constant expression (literals, known constants, arithmetic)."""
    if isinstance(node, c_ast.Constant):
        return _literal(node)
    if isinstance(node, c_ast.ID):
        return known.get(node.name)
    if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
        a = _const_expr(node.expr, known)
        if a is None:
            return None
        if isinstance(a, E.Int):
            return E.Int(-a.value if node.op == "-" else a.value)
        return E.Unary(node.op, a)
    if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-", "*", "/", "%", "<<", ">>"):
        a, b = _const_expr(node.left, known), _const_expr(node.right, known)
        return None if a is None or b is None else E.Binary(node.op, a, b)
    if isinstance(node, c_ast.Cast):
        a = _const_expr(node.expr, known)
        ctype = _ELEM_TYPES.get(_type_name(node.to_type.type) or "")
        return None if a is None or ctype is None else E.Cast(ctype, a)
    return None


def _literal(node: c_ast.Constant) -> E.Expr | None:
    """An int, char or floating literal; floats are kept as written."""
    text = node.value
    if node.type in ("float", "double", "long double"):
        return E.Float(text)
    if node.type == "char":
        inner = text[1:-1]
        return E.Int(ord(inner)) if len(inner) == 1 else None
    if node.type == "string":
        return None
    digits = text.rstrip("uUlL")
    try:
        if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xXbB":
            return E.Int(int(digits, 8))
        return E.Int(int(digits, 0))
    except ValueError:
        return None


def preprocess(source: str) -> _Pre:
    """Blank comments and directives, record numeric constants, and run the system
    C preprocessor only when other macros or conditionals are used.  The result has
    exactly the user's lines; lines without macros keep their exact columns."""
    lines = _blank_comments(source.replace("\r\n", "\n")).split("\n")
    logical = _logical_lines(lines)
    directives = [(f, l, t.lstrip()[1:].lstrip(), _DEFINE.match(t))
                  for f, l, t in logical if t.lstrip().startswith("#")]
    # with #if/#ifdef..., which defines apply is cpp's business
    conditional = any(d and not d.startswith(("define", "include", "pragma"))
                      for _, _, d, _ in directives)
    pre, for_cpp, probes = _Pre(""), False, []
    for first, last, directive, m in directives:
        handled = not directive or directive.startswith(("include", "pragma"))
        if m and m.group(2) is not None and m.group(1) in ("min", "max"):
            handled = True          # min/max are built in
        elif m and m.group(2) is None and conditional:
            probes.append(m.group(1))
        elif m and m.group(2) is None:
            e = _const_define(m.group(3), pre.constants)
            if e is not None:
                pre.constants[m.group(1)] = e
                handled = True
        if handled:
            lines[first:last + 1] = [""] * (last + 1 - first)
        for_cpp = for_cpp or not handled
    text = "\n".join(lines)
    if for_cpp:
        text, expanded = _run_cpp(text, source, probes)
        for name, body in expanded.items():
            e = _const_define(body, pre.constants)
            if e is not None and body.strip() != name:
                pre.constants[name] = e
    pre.values = {k: E.evaluate(e, {}) for k, e in pre.constants.items()}
    pre.text = text
    return pre


def _run_cpp(text: str, source: str, probes: list[str]) -> tuple[str, dict[str, str]]:
    """Expand the remaining macros with ``cc -E``.  Returns the user's lines with
    only the lines cpp changed replaced by its output, and the expansions of the
    ``probes`` (object-like macro names) at the end of the cell."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise SourceError("this cell uses macros that need a C preprocessor, but no C "
                          "compiler (cc) was found; use #define NAME number instead")
    body = text + "\n" + "".join(f"{p}\n" for p in probes)
    try:
        r = subprocess.run([cc, "-E", "-std=c99", "-x", "c", "-"], input=body,
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SourceError(f"the C preprocessor failed: {e}") from None
    if r.returncode != 0:
        m = re.search(r"<stdin>:(\d+):(\d+): (?:fatal )?error: (.*)", r.stderr)
        if m:
            raise SourceError(f"preprocessor: {m.group(3)}", int(m.group(1)),
                              int(m.group(2)), source)
        raise SourceError("the C preprocessor failed: " + r.stderr.strip()[:500])
    got = _cpp_lines(r.stdout)
    orig = text.split("\n")
    squash = lambda s: "".join(s.split())  # noqa: E731
    out = [o if squash(o) == squash(got.get(k + 1, "")) else got.get(k + 1, "")
           for k, o in enumerate(orig)]
    n = len(orig) + 1
    return "\n".join(out), {p: got.get(n + k, "") for k, p in enumerate(probes)}


def _cpp_lines(output: str) -> dict[int, str]:
    """cpp's output keyed by the input line it came from (using its line markers)."""
    got: dict[int, str] = {}
    cur: int | None = None
    for line in output.split("\n"):
        m = re.match(r'#\s*(?:line\s+)?(\d+)\s+"([^"]*)"', line)
        if m:
            cur = int(m.group(1)) if m.group(2) in ("<stdin>", "") else None
            continue
        if cur is not None:
            got[cur] = line
            cur += 1
    return got


# ---- parsing ---------------------------------------------------------------------

class _Parser(c_parser.CParser):
    """pycparser, with a location for the errors it reports without one."""

    def _parse_error(self, msg, coord):  # type: ignore[override]
        if isinstance(coord, str) or coord is None:
            try:
                tok = self._peek()
                if tok is not None:
                    coord = self._tok_coord(tok)
            except Exception:  # noqa: BLE001 - best effort only
                pass
        super()._parse_error(msg, coord)


def _parse(text: str, source: str) -> c_ast.FileAST:
    """Parse with pycparser; syntax errors become :class:`SourceError`."""
    try:
        return _Parser().parse(text, filename="<cell>")
    except ParseError as e:
        msg = str(e)
        m = re.match(r"<cell>:(\d+):(\d+):\s*(.*)", msg, re.S)
        if m:
            raise SourceError(f"syntax error: {m.group(3)}", int(m.group(1)),
                              int(m.group(2)), source) from None
        last = source.rstrip().split("\n")
        raise SourceError(f"syntax error: {msg.split(': ', 1)[-1]}", len(last),
                          len(last[-1]) + 1, source) from None


def _type_name(node: c_ast.Node) -> str | None:
    """'int', 'long int', ... for a TypeDecl of an IdentifierType; None otherwise."""
    if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.IdentifierType):
        return " ".join(node.type.names)
    return None


def _is_struct(node: c_ast.Node) -> bool:
    return isinstance(node, c_ast.TypeDecl) and isinstance(node.type, (c_ast.Struct, c_ast.Union))


# ---- symbols ---------------------------------------------------------------------

@dataclass
class _Temp:
    """A local scalar expanded into a temp array."""
    array: str
    ctype: str
    mins: list[isl.PwAff]        # per enclosing iterator: its minimum (over params)
    min_exprs: list[E.Expr]


@dataclass
class _Sym:
    kind: str                    # 'size' 'scalar' 'array' 'iter' 'itervar' 'local'
    name: str
    ctype: str = ""
    pos: int = -1                # iterator: set dimension; size: parameter position
    rank: int = 0                # array: number of dimensions
    const: bool = False          # array declared const
    temp: _Temp | None = None


class _NonAffine(Exception):
    def __init__(self, reason: str, node: c_ast.Node):
        super().__init__(reason)
        self.reason, self.node = reason, node


class _Modifies(c_ast.NodeVisitor):
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


class _Names(c_ast.NodeVisitor):
    """All identifiers of a function, and the names that loops assign in their init."""

    def __init__(self):
        self.ids: set[str] = set()
        self.loop_assigned: set[str] = set()
        self.loop_declared: set[str] = set()

    def visit_ID(self, n):
        self.ids.add(n.name)

    def visit_Decl(self, n):
        if n.name:
            self.ids.add(n.name)
        self.generic_visit(n)

    def visit_For(self, n):
        if isinstance(n.init, c_ast.Assignment) and isinstance(n.init.lvalue, c_ast.ID):
            self.loop_assigned.add(n.init.lvalue.name)
        if isinstance(n.init, c_ast.DeclList):
            self.loop_declared.update(d.name for d in n.init.decls if d.name)
        self.generic_visit(n)


# ---- the builder -----------------------------------------------------------------

class _Builder:
    """Walks one function and accumulates the Scop's pieces."""

    def __init__(self, source: str, pre: _Pre):
        self.source = source
        self.lines = pre.text.split("\n")
        self.constants = pre.constants
        self.values = pre.values
        self.ctx = isl.DEFAULT_CONTEXT
        self.params: list[Param] = []
        self.arrays: dict[str, Array] = {}
        self.size_params: list[str] = []
        self.scopes: list[dict[str, _Sym]] = [{}]
        self.statements: list[Statement] = []
        self.sched: list[list[int | str]] = []
        self.iters: list[str] = []
        self.prefix: list[int | str] = []
        self.pos: list[int] = [0]
        self.names = _Names()
        self.taken: set[str] = set()
        self.acc: list[Access] | None = None      # accesses of the statement being built
        self.node: c_ast.Node | None = None       # statement being handled (for errors)
        self.context: isl.Set | None = None       # set by signature()
        self.dom: isl.Set | None = None           # enclosing loops and conditions

    # -- errors and lookup --

    def err(self, msg: str, node: c_ast.Node | None = None, cls=UnsupportedError):
        """Raise a located error (at ``node``, or at the statement being handled)."""
        coord = getattr(node, "coord", None) or getattr(self.node, "coord", None)
        line = getattr(coord, "line", None)
        col = getattr(coord, "column", None)
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

    def lookup(self, name: str) -> _Sym | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def declare(self, sym: _Sym, node: c_ast.Node) -> None:
        """Bind a name in the innermost scope, refusing to hide constants/params."""
        if sym.name in self.constants:
            self.err(f"'{sym.name}' is a #define constant and cannot be declared", node)
        old = self.lookup(sym.name)
        if old is not None and old.kind in ("size", "scalar", "array"):
            self.err(f"declaration of '{sym.name}' hides the function parameter of that name",
                     node)
        if old is not None and old.kind == "iter":
            self.err(f"declaration of '{sym.name}' hides the loop iterator of that name", node)
        if sym.name in self.scopes[-1] and len(self.scopes) > 1:
            self.err(f"'{sym.name}' is declared twice", node)
        self.scopes[-1][sym.name] = sym

    # -- the function --

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
            if isinstance(e, c_ast.Typedef):
                self.err("typedefs are not supported", e)
            if isinstance(e, c_ast.Decl) and isinstance(e.type, (c_ast.Struct, c_ast.Union)):
                self.err("struct/union types are not supported", e)
            if isinstance(e, c_ast.Decl) and isinstance(e.type, c_ast.FuncDecl):
                self.err(f"function declarations are not supported (declares '{e.name}'); "
                         "the cell must hold exactly one function definition", e)
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
        if _type_name(ftype.type) != "void":
            self.err(f"non-void return type: '{fd.decl.name}' must return void "
                     "(results are written to array parameters)", ftype.type)
        args = ftype.args.params if ftype.args is not None else []
        if len(args) == 1 and isinstance(args[0], c_ast.Typename) and \
                _type_name(args[0].type) == "void":
            args = []
        for a in args:
            self.param(a)
        self.taken = set(self.names.ids) | set(self.constants) | _RESERVED
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
        if isinstance(t, c_ast.PtrDecl) or (isinstance(t, c_ast.ArrayDecl) and
                                            self._has_ptr(t)):
            self.err(f"pointer parameter '{a.name}' is not supported: declare arrays with "
                     f"their sizes, e.g. double {a.name}[n]", a)
        if _is_struct(t) or (isinstance(t, c_ast.ArrayDecl) and _is_struct(self._elem(t))):
            self.err(f"struct/union parameter '{a.name}' is not supported", a)
        if a.name in self.constants:
            self.err(f"parameter '{a.name}' has the name of a #define constant", a)
        if self.lookup(a.name) is not None:
            self.err(f"parameter '{a.name}' is declared twice", a)
        if isinstance(t, c_ast.ArrayDecl):
            return self.array_param(a)
        tn = _type_name(t)
        if tn in _INT_TYPES:
            self.size_params.append(a.name)
            self.params.append(Param(a.name, "size", _INT_TYPES[tn]))
            self.scopes[0][a.name] = _Sym("size", a.name, _INT_TYPES[tn],
                                          pos=len(self.size_params) - 1)
        elif tn in _FLOAT_TYPES:
            self.params.append(Param(a.name, "scalar", tn))
            self.scopes[0][a.name] = _Sym("scalar", a.name, tn)
        else:
            self.err(f"parameter '{a.name}' has unsupported type '{tn}': use int/long "
                     "for sizes, float/double for scalars, and arrays like double A[n]", a)

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
        tn = _type_name(t)
        if tn not in _ELEM_TYPES:
            self.err(f"array '{a.name}' has unsupported element type '{tn}' "
                     "(use float, double or int)", a)
        ctype = _ELEM_TYPES[tn]
        self.params.append(Param(a.name, "array", ctype))
        self.arrays[a.name] = Array(a.name, ctype, tuple(dims), "param", a.coord.line)
        self.scopes[0][a.name] = _Sym("array", a.name, ctype, rank=len(dims),
                                      const="const" in (a.quals or []))

    def extent(self, node: c_ast.Node) -> E.Expr:
        """An array extent: integer expression of earlier int parameters and constants."""
        if isinstance(node, c_ast.Constant):
            lit = _literal(node)
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
        elif isinstance(node, c_ast.FuncCall) and self._call_name(node) in ("min", "max"):
            args = self._args(node)
            if len(args) == 2:
                return E.Call(self._call_name(node), tuple(self.extent(x) for x in args))
        self.err("array extent must be an integer expression of earlier int parameters "
                 "and #define constants", node)

    # -- statements --

    def body(self, fd: c_ast.FuncDef) -> None:
        """The function body (a compound statement)."""
        items = fd.body.block_items or []
        for k, item in enumerate(items):
            if isinstance(item, c_ast.Return) and item.expr is None and k == len(items) - 1:
                continue
            self.stmt(item)

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
            if isinstance(n, cls):
                self.err(f"{what} are not supported: only for loops with affine bounds "
                         "and if statements (static control flow)"
                         if what.endswith("s") else
                         f"{what} is not supported: only for loops with affine bounds and "
                         "if statements (static control flow)", n)
        if isinstance(n, c_ast.Return):
            if n.expr is not None:
                self.err("return with a value is not supported: the function returns void "
                         "and writes its results to arrays", n)
            self.err("return is only allowed as the last statement of the function", n)
        if isinstance(n, c_ast.FuncCall):
            self.call_error(n)
        if isinstance(n, c_ast.Typedef):
            self.err("typedefs are not supported", n)
        self.err("this statement has no effect or is not supported: statements must "
                 "assign to an array element or a local scalar", n)

    def call_error(self, n: c_ast.FuncCall) -> None:
        """Reject a call that is not a pure math function."""
        name = self._call_name(n)
        if name is None:
            self.err("calls through function pointers are not supported", n)
        if name in MATH_FUNCS:
            self.err(f"the result of {name}() is unused", n)
        if name in _SIDE_EFFECT_FUNCS:
            self.err(f"call to {name}() is not supported: calls with side effects cannot "
                     "run on the GPU", n)
        self.err(f"call to unknown function {name}(): only math functions "
                 f"({', '.join(sorted(MATH_FUNCS))}) may be called", n)

    @staticmethod
    def _call_name(n: c_ast.FuncCall) -> str | None:
        return n.name.name if isinstance(n.name, c_ast.ID) else None

    @staticmethod
    def _args(n: c_ast.FuncCall) -> list[c_ast.Node]:
        return list(n.args.exprs) if n.args is not None else []

    # -- local declarations --

    def local_decl(self, d: c_ast.Decl) -> None:
        """A local scalar (expanded into a temp array) or a pre-declared loop iterator."""
        self.node = d
        t = d.type
        if isinstance(t, c_ast.ArrayDecl):
            self.err(f"local arrays are not supported ('{d.name}'): pass the array as a "
                     "parameter", d)
        if isinstance(t, c_ast.PtrDecl):
            self.err(f"pointers are not supported ('{d.name}')", d)
        if isinstance(t, c_ast.FuncDecl):
            self.err(f"function declarations are not supported ('{d.name}')", d)
        if _is_struct(t) or isinstance(t, (c_ast.Struct, c_ast.Union)):
            self.err("struct/union types are not supported", d)
        if set(d.storage or []) & {"static", "extern"}:
            self.err(f"{d.storage[0]} local variables are not supported ('{d.name}')", d)
        tn = _type_name(t)
        ctype = _ELEM_TYPES.get(tn or "")
        if ctype is None:
            self.err(f"local variable '{d.name}' has unsupported type '{tn}' "
                     "(use int, long, float or double)", d)
        if d.name in self.names.loop_assigned and ctype in ("int", "long"):
            if d.init is not None:
                self.err(f"'{d.name}' is used as a loop iterator; declare it without an "
                         "initial value", d)
            return self.declare(_Sym("itervar", d.name, ctype), d)
        if isinstance(d.init, c_ast.InitList):
            self.err("initializer lists are not supported", d.init)
        sym = _Sym("local", d.name, ctype, temp=self.new_temp(d.name, ctype, d))
        self.declare(sym, d)
        if d.init is not None:
            self.emit(d, c_ast.ID(d.name, d.coord), "=", d.init, decl=True)

    def new_temp(self, name: str, ctype: str, node: c_ast.Node) -> _Temp:
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
        return _Temp(aname, ctype, mins, min_exprs)

    def temp_name(self, name: str) -> str:
        """The variable's own name unless it clashes with a parameter, an array, a
        loop iterator, a constant or a built-in; then name_1, name_2, ..."""
        clash = (name in self.arrays or name in self.constants or name in _RESERVED
                 or name in self.names.loop_assigned or name in self.names.loop_declared
                 or any(p.name == name for p in self.params))
        if not clash:
            return name
        k = 1
        while f"{name}_{k}" in self.taken or f"{name}_{k}" in self.arrays:
            k += 1
        return f"{name}_{k}"

    # -- loops --

    def for_loop(self, n: c_ast.For) -> None:
        """A for loop: a new set dimension constrained by its bounds and stride."""
        it, ctype, lb_node, declared = self.loop_init(n)
        step = self.loop_step(n, it)
        self.check_not_modified(n.stmt, it)
        if n.cond is None:
            self.err(f"loop over '{it}' has no condition: loops need an affine bound", n)
        depth = len(self.iters)
        outer_dom = self.dom
        dom = outer_dom.add_dims(isl.dim_type.set, 1).set_dim_name(isl.dim_type.set, depth, it)
        space = dom.get_space()
        lb = self.aff(lb_node, space, "loop bound")
        bound = self.loop_cond(n.cond, it, step, space)
        ls = isl.LocalSpace.from_space(space)
        var = isl.PwAff.var_on_domain(ls, isl.dim_type.set, depth)
        dom = dom.intersect(var.ge_set(lb) if step > 0 else var.le_set(lb)).intersect(bound)
        if abs(step) > 1:
            zero = isl.PwAff.val_on_domain(isl.Set.universe(space), 0)
            dom = dom.intersect(var.sub(lb).mod_val(abs(step)).eq_set(zero))
        self.scopes.append({})
        self.scopes[-1][it] = _Sym("iter", it, ctype, pos=depth)
        self.iters.append(it)
        # a loop that counts down runs its iterations in decreasing order: -it
        self.prefix += [self.pos[-1], it if step > 0 else "-" + it]
        self.pos.append(0)
        self.dom = dom.coalesce()
        self.stmt(n.stmt)
        self.dom = outer_dom
        self.pos.pop()
        del self.prefix[-2:]
        self.pos[-1] += 1
        self.iters.pop()
        self.scopes.pop()

    def loop_init(self, n: c_ast.For) -> tuple[str, str, c_ast.Node, bool]:
        """The iterator, its type and its initial value."""
        init = n.init
        if isinstance(init, c_ast.DeclList) and len(init.decls) == 1:
            d = init.decls[0]
            ctype = _INT_TYPES.get(_type_name(d.type) or "")
            if ctype is None:
                self.err(f"loop iterator '{d.name}' must be an int or long", d)
            if d.init is None:
                self.err(f"loop iterator '{d.name}' needs an initial value", d)
            self._check_iter_name(d.name, d)
            return d.name, ctype, d.init, True
        if isinstance(init, c_ast.Assignment) and init.op == "=" and \
                isinstance(init.lvalue, c_ast.ID):
            name = init.lvalue.name
            sym = self.lookup(name)
            if sym is None:
                self.err(f"undeclared loop iterator '{name}'", init.lvalue, SourceError)
            if sym.kind in ("size", "scalar", "array"):
                self.err(f"assignment to function parameter '{name}' is not supported: "
                         "parameters are read-only", init.lvalue)
            if sym.kind == "iter":
                self.err(f"loop iterator '{name}' is modified in the loop body", init)
            if sym.kind != "itervar":
                self.err(f"'{name}' cannot be a loop iterator", init.lvalue)
            self._check_iter_name(name, init.lvalue)
            return name, sym.ctype, init.rvalue, False
        self.err("a for loop must initialise one integer iterator, e.g. "
                 "for (int i = 0; i < n; i++)", init if init is not None else n)

    def _check_iter_name(self, name: str, node: c_ast.Node) -> None:
        """An iterator may not hide a constant, a parameter or an enclosing iterator
        (its set dimension would be ambiguous)."""
        if name in self.constants:
            self.err(f"loop iterator '{name}' has the name of a #define constant", node)
        old = self.lookup(name)
        if old is not None and old.kind in ("size", "scalar", "array"):
            self.err(f"loop iterator '{name}' hides the function parameter of that name", node)
        if name in self.iters:
            self.err(f"loop iterator '{name}' hides the enclosing loop iterator of that name",
                     node)

    def loop_step(self, n: c_ast.For, it: str) -> int:
        """+c or -c for i++, i--, i += c, i -= c, i = i + c (c a positive constant)."""
        nx = n.next
        if isinstance(nx, c_ast.UnaryOp) and nx.op in ("++", "p++", "--", "p--"):
            self._step_var(nx.expr, it, nx)
            return 1 if "+" in nx.op else -1
        if isinstance(nx, c_ast.Assignment) and nx.op in ("+=", "-=", "="):
            self._step_var(nx.lvalue, it, nx)
            sign, amount = (1 if nx.op == "+=" else -1), nx.rvalue
            if nx.op == "=":
                sign, amount = self._step_from_sum(nx.rvalue, it)
            c = self.const_int(amount)
            if c is None:
                self.err(f"loop step of '{it}' is not a constant", amount)
            if c <= 0:
                self.err(f"loop step of '{it}' must be a positive constant (got {c})", amount)
            return sign * c
        self.err(f"unsupported loop step: use {it}++, {it}--, {it} += c or {it} -= c "
                 "with a constant c", nx if nx is not None else n)

    def _step_var(self, node: c_ast.Node, it: str, at: c_ast.Node) -> None:
        if not (isinstance(node, c_ast.ID) and node.name == it):
            self.err(f"the loop step must update the iterator '{it}'", at)

    def _step_from_sum(self, rv: c_ast.Node, it: str) -> tuple[int, c_ast.Node]:
        """i = i + c, i = c + i, i = i - c."""
        if isinstance(rv, c_ast.BinaryOp) and rv.op in ("+", "-"):
            if isinstance(rv.left, c_ast.ID) and rv.left.name == it:
                return (1 if rv.op == "+" else -1), rv.right
            if rv.op == "+" and isinstance(rv.right, c_ast.ID) and rv.right.name == it:
                return 1, rv.left
        self.err(f"unsupported loop step: use {it}++, {it}--, {it} += c or {it} -= c "
                 "with a constant c", rv)

    def check_not_modified(self, body: c_ast.Node, it: str) -> None:
        v = _Modifies(it)
        v.visit(body)
        if v.shadow:
            self.err(f"declaration of '{it}' hides the enclosing loop iterator of that name",
                     v.hit)
        if v.hit is not None:
            self.err(f"loop iterator '{it}' is modified in the loop body", v.hit)

    def loop_cond(self, cond: c_ast.Node, it: str, step: int, space: isl.Space) -> isl.Set:
        """The loop condition: a conjunction of bounds ``it < e`` (or ``>`` when the loop
        counts down) where ``e`` is affine and does not depend on ``it``."""
        if isinstance(cond, c_ast.BinaryOp) and cond.op == "&&":
            return self.loop_cond(cond.left, it, step, space).intersect(
                self.loop_cond(cond.right, it, step, space))
        want = "an upper" if step > 0 else "a lower"
        if not (isinstance(cond, c_ast.BinaryOp) and cond.op in _FLIP):
            self.err(f"loop condition must be {want} bound on '{it}', e.g. "
                     f"{it} {'<' if step > 0 else '>='} expr", cond)
        op, other = cond.op, cond.right
        if not self._is_id(cond.left, it):
            if not self._is_id(cond.right, it):
                self.err(f"loop condition must compare the iterator '{it}' with a bound", cond)
            op, other = _FLIP[cond.op], cond.left
        if self._mentions(other, it):
            self.err(f"loop bound of '{it}' must not depend on '{it}'", other)
        if (op in ("<", "<=")) != (step > 0):
            self.err(f"loop condition must be {want} bound on '{it}' for a loop that "
                     f"{'increments' if step > 0 else 'decrements'} it", cond)
        bound = self.aff(other, space, "loop bound")
        var = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(space), isl.dim_type.set,
                                      len(self.iters))
        return getattr(var, _CMP[op])(bound)

    @staticmethod
    def _is_id(node: c_ast.Node, name: str) -> bool:
        return isinstance(node, c_ast.ID) and node.name == name

    def _mentions(self, node: c_ast.Node, name: str) -> bool:
        v = _Names()
        v.visit(node)
        return name in v.ids

    # -- if --

    def if_stmt(self, n: c_ast.If) -> None:
        """then/else branches get the condition / its complement in their domain."""
        space = self.dom.get_space()
        try:
            cond = self.cond_set(n.cond, isl.LocalSpace.from_space(space))
        except _NonAffine as e:
            bad = e
        else:
            return self.if_branches(n, cond)
        self.err(f"non-affine condition in if: {bad.reason} (data-dependent conditions "
                 "are only allowed inside values, e.g. x = c ? a : b)", bad.node)

    def if_branches(self, n: c_ast.If, cond: isl.Set) -> None:
        outer = self.dom
        self.dom = outer.intersect(cond).coalesce()
        self.stmt(n.iftrue)
        if n.iffalse is not None:
            self.dom = outer.intersect(cond.complement()).coalesce()
            self.stmt(n.iffalse)
        self.dom = outer

    # -- assignments --

    def assignment(self, n: c_ast.Assignment) -> None:
        if n.op not in _ASSIGN_OPS:
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
        name = f"S{len(self.statements)}"
        self.acc = []
        target, wrel = self.target(lhs)
        if op != "=":
            self.acc.append(Access(target.array, wrel, False))
        value = self.value(rhs)
        self.acc.append(Access(target.array, wrel, True))
        accs = [Access(a.array, a.relation.set_tuple_name(isl.dim_type.in_, name), a.is_write)
                for a in self.acc]
        self.acc = None
        text = self.text((at or n).coord, decl)
        if decl:
            text = f"{self.lookup(lhs.name).ctype} {text}"
        self.statements.append(Statement(
            name, tuple(self.iters), self.dom.set_tuple_name(name), E.Assign(target, op, value),
            accs, n.coord.line, text))
        self.sched.append(self.prefix + [self.pos[-1]])
        self.pos[-1] += 1

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
                elif ch in ")]}":
                    depth -= 1
                elif depth == 0 and (ch == ";" or (decl and ch == ",")):
                    return " ".join("".join(chars).split()) + ";"
                chars.append(ch)
            chars.append(" ")
            line, col = line + 1, 0
        return " ".join("".join(chars).split())

    # -- accesses --

    def array_ref(self, node: c_ast.ArrayRef) -> tuple[E.Access, isl.Map]:
        """``A[e1][e2]`` with affine subscripts -> Access expr and access relation."""
        subs, base = [], node
        while isinstance(base, c_ast.ArrayRef):
            subs.insert(0, base.subscript)
            base = base.name
        if not isinstance(base, c_ast.ID):
            self.err("only named arrays can be subscripted", base)
        sym = self.lookup(base.name)
        if sym is None:
            self.err(f"undeclared array '{base.name}'", base, SourceError)
        if sym.kind != "array":
            self.err(f"'{base.name}' is not an array and cannot be subscripted", base)
        if len(subs) != sym.rank:
            self.err(f"array '{base.name}' has {sym.rank} dimension(s) but is used with "
                     f"{len(subs)} subscript(s)", node)
        space = self.dom.get_space()
        pas = [self.aff(s, space, "subscript") for s in subs]
        index = tuple(self.value(s) for s in subs)
        return E.Access(base.name, index), self.relation(pas, space, base.name)

    def relation(self, pas: list[isl.PwAff], space: isl.Space, array: str) -> isl.Map:
        """{ [iters] -> array[pas] } (the statement name is set later)."""
        if not pas:
            m = isl.Map.from_domain(isl.Set.universe(space))
        else:
            m = isl.Map.from_pw_aff(pas[0])
            for pa in pas[1:]:
                m = m.flat_range_product(isl.Map.from_pw_aff(pa))
        return m.set_tuple_name(isl.dim_type.out, array)

    def temp_access(self, sym: _Sym, node: c_ast.Node) -> tuple[E.Access, isl.Map]:
        """A local scalar: its temp array at (iterator - min) for the enclosing loops
        of its declaration."""
        t = sym.temp
        space = self.dom.get_space()
        n = len(self.iters)
        ls = isl.LocalSpace.from_space(space)
        pas, index = [], []
        for p, (mn, mne) in enumerate(zip(t.mins, t.min_exprs)):
            var = isl.PwAff.var_on_domain(ls, isl.dim_type.set, p)
            try:       # the same minimum as the body's index expression
                low = self.expr_aff(mne, ls)
            except ValueError:
                low = mn.insert_dims(isl.dim_type.in_, 0, n)
            pas.append(var.sub(low))
            index.append(E.Binary("-", E.Var(self.iters[p]), mne)
                         if mne != E.Int(0) else E.Var(self.iters[p]))
        return E.Access(t.array, tuple(index)), self.relation(pas, space, t.array)

    # -- affine expressions --

    def expr_aff(self, e: E.Expr, ls: isl.LocalSpace) -> isl.PwAff:
        """An integer Expr of the size parameters (as printed from isl) as a PwAff;
        ValueError for anything else."""
        if isinstance(e, E.Int):
            return self._cst(ls, e.value)
        if isinstance(e, E.Var) and e.name in self.size_params:
            return isl.PwAff.var_on_domain(ls, isl.dim_type.param,
                                           self.size_params.index(e.name))
        if isinstance(e, E.Unary) and e.op == "-":
            return self.expr_aff(e.a, ls).neg()
        if isinstance(e, E.Binary) and e.op in ("+", "-"):
            a, b = self.expr_aff(e.a, ls), self.expr_aff(e.b, ls)
            return a.add(b) if e.op == "+" else a.sub(b)
        if isinstance(e, E.Binary) and e.op == "*" and isinstance(e.a, E.Int):
            return self.expr_aff(e.b, ls).scale_val(isl.Val.int_from_si(self.ctx, e.a.value))
        if isinstance(e, E.Binary) and e.op == "*" and isinstance(e.b, E.Int):
            return self.expr_aff(e.a, ls).scale_val(isl.Val.int_from_si(self.ctx, e.b.value))
        if isinstance(e, E.Call) and e.func in ("min", "max"):
            a, b = self.expr_aff(e.args[0], ls), self.expr_aff(e.args[1], ls)
            return a.min(b) if e.func == "min" else a.max(b)
        if isinstance(e, E.Call) and e.func == "floord" and isinstance(e.args[1], E.Int):
            return self.expr_aff(e.args[0], ls).scale_down_val(
                isl.Val.int_from_si(self.ctx, e.args[1].value)).floor()
        raise ValueError(f"cannot model {e!r}")

    def aff(self, node: c_ast.Node, space: isl.Space, what: str) -> isl.PwAff:
        """An affine integer expression as an isl PwAff over ``space``; ``what`` names
        the role ('subscript', 'loop bound') for the error message."""
        try:
            return self.aff_rec(node, isl.LocalSpace.from_space(space))
        except _NonAffine as e:
            bad = e
        self.err(f"non-affine {what}: {bad.reason}", bad.node)

    def _cst(self, ls: isl.LocalSpace, v: int) -> isl.PwAff:
        return isl.PwAff.from_aff(isl.Aff.zero_on_domain(ls).set_constant_val(v))

    def aff_rec(self, node: c_ast.Node, ls: isl.LocalSpace) -> isl.PwAff:
        """C expression -> PwAff on ``ls``; raises _NonAffine with the culprit node."""
        c = self.const_int(node)
        if c is not None:
            return self._cst(ls, c)
        if isinstance(node, c_ast.ID):
            return self.aff_id(node, ls)
        if isinstance(node, c_ast.BinaryOp):
            return self.aff_binary(node, ls)
        if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
            a = self.aff_rec(node.expr, ls)
            return a.neg() if node.op == "-" else a
        if isinstance(node, c_ast.TernaryOp):
            s = self.cond_set(node.cond, ls)
            a, b = self.aff_rec(node.iftrue, ls), self.aff_rec(node.iffalse, ls)
            return a.intersect_domain(s).union_add(b.intersect_domain(s.complement()))
        if isinstance(node, c_ast.FuncCall) and self._call_name(node) == "abs":
            args = self._args(node)
            if len(args) != 1:
                raise _NonAffine("abs() takes one argument", node)
            a = self.aff_rec(args[0], ls)
            return a.max(a.neg())
        if isinstance(node, c_ast.FuncCall) and self._call_name(node) in ("min", "max"):
            args = self._args(node)
            if len(args) != 2:
                raise _NonAffine(f"{self._call_name(node)}() takes two arguments", node)
            a, b = self.aff_rec(args[0], ls), self.aff_rec(args[1], ls)
            return a.min(b) if self._call_name(node) == "min" else a.max(b)
        if isinstance(node, c_ast.Cast):
            if _type_name(node.to_type.type) in _INT_TYPES:
                return self.aff_rec(node.expr, ls)
            raise _NonAffine("cast to a non-integer type", node)
        raise _NonAffine(self._why_not_affine(node), node)

    def _why_not_affine(self, node: c_ast.Node) -> str:
        """Why a node cannot appear in an affine expression (for the message)."""
        if isinstance(node, c_ast.ArrayRef):
            base = node
            while isinstance(base, c_ast.ArrayRef):
                base = base.name
            name = getattr(base, "name", "an array")
            return f"depends on the values of array '{name}'"
        if isinstance(node, c_ast.FuncCall):
            return f"call to {self._call_name(node) or 'a function'}()"
        if isinstance(node, c_ast.Constant):
            return f"'{node.value}' is not an integer"
        if isinstance(node, c_ast.UnaryOp) and node.op in ("&", "*"):
            return "pointers are not supported"
        if isinstance(node, c_ast.UnaryOp) and node.op in ("!", "~"):
            return f"operator '{node.op}' is not affine"
        return "only + - * / % min max ?: of loop iterators, int parameters and constants " \
               "are allowed"

    def aff_id(self, node: c_ast.ID, ls: isl.LocalSpace) -> isl.PwAff:
        """Iterators are set dimensions, int parameters are isl parameters."""
        if node.name in self.constants:
            raise _NonAffine(f"#define constant '{node.name}' is not an integer", node)
        sym = self.lookup(node.name)
        if sym is None:
            self.err(f"undeclared variable '{node.name}'", node, SourceError)
        if sym.kind == "iter":
            return isl.PwAff.var_on_domain(ls, isl.dim_type.set, sym.pos)
        if sym.kind == "size":
            return isl.PwAff.var_on_domain(ls, isl.dim_type.param, sym.pos)
        reason = {"scalar": f"depends on the floating-point parameter '{node.name}'",
                  "array": f"uses the array '{node.name}' as a number",
                  "itervar": f"uses the loop iterator '{node.name}' outside its loop",
                  "local": f"depends on the local variable '{node.name}' (only loop "
                           "iterators, int parameters and constants may appear)"}
        raise _NonAffine(reason[sym.kind], node)

    def aff_binary(self, node: c_ast.BinaryOp, ls: isl.LocalSpace) -> isl.PwAff:
        """+ and -; * / % with a constant operand, / and % truncating as in C."""
        op = node.op
        if op in ("+", "-"):
            a, b = self.aff_rec(node.left, ls), self.aff_rec(node.right, ls)
            return a.add(b) if op == "+" else a.sub(b)
        if op == "*":
            ca, cb = self.const_int(node.left), self.const_int(node.right)
            if ca is None and cb is None:
                raise _NonAffine("product of two non-constant terms", node)
            other = node.right if ca is not None else node.left
            return self.aff_rec(other, ls).scale_val(
                isl.Val.int_from_si(self.ctx, ca if ca is not None else cb))
        if op in ("/", "%"):
            c = self.const_int(node.right)
            if c is None:
                raise _NonAffine(f"'{op}' by a non-constant", node.right)
            if c == 0:
                raise _NonAffine("division by zero", node.right)
            a, d = self.aff_rec(node.left, ls), self._cst(ls, abs(c))
            if op == "%":
                return a.tdiv_r(d)       # C: sign of the dividend
            q = a.tdiv_q(d)              # C: truncation toward zero
            return q.neg() if c < 0 else q
        if op in _CMP or op in ("&&", "||"):
            raise _NonAffine("a comparison is used as a number", node)
        raise _NonAffine(f"operator '{op}' is not affine", node)

    def cond_set(self, node: c_ast.Node, ls: isl.LocalSpace) -> isl.Set:
        """An affine condition as an isl set (raises _NonAffine)."""
        if isinstance(node, c_ast.BinaryOp) and node.op in _CMP:
            a, b = self.aff_rec(node.left, ls), self.aff_rec(node.right, ls)
            return getattr(a, _CMP[node.op])(b)
        if isinstance(node, c_ast.BinaryOp) and node.op in ("&&", "||"):
            a, b = self.cond_set(node.left, ls), self.cond_set(node.right, ls)
            return a.intersect(b) if node.op == "&&" else a.union(b)
        if isinstance(node, c_ast.UnaryOp) and node.op == "!":
            return self.cond_set(node.expr, ls).complement()
        a = self.aff_rec(node, ls)
        return a.ne_set(self._cst(ls, 0))

    def const_int(self, node: c_ast.Node) -> int | None:
        """The value of an integer compile-time constant expression, else None."""
        e = _const_expr(node, self.constants)
        if e is None:
            return None
        try:
            v = E.evaluate(e, {})
        except (ZeroDivisionError, KeyError, TypeError, ValueError):
            return None
        return v if isinstance(v, int) and not any(isinstance(x, E.Float) for x in E.walk(e)) \
            else None

    # -- values --

    def value(self, node: c_ast.Node) -> E.Expr:
        """A right-hand side (or subscript) as an Expr; array reads are recorded."""
        if isinstance(node, c_ast.Constant):
            lit = _literal(node)
            if lit is None:
                self.err(f"unsupported literal {node.value}", node)
            return lit
        if isinstance(node, c_ast.ID):
            return self.value_id(node)
        if isinstance(node, c_ast.ArrayRef):
            acc, rel = self.array_ref(node)
            if self.acc is not None:
                self.acc.append(Access(acc.array, rel, False))
            return acc
        if isinstance(node, c_ast.BinaryOp) and node.op in _VALUE_BINOPS:
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
            self.err("assignment inside an expression is not supported", node)
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
        tn = _type_name(t)
        ctype = _ELEM_TYPES.get(tn or "")
        if ctype is None:
            self.err(f"cast to unsupported type '{tn}'", node)
        return E.Cast(ctype, self.value(node.expr))

    def value_call(self, node: c_ast.FuncCall) -> E.Expr:
        name = self._call_name(node)
        if name not in MATH_FUNCS:
            self.call_error(node)
        args = self._args(node)
        if len(args) != MATH_FUNCS[name]:
            self.err(f"{name}() takes {MATH_FUNCS[name]} argument(s), got {len(args)}", node)
        return E.Call(name, tuple(self.value(a) for a in args))

    # -- schedule --

    def schedule(self) -> isl.UnionMap:
        """The execution order in 2d+1 form, padded with zeros to a common length
        (restricted to the statement domains); a loop that counts down contributes
        ``-it`` (its iterations run in decreasing order)."""
        umap = isl.UnionMap.empty(self.context.get_space())
        width = max((len(s) for s in self.sched), default=1)
        npar = len(self.size_params)
        for st, sched in zip(self.statements, self.sched):
            sp = isl.Space.alloc(self.ctx, npar, len(st.iterators), width)
            for k, p in enumerate(self.size_params):
                sp = sp.set_dim_name(isl.dim_type.param, k, p)
            for k, it in enumerate(st.iterators):
                sp = sp.set_dim_name(isl.dim_type.in_, k, it)
            m = isl.Map.universe(sp)
            ls = isl.LocalSpace.from_space(sp)
            for k, v in enumerate(sched + [0] * (width - len(sched))):
                c = isl.Constraint.equality_alloc(ls).set_coefficient_val(isl.dim_type.out, k, 1)
                if isinstance(v, str):
                    down = v.startswith("-")
                    c = c.set_coefficient_val(isl.dim_type.in_,
                                              st.iterators.index(v.lstrip("-")),
                                              1 if down else -1)
                else:
                    c = c.set_constant_val(-v)
                m = m.add_constraint(c)
            m = m.set_tuple_name(isl.dim_type.in_, st.name).intersect_domain(st.domain)
            umap = umap.union(isl.UnionMap.from_map(m))
        return umap


def parse_c(source: str) -> Scop:
    """Parse one cell of C (defines + one void function) into a :class:`Scop`.

    Raises :class:`SourceError` for syntax errors and :class:`UnsupportedError` for
    C outside the affine subset, both located at the user's line and column.
    """
    pre = preprocess(source)
    ast = _parse(pre.text, source)
    b = _Builder(source, pre)
    fd = b.function(ast)
    b.names.visit(fd)
    b.signature(fd)
    b.body(fd)
    return Scop(name=fd.decl.name, params=b.params, arrays=b.arrays, statements=b.statements,
                schedule=b.schedule(), context=b.context, source=source,
                constants=dict(pre.values), language="c")
