"""Print a KIR Program as one C translation unit for the CPU emulator.

CI has no GPU, so the emulator is the evidence that a generated kernel is right:
the kernel bodies printed here come from the same KIR tree, through the same
:class:`~polymagic.codegen.c_like.CLikePrinter` base, as the CUDA the GPU runs.
Kernels are thread-centric (seed 004 §4.3): each emulated thread runs the whole
body with its own ``pm_tx``/``pm_bx``...; ``Barrier`` becomes ``PM_SYNC(id)``, a
yield to the runtime's block scheduler (``polymagic/runtime/emu_support.h``).

Two modes:

``'emulate'``
    Race hunting.  Every global access becomes ``A[PM_GLD(aid, lin, nd, i, j)]``
    (``PM_GST`` for a store, ``PM_GUP`` for the target of ``+=`` etc.) and every
    shared access ``S[PM_SLD(sid, lin, nd, i, j)]``: the runtime checks each
    subscript against its extent and the linear offset against the array, counts
    global loads/stores, and keeps per-element shadow state that finds races
    between threads of a barrier phase and between blocks of a launch, and reads
    of shared memory no thread of the block has written.
``'openmp'``
    The fast CPU target: the same text with the access macros defined away, and
    the blocks of every launch run under ``#pragma omp parallel for``.

The translation unit holds: the runtime (inlined, so the build cache's source
hash covers it), per kernel an args struct, a thread body
``static void pm_body_<k>(const void *, pm_thread *)`` and a descriptor; the host
program in C (``long long`` loop variables); and the entry point ::

    int pm_entry(void **arrays, const long long *ints, const double *scalars,
                 unsigned long long seed, int order, long long *counters,
                 const long long *base, long long *tx, char *err, int errlen);

``arrays`` in ``program.arrays`` order (temps included, allocated by the caller),
``ints`` in ``program.size_params`` order, ``scalars`` in ``program.scalars`` order,
``order`` 0 forward / 1 reverse / 2 seeded shuffle, ``counters`` 3 per kernel in
``program.kernels`` order (global element loads, stores, launches).  ``tx`` (or
NULL: not counted) receives 6 per kernel, the warp transactions of seed 003 §6.3:
load requests, load sectors (32 B), load lines (128 B), then the same for stores
(all -1 when the counting gave up for memory; see ``emu_support.h``); ``base``
(or NULL: all 0) is per array the byte offset of its element 0 inside its device
allocation (packed buffers), so addresses, hence sectors, are the device's.
Every global array reference printed in a kernel is one access *site* (its
``PM_GLD(aid, site, ...)`` argument), i.e. one warp-wide request on the GPU.
Returns 0, or non-zero with a one-paragraph message in ``err``.
"""
from __future__ import annotations

from pathlib import Path

from .. import kir
from ..errors import CompileError
from ..expr import Access, accesses
from .c_like import CLikePrinter, free_vars, kernel_params

RUNTIME_H = Path(__file__).resolve().parent.parent / "runtime" / "emu_support.h"

MODES = ("emulate", "openmp")

#: Macro per access mode (global, shared).
_GMACRO = {"load": "PM_GLD", "store": "PM_GST", "update": "PM_GUP", "atomic": "PM_GAT"}
_SMACRO = {"load": "PM_SLD", "store": "PM_SST", "update": "PM_SUP"}


def runtime_source() -> str:
    """Text of ``emu_support.h`` (inlined into every emulator translation unit)."""
    return RUNTIME_H.read_text()


