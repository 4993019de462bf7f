"""The C subset the front end accepts, by name: size, scalar and element types,
assignment and value operators, comparisons, the math functions a statement may
call and the names it may not declare; plus what a pycparser type node names.

Every rule of the front end reads these tables, so widening the subset (a new
element type, a new math function) is an edit here.  Types are normalised to the
four element types the rest of polymagic knows (:data:`polymagic.dtypes.DTYPES`):
``signed int`` is ``int``, ``long long`` is ``long``.
"""
from __future__ import annotations

import copy

import islpy as isl
from pycparser import c_ast

MATH_FUNCS = {name: arity for base, arity in [
    ("sqrt", 1), ("exp", 1), ("log", 1), ("fabs", 1), ("pow", 2), ("fmax", 2),
    ("fmin", 2), ("sin", 1), ("cos", 1), ("tan", 1), ("tanh", 1), ("floor", 1),
    ("ceil", 1), ("exp2", 1), ("log2", 1), ("log10", 1), ("log1p", 1), ("expm1", 1),
    ("cbrt", 1), ("asin", 1), ("acos", 1), ("atan", 1), ("atan2", 2), ("sinh", 1),
    ("cosh", 1), ("fmod", 2), ("hypot", 2), ("trunc", 1), ("round", 1), ("copysign", 2),
    ("fma", 3)] for name in (base, base + "f")}
MATH_FUNCS.update({"abs": 1, "min": 2, "max": 2})
SIDE_EFFECT_FUNCS = {"printf", "fprintf", "puts", "malloc", "calloc", "realloc", "free",
                     "memcpy", "memset", "rand", "srand", "exit", "abort", "scanf"}
#: Comparison operators and the isl PwAff method building the set where they hold.
CMP = {"<": isl.PwAff.lt_set, "<=": isl.PwAff.le_set, ">": isl.PwAff.gt_set,
       ">=": isl.PwAff.ge_set, "==": isl.PwAff.eq_set, "!=": isl.PwAff.ne_set}
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
VALUE_BINOPS = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||",
                "&", "|", "^", "<<", ">>"}
INT_TYPES = {"int": "int", "signed": "int", "signed int": "int", "long": "long",
             "long int": "long", "long long": "long", "long long int": "long",
             "signed long": "long"}
#: Typedef names of <stddef.h>/<stdint.h> taken as the integer type they stand for
#: on the 64-bit hosts polymagic runs on (size_t is unsigned in C: loops over it
#: must not go below 0, as in the CPU reference where they would not end).
TYPEDEF_NAMES = {"size_t": "long", "ptrdiff_t": "long", "int64_t": "long",
                 "int32_t": "int"}
INT_TYPES.update(TYPEDEF_NAMES)
#: Other standard typedef names, declared only so the parser knows them as types
#: (the front end then refuses them by name as unsupported types).
OTHER_TYPEDEFS = {"int8_t": "signed char", "int16_t": "short", "uint8_t": "unsigned char",
                  "uint16_t": "unsigned short", "uint32_t": "unsigned",
                  "uint64_t": "unsigned long", "intptr_t": "long",
                  "uintptr_t": "unsigned long", "ssize_t": "long"}
FLOAT_TYPES = {"float": "float", "double": "double"}
ELEM_TYPES = {**FLOAT_TYPES, "int": "int", "signed": "int", "signed int": "int",
              "long": "long", "long int": "long", "long long": "long", **TYPEDEF_NAMES}
#: Element types of array (and pointer) parameters: the scalar types and ``char``
#: (PolyBench's nussinov: ``typedef char base;``), an int8 array whose elements C
#: promotes to int in every expression; ``unsigned char`` stays refused.
ARRAY_ELEM_TYPES = {**ELEM_TYPES, "char": "char", "signed char": "char", "int8_t": "char"}
RESERVED = set(MATH_FUNCS) | {"floord", "pm_mod", "threadIdx", "blockIdx", "blockDim",
                              "gridDim"}


def type_name(node: c_ast.Node) -> str | None:
    """'int', 'long int', ... for a TypeDecl of an IdentifierType; None otherwise."""
    if isinstance(node, c_ast.TypeDecl) and isinstance(node.type, c_ast.IdentifierType):
        return " ".join(node.type.names)
    return None


def is_struct(node: c_ast.Node) -> bool:
    """Is this a struct or union type?"""
    return isinstance(node, c_ast.TypeDecl) and isinstance(node.type, (c_ast.Struct, c_ast.Union))


def call_name(n: c_ast.FuncCall) -> str | None:
    """The called function's name (None for a call through a pointer)."""
    return n.name.name if isinstance(n.name, c_ast.ID) else None


def call_args(n: c_ast.FuncCall) -> list[c_ast.Node]:
    """The arguments of a call."""
    return list(n.args.exprs) if n.args is not None else []


def map_children(n: c_ast.Node, fn) -> c_ast.Node:
    """A shallow copy of pycparser node ``n`` whose child nodes are ``fn(child, slot,
    in_list)`` (``in_list``: the child sits in a list slot, e.g. a block's items); the
    coordinates are kept, so errors still point at the user's line and column."""
    new = copy.copy(n)
    for slot in n.__slots__:
        if slot in ("coord", "__weakref__"):
            continue
        v = getattr(n, slot, None)
        if isinstance(v, c_ast.Node):
            setattr(new, slot, fn(v, slot, False))
        elif isinstance(v, list):
            setattr(new, slot, [fn(x, slot, True) if isinstance(x, c_ast.Node) else x
                                for x in v])
    return new
