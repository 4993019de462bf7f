"""Small bridges between islpy objects and :mod:`polymagic.expr` trees."""
from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import time
import warnings
from typing import Callable, TypeVar

import islpy as isl

from .expr import Binary, Call, Cond, Expr, Int, Unary, Var

_BIN = {isl.ast_expr_op_type.add: "+", isl.ast_expr_op_type.sub: "-",
        isl.ast_expr_op_type.mul: "*", isl.ast_expr_op_type.div: "/",
        isl.ast_expr_op_type.pdiv_q: "/", isl.ast_expr_op_type.pdiv_r: "%",
        isl.ast_expr_op_type.zdiv_r: "%",
        isl.ast_expr_op_type.and_: "&&", isl.ast_expr_op_type.and_then: "&&",
        isl.ast_expr_op_type.or_: "||", isl.ast_expr_op_type.or_else: "||",
        isl.ast_expr_op_type.eq: "==", isl.ast_expr_op_type.le: "<=",
        isl.ast_expr_op_type.lt: "<", isl.ast_expr_op_type.ge: ">=",
        isl.ast_expr_op_type.gt: ">"}


def val_to_int(v: isl.Val) -> int:
    if not v.is_int():
        raise ValueError(f"non-integer value {v}")
    return int(v.to_python())


def ast_expr_to_expr(e: isl.AstExpr) -> Expr:
    """Translate an isl AST expression into an :mod:`polymagic.expr` tree.

    isl's ``pdiv_q``/``pdiv_r``/``zdiv_r``/``div`` are exact or have non-negative
    operands where C's ``/``/``%`` agree with them; ``fdiv_q`` becomes ``floord``.
    """
    t = e.get_type()
    if t == isl.ast_expr_type.int:
        return Int(val_to_int(e.get_val()))
    if t == isl.ast_expr_type.id:
        return Var(e.get_id().get_name())
    if t != isl.ast_expr_type.op:
        raise ValueError(f"unexpected isl AST expression {e.to_C_str()}")
    op = e.get_op_type()
    args = [ast_expr_to_expr(e.get_op_arg(i)) for i in range(e.get_op_n_arg())]
    if op in _BIN:
        if op == isl.ast_expr_op_type.zdiv_r:
            # only ever compared with 0 by isl: C's % is fine for that test
            pass
        return Binary(_BIN[op], args[0], args[1])
    if op == isl.ast_expr_op_type.minus:
        return Unary("-", args[0])
    if op == isl.ast_expr_op_type.fdiv_q:
        return Call("floord", (args[0], args[1]))
    if op in (isl.ast_expr_op_type.min, isl.ast_expr_op_type.max):
        name = "min" if op == isl.ast_expr_op_type.min else "max"
        out = args[0]
        for a in args[1:]:
            out = Call(name, (out, a))
        return out
    if op in (isl.ast_expr_op_type.cond, isl.ast_expr_op_type.select):
        return Cond(args[0], args[1], args[2])
    if op == isl.ast_expr_op_type.call:
        return Call(str(args[0].name) if isinstance(args[0], Var) else "?", tuple(args[1:]))
    raise ValueError(f"unsupported isl AST operation in {e.to_C_str()}")


def pw_aff_to_expr(pa: isl.PwAff, context: isl.Set | None = None) -> Expr:
    """A piecewise affine function of the parameters (and set dimensions named in the
    space) as an expression, printed by isl's AST generator."""
    if context is None:
        context = isl.Set.universe(pa.get_domain_space().params())
    build = isl.AstBuild.from_context(context.params() if not context.is_params() else context)
    if pa.dim(isl.dim_type.in_) > 0:
        # name the domain dimensions as parameters so the build can print them
        names = [pa.get_dim_name(isl.dim_type.in_, i) for i in range(pa.dim(isl.dim_type.in_))]
        pa = _move_in_to_params(pa, names)
        build = isl.AstBuild.from_context(isl.Set.universe(pa.get_domain_space()))
    return ast_expr_to_expr(build.expr_from_pw_aff(pa))