class EmulatorKernelPrinter(CLikePrinter):
    """Kernel bodies for the emulator: instrumented accesses, ``PM_SYNC`` barriers,
    shared buffers as flat pointers into the block's storage."""

    def __init__(self, program: kir.Program, kernel: kir.Kernel, array_ids: dict[str, int]):
        super().__init__(program, kernel)
        self.array_ids = array_ids
        self.shared_ids = {s.name: i for i, s in enumerate(kernel.shared)}
        self.sites: list[tuple[str, str]] = []     # (array, mode) per global access site

    @staticmethod
    def _macro_args(acc: Access, printer: CLikePrinter) -> str:
        idx = ", ".join(printer.expr(i) for i in acc.index) or "0"
        return f"{len(acc.index)}, {idx}"

    def global_access(self, acc: Access, decl: kir.ArrayDecl, mode: str) -> str:
        lin = self.expr(self.global_index(acc, decl))
        site = len(self.sites)
        self.sites.append((acc.array, mode))
        return (f"{acc.array}[{_GMACRO[mode]}({self.array_ids[acc.array]}, {site}, {lin}, "
                f"{self._macro_args(acc, self)})]")

    def shared_access(self, acc: Access, decl: kir.SharedDecl, mode: str) -> str:
        lin = self.expr(self.shared_index(acc, decl))
        return (f"{acc.array}[{_SMACRO[mode]}({self.shared_ids[acc.array]}, {lin}, "
                f"{self._macro_args(acc, self)})]")

    def stmt_compute(self, s: kir.Compute, level: int) -> list[str]:
        """``{ __auto_type pm_v = value; target op pm_v; }``: the value's loads are
        checked and recorded before the store (so ``S[i] = S[i] + 1`` is a read then
        a write, as on the GPU), and the value keeps its own C type."""
        if isinstance(s, kir.VectorCopy):
            return self.stmt_vector_copy(s, level)
        if s.atomic is not None:
            return self.stmt_atomic(s, level)
        a = s.assign
        mode = "store" if a.op == "=" else "update"
        ind = self.indent_unit * level
        i2 = ind + self.indent_unit
        return [f"{ind}{{", f"{i2}__auto_type pm_v = {self.expr(a.value)};",
                f"{i2}{self.access(a.target, mode)} {a.op} pm_v;", f"{ind}}}"]

    def stmt_atomic(self, s: kir.Compute, level: int) -> list[str]:
        """An atomic update (``h[bin[i]] += w[i]``, ``h[b] = fmax(h[b], v)``): the
        target's access is checked as an atomic read-modify-write (``PM_GAT``: no
        race with other atomic updates of the element, a race with any other
        access); under OpenMP it is ``omp atomic`` (``+``) or one critical section
        (max, min)."""
        a = s.assign
        ind = self.indent_unit * level
        i2, i3 = ind + self.indent_unit, ind + 2 * self.indent_unit
        if s.atomic == "+":
            return [f"{ind}{{", f"{i2}__auto_type pm_v = {self.expr(a.value)};",
                    f"{i2}PM_OMP_ATOMIC", f"{i2}{self.access(a.target, 'atomic')} {a.op} pm_v;",
                    f"{ind}}}"]
        call = a.value
        first = call.args[0] == a.target
        other = call.args[1] if first else call.args[0]
        args = "*pm_p, pm_v" if first else "pm_v, *pm_p"
        return [f"{ind}{{", f"{i2}__auto_type pm_v = {self.expr(other)};", f"{i2}PM_OMP_CRITICAL",
                f"{i2}{{", f"{i3}__auto_type pm_p = &{self.access(a.target, 'atomic')};",
                f"{i3}*pm_p = {self.func_name(call.func)}({args});", f"{i2}}}", f"{ind}}}"]

    def stmt_barrier(self, s: kir.Barrier, level: int) -> list[str]:
        return [f"{self.indent_unit * level}PM_SYNC({int(s.id)});"]

    def aligned_base(self, array: str) -> str:
        """The device alignment of the array's element 0 (``base``), as the GPU
        would see it (the host copy's alignment does not matter)."""
        return f"PM_ALIGNED16({self.array_ids[array]})"

    def _vector_access(self, acc: Access, mode: str, width: int) -> str:
        """``A[PM_GLDV(aid, site, lin, w, nd, i..)]`` / ``S[PM_SSTV(sid, lin, w, ...)]``:
        checked like ``width`` element accesses plus the 16-byte alignment of the
        address; one request (``width`` elements) in the warp transaction counts."""
        m = "LD" if mode == "load" else "ST"
        if acc.array in self.shared:
            lin = self.expr(self.shared_index(acc, self.shared[acc.array]))
            return (f"{acc.array}[PM_S{m}V({self.shared_ids[acc.array]}, {lin}, {width}, "
                    f"{self._macro_args(acc, self)})]")
        decl = self.program.arrays[acc.array]
        lin = self.expr(self.global_index(acc, decl))
        site = len(self.sites)
        self.sites.append((acc.array, mode))
        return (f"{acc.array}[PM_G{m}V({self.array_ids[acc.array]}, {site}, {lin}, {width}, "
                f"{self._macro_args(acc, self)})]")

    def stmt_vector_copy(self, s: kir.VectorCopy, level: int) -> list[str]:
        a = s.assign
        ind = self.indent_unit * level
        return [f"{ind}{{", f"{ind}{self.indent_unit}char *pm_src = (char *)&"
                f"{self._vector_access(a.value, 'load', s.width)};",
                f"{ind}{self.indent_unit}memcpy(&{self._vector_access(a.target, 'store', s.width)}, "
                f"pm_src, {s.width} * sizeof({a.target.array}[0]));", f"{ind}}}"]

    def unroll_pragma(self, loop: kir.Loop) -> str | None:
        # '#pragma unroll' is nvcc's; the C compiler would warn about it (-Wall)
        return "/* #pragma unroll */" if loop.unroll else None

    def shared_decl(self, decl: kir.SharedDecl) -> str:
        sid = self.shared_ids[decl.name]
        return (f"PM_UNUSED {decl.ctype} *const {decl.name} = "
                f"({decl.ctype} *)pm_t->blk->shared[{sid}];")


