"""Printing Kernel IR statement lists as C-like code (the base of the CUDA printer
and of the emulator/OpenMP C printer).

Both the CUDA kernels and the CPU emulator are printed from the *same* KIR tree by
subclasses of :class:`CLikePrinter`, so what the emulator checks is what the GPU
runs.  The kernel code is thread-centric (Baskaran et al., seed 004 §4.3): every
thread executes the whole body with its own thread/block identifiers, loops
distributed over threads are cyclic (``for (c = pm_tx; c <= 31; c += 16)``) and
``__syncthreads()`` separates copy-in, compute and copy-out phases; seed 004 §4.3
also motivates the ``#pragma unroll`` printed for :attr:`kir.Loop.unroll`.

What a subclass overrides (hooks)
---------------------------------
``mapped_id(name)``
    How a mapped id (``pm_tx``, ``pm_bx``, ``pm_ntx``, ``pm_nbx``, ...; see
    :data:`kir.MAPPED_IDS`) is spelled.  Default: unchanged (the emulator declares
    locals with these names); CUDA returns ``threadIdx.x`` etc.
``var_name(name)``
    Any other variable.  Default: unchanged.
``func_name(func)``
    Call names; default :data:`FUNC_NAMES` (``min`` -> ``pm_min``, ...), others kept.
``global_access(acc, decl, mode)`` / ``shared_access(acc, decl, mode)``
    An array element.  ``mode`` is ``'load'``, ``'store'`` (target of ``=``) or
    ``'update'`` (target of ``+=`` etc.: read and written).  Defaults: global
    arrays linearised with :func:`expr.linearize` and the array's strides
    (``A[i * N + j]``), shared buffers multi-dimensional (``buf[i][j]``).
``loop_header(loop)``, ``unroll_pragma(loop)``, ``stmt_if``, ``stmt_let``,
``stmt_compute``, ``stmt_barrier``, ``stmt_launch``
    Statement forms; defaults print plain C (``__syncthreads();`` for barriers;
    launches have no default form and raise).
``shared_decl(decl)``
    A shared buffer declaration; default ``<shared_qualifier><ctype> name[a][b];``
    with :attr:`shared_qualifier` (``""``; CUDA sets ``"__shared__ "``).

:func:`kernel_params` gives the kernel parameter list in the one order every
printer and runtime uses: ``Kernel.arrays``, then ``Kernel.scalars``, then
``Kernel.ints`` (``int`` each).

:data:`PRELUDE_MACROS` holds the ``pm_min``/``pm_max``/``pm_floord``/``pm_mod``
macros that every prelude (CUDA and emulator) defines.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Iterator

from .. import kir
from ..expr import Access, Call, CPrinter, Expr, Int, Var, linearize, row_major_strides, walk

#: Precedence of ``<=`` in :class:`expr.CPrinter` (a loop's upper bound binds tighter).
LE_PREC = 7

#: Call names as printed (every prelude defines these macros).
FUNC_NAMES = {"min": "pm_min", "max": "pm_max", "floord": "pm_floord", "pm_mod": "pm_mod"}

#: The integer helper macros every prelude defines.  ``pm_min``/``pm_max`` are
#: type-generic; ``pm_floord`` is floor division, correct for every sign of both
#: operands; ``pm_mod`` is the non-negative remainder for a positive divisor (isl's
#: ``pdiv_r``/``zdiv_r``).  Arguments are evaluated more than once: they are pure
#: integer expressions in generated code.
PRELUDE_MACROS = """\
#ifndef PM_HELPER_MACROS
#define PM_HELPER_MACROS
#define pm_min(a, b) ((a) < (b) ? (a) : (b))
#define pm_max(a, b) ((a) > (b) ? (a) : (b))
#define pm_floord(n, d) (((n) / (d)) - ((((n) % (d)) != 0) && (((n) < 0) != ((d) < 0))))
#define pm_mod(a, b) ((((a) % (b)) + (b)) % (b))
#endif
"""


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter: ``kind`` is 'array', 'scalar' or 'int'; ``ctype`` is the
    element type for arrays (the parameter is a pointer), the scalar's C type, or
    ``int`` for size parameters and host loop variables."""
    kind: str
    name: str
    ctype: str