def _move_in_to_params(pa: isl.PwAff, names: list[str]) -> isl.PwAff:
    n = len(names)
    npar = pa.dim(isl.dim_type.param)
    pa = pa.move_dims(isl.dim_type.param, npar, isl.dim_type.in_, 0, n)
    for i, nm in enumerate(names):
        pa = pa.set_dim_id(isl.dim_type.param, npar + i, isl.Id(nm or f"i{i}"))
    return pa


def set_dim_range(s: isl.Set, pos: int) -> tuple[isl.PwAff, isl.PwAff]:
    """Parametric minimum and maximum of dimension ``pos`` of ``s``."""
    return s.dim_min(pos), s.dim_max(pos)


def set_to_expr(s: isl.Set) -> Expr:
    """A parameter set (a condition on parameters) as a boolean expression."""
    build = isl.AstBuild.from_context(isl.Set.universe(s.get_space().params()))
    return ast_expr_to_expr(build.expr_from_set(s.params() if not s.is_params() else s))


class OperationBudget:
    """Bound the isl operations of a block of code (``with OperationBudget(ctx, n):``).

    isl raises an error once the budget is spent; callers catch it and fall back to
    something simpler, so a pathological loop nest never hangs the notebook.
    """

    def __init__(self, ctx: isl.Context, operations: int):
        self.ctx = ctx
        self.operations = operations

    def __enter__(self):
        self.ctx.reset_operations()
        self.ctx.set_max_operations(self.operations)
        return self

    def __exit__(self, *exc):
        self.ctx.set_max_operations(0)
        self.ctx.reset_operations()
        return False


def budget_spent(e: isl.Error) -> bool:
    """Whether an isl error is :class:`OperationBudget`'s (the operation limit),
    not another failure of the call (those are bugs to report, not limits to name)."""
    return "maximal number of operations exceeded" in str(e)


_T = TypeVar("_T")


class TimedOut(Exception):
    """:func:`in_child` ran out of time (the computation was abandoned)."""


#: a child of :func:`in_child` that has run this many times its CPU limit in wall
#: time without using it (blocked, not computing) is killed all the same
WALL_FACTOR = 20


def fork_quietly() -> int:
    """``os.fork()`` without Python's warning about forking a multi-threaded process
    (a Jupyter kernel has threads; the child only computes and leaves)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def in_child(fn: Callable[[], _T], seconds: float) -> _T:
    """``fn()`` computed in a forked child process, killed after ``seconds`` of CPU time.

    barvinok's counting (``card()``) does not honour isl's operation budget
    (:class:`OperationBudget`), so a parametric count can run for minutes (seed
    001's 2d Gauss-Seidel with a window of 2); a child that can be killed bounds
    it.  ``fn`` must return something picklable (e.g. an isl object's string, read
    back in the parent).  Raises :class:`TimedOut` past the limit, ``isl.Error``
    when ``fn`` raised one; without ``fork`` it simply calls ``fn()``.

    The limit is the child's CPU time (a ``SIGPROF`` interval timer in the child,
    whose default action ends it), so a loaded machine, which slows the wall clock
    several times, changes neither the result nor which computations give up
    (issue 18); a child that does not compute (blocked) is killed after
    :data:`WALL_FACTOR` times ``seconds`` of wall time."""
    if not hasattr(os, "fork"):
        return fn()
    r, w = os.pipe()
    try:
        pid = fork_quietly()
    except OSError:
        os.close(r)
        os.close(w)
        return fn()
    if pid == 0:                             # the child: compute, send, leave at once
        signal.signal(signal.SIGINT, signal.SIG_IGN)           # the stop button is the parent's
        try:
            _child(fn, seconds, r, w)
        finally:                             # never unwind into the parent's stack copy
            os._exit(0)
    os.close(w)
    chunks, deadline = [], time.monotonic() + seconds * WALL_FACTOR + 1.0
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                raise TimedOut(f"gave up after {seconds:g} s")
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    except KeyboardInterrupt:                # stopped: the child's result is not wanted
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(r)
        status = os.waitpid(pid, 0)[1]
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPROF:
        raise TimedOut(f"gave up after {seconds:g} s of CPU time")
    if not chunks:
        raise isl.Error("the counting process ended without a result")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "late":
        raise TimedOut(f"gave up after {seconds:g} s of CPU time")
    if kind == "error":
        raise isl.Error(value)
    return value


def _child(fn: Callable[[], _T], seconds: float, r: int, w: int) -> None:
    """:func:`in_child`'s child: compute ``fn()`` under the CPU timer, send the result."""
    os.close(r)
    try:
        signal.signal(signal.SIGPROF, signal.SIG_DFL)      # the timer ends the child
        signal.setitimer(signal.ITIMER_PROF, max(seconds, 1e-6))    # 0 would disarm it
        value = fn()
        signal.setitimer(signal.ITIMER_PROF, 0)
        used = resource.getrusage(resource.RUSAGE_SELF)     # this child's own, exact
        late = used.ru_utime + used.ru_stime > seconds       # (the timer ticks coarser)
        data = pickle.dumps(("late", None) if late else ("ok", value))
    except BaseException as e:           # noqa: BLE001 - reported to the parent
        signal.setitimer(signal.ITIMER_PROF, 0)
        data = pickle.dumps(("error", f"{type(e).__name__}: {e}"))
    view = memoryview(data)
    while view:
        view = view[os.write(w, view):]