class EmulatorHostPrinter(CLikePrinter):
    """The host program in C: ``long long`` loops/lets, launches through ``pm_launch``."""

    index_type = "long long"

    def __init__(self, program: kir.Program, kernel_ids: dict[str, int]):
        super().__init__(program, None)
        self.kernel_ids = kernel_ids

    def stmt_launch(self, s: kir.Launch, level: int) -> list[str]:
        try:
            k = self.program.kernels[s.kernel]
        except KeyError:
            raise CompileError(f"launch of unknown kernel {s.kernel!r}") from None
        ind = self.indent_unit * level
        i2 = ind + self.indent_unit
        kid = self.kernel_ids[s.kernel]
        out = [f"{ind}{{", f"{i2}pm_args_{kid} pm_a;", f"{i2}memset(&pm_a, 0, sizeof pm_a);"]
        for p in kernel_params(self.program, k):
            if p.kind == "int":
                out.append(f'{i2}pm_a.{p.name} = pm_to_int((long long)({p.name}), '
                           f'"{p.name}", "{k.name}");')
            else:
                out.append(f"{i2}pm_a.{p.name} = {p.name};")
        grid = list(s.grid) + [None] * (3 - len(s.grid))
        g = ", ".join("1LL" if e is None else f"(long long)({self.expr(e)})" for e in grid[:3])
        out.append(f"{i2}pm_launch(&pm_kdesc_{kid}, &pm_a, {g});")
        out.append(f"{ind}}}")
        return out

    def stmt_compute(self, s, level):
        raise CompileError(f"host code holds a statement instance ({s.stmt}); "
                           f"only loops, guards, lets and launches belong there")

    def stmt_barrier(self, s, level):
        raise CompileError("host code holds a barrier")


def _check_kernel(program: kir.Program, k: kir.Kernel) -> None:
    """Catch KIR inconsistencies that would make the CUDA fail to compile (the GPU
    is not there in CI to notice): undeclared parameters, unknown arrays."""
    for a in k.arrays:
        if a not in program.arrays:
            raise CompileError(f"kernel {k.name}: array {a!r} is not in Program.arrays")
    for s in k.scalars:
        if s not in program.scalars:
            raise CompileError(f"kernel {k.name}: scalar {s!r} is not in Program.scalars")
    if len(k.block) != 3 or any(int(b) < 1 for b in k.block):
        raise CompileError(f"kernel {k.name}: block dims {k.block} must be three positive ints")
    shared = {s.name for s in k.shared} | {r.name for r in k.registers}
    used_arrays: set[str] = set()
    for s in kir.walk(k.body):
        if isinstance(s, kir.Launch):
            raise CompileError(f"kernel {k.name}: holds a launch")
        if isinstance(s, kir.Compute):
            for acc in accesses(s.assign.target) + accesses(s.assign.value):
                used_arrays.add(acc.array)
        for e in _stmt_exprs(s):
            for acc in accesses(e):
                used_arrays.add(acc.array)
    for a in sorted(used_arrays - shared):
        if a not in program.arrays:
            raise CompileError(f"kernel {k.name}: access to unknown array {a!r}")
        if a not in k.arrays:
            raise CompileError(f"kernel {k.name}: accesses global array {a!r} "
                               f"but Kernel.arrays does not list it")
    missing = free_vars(k, program) - set(k.ints) - set(k.scalars) - set(k.arrays)
    if missing:
        raise CompileError(f"kernel {k.name}: uses {', '.join(sorted(missing))} but "
                           f"Kernel.ints/Kernel.scalars do not list "
                           f"{'it' if len(missing) == 1 else 'them'}")