def kernel_params(program: kir.Program, kernel: kir.Kernel) -> list[KernelParam]:
    """Kernel parameters in the one order shared by the CUDA printer, the emulator
    and the runtimes: ``Kernel.arrays``, ``Kernel.scalars``, ``Kernel.ints``."""
    out = [KernelParam("array", a, program.arrays[a].ctype) for a in kernel.arrays]
    out += [KernelParam("scalar", s, program.scalars[s]) for s in kernel.scalars]
    out += [KernelParam("int", i, "int") for i in kernel.ints]
    return out


class _HookNames(Mapping):
    """A read-only mapping that asks the printer's hooks for every variable name."""

    def __init__(self, printer: "CLikePrinter"):
        self._p = printer

    def __getitem__(self, name: str) -> str:
        if name in kir.MAPPED_IDS:
            return self._p.mapped_id(name)
        return self._p.var_name(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class _HookFuncs(Mapping):
    def __init__(self, printer: "CLikePrinter"):
        self._p = printer

    def __getitem__(self, name: str) -> str:
        return self._p.func_name(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class CLikePrinter:
    """Prints KIR statements as C-like code (2-space indentation).

    ``program`` supplies global array declarations (strides); ``kernel`` (optional)
    supplies the shared buffers: an :class:`expr.Access` whose array names one of
    ``kernel.shared`` is a shared access, any other is a global access.  Host code
    is printed with ``kernel=None``.
    """

    indent_unit = "  "
    #: C type of kernel loop variables and ``Let`` temporaries.
    index_type = "int"
    #: Prefix of shared buffer declarations (CUDA: ``"__shared__ "``).
    shared_qualifier = ""
    #: The barrier statement (CUDA: ``__syncthreads();``).
    barrier_text = "__syncthreads();"

    def __init__(self, program: kir.Program, kernel: kir.Kernel | None = None):
        self.program = program
        self.kernel = kernel
        self.shared: dict[str, kir.SharedDecl] = {s.name: s for s in kernel.shared} if kernel else {}
        self.registers: dict[str, kir.RegisterDecl] = (
            {r.name: r for r in kernel.registers} if kernel else {})
        self._mode = "load"
        self.cprinter = CPrinter(names=_HookNames(self), access=self._print_access,
                                 funcs=_HookFuncs(self))

    # ---- expression hooks ------------------------------------------------------

    def mapped_id(self, name: str) -> str:
        """Spelling of a mapped id (``pm_tx`` ...).  Default: unchanged."""
        return name

    def var_name(self, name: str) -> str:
        """Spelling of any other variable.  Default: unchanged."""
        return name

    def func_name(self, func: str) -> str:
        """Spelling of a call (``min`` -> ``pm_min``, math functions unchanged)."""
        return FUNC_NAMES.get(func, func)

    def global_index(self, acc: Access, decl: kir.ArrayDecl) -> Expr:
        """The element offset of a global access: ``Σ index_k · stride_k``."""
        if len(acc.index) != len(decl.shape):
            raise ValueError(f"access {acc.array} has {len(acc.index)} subscripts, "
                             f"the array has {len(decl.shape)} dimensions")
        return linearize(acc.index, decl.strides)

    def shared_index(self, acc: Access, decl: kir.SharedDecl) -> Expr:
        """The row-major element offset of a shared access."""
        if len(acc.index) != len(decl.shape):
            raise ValueError(f"access {acc.array} has {len(acc.index)} subscripts, "
                             f"the shared buffer has {len(decl.shape)} dimensions")
        return linearize(acc.index, row_major_strides(tuple(Int(s) for s in decl.shape)))

    def global_access(self, acc: Access, decl: kir.ArrayDecl, mode: str) -> str:
        """A global array element: ``A[i * N + j]`` (0-d arrays: ``A[0]``)."""
        return f"{self.var_name(acc.array)}[{self.expr(self.global_index(acc, decl))}]"

    def shared_access(self, acc: Access, decl: kir.SharedDecl, mode: str) -> str:
        """A shared buffer element: ``buf[i][j]`` (0-d buffers: ``buf[0]``)."""
        if not acc.index:
            return f"{acc.array}[0]"
        return acc.array + "".join(f"[{self.expr(i)}]" for i in acc.index)

    def register_access(self, acc: Access, decl: kir.RegisterDecl) -> str:
        """A per-thread register: ``r`` or, one per point, ``r[u]`` (seed 004 §4.2)."""
        return acc.array + "".join(f"[{self.expr(i)}]" for i in acc.index)

    def access(self, acc: Access, mode: str = "load") -> str:
        """Dispatch an access to :meth:`register_access`, :meth:`shared_access` or
        :meth:`global_access`."""
        if acc.array in self.registers:
            return self.register_access(acc, self.registers[acc.array])
        if acc.array in self.shared:
            return self.shared_access(acc, self.shared[acc.array], mode)
        try:
            decl = self.program.arrays[acc.array]
        except KeyError:
            raise ValueError(f"access to unknown array {acc.array!r}") from None
        return self.global_access(acc, decl, mode)

    def _print_access(self, acc: Access, _printer: CPrinter) -> str:
        # every Access met inside an expression is a load
        return self.access(acc, "load")

    def expr(self, e: Expr, prec: int = 0) -> str:
        """Print an expression (mapped ids, calls and accesses through the hooks);
        ``prec`` is the precedence of the operator around it (parenthesises as needed)."""
        return self.cprinter.expr(e, prec)

    # ---- statements -------------------------------------------------------------

    def loop_var_decl(self, loop: kir.Loop) -> str:
        return f"{self.index_type} {self.var_name(loop.var)}"

    def loop_step(self, loop: kir.Loop) -> str:
        step = loop.step
        if isinstance(step, int):
            if step <= 0:
                raise ValueError(f"loop {loop.var}: step must be positive, got {step}")
            return str(step)
        return self.expr(step)

    def loop_header(self, loop: kir.Loop) -> str:
        """``for (int v = lo; v <= hi; v += step)``."""
        v = self.var_name(loop.var)
        return (f"for ({self.loop_var_decl(loop)} = {self.expr(loop.lower)}; "
                f"{v} <= {self.expr(loop.upper, LE_PREC + 1)}; {v} += {self.loop_step(loop)})")

    def unroll_pragma(self, loop: kir.Loop) -> str | None:
        """The line before an unrolled loop (seed 004 §4.3), or None."""
        return "#pragma unroll" if loop.unroll else None

    def stmt_loop(self, loop: kir.Loop, level: int) -> list[str]:
        ind = self.indent_unit * level
        out = []
        pragma = self.unroll_pragma(loop)
        if pragma:
            out.append(ind + pragma)
        out.append(f"{ind}{self.loop_header(loop)} {{")
        out += self.print_body(loop.body, level + 1)
        out.append(ind + "}")
        return out

    def aligned_base(self, array: str) -> str:
        """C text: element 0 of ``array`` is 16-byte aligned."""
        return f"{kir.ALIGNED16}({self.var_name(array)})"

    def aligned_guard(self, cond: Call) -> str:
        """The vector copies' guard (:data:`kir.ALIGNED16`): base aligned, last stride
        1, other strides multiples of the vector width."""
        array, width = cond.args[0].name, cond.args[1].value
        decl = self.program.arrays[array]
        parts = [self.aligned_base(array)]
        if decl.strides:
            last, outer = decl.strides[-1], decl.strides[:-1]
            if not (isinstance(last, Int) and last.value == 1):
                parts.append(f"({self.expr(last)}) == 1")
            parts += [f"({self.expr(st)}) % {width} == 0" for st in outer
                      if not (isinstance(st, Int) and st.value % width == 0)]
        return " && ".join(parts)

    def stmt_if(self, s: kir.If, level: int) -> list[str]:
        ind = self.indent_unit * level
        if isinstance(s.cond, Call) and s.cond.func == kir.ALIGNED16:
            head = f"{ind}if ({self.aligned_guard(s.cond)}) {{"
        else:
            head = f"{ind}if ({self.expr(s.cond)}) {{"
        out = [head]
        out += self.print_body(s.then, level + 1)
        if s.orelse:
            out.append(ind + "} else {")
            out += self.print_body(s.orelse, level + 1)
        out.append(ind + "}")
        return out

    def stmt_let(self, s: kir.Let, level: int) -> list[str]:
        """``const int v = e;``."""
        return [f"{self.indent_unit * level}const {self.index_type} "
                f"{self.var_name(s.var)} = {self.expr(s.value)};"]

    def stmt_compute(self, s: kir.Compute, level: int) -> list[str]:
        """``target op value;``."""
        if isinstance(s, kir.VectorCopy):
            return self.stmt_vector_copy(s, level)
        a = s.assign
        mode = "store" if a.op == "=" else "update"
        return [f"{self.indent_unit * level}{self.access(a.target, mode)} {a.op} "
                f"{self.expr(a.value)};"]

    def stmt_vector_copy(self, s: kir.VectorCopy, level: int) -> list[str]:
        """A 16-byte copy of ``s.width`` elements (C: ``memcpy``, which any target
        compiles to a vector move when it can)."""
        a = s.assign
        return [f"{self.indent_unit * level}memcpy(&{self.access(a.target, 'store')}, "
                f"&{self.expr(a.value)}, {s.width} * sizeof({self.access(a.target, 'store')}));"]

    def stmt_barrier(self, s: kir.Barrier, level: int) -> list[str]:
        return [self.indent_unit * level + self.barrier_text]

    def stmt_launch(self, s: kir.Launch, level: int) -> list[str]:
        raise NotImplementedError(f"{type(self).__name__} prints no kernel launches")

    def stmt(self, s: kir.Stmt, level: int) -> list[str]:
        if isinstance(s, kir.Loop):
            return self.stmt_loop(s, level)
        if isinstance(s, kir.If):
            return self.stmt_if(s, level)
        if isinstance(s, kir.Let):
            return self.stmt_let(s, level)
        if isinstance(s, kir.Compute):
            return self.stmt_compute(s, level)
        if isinstance(s, kir.Barrier):
            return self.stmt_barrier(s, level)
        if isinstance(s, kir.Launch):
            return self.stmt_launch(s, level)
        raise TypeError(f"cannot print statement {s!r}")

    def print_body(self, body: list[kir.Stmt], level: int = 0) -> list[str]:
        """Lines of a statement list at indentation ``level``."""
        out: list[str] = []
        for s in body:
            out += self.stmt(s, level)
        return out

    def shared_decl(self, decl: kir.SharedDecl) -> str:
        """``float buf[34][34];`` (with :attr:`shared_qualifier` in front)."""
        dims = "".join(f"[{d}]" for d in decl.shape) or "[1]"
        return f"{self.shared_qualifier}{decl.ctype} {decl.name}{dims};"

    def register_decl(self, decl: kir.RegisterDecl) -> str:
        """``float r = 0;`` or ``float r[4] = {0};`` (zeroed: every path is defined)."""
        if not decl.shape:
            return f"{decl.ctype} {decl.name} = 0;"
        return f"{decl.ctype} {decl.name}{''.join(f'[{d}]' for d in decl.shape)} = {{0}};"

    def print_kernel_body(self, level: int = 1) -> str:
        """The kernel's shared and register declarations and body, as text (no
        signature)."""
        assert self.kernel is not None
        ind = self.indent_unit * level
        lines = [ind + self.shared_decl(d) for d in self.kernel.shared]
        lines += [ind + self.register_decl(d) for d in self.kernel.registers]
        lines += self.print_body(self.kernel.body, level)
        return "\n".join(lines) + ("\n" if lines else "")


def free_vars(kernel: kir.Kernel, program: kir.Program) -> set[str]:
    """Variables a kernel reads that it does not bind itself: not mapped ids, loop
    variables or ``Let`` temporaries; includes variables in the strides of the
    global arrays it accesses (printed into linearised subscripts)."""
    bound = set(kir.MAPPED_IDS)
    for s in kir.walk(kernel.body):
        if isinstance(s, kir.Loop):
            bound.add(s.var)
        elif isinstance(s, kir.Let):
            bound.add(s.var)
    used = {v for v in kir.used_vars(kernel.body)}
    shared = {s.name for s in kernel.shared} | {r.name for r in kernel.registers}
    arrays = set()
    for s in kir.walk(kernel.body):
        exprs: list[Expr] = []
        if isinstance(s, kir.Compute):
            exprs = [s.assign.target, s.assign.value]
        for e in exprs:
            for x in walk(e):
                if isinstance(x, Access) and x.array not in shared:
                    arrays.add(x.array)
    for a in arrays:
        decl = program.arrays.get(a)
        if decl is not None:
            for st in decl.strides:
                used |= {x.name for x in walk(st) if isinstance(x, Var)}
    return used - bound - shared - arrays


__all__ = ["CLikePrinter", "KernelParam", "kernel_params", "free_vars", "FUNC_NAMES",
           "PRELUDE_MACROS"]
