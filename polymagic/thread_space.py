"""Thread space: a thread block's ids as isl sees them and as the kernels compute them.

A kernel is launched on a grid of blocks of ``block = (X, Y, Z)`` threads (seed 004
§4.1: a tile per block, its points over the block's threads); in the mapped schedule
the block and thread ids are isl parameters (``pm_bx``, ``pm_tx``, ...).  This module
is the one place that writes:

- the ids' bounds: ``0 <= threadIdx.a < block[a]`` and ``blockIdx.a >= 0`` (as isl
  text and as an :class:`isl.Set` of parameters), and the generic context of the
  AST build (at most :data:`MAX_THREADS_PER_BLOCK` threads per axis);
- the cyclic distribution of a dimension over the threads of one axis, ``i ≡ t
  (mod B)`` (seed 004 §4.2's cyclic copy distribution; seed 003 §4's thread
  superposition, Lemma 1; seed 004 Fig. 9's loops over one block), as isl text and
  as isl operations on schedule functions;
- the linear thread id ``x + X * (y + Y * z)``, as a Kernel IR expression and as isl
  text.

It sits in the Kernel IR's layer (``kir`` takes the id names from here), so the
schedule, memory, mapping and lowering layers all use it.
"""
from __future__ import annotations

import re

import islpy as isl

from .expr import Binary, Expr, Int, Var
from .isl_util import param_id

AXES = ("x", "y", "z")
THREAD_IDS = {a: f"pm_t{a}" for a in AXES}      # threadIdx.a
BLOCK_IDS = {a: f"pm_b{a}" for a in AXES}       # blockIdx.a
#: the block and thread ids as isl parameters of the mapped schedule, in order
ISL_IDS = tuple(THREAD_IDS.values()) + tuple(BLOCK_IDS.values())
_ID_WORD = re.compile(r"\bpm_[tb][xyz]\b")
#: CUDA's limit on threads per block (and per block axis x or y)
MAX_THREADS_PER_BLOCK = 1024

Block = tuple[int, int, int]


def ids_in(text: str) -> list[str]:
    """The block/thread ids (:data:`ISL_IDS`) that isl text ``text`` mentions, in
    order: the parameters to declare for it.  An id no constraint mentions is left
    out of every space, so isl's operations and its AST generator never carry an
    unused dimension (an unused ``pm_tz``/``pm_bz`` pair cost gemm's AST 20 %)."""
    found = set(_ID_WORD.findall(text))
    return [i for i in ISL_IDS if i in found]


def thread_axes(block: Block) -> list[str]:
    """The axes of ``block`` with more than one thread (``x`` when none has): those
    whose thread ids isl's sets name; a one-thread axis' id is 0, left out
    (:func:`ids_in`)."""
    return [a for a, b in zip(AXES, block) if b > 1] or ["x"]


# -- id bounds ---------------------------------------------------------------------


def thread_bounds(block: Block, axes: list[str] | None = None) -> list[str]:
    """``0 <= threadIdx.a < block[a]`` as isl text for ``axes`` (default
    :func:`thread_axes`), in that order: what every thread of a block of that shape
    knows (seed 004 §4.1)."""
    return [f"0 <= {THREAD_IDS[a]} < {block[AXES.index(a)]}"
            for a in (thread_axes(block) if axes is None else axes)]


def block_bounds(axes: list[str]) -> list[str]:
    """``blockIdx.a >= 0`` as isl text for ``axes``, in that order (the grid's extent
    is the launch's business, not the kernel's)."""
    return [f"{BLOCK_IDS[a]} >= 0" for a in axes]


def thread_zero(axis: str) -> str:
    """``threadIdx.axis = 0`` as isl text: the one thread of ``axis`` that runs a
    statement not distributed along it."""
    return f"{THREAD_IDS[axis]} = 0"


def bounds_set(constraints: list[str]) -> isl.Set:
    """The block/thread-id parameters bounded by ``constraints`` (isl text, e.g. from
    :func:`thread_bounds`), a parameter set in a space of the ids they mention only
    (:func:`ids_in`: an unused id would cost isl's AST generator a dimension)."""
    text = ' and '.join(constraints) or '1 = 1'
    return isl.Set(f"[{', '.join(ids_in(text))}] -> {{ : {text} }}")


def thread_bounds_set(block: Block, axes: list[str] | None = None) -> isl.Set:
    """:func:`thread_bounds` as an isl parameter set (:func:`bounds_set`)."""
    return bounds_set(thread_bounds(block, axes))


def block_bounds_set(axes: list[str]) -> isl.Set:
    """:func:`block_bounds` as an isl parameter set (:func:`bounds_set`)."""
    return bounds_set(block_bounds(axes))


def thread_bounds_in(block: Block, params: isl.Space) -> isl.Set:
    """:func:`thread_bounds_set` for the thread ids among ``params``' parameters: what
    every thread of a kernel launched with ``block`` knows, in a space that already
    declares the ids it uses (the generic context, :func:`generic_id_context`, only
    bounds them by :data:`MAX_THREADS_PER_BLOCK`)."""
    axes = [a for a, v in THREAD_IDS.items()
            if params.find_dim_by_name(isl.dim_type.param, v) >= 0]
    return thread_bounds_set(block, axes)


