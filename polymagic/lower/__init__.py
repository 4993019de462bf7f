"""Lowering: isl's AST of the mapped schedule -> the Kernel IR (:mod:`polymagic.kir`).

Host code is what lies outside the kernel marks (host loops, guards, launches);
each mark becomes a :class:`kir.Kernel`.  Array subscripts are computed by isl's
AST build at each statement instance (the ``at_each_domain`` callback, as PPCG
does): the access function — for buffered references the local one,
``F'(y) - g`` of seed 000 §3.1.2 — is pulled back to the loop iterators and printed
by isl, which simplifies it with what it knows of the loops (``i mod 32`` inside a
tile becomes the point-loop iterator).

Modules: :mod:`.lowerer` (the entry point :func:`lower` and the AST walk),
:mod:`.subscripts` (isl-printed subscripts), :mod:`.per_kernel` (the host and
kernel trees of per-kernel code generation).
"""
from .lowerer import LowerOptions, LowerResult, lower

__all__ = ["LowerOptions", "LowerResult", "lower"]