def _stmt_exprs(s: kir.Stmt):
    if isinstance(s, kir.Loop):
        return [s.lower, s.upper]
    if isinstance(s, kir.If):
        return [s.cond]
    if isinstance(s, kir.Let):
        return [s.value]
    return []


_MAPPED_DECLS = [
    ("pm_tx", "pm_t->tx"), ("pm_ty", "pm_t->ty"), ("pm_tz", "pm_t->tz"),
    ("pm_bx", "pm_t->blk->bx"), ("pm_by", "pm_t->blk->by"), ("pm_bz", "pm_t->blk->bz"),
    ("pm_ntx", "pm_t->blk->ntx"), ("pm_nty", "pm_t->blk->nty"), ("pm_ntz", "pm_t->blk->ntz"),
    ("pm_nbx", "pm_t->blk->nbx"), ("pm_nby", "pm_t->blk->nby"), ("pm_nbz", "pm_t->blk->nbz"),
]


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def print_kernel(program: kir.Program, k: kir.Kernel, kid: int, array_ids: dict[str, int]) -> str:
    """Args struct, thread body and descriptor of one kernel."""
    _check_kernel(program, k)
    pr = EmulatorKernelPrinter(program, k, array_ids)
    params = kernel_params(program, k)
    out = [f"/* kernel {k.name}" + (f": {k.summary}" if k.summary else "") + " */"]
    out.append(f"typedef struct pm_args_{kid} {{")
    out.append("  char pm_dummy;")
    for p in params:
        out.append(f"  {p.ctype} *{p.name};" if p.kind == "array" else f"  {p.ctype} {p.name};")
    out.append(f"}} pm_args_{kid};")
    out.append("")
    out.append(f"static void pm_body_{kid}(const void *pm_argp, pm_thread *pm_t) {{")
    out.append(f"  const pm_args_{kid} *pm_a = (const pm_args_{kid} *)pm_argp;")
    for p in params:
        if p.kind == "array":
            out.append(f"  PM_UNUSED {p.ctype} *const {p.name} = pm_a->{p.name};")
        else:
            out.append(f"  PM_UNUSED const {p.ctype} {p.name} = pm_a->{p.name};")
    for name, src in _MAPPED_DECLS:
        out.append(f"  PM_UNUSED const int {name} = {src};")
    for d in k.shared:
        out.append("  " + pr.shared_decl(d))
    for r in k.registers:
        out.append("  " + pr.register_decl(r))
    out += pr.print_body(k.body, 1)
    out.append("}")
    out.append("")
    if k.shared:
        out.append(f"static const pm_shared_desc pm_shared_{kid}[] = {{")
        for d in k.shared:
            shape = [int(x) for x in d.shape]
            if any(x < 1 for x in shape):
                raise CompileError(f"kernel {k.name}: shared buffer {d.name} has shape {d.shape}")
            if len(shape) > 8:
                raise CompileError(f"kernel {k.name}: shared buffer {d.name} has > 8 dims")
            n = 1
            for x in shape:
                n *= x
            ext = ", ".join(str(x) for x in shape) or "1"
            out.append(f"  {{{_c_string(d.name)}, sizeof({d.ctype}), {len(shape)}, "
                       f"{{{ext}}}, {n}LL}},")
        out.append("};")
        shared_ptr = f"pm_shared_{kid}"
    else:
        shared_ptr = "NULL"
    bx, by, bz = (int(b) for b in k.block)
    out.append(f"static const pm_kernel_desc pm_kdesc_{kid} = {{{_c_string(k.name)}, {kid}, "
               f"{int(k.has_barrier)}, {{{bx}, {by}, {bz}}}, {len(k.shared)}, {shared_ptr}, "
               f"pm_body_{kid}, {len(pr.sites)}, {int(k.dynamic_shared)}LL}};")
    out.append("")
    return "\n".join(out)


