"""From the text of a cell to pycparser's AST, keeping the user's lines and columns.

Preprocessing keeps the user's line numbers and columns: comments are blanked in
place, ``#pragma`` lines are blanked, numeric ``#define`` constants
and ``min``/``max`` macros are handled here.  Other macros, ``#if``/``#ifdef`` and
``#include`` go through the system C preprocessor (``cc -E``), and only lines it
actually changed take its output (the headers' own lines never do, so their
declarations do not reach the parser; their macros, e.g. ``M_PI``, expand).  Why: every error message of the front end points at the user's
line and column, which a plain ``cc -E`` pass would move.  Syntax errors from
pycparser become located :class:`~polymagic.errors.SourceError` s.

Also here: compile-time constant expressions (literals, ``#define`` constants and
arithmetic on them), which the builder uses for extents, steps and subscripts.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

from pycparser import c_ast, c_parser
from pycparser.c_parser import ParseError

from ... import expr as E
from ...errors import SourceError
from .subset import ELEM_TYPES, OTHER_TYPEDEFS, TYPEDEF_NAMES, type_name

# ---- encoding noise ----------------------------------------------------------------

#: invisible characters an editor or a web page leaves in pasted code: dropped
_ZERO_WIDTH = dict.fromkeys(map(ord, "\ufeff\u200b\u200c\u200d\u2060"))
#: spaces other than ASCII's (no-break, en, em, thin, ideographic...): a plain space
_SPACES = {**dict.fromkeys(map(ord, "\u00a0\u1680\u202f\u205f\u3000"), " "),
           **dict.fromkeys(range(0x2000, 0x200B), " ")}


def clean_source(source: str) -> str:
    """The cell without encoding noise, as the front end and the CPU reference read
    it: a byte-order mark and zero-width characters dropped (the user does not see
    them, so columns stay the user's), Unicode spaces as plain spaces, old Mac line
    ends (a lone CR) as newlines, NULs at the end dropped.  Neither pycparser nor
    the C compiler of the reference accepts these characters; inside a string
    literal the replacement changes the text (no kernel statement reads one)."""
    text = source.translate({**_ZERO_WIDTH, **_SPACES})
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\x00")


# ---- preprocessing ---------------------------------------------------------------

@dataclass
class Preprocessed:
    """The preprocessed text (same line count as the source) and the constants."""
    text: str
    constants: dict[str, E.Expr] = field(default_factory=dict)
    values: dict[str, int | float] = field(default_factory=dict)
    #: line -> (the user's text, cpp's) for the lines that took cpp's output
    expanded: dict[int, tuple[str, str]] = field(default_factory=dict)

    def user_column(self, line: int | None, col: int | None) -> int | None:
        """The user's column of a position in the preprocessed text: unchanged on
        lines without macros; on an expanded line, the same character where the
        line matches the user's before or after the macros (spaces aside), else the
        first character the expansion replaced (the macro's name)."""
        if line not in self.expanded or col is None:
            return col
        user, got = self.expanded[line]
        o = [k for k, c in enumerate(user) if not c.isspace()]
        g = [k for k, c in enumerate(got) if not c.isspace()]
        head = 0
        while head < min(len(o), len(g)) and user[o[head]] == got[g[head]]:
            head += 1
        tail = 0
        while tail < min(len(o), len(g)) - head and user[o[-1 - tail]] == got[g[-1 - tail]]:
            tail += 1
        at = next((i for i, k in enumerate(g) if k >= col - 1), len(g))
        if at < head:
            return o[at] + 1
        if at >= len(g) - tail and tail:
            return o[len(o) - (len(g) - at)] + 1
        return o[head] + 1 if head < len(o) else col


def blank_comments(src: str) -> str:
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
    e = const_expr(node, known)
    if e is None:
        return None
    try:
        E.evaluate(e, {})
    except (KeyError, TypeError, ZeroDivisionError, ValueError, AttributeError):
        return None
    return e


def const_expr(node: c_ast.Node, known: dict[str, E.Expr]) -> E.Expr | None:
    """A compile-time constant expression (literals, known constants, arithmetic)."""
    if isinstance(node, c_ast.Constant):
        return literal(node)
    if isinstance(node, c_ast.ID):
        return known.get(node.name)
    if isinstance(node, c_ast.UnaryOp) and node.op in ("-", "+"):
        a = const_expr(node.expr, known)
        if a is None:
            return None
        if isinstance(a, E.Int):
            return E.Int(-a.value if node.op == "-" else a.value)
        return E.Unary(node.op, a)
    if isinstance(node, c_ast.BinaryOp) and node.op in ("+", "-", "*", "/", "%", "<<", ">>"):
        a, b = const_expr(node.left, known), const_expr(node.right, known)
        return None if a is None or b is None else E.Binary(node.op, a, b)
    if isinstance(node, c_ast.Cast):
        a = const_expr(node.expr, known)
        ctype = ELEM_TYPES.get(type_name(node.to_type.type) or "")
        return None if a is None or ctype is None else E.Cast(ctype, a)
    return None


def literal(node: c_ast.Constant) -> E.Expr | None:
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


def preprocess(source: str) -> Preprocessed:
    """Blank comments and directives, record numeric constants, and run the system
    C preprocessor only when other macros or conditionals are used.  The result has
    exactly the user's lines; lines without macros keep their exact columns."""
    lines = blank_comments(source.replace("\r\n", "\n")).split("\n")
    logical = _logical_lines(lines)
    directives = [(f, l, t.lstrip()[1:].lstrip(), _DEFINE.match(t))
                  for f, l, t in logical if t.lstrip().startswith("#")]
    # with #if/#ifdef..., which defines apply is cpp's business
    conditional = any(d and not d.startswith(("define", "include", "pragma"))
                      for _, _, d, _ in directives)
    pre, for_cpp, probes = Preprocessed(""), False, []
    cpp_lines = list(lines)     # what cpp reads: the #include lines kept (see below)
    has_cc = _cc() is not None
    for first, last, directive, m in directives:
        handled = not directive or directive.startswith(("include", "pragma"))
        if directive.startswith("include") and has_cc:
            # the headers' macros (M_PI, INT64_C...) expand as in the CPU reference;
            # their declarations stay out of the front end (only the cell's lines are kept)
            for_cpp = True
            lines[first:last + 1] = [""] * (last + 1 - first)
            continue
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
            cpp_lines[first:last + 1] = [""] * (last + 1 - first)
        for_cpp = for_cpp or not handled
    text = "\n".join(lines)
    if for_cpp:
        user = text.split("\n")
        text, expanded = _run_cpp(text, source, probes, "\n".join(cpp_lines))
        pre.expanded = {k + 1: (u, t) for k, (u, t) in enumerate(zip(user, text.split("\n")))
                        if u != t}
        for name, body in expanded.items():
            e = _const_define(body, pre.constants)
            if e is not None and body.strip() != name:
                pre.constants[name] = e
    pre.values = {k: E.evaluate(e, {}) for k, e in pre.constants.items()}
    pre.text = text
    return pre


def _cc() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def _run_cpp(text: str, source: str, probes: list[str],
             cpp_text: str | None = None) -> tuple[str, dict[str, str]]:
    """Expand the remaining macros with ``cc -E`` (of ``cpp_text``, the text with
    its ``#include`` lines, when given).  Returns the user's lines with only the
    lines cpp changed replaced by its output (cpp normalises the spaces of every
    line, which would move the columns of errors), and the expansions of the
    ``probes`` (object-like macro names) at the end of the cell.  The dialect is
    the CPU reference's (``-std=gnu11``), so both see the same macros."""
    cc = _cc()
    if cc is None:
        raise SourceError("this cell uses macros that need a C preprocessor, but no C "
                          "compiler (cc) was found; use #define NAME number instead")
    body = (text if cpp_text is None else cpp_text) + "\n" + "".join(f"{p}\n" for p in probes)
    try:
        r = subprocess.run([cc, "-E", "-std=gnu11", "-x", "c", "-"], input=body,
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
            # a macro of a system header splits its line with markers back to the
            # same line number: the pieces are one line
            got[cur] = got[cur] + " " + line if cur in got else line
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


def _typedef_prelude(text: str) -> str:
    """Typedefs of the standard integer types the cell names (``size_t``,
    ``int64_t``...: pycparser needs them declared; the headers themselves are not
    parsed), then a ``#line`` marker so the cell's lines and file name are its own."""
    names = {**TYPEDEF_NAMES, **OTHER_TYPEDEFS}
    used = [n for n in names if re.search(rf"\b{n}\b", text)]
    return "".join(f"typedef {names[n]} {n};\n" for n in used) + '#line 1 "<cell>"\n'


def parse(text: str, source: str) -> c_ast.FileAST:
    """Parse with pycparser; syntax errors become :class:`SourceError`."""
    try:
        return _Parser().parse(_typedef_prelude(text) + text, filename="<prelude>")
    except ParseError as e:
        msg = str(e)
        m = re.match(r"<cell>:(\d+):(\d+):\s*(.*)", msg, re.S)
        if m:
            raise SourceError(f"syntax error: {m.group(3)}", int(m.group(1)),
                              int(m.group(2)), source) from None
        last = source.rstrip().split("\n")
        raise SourceError(f"syntax error: {msg.split(': ', 1)[-1]}", len(last),
                          len(last[-1]) + 1, source) from None
