"""The NumPy dtype of each C element type: the one table every stage reads.

The front ends, the model (:mod:`polymagic.scop`), KIR, the memory planner, the
transfer planner and the runtimes all need an element's size or NumPy type; they
import this table so that a type supported in one place is supported (with the
same size) everywhere.  The C front end normalises element types to ``float``,
``double``, ``int`` and ``long`` (``signed int``, ``long long``, ... become one of
these), as does the Python front end; ``short``, ``char`` and ``unsigned`` are
kept for KIR built by other means (the runtimes accept them).  This module imports
nothing from polymagic, so the lowest layers may use it.
"""
from __future__ import annotations

#: NumPy dtype name of each C element type.
DTYPES: dict[str, str] = {
    "float": "float32", "double": "float64", "int": "int32", "long": "int64",
    "short": "int16", "char": "int8", "unsigned": "uint32"}

#: the range of a C ``int``: size parameters and loop bounds in the generated code
INT32 = (-2**31, 2**31 - 1)

__all__ = ["DTYPES", "INT32"]