def print_host(program: kir.Program, kernel_ids: dict[str, int]) -> str:
    """``static void pm_host(...)``: parameters as locals, array descriptions for the
    runtime's bounds checks, then the host statements."""
    hp = EmulatorHostPrinter(program, kernel_ids)
    out = ["static void pm_host(PM_UNUSED void **pm_arrays, PM_UNUSED const long long *pm_ints, "
           "PM_UNUSED const double *pm_scalars) {"]
    for i, n in enumerate(program.size_params):
        out.append(f"  PM_UNUSED const long long {n} = pm_ints[{i}];")
    for i, (n, ct) in enumerate(program.scalars.items()):
        out.append(f"  PM_UNUSED const {ct} {n} = ({ct})pm_scalars[{i}];")
    for i, (n, a) in enumerate(program.arrays.items()):
        out.append(f"  PM_UNUSED {a.ctype} *const {n} = ({a.ctype} *)pm_arrays[{i}];")
    for i, (n, a) in enumerate(program.arrays.items()):
        nd = len(a.shape)
        if len(a.strides) != nd:
            raise CompileError(f"array {n}: {nd} extents but {len(a.strides)} strides")
        ext = ", ".join(f"(long long)({hp.expr(e)})" for e in a.shape) or "0"
        st = ", ".join(f"(long long)({hp.expr(e)})" for e in a.strides) or "0"
        out.append(f"  pm_array_setup({i}, {_c_string(n)}, {n}, {nd}, "
                   f"(const long long[]){{{ext}}}, (const long long[]){{{st}}}, "
                   f"(long long)sizeof(*{n}));")
    for s in kir.walk(program.host):
        if isinstance(s, (kir.Compute, kir.Barrier)):
            raise CompileError("host code may hold only loops, guards, lets and launches")
    out += hp.print_body(program.host, 1)
    out.append("}")
    return "\n".join(out)


def print_emulator_c(program: kir.Program, mode: str = "emulate") -> str:
    """The whole emulator (``mode='emulate'``) or OpenMP (``mode='openmp'``) C source
    of ``program``, with the ``pm_entry`` entry point (see the module docstring)."""
    if mode not in MODES:
        raise ValueError(f"unknown emulator mode {mode!r} (one of {', '.join(MODES)})")
    array_ids = {n: i for i, n in enumerate(program.arrays)}
    kernel_ids = {n: i for i, n in enumerate(program.kernels)}
    for n, k in program.kernels.items():
        if k.name != n:
            raise CompileError(f"kernel registered as {n!r} is named {k.name!r}")
    parts = [f"/* polymagic {mode} translation unit for {program.name} (generated) */",
             "#define PM_MODE_OPENMP 1" if mode == "openmp" else "#define PM_MODE_EMULATE 1",
             runtime_source(), ""]
    for n, k in program.kernels.items():
        parts.append(print_kernel(program, k, kernel_ids[n], array_ids))
    parts.append(print_host(program, kernel_ids))
    parts.append("")
    sig = ("int pm_entry(void **arrays, const long long *ints, const double *scalars,\n"
           "             unsigned long long seed, int order, long long *counters,\n"
           "             const long long *base, long long *tx, char *err, int errlen)")
    parts.append(sig + ";")
    parts.append(sig + " {\n"
                 f"  return pm_entry_impl(pm_host, {len(program.arrays)}, {len(program.kernels)}, "
                 "arrays, ints, scalars,\n"
                 "                       seed, order, counters, base, tx, err, errlen);\n"
                 "}")
    return "\n".join(parts) + "\n"


__all__ = ["print_emulator_c", "EmulatorKernelPrinter", "EmulatorHostPrinter", "MODES",
           "RUNTIME_H", "runtime_source"]