def coalesce(x):
    """``x.coalesce()``, or ``x`` itself when isl fails at the simplification (it has
    been seen to, on existentially quantified strided domains)."""
    try:
        return x.coalesce()
    except isl.Error:
        return x


def param_id(name: str) -> isl.Id:
    """The isl id that parsing ``name`` as a parameter gives (plain ``isl.Id(name)``
    from Python carries a user pointer and would be a different parameter)."""
    return isl.Set(f"[{name}] -> {{ : }}").get_space().get_dim_id(isl.dim_type.param, 0)


def leading_coincident(node: isl.ScheduleNode) -> int:
    """How many leading members of a band node are coincident (parallel)."""
    k = 0
    while k < node.band_n_member() and node.band_member_get_coincident(k):
        k += 1
    return k


def has_parallelism(node: isl.ScheduleNode) -> bool:
    """Whether any band at or below ``node`` has a leading coincident member."""
    found = []

    def visit(n: isl.ScheduleNode) -> bool:
        if n.get_type() == isl.schedule_node_type.band and leading_coincident(n) > 0:
            found.append(True)
            return False
        return True
    node.foreach_descendant_top_down(visit)
    return bool(found)


def tree_params(schedule: isl.Schedule) -> set[str]:
    """The parameters any node of ``schedule`` declares: its domain's and those its
    filters, bands, extensions, guards and contexts introduce (isl's AST build must
    know each of them; the domain alone need not)."""
    spaces = [schedule.get_domain().get_space()]
    getters = {isl.schedule_node_type.filter: "filter_get_filter",
               isl.schedule_node_type.band: "band_get_partial_schedule",
               isl.schedule_node_type.extension: "extension_get_extension",
               isl.schedule_node_type.guard: "guard_get_guard",
               isl.schedule_node_type.context: "context_get_context"}

    def visit(n: isl.ScheduleNode) -> bool:
        getter = getters.get(n.get_type())
        if getter is not None:
            spaces.append(getattr(n, getter)().get_space())
        return True
    schedule.get_root().foreach_descendant_top_down(visit)
    return {s.get_dim_name(isl.dim_type.param, i) for s in spaces
            for i in range(s.dim(isl.dim_type.param))}


def ast_build(context: isl.Set) -> isl.AstBuild:
    """An AST build over ``context`` whose loop iterators are ``pm_c<depth>``: isl's
    default ``c<depth>`` would shadow a user's scalar of that name (PolyBench's
    deriche has ``c1`` and ``c2``)."""
    ids = isl.IdList.alloc(context.get_ctx(), 64)
    for i in range(64):
        ids = ids.add(isl.Id(f"pm_c{i}"))
    return isl.AstBuild.from_context(context).set_iterators(ids)
