"""The Python front end: a Python function over NumPy arrays -> :class:`~polymagic.scop.Scop`.

Seed 002 §2 (unPython/jit4GPU): the programmer keeps writing Python, annotates
types and parallel loops, and "the annotations are designed to be compliant with
the Python grammar and to be transparent to the Python interpreter", so the same
function still runs as plain Python; "if ... the compiler fails to generate GPU
code, then execution proceeds with the CPU code" (§2.3).  Here:

* ``%%polycuda --python`` cells and ``python -m polymagic run FILE.py`` hold one
  function; ``@polymagic.gpu`` (:mod:`polymagic.api.python`) compiles a function at
  its first call with types inferred from the arguments (:func:`infer_type`), and
  falls back to running it as plain Python, with the reason shown as a warning, when
  it cannot be compiled or run.
* Loops are ``for i in range(...)`` (also ``polymagic.prange``/``prange``, the
  paper's parallel-loop annotation, and ``xrange``); the dependence analysis
  decides what runs in parallel, ``prange`` is advisory.
* Types (§2.2): ``N: int`` is a size parameter, ``alpha: float`` a double scalar
  (``"float"``/``numpy.float32`` a C float), ``A: "double[N][M]"`` (or
  ``"float32[N, M]"``) an array with element type and extents.  ``A.shape[k]``,
  ``len(A)`` and ``numpy.shape(A)[k]`` denote the declared extents, and top-level
  assignments of such integer expressions (``m = A.shape[0]``, Figure 3) are
  substituted where used.  Local scalars take the widest type assigned to them
  (the paper infers "the type of the first value assigned"; widening keeps
  ``s = 0`` followed by ``s += a[i]`` a floating-point sum, as in Python).

The function is parsed with :mod:`ast` and translated, statement by statement and
on the same line numbers, into the equivalent C function, which the C front end
turns into the Scop (so both languages give the same polyhedral model, statement
names and error locations).  The Scop keeps the Python source and ``language ==
"python"``; its C translation (``scop.c_source``) is what the CPU reference runs.
Python semantics the translation keeps: true division ``/`` of integers is done in
double, ``x ** 2`` is ``x * x`` (else ``pow``), ``abs`` is ``fabs`` on floats,
chained comparisons are conjunctions.  Not supported (the function then runs as
plain Python under ``@polymagic.gpu``): ``//`` and ``%`` (C rounds toward zero), while
loops, calls other than math functions, slices, returning a value.
"""
from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import SourceError, UnsupportedError
from ..names import reserved_reason
from ..scop import Scop

#: Python/NumPy type names -> C types
_SCALAR_TYPES = {"int": "int", "long": "long", "float": "float", "double": "double",
                 "float32": "float", "float64": "double", "int32": "int", "int64": "long",
                 "single": "float", "cfloat": "float", "np.float32": "float",
                 "np.float64": "double", "numpy.float32": "float", "numpy.float64": "double",
                 "np.int32": "int", "np.int64": "long", "numpy.int32": "int",
                 "numpy.int64": "long"}
_ELEM_TYPES = {"float": "float", "double": "double", "int": "int", "long": "long",
               "float32": "float", "float64": "double", "int32": "int", "int64": "long",
               "f4": "float", "f8": "double", "i4": "int", "i8": "long"}
_NUMPY_C = {"float32": "float", "float64": "double", "int32": "int", "int64": "long"}
_RANK = {"int": 0, "long": 1, "float": 2, "double": 3}
_MATH = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "fabs", "pow",
         "fmax", "fmin"}
_MODULES = {"math", "np", "numpy", "polymagic", "pm"}
_LOOPS = {"range", "prange", "xrange"}
_C_KEYWORDS = {"auto", "break", "case", "char", "const", "continue", "default", "do",
               "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline",
               "int", "long", "register", "restrict", "return", "short", "signed", "sizeof",
               "static", "struct", "switch", "typedef", "union", "unsigned", "void",
               "volatile", "while", "min", "max", "floord", "pm_mod"}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!="}
_AUGOPS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/="}


class _Unsupported(Exception):
    def __init__(self, msg: str, node: ast.AST | None = None):
        super().__init__(msg)
        self.node = node


@dataclass
class _Param:
    name: str
    kind: str                  # 'size' | 'scalar' | 'array'
    ctype: str
    extents: list[str] = field(default_factory=list)   # C text, arrays only


