"""The cell's own ``typedef`` s, replaced by the types they name before the walk.

PolyBench writes ``typedef char base;`` and kernels use ``typedef double vec[N];``:
a typedef of a scalar, array or pointer type has its usual C meaning.  Every use of
the name (a parameter, a local, a cast, a helper's signature) is replaced by a copy
of the typedef's type, so the rest of the front end only sees C's own types; the
copy takes the use's coordinates (errors point at the user's declaration) and the
use's qualifiers go to the element (``const vec x``: const elements).  File-scope
typedefs hold for the rest of the cell, a typedef in a block for the rest of the
block.  The CPU reference compiles the cell as written, where the typedef is C.

Refused, naming the typedef: typedefs of a struct, union or enum, and of a
function or function pointer type (the polyhedral model has none of these).
Typedefs of the prelude (``size_t``...: :func:`.source.parse`) are not touched.
"""
from __future__ import annotations

import copy

from pycparser import c_ast

from ...errors import UnsupportedError
from .subset import map_children

Env = dict[str, c_ast.Node]


class _Refused(Exception):
    def __init__(self, msg: str, node: c_ast.Node):
        super().__init__(msg)
        self.msg, self.node = msg, node


def resolve_typedefs(ast: c_ast.FileAST, source: str) -> c_ast.FileAST:
    """``ast`` with the cell's typedefs removed and every use of one replaced by the
    type it names; :class:`UnsupportedError` (located) for a refused typedef."""
    try:
        ext, env = [], {}
        for e in ast.ext:
            if isinstance(e, c_ast.Typedef) and _in_cell(e):
                env = {**env, e.name: _checked(e, env)}
            else:
                ext.append(_resolve(e, env))
        return c_ast.FileAST(ext, ast.coord)
    except _Refused as r:
        coord = getattr(r.node, "coord", None)
        raise UnsupportedError(r.msg, getattr(coord, "line", None),
                               getattr(coord, "column", None), source) from None


def _in_cell(node: c_ast.Node) -> bool:
    coord = getattr(node, "coord", None)
    return coord is None or coord.file in ("<cell>", "")


def _checked(t: c_ast.Typedef, env: Env) -> c_ast.Node:
    """The type a typedef names (earlier typedefs resolved), or a refusal."""
    node = _resolve(t.type, env)
    inner = node
    while isinstance(inner, (c_ast.ArrayDecl, c_ast.PtrDecl, c_ast.FuncDecl)):
        if isinstance(inner, c_ast.FuncDecl):
            raise _Refused(f"typedef of a function or function pointer type ('{t.name}') "
                           "is not supported: calls go to the cell's own functions by "
                           "name, which are inlined; declare plain scalars and arrays",
                           t)
        inner = inner.type
    if isinstance(inner, c_ast.TypeDecl) and isinstance(
            inner.type, (c_ast.Struct, c_ast.Union, c_ast.Enum)):
        kind = type(inner.type).__name__.lower()
        how = ("use #define constants and int" if kind == "enum" else
               "pass each field as an array of its own")
        raise _Refused(f"typedef of {'an' if kind == 'enum' else 'a'} {kind} type "
                       f"('{t.name}') is not supported: the kernel's data are arrays and "
                       f"scalars of int, long, float or double; {how}", t)
    return node


def _resolve(node: c_ast.Node, env: Env) -> c_ast.Node:
    """``node`` with the typedef names of ``env`` replaced (block typedefs added in
    their block)."""
    if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.IdentifierType):
        name = next((n for n in node.type.names if n in env), None)
        return node if name is None else _substitute(node, env[name])
    if isinstance(node, c_ast.Compound) and node.block_items:
        items, inner = [], dict(env)
        for item in node.block_items:
            if isinstance(item, c_ast.Typedef):
                inner[item.name] = _checked(item, inner)
            else:
                items.append(_resolve(item, inner))
        return c_ast.Compound(items, node.coord)
    return map_children(node, lambda child, slot, in_list: _resolve(child, env))


def _substitute(use: c_ast.TypeDecl, named: c_ast.Node) -> c_ast.Node:
    """A copy of the typedef's type declaring ``use.declname``, at ``use``'s place;
    the use's qualifiers join the innermost type's (C 6.7.3: on the elements)."""
    new = copy.deepcopy(named)
    _recoord(new, use.coord)
    inner = new
    while not isinstance(inner, c_ast.TypeDecl):
        inner = inner.type
    inner.declname = use.declname
    inner.quals = list(dict.fromkeys([*(use.quals or []), *(inner.quals or [])]))
    return new


def _recoord(node: c_ast.Node, coord) -> None:
    """Every node of a copied type at the use's coordinates."""
    for slot in node.__slots__:
        if slot == "coord":
            node.coord = coord
        elif slot != "__weakref__":
            v = getattr(node, slot, None)
            for x in (v if isinstance(v, list) else [v]):
                if isinstance(x, c_ast.Node):
                    _recoord(x, coord)