def generic_id_context(ids: list[str], extra: dict[str, int]) -> isl.Set:
    """The AST build's context for the ids ``ids`` (in that order) and the extra
    parameters ``extra`` (name -> exclusive bound, e.g. the copy split variables):
    ``0 <= threadIdx.a < 1024``, ``blockIdx.a >= 0``, ``0 <= v < extra[v]`` — what
    holds in every kernel, whatever its block."""
    tids = set(THREAD_IDS.values())
    conds = ([f"0 <= {v} < {MAX_THREADS_PER_BLOCK}" for v in ids if v in tids]
             + [f"{v} >= 0" for v in ids if v not in tids]
             + [f"0 <= {v} < {n}" for v, n in extra.items()])
    return isl.Set(f"[{', '.join(ids + list(extra))}] -> {{ : "
                   + " and ".join(conds or ["1 = 1"]) + " }")


# -- ids on a domain and the cyclic filter -----------------------------------------


def thread_id_on(domain: isl.UnionSet, axis: str) -> isl.UnionPwAff:
    """``threadIdx.axis`` as a function on ``domain`` (a schedule function's form)."""
    return isl.UnionPwAff.param_on_domain_id(domain, param_id(THREAD_IDS[axis]))


def block_id_on(domain: isl.UnionSet, axis: str) -> isl.UnionPwAff:
    """``blockIdx.axis`` as a function on ``domain``."""
    return isl.UnionPwAff.param_on_domain_id(domain, param_id(BLOCK_IDS[axis]))


def cyclic_filter(point: isl.UnionPwAff, tid: isl.UnionPwAff, threads: int,
                  points: int | None = None) -> isl.UnionSet:
    """The instances whose ``point`` (a schedule function) goes to thread ``tid``
    when the points are dealt cyclically to ``threads`` threads: ``point ≡ tid (mod
    threads)`` (seed 004 §4.2; :func:`cyclic_condition` is the same relation as isl
    text).  When the dimension has ``points == threads`` points (each thread owns
    one), the equality ``point = tid``: no modulo for isl's AST generator."""
    diff = point.sub(tid)
    if points == threads:
        return diff.zero_union_set()
    return diff.mod_val(isl.Val(threads)).zero_union_set()


def cyclic_condition(coord: str, thread: str, threads: int) -> str:
    """``coord ≡ thread (mod threads)`` as isl text (:func:`cyclic_filter`'s relation):
    ``thread`` is an id or a parenthesised expression of the ids (the linear id,
    :func:`linear_thread_id_text`)."""
    return f"({coord} - {thread}) mod {threads} = 0"


# -- the linear thread id ----------------------------------------------------------


def linear_thread_id(block: Block) -> Expr:
    """The thread's linear id in ``block``, ``x + X * (y + Y * z)`` written as ``tx +
    X * ty + X * Y * tz``, the terms of one-thread axes left out (their id is 0); 0
    for a one-thread block."""
    t: Expr | None = None
    stride = 1
    for a, b in zip(AXES, block):
        if b > 1:
            term: Expr = Var(THREAD_IDS[a])
            if stride > 1:
                term = Binary("*", Int(stride), term)
            t = term if t is None else Binary("+", t, term)
        stride *= b
    return t or Int(0)


def linear_thread_id_rows(block: Block) -> Expr:
    """:func:`linear_thread_id` as a row index of a per-thread buffer: ``tx``, then
    ``X * ty`` and ``X * Y * tz`` up to the last axis with more than one thread,
    one-thread axes included (the form of the tree reductions' and localised
    buffers' rows)."""
    bx, by, bz = block
    e: Expr = Var(THREAD_IDS["x"])
    if by * bz > 1:
        e = Binary("+", e, Binary("*", Int(bx), Var(THREAD_IDS["y"])))
    if bz > 1:
        e = Binary("+", e, Binary("*", Int(bx * by), Var(THREAD_IDS["z"])))
    return e


def linear_thread_id_text(block: Block, modulo: int | None = None) -> str:
    """The linear thread id as isl text, ``1 * tx + X * ty + X * Y * tz`` (axes with
    more than one thread; ``0`` for one thread); with ``modulo``, text congruent to
    it modulo ``modulo`` (the terms whose stride is a multiple of it left out)."""
    terms, stride = [], 1
    for a, b in zip(AXES, block):
        if b > 1 and (modulo is None or stride % modulo):
            terms.append(f"{stride} * {THREAD_IDS[a]}")
        stride *= b
    return " + ".join(terms) or "0"


def linear_thread_group_text(block: Block, r: int) -> str:
    """The group ``t div r`` of the linear thread id ``t`` as isl text, for ``r`` a
    product of the block's leading dims (``X`` or ``X * Y``): the terms whose stride
    is ``r`` or more, divided by ``r`` (``0`` when there are none)."""
    terms, stride = [], 1
    for a, b in zip(AXES, block):
        if b > 1 and stride >= r:
            terms.append(f"{stride // r} * {THREAD_IDS[a]}")
        stride *= b
    return " + ".join(terms) or "0"