@dataclass
class Translation:
    """A Python function and its C equivalent (line numbers preserved)."""
    name: str
    python: str
    c_source: str
    params: list[_Param]
    texts: dict[int, str]       # Python line -> statement text (for reports)


# ---- annotations -------------------------------------------------------------------

def _annotation_text(node: ast.AST | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip()
    return ast.unparse(node).strip()


def parse_type(name: str, text: str) -> _Param:
    """``int`` / ``float`` / ``"float"`` / ``"double[N][M]"`` / ``"float32[N, M]"``."""
    t = text.replace(" ", "")
    if "[" in t:
        elem, rest = t.split("[", 1)
        ctype = _ELEM_TYPES.get(elem.split(".")[-1])
        if ctype is None:
            raise _Unsupported(f"parameter {name}: unknown element type {elem!r} in "
                               f"{text!r} (use float, double, int or long)")
        if not re.fullmatch(r"(\[[^\[\]]*\])+", "[" + rest):
            raise _Unsupported(f"parameter {name}: malformed array annotation {text!r}: "
                               "write the element type, then each extent in brackets, "
                               "e.g. 'double[N][M]' or 'float32[N, M]'")
        dims = re.findall(r"\[([^\]]*)\]", "[" + rest)
        if len(dims) == 1 and "," in dims[0]:
            dims = dims[0].split(",")
        if not dims or any(not d for d in dims):
            raise _Unsupported(f"parameter {name}: {text!r} needs extents, e.g. 'double[N][M]'")
        extents = []
        for d in dims:
            try:
                e = ast.parse(d, mode="eval").body
            except SyntaxError:
                raise _Unsupported(f"parameter {name}: extent {d!r} is not an expression") from None
            extents.append(d)
            for n in ast.walk(e):
                if not isinstance(n, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Add,
                                      ast.Sub, ast.Mult, ast.USub, ast.Load)):
                    raise _Unsupported(f"parameter {name}: extent {d!r} must be an integer "
                                       f"expression of int parameters")
        return _Param(name, "array", ctype, extents)
    if t in ("int", "long", "np.int32", "np.int64", "numpy.int32", "numpy.int64", "int32",
             "int64"):
        return _Param(name, "size", "int" if t in ("int", "np.int32", "numpy.int32", "int32")
                      else "long")
    if t in _SCALAR_TYPES:
        return _Param(name, "scalar", _SCALAR_TYPES[t])
    raise _Unsupported(f"parameter {name}: unsupported annotation {text!r} (use int, float, "
                       f"'float', 'double' or an array type such as 'double[N][M]')")


def infer_type(name: str, value: Any) -> str:
    """The annotation an argument implies (``@polymagic.gpu`` at the first call,
    seed 002 §2.2: types from the values); UnsupportedError for a value the GPU
    cannot take."""
    try:
        return _infer_type(name, value)
    except _Unsupported as e:
        raise UnsupportedError(str(e)) from None


def _infer_type(name: str, value: Any) -> str:
    import numpy as np
    if isinstance(value, np.ndarray):
        ctype = _NUMPY_C.get(value.dtype.name)
        if ctype is None:
            raise _Unsupported(f"argument {name}: arrays of {value.dtype} are not supported")
        if value.ndim == 0:
            raise _Unsupported(f"argument {name}: 0-d arrays are not supported")
        return ctype + "".join(f"[{extent_param(name, k)}]" for k in range(value.ndim))
    if isinstance(value, (bool, np.bool_)):
        raise _Unsupported(f"argument {name}: booleans are not supported")
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, np.float32):
        return "float"
    if isinstance(value, (float, np.floating)):
        return "double"
    raise _Unsupported(f"argument {name}: a {type(value).__name__} cannot be passed to the GPU")


def extent_param(array: str, k: int) -> str:
    """The hidden size parameter of an inferred array extent."""
    return f"{array}_n{k}"


def array_of_extent(param: str) -> tuple[str, int] | None:
    """``(array, k)`` when ``param`` is :func:`extent_param` ``(array, k)``, else None."""
    m = re.fullmatch(r"(.+)_n(\d+)", param)
    return (m.group(1), int(m.group(2))) if m else None


# ---- the translator ------------------------------------------------------------------

def _find_function(tree: ast.Module, name: str | None) -> ast.FunctionDef:
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    for n in tree.body:
        if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Pass)):
            continue
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant):
            continue
        raise _Unsupported("the cell may hold imports and one function definition only", n)
    if name is not None:
        funcs = [f for f in funcs if f.name == name]
    if len(funcs) != 1:
        raise _Unsupported("the source must define exactly one function"
                           + (f" named {name}" if name else ""))
    return funcs[0]


class _Translator:
    def __init__(self, source: str, fn: ast.FunctionDef, overrides: Mapping[str, str]):
        self.source = source
        self.fn = fn
        self.overrides = dict(overrides)
        self.chunks: dict[int, list[str]] = {}
        self.params: dict[str, _Param] = {}
        self.hidden: list[str] = []          # extent parameters added for inferred arrays
        self.aliases: dict[str, str] = {}    # top-level int names -> C text
        self.locals: dict[str, str] = {}     # local scalar -> C type
        self.declared: list[set[str]] = [set()]
        self.iters: list[str] = []
        self.texts: dict[int, str] = {}

    # -- output --

    def put(self, line: int, text: str) -> None:
        self.chunks.setdefault(line, []).append(text)

    def c_text(self) -> str:
        last = max(self.chunks) if self.chunks else 1
        return "\n".join(" ".join(self.chunks.get(i, [])) for i in range(1, last + 1)) + "\n"

    # -- signature --

    def signature(self) -> None:
        a = self.fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise _Unsupported("only plain positional parameters without defaults are "
                               "supported", self.fn)
        for arg in a.args:
            self.check_name(arg.arg, arg)
            text = self.overrides.get(arg.arg) or _annotation_text(arg.annotation)
            if isinstance(arg.annotation, ast.Name) and arg.annotation.id == "float" and \
                    arg.arg not in self.overrides:
                text = "double"            # Python's float is a C double; "float" is C's
            if text is None:
                raise _Unsupported(f"parameter {arg.arg} has no type: annotate it, e.g. "
                                   f"{arg.arg}: int, {arg.arg}: float or "
                                   f"{arg.arg}: \"double[N][M]\"", arg)
            try:
                self.params[arg.arg] = parse_type(arg.arg, text)
            except _Unsupported as e:
                raise _Unsupported(str(e), e.node or arg.annotation or arg) from None
        for p in self.params.values():
            for e in p.extents:
                for n in ast.walk(ast.parse(e, mode="eval")):
                    if isinstance(n, ast.Name) and n.id not in self.params:
                        if re.fullmatch(r".+_n\d+", n.id) and n.id not in self.hidden:
                            self.hidden.append(n.id)
                        elif n.id not in self.hidden:
                            raise _Unsupported(f"the extents of {p.name} use {n.id}, which is "
                                               f"not an int parameter", self.fn)
                    if isinstance(n, ast.Name) and n.id in self.params and \
                            self.params[n.id].kind != "size":
                        raise _Unsupported(f"the extents of {p.name} use {n.id}, which is "
                                           f"not an int parameter", self.fn)
        self.returns = self.return_type()      # after the parameters: arrays are known
        sig = [f"int {h}" for h in self.hidden]
        sizes = [p for p in self.params.values() if p.kind == "size"]
        others = [p for p in self.params.values() if p.kind != "size"]
        for p in sizes + others:           # C needs the sizes before the arrays using them
            if p.kind == "array":
                sig.append(f"{p.ctype} {p.name}" + "".join(f"[{self.c_extent(e)}]"
                                                           for e in p.extents))
            else:
                sig.append(f"{p.ctype} {p.name}")
        self.put(self.fn.lineno, f"{self.returns} {self.fn.name}({', '.join(sig)}) {{")

    def return_type(self) -> str:
        """The C type the function returns: ``void``, or the annotation's of a function
        whose last statement returns a value (``-> float`` is a C double); the C front
        end writes the value to its returned-value array (``polymagic.scop.RETURN``)."""
        last = self.fn.body[-1] if self.fn.body else None
        value = isinstance(last, ast.Return) and last.value is not None
        text = _annotation_text(self.fn.returns) if self.fn.returns is not None else None
        if not value:
            if text not in (None, "None"):
                raise _Unsupported(f"the function is annotated -> {text} but its last "
                                   "statement does not return a value", self.fn)
            return "void"
        self.scalar_return(last)
        if isinstance(self.fn.returns, ast.Name) and self.fn.returns.id == "float":
            return "double"                # Python's float, as for parameters
        try:
            ctype = parse_type("the return value", text).ctype if text else None
        except _Unsupported:
            ctype = None
        if ctype is None or "[" in (text or ""):
            raise _Unsupported("a function that returns a value needs its type: annotate "
                               f"it (def {self.fn.name}(...) -> float; float, int, "
                               "\"float32\", \"float64\", \"int32\" or \"int64\")",
                               self.fn.returns or self.fn)
        return ctype

    def scalar_return(self, ret: ast.Return) -> None:
        """Refuse, at the ``return``, a function returning an array (a parameter, a
        slice of one, several values), and an array annotation of the result: only
        one scalar comes back; arrays are written in place."""
        v = ret.value
        array = self._array_value(v)
        what = (f"the array {array}" if array is not None else
                "several values" if isinstance(v, ast.Tuple) else None)
        if what is None and "[" in (_annotation_text(self.fn.returns) or ""):
            what = "an array (annotated -> " + _annotation_text(self.fn.returns) + ")"
        if what is not None:
            raise _Unsupported(f"{self.fn.name} returns {what}: only one scalar (float or "
                               "int) can be returned; arrays are passed in and written in "
                               "place, so drop the return and read the result from the "
                               "caller's array", ret)

    def _array_value(self, v: ast.AST) -> str | None:
        """The array parameter whose whole or sliced value ``v`` is (``A``, ``A[1:3]``,
        ``2 * A``), else None."""
        if isinstance(v, ast.Name):
            p = self.params.get(v.id)
            return v.id if p is not None and p.kind == "array" else None
        if isinstance(v, ast.Subscript) and any(isinstance(x, ast.Slice)
                                                for x in ast.walk(v.slice)):
            return self._array_value(v.value)
        if isinstance(v, ast.BinOp):
            return self._array_value(v.left) or self._array_value(v.right)
        if isinstance(v, ast.UnaryOp):
            return self._array_value(v.operand)
        return None

    def c_extent(self, e: str) -> str:
        return self.expr(ast.parse(e, mode="eval").body)[0]

    def check_name(self, name: str, node: ast.AST) -> None:
        if name in _C_KEYWORDS:
            raise _Unsupported(f"the name {name!r} is reserved in the generated C", node)
        why = reserved_reason(name)
        if why:
            raise _Unsupported(why, node)

    # -- statements --

    def body(self) -> None:
        stmts = list(self.fn.body)
        if stmts and isinstance(stmts[0], ast.Expr) and isinstance(stmts[0].value, ast.Constant) \
                and isinstance(stmts[0].value.value, str):
            stmts = stmts[1:]
        ret = None
        if stmts and isinstance(stmts[-1], ast.Return):
            ret, stmts = stmts[-1], stmts[:-1]
        stmts = self.take_aliases(stmts)
        self.infer_locals(stmts)
        for s in stmts:
            self.stmt(s)
        if ret is not None and ret.value is not None:
            self.texts[ret.lineno] = ast.get_source_segment(self.source, ret) or ""
            self.put(ret.lineno, f"return {self.expr(ret.value)[0]};")
        end = max((getattr(s, "end_lineno", s.lineno) for s in self.fn.body), default=self.fn.lineno)
        self.put(end, "}")

    def take_aliases(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """Leading ``m = <int expression of sizes and extents>`` assignments, never
        reassigned, become substitutions (Figure 3's ``m = shape(a)[0]``)."""
        assigned: dict[str, int] = {}
        for n in ast.walk(ast.Module(body=stmts, type_ignores=[])):
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        assigned[t.id] = assigned.get(t.id, 0) + 1
        out = []
        leading = True
        for s in stmts:
            if leading and isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], ast.Name) and assigned.get(s.targets[0].id) == 1:
                try:
                    text, ctype = self.expr(s.value)
                except _Unsupported:
                    text, ctype = None, None
                if ctype in ("int", "long") and self.is_size_expr(s.value):
                    self.check_name(s.targets[0].id, s)
                    self.aliases[s.targets[0].id] = f"({text})"
                    continue
            leading = False
            out.append(s)
        return out

    def is_size_expr(self, e: ast.AST) -> bool:
        for n in ast.walk(e):
            if isinstance(n, ast.Name) and not (
                    (n.id in self.params and self.params[n.id].kind in ("size", "array"))
                    or n.id in self.aliases or n.id in _MODULES or n.id in ("len", "shape")):
                return False
            if isinstance(n, ast.Subscript) and not self.shape_ref(n):
                return False
        return True

    def infer_locals(self, stmts: list[ast.stmt]) -> None:
        """Local scalars: the widest type among all values assigned to them."""
        targets: list[tuple[str, ast.expr]] = []
        for n in ast.walk(ast.Module(body=stmts, type_ignores=[])):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                targets.append((n.targets[0].id, n.value))
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                targets.append((n.target.id, n.value))
        for name, _ in targets:
            if name in self.params or name in self.aliases:
                continue
            self.check_name(name, self.fn)
            self.locals.setdefault(name, "int")
        for _ in range(len(self.locals) + 1):          # to a fixed point
            changed = False
            for name, value in targets:
                if name not in self.locals:
                    continue
                try:
                    t = self.expr(value, loose=True)[1]
                except _Unsupported:
                    continue
                t = "double" if t == "bool" else t
                if _RANK.get(t, 0) > _RANK[self.locals[name]]:
                    self.locals[name] = t
                    changed = True
            if not changed:
                break

    def stmt(self, s: ast.stmt) -> None:
        self.texts[s.lineno] = ast.get_source_segment(self.source, s) or ""
        if isinstance(s, ast.For):
            return self.for_(s)
        if isinstance(s, ast.If):
            return self.if_(s)
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise _Unsupported("chained assignment (a = b = ...) is not supported", s)
            return self.assign(s, s.targets[0], "=", s.value)
        if isinstance(s, ast.AugAssign):
            op = _AUGOPS.get(type(s.op))
            if op is None:
                raise _Unsupported(f"augmented assignment {type(s.op).__name__} is not "
                                   f"supported", s)
            return self.assign(s, s.target, op, s.value)
        if isinstance(s, ast.AnnAssign) and s.value is not None:
            return self.assign(s, s.target, "=", s.value)
        if isinstance(s, ast.Pass):
            return None
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            return None
        what = {ast.While: "while loops", ast.Return: "return statements inside the body",
                ast.Break: "break", ast.Continue: "continue"}.get(type(s))
        if what is None and isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            what = "calls as statements"
        raise _Unsupported(f"{what or type(s).__name__ + ' statements'} are not supported "
                           f"in a GPU function", s)

    def for_(self, s: ast.For) -> None:
        if s.orelse:
            raise _Unsupported("for ... else is not supported", s)
        if not isinstance(s.target, ast.Name):
            raise _Unsupported("the loop variable must be a plain name", s.target)
        it = s.target.id
        self.check_name(it, s.target)
        if it in self.params or it in self.locals or it in self.aliases or it in self.iters:
            raise _Unsupported(f"loop variable {it!r} reuses the name of a parameter, an "
                               f"enclosing loop variable or a local variable", s.target)
        call = s.iter
        if not (isinstance(call, ast.Call) and self.call_name(call.func) in _LOOPS
                and not call.keywords and 1 <= len(call.args) <= 3):
            raise _Unsupported("loops must be 'for i in range(...)' or "
                               "'for i in polymagic.prange(...)'", s.iter)
        args = [self.expr(a) for a in call.args]
        if any(t not in ("int", "long") for _, t in args):
            raise _Unsupported("range() bounds must be integers", call)
        if len(args) == 1:
            lo, hi, step = "0", args[0][0], 1
        else:
            lo, hi = args[0][0], args[1][0]
            step = 1
            if len(args) == 3:
                step = self.const_int(call.args[2])
                if step is None or step == 0:
                    raise _Unsupported("the range() step must be a non-zero integer constant",
                                       call.args[2])
        if step > 0:
            head = f"for (int {it} = {lo}; {it} < {hi}; {it} += {step}) {{"
        else:
            head = f"for (int {it} = {lo}; {it} > {hi}; {it} -= {-step}) {{"
        self.put(s.lineno, head)
        self.iters.append(it)
        self.declared.append(set())
        for b in s.body:
            self.stmt(b)
        self.declared.pop()
        self.iters.pop()
        self.put(s.end_lineno, "}")

    def if_(self, s: ast.If) -> None:
        cond, _ = self.expr(s.test)
        self.put(s.lineno, f"if ({cond}) {{")
        self.declared.append(set())
        for b in s.body:
            self.stmt(b)
        self.declared.pop()
        if s.orelse:
            self.put(s.body[-1].end_lineno, "} else {")
            self.declared.append(set())
            for b in s.orelse:
                self.stmt(b)
            self.declared.pop()
        self.put(s.end_lineno, "}")

    def assign(self, s: ast.stmt, target: ast.expr, op: str, value: ast.expr) -> None:
        rhs, rtype = self.expr(value)
        if isinstance(target, ast.Subscript):
            lhs, _ = self.subscript(target)
            self.put(s.lineno, f"{lhs} {op} {rhs};")
            return
        if not isinstance(target, ast.Name):
            raise _Unsupported("only array elements and local variables can be assigned", target)
        name = target.id
        if name in self.params:
            raise _Unsupported(f"assignment to parameter {name!r}: parameters are read-only "
                               f"(write into an array element)", target)
        if name in self.iters:
            raise _Unsupported(f"loop variable {name!r} is modified in the loop body", target)
        ctype = self.locals[name]
        if not any(name in d for d in self.declared):
            if op != "=":
                raise _Unsupported(f"{name!r} is updated before it is assigned", target)
            self.declared[-1].add(name)
            self.put(s.lineno, f"{ctype} {name} = {rhs};")
            return
        self.put(s.lineno, f"{name} {op} {rhs};")

    # -- expressions: (C text, C type) --

    def const_int(self, node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and \
                not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.const_int(node.operand)
            return -v if v is not None else None
        return None

    @staticmethod
    def call_name(func: ast.AST) -> str | None:
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id in _MODULES:
            return func.attr
        return None

    def shape_ref(self, node: ast.AST) -> str | None:
        """``A.shape[k]`` / ``numpy.shape(A)[k]`` / ``shape(A)[k]`` -> extent text."""
        if not isinstance(node, ast.Subscript):
            return None
        k = self.const_int(node.slice)
        base = node.value
        arr = None
        if isinstance(base, ast.Attribute) and base.attr == "shape" and isinstance(base.value, ast.Name):
            arr = base.value.id
        elif isinstance(base, ast.Call) and self.call_name(base.func) == "shape" and \
                len(base.args) == 1 and isinstance(base.args[0], ast.Name):
            arr = base.args[0].id
        if arr is None or k is None:
            return None
        p = self.params.get(arr)
        if p is None or p.kind != "array":
            raise _Unsupported(f"{arr} is not an array parameter", node)
        if not -len(p.extents) <= k < len(p.extents):
            raise _Unsupported(f"{arr} has {len(p.extents)} dimension(s)", node)
        return f"({self.c_extent(p.extents[k])})"

    def subscript(self, node: ast.Subscript, loose: bool = False) -> tuple[str, str]:
        idx: list[ast.expr] = []
        base: ast.expr = node
        while isinstance(base, ast.Subscript):
            sl = base.slice
            parts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            idx = parts + idx
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in self.params or \
                self.params[base.id].kind != "array":
            raise _Unsupported("only array parameters can be subscripted", node)
        p = self.params[base.id]
        for i in idx:
            if isinstance(i, ast.Slice):
                raise _Unsupported("slices are not supported: write the loop", i)
        if len(idx) != len(p.extents):
            raise _Unsupported(f"array {p.name} has {len(p.extents)} dimension(s) but is used "
                               f"with {len(idx)} subscript(s)", node)
        subs = []
        for i in idx:
            c = self.const_int(i)
            if c is not None and c < 0:
                raise _Unsupported("negative subscripts count from the end in Python; "
                                   "write the index explicitly (e.g. A[n - 1])", i)
            text, t = self.expr(i, loose)
            if t not in ("int", "long"):
                raise _Unsupported("array subscripts must be integers", i)
            subs.append(f"[{text}]")
        return p.name + "".join(subs), p.ctype

    def expr(self, e: ast.expr, loose: bool = False) -> tuple[str, str]:
        if isinstance(e, ast.Constant):
            v = e.value
            if isinstance(v, bool):
                return ("1" if v else "0"), "int"
            if isinstance(v, int):
                return str(v), "int" if abs(v) < 2**31 else "long"
            if isinstance(v, float):
                r = repr(v)
                if r in ("inf", "-inf", "nan"):
                    raise _Unsupported(f"the constant {r} is not supported", e)
                if "." not in r and "e" not in r:
                    r += ".0"
                return r, "double"
            raise _Unsupported(f"the constant {v!r} is not supported", e)
        if isinstance(e, ast.Name):
            n = e.id
            if n in self.aliases:
                return self.aliases[n], "int"
            if n in self.params:
                p = self.params[n]
                if p.kind == "array":
                    raise _Unsupported(f"array {n} is used without subscripts", e)
                return n, p.ctype
            if n in self.hidden:
                return n, "int"
            if n in self.iters:
                return n, "int"
            if n in self.locals:
                if not loose and not any(n in d for d in self.declared):
                    raise _Unsupported(f"{n!r} is used before it is assigned (or outside the "
                                       f"block where it was first assigned)", e)
                return n, self.locals[n]
            if n in ("True", "False"):
                return ("1" if n == "True" else "0"), "int"
            if loose:                      # type inference before loops are entered
                return n, "int"
            raise _Unsupported(f"unknown name {n!r}", e)
        if isinstance(e, ast.Subscript):
            ext = self.shape_ref(e)
            if ext is not None:
                return ext, "int"
            return self.subscript(e, loose)
        if isinstance(e, ast.UnaryOp):
            a, t = self.expr(e.operand, loose)
            if isinstance(e.op, ast.USub):
                return f"(-{a})", t
            if isinstance(e.op, ast.UAdd):
                return a, t
            if isinstance(e.op, ast.Not):
                return f"(!{a})", "int"
            raise _Unsupported("operator ~ is not supported", e)
        if isinstance(e, ast.BinOp):
            return self.binop(e, loose)
        if isinstance(e, ast.BoolOp):
            op = " && " if isinstance(e.op, ast.And) else " || "
            return "(" + op.join(self.expr(v, loose)[0] for v in e.values) + ")", "int"
        if isinstance(e, ast.Compare):
            parts = []
            left = e.left
            for op, right in zip(e.ops, e.comparators):
                c = _CMPOPS.get(type(op))
                if c is None:
                    raise _Unsupported(f"comparison {type(op).__name__} is not supported", e)
                parts.append(f"({self.expr(left, loose)[0]} {c} {self.expr(right, loose)[0]})")
                left = right
            return ("(" + " && ".join(parts) + ")" if len(parts) > 1 else parts[0]), "int"
        if isinstance(e, ast.IfExp):
            c = self.expr(e.test, loose)[0]
            a, ta = self.expr(e.body, loose)
            b, tb = self.expr(e.orelse, loose)
            return f"(({c}) ? ({a}) : ({b}))", _wider(ta, tb)
        if isinstance(e, ast.Call):
            return self.call(e, loose)
        raise _Unsupported(f"{type(e).__name__} expressions are not supported", e)

    def binop(self, e: ast.BinOp, loose: bool) -> tuple[str, str]:
        a, ta = self.expr(e.left, loose)
        b, tb = self.expr(e.right, loose)
        if isinstance(e.op, ast.Pow):
            if isinstance(e.right, ast.Constant) and e.right.value == 2:
                return f"(({a}) * ({a}))", ta
            return f"pow({a}, {b})", "double"
        if isinstance(e.op, (ast.FloorDiv, ast.Mod)):
            raise _Unsupported("// and % are not supported (C division rounds toward zero, "
                               "Python's floors)", e)
        op = _BINOPS.get(type(e.op))
        if op is None:
            raise _Unsupported(f"operator {type(e.op).__name__} is not supported", e)
        if op == "/" and ta in ("int", "long") and tb in ("int", "long"):
            return f"((double)({a}) / ({b}))", "double"         # Python's true division
        return f"({a} {op} {b})", _wider(ta, tb)

    def call(self, e: ast.Call, loose: bool) -> tuple[str, str]:
        name = self.call_name(e.func)
        if e.keywords:
            raise _Unsupported("keyword arguments are not supported in calls", e)
        args = [self.expr(a, loose) for a in e.args]
        if name == "len" and len(e.args) == 1 and isinstance(e.args[0], ast.Name):
            p = self.params.get(e.args[0].id)
            if p is None or p.kind != "array":
                raise _Unsupported("len() takes an array parameter", e)
            return f"({self.c_extent(p.extents[0])})", "int"
        if name in ("min", "max") and len(args) >= 2:
            text, t = args[0]
            for a, ta in args[1:]:
                text, t = f"{name}({text}, {a})", _wider(t, ta)
            return text, t
        if name == "abs" and len(args) == 1:
            a, t = args[0]
            return (f"abs({a})", t) if t in ("int", "long") else (f"fabs({a})", t)
        if name in ("float", "float64", "double") and len(args) == 1:
            return f"((double)({args[0][0]}))", "double"
        if name in ("float32", "single") and len(args) == 1:
            return f"((float)({args[0][0]}))", "float"
        if name in ("int", "int32") and len(args) == 1:
            return f"((int)({args[0][0]}))", "int"
        if name in _MATH:
            arity = 2 if name in ("pow", "fmax", "fmin") else 1
            if len(args) != arity:
                raise _Unsupported(f"{name}() takes {arity} argument(s)", e)
            return f"{name}({', '.join(a for a, _ in args)})", "double"
        if name in ("power",) and len(args) == 2:
            return f"pow({args[0][0]}, {args[1][0]})", "double"
        raise _Unsupported(f"call of {ast.unparse(e.func)}() is not supported (math "
                           f"functions, min, max, abs, float and int are)", e)


def _wider(a: str, b: str) -> str:
    a = "int" if a == "bool" else a
    b = "int" if b == "bool" else b
    return a if _RANK.get(a, 0) >= _RANK.get(b, 0) else b


def translate(source: str, overrides: Mapping[str, str] | None = None,
              name: str | None = None) -> Translation:
    """The C equivalent of the one function in ``source`` (line numbers kept).
    ``overrides`` gives annotations by parameter name (types inferred at a call).
    Raises UnsupportedError/SourceError located at the Python line."""
    source = textwrap.dedent(source)
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise SourceError(f"syntax error: {e.msg}", e.lineno or 1, e.offset or 1,
                          source) from None
    except (ValueError, RecursionError, MemoryError) as e:   # NUL bytes, deep nesting
        raise SourceError(f"the cell cannot be parsed as Python: {e or type(e).__name__}",
                          1, 1, source) from None
    fn = None
    try:
        fn = _find_function(tree, name)
        t = _Translator(source, fn, overrides or {})
        t.signature()
        t.body()
    except _Unsupported as e:
        node = e.node if getattr(e.node, "lineno", None) else fn
        line, col = (node.lineno, node.col_offset + 1) if node is not None else (1, 1)
        raise UnsupportedError(str(e), line, col, source) from None
    except RecursionError:
        raise UnsupportedError("the function is nested too deeply to translate (resource "
                               "limit: nesting depth); simplify its expressions or blocks",
                               fn.lineno, fn.col_offset + 1, source) from None
    params = [t.params[a.arg] for a in fn.args.args]
    hidden = [_Param(h, "size", "int") for h in t.hidden]
    return Translation(fn.name, source, t.c_text(), hidden + params, t.texts)


def parse_python(source: str, overrides: Mapping[str, str] | None = None,
                 name: str | None = None) -> Scop:
    """Python source -> :class:`~polymagic.scop.Scop` (through its C translation,
    kept as ``scop.c_source``: what the CPU reference compiles)."""
    from .c import parse_c
    tr = translate(source, overrides, name)
    try:
        scop = parse_c(tr.c_source)
    except SourceError as e:
        raise _in_python(e, tr.python) from None
    for st in scop.statements:
        if st.line in tr.texts and tr.texts[st.line]:
            st.text = " ".join(tr.texts[st.line].split())
    scop.source = tr.python
    scop.language = "python"
    scop.c_source = tr.c_source
    return scop


def _in_python(e: SourceError, python: str) -> SourceError:
    """An error the C front end found in the translation, located in the Python: the
    translation keeps the lines but not the columns, so it points at the start of
    the Python statement on that line (and quotes the Python, not the C)."""
    lines = python.splitlines()
    line = e.line if e.line is not None and 1 <= e.line <= len(lines) else None
    if line is None:
        return type(e)(e.reason, 1, 1, python)
    text = lines[line - 1]
    col = len(text) - len(text.lstrip()) + 1
    return type(e)(e.reason, line, col, python)


# ---- annotations inferred at a call --------------------------------------------------

def keyed_source(source: str, key: tuple[tuple[str, str], ...]) -> str:
    """Python source carrying annotations inferred at a call (``(name, annotation)``
    pairs, see :func:`infer_type`) in trailing comments: line numbers unchanged, and
    the compiler's cache key tells the inferred types apart."""
    return source.rstrip("\n") + "\n" + "".join(f"# polymagic: {n}: {t}\n" for n, t in key)


def overrides_from_header(source: str) -> dict[str, str]:
    """The annotations :func:`keyed_source` appended."""
    out = {}
    for line in source.splitlines():
        m = re.fullmatch(r"# polymagic: (\w+): (.+)", line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def prange(*args):
    """The parallel-loop annotation of seed 002 §2.2: ``range`` to the interpreter."""
    return range(*args)


def parse(source: str) -> Scop:
    """The front-end entry (``frontend.parse(source, 'python')``): annotations inferred
    at a call (:class:`polymagic.api.python.GpuFunction`) travel in a comment header."""
    return parse_python(source, overrides_from_header(source))


__all__ = ["translate", "parse_python", "parse", "prange", "Translation", "infer_type",
           "extent_param", "array_of_extent", "keyed_source", "overrides_from_header"]
