"""CUDA printer: every kernel of a :class:`kir.Program` as ``extern "C" __global__``.

Thread-centric code as in seed 004 §4.3: each thread runs the kernel body with its
own ``threadIdx``/``blockIdx``; point loops are already cyclic in the KIR
(``for (c = threadIdx.y; c <= ...; c += 8)``, seed 004 Fig. 9).  Global arrays are
linearised with their strides; size parameters and host loop variables are ``int``
arguments, scalars keep their C type.
"""
from __future__ import annotations

from .. import kir
from ..expr import linearize, row_major_strides
from .c_like import PRELUDE_MACROS, CLikePrinter, kernel_params


class CudaPrinter(CLikePrinter):
    shared_qualifier = "__shared__ "
    barrier_text = "__syncthreads();"

    def global_access(self, acc, decl: kir.ArrayDecl, mode: str) -> str:
        """Arrays in ``__constant__`` memory (seed 004 §4.2) are read from their
        symbol, row-major over the declared shape; others as global arrays."""
        const = self.program.constants.get(acc.array)
        if const is None or mode != "load":
            return super().global_access(acc, decl, mode)
        lin = linearize(acc.index, row_major_strides(decl.shape))
        return f"{const.name}[{self.expr(lin)}]"

    def stmt_vector_copy(self, s: kir.VectorCopy, level: int) -> list[str]:
        """``*(float4 *)&dst = *(const float4 *)&src;`` (seed 002 §3.4): one 16-byte
        load and store; the memory plan made both addresses 16-byte aligned."""
        from ..memory.plan import VECTOR_TYPES
        a = s.assign
        arr = a.target.array if a.target.array in self.shared else a.value.array
        ctype = self.shared[arr].ctype
        vt = VECTOR_TYPES[ctype]
        return [f"{self.indent_unit * level}*({vt} *)&{self.access(a.target, 'store')} = "
                f"*(const {vt} *)&{self.expr(a.value)};"]

    def stmt_compute(self, s: kir.Compute, level: int) -> list[str]:
        """An atomic update (:attr:`kir.Compute.atomic`) as ``atomicAdd``,
        ``atomicMax``/``atomicMin`` (integers) or a compare-and-swap loop
        (:data:`ATOMIC_HELPERS`, floating point); other statements as plain C."""
        if s.atomic is None or isinstance(s, kir.VectorCopy):
            return super().stmt_compute(s, level)
        a = s.assign
        ind = self.indent_unit * level
        target = self.access(a.target, "update")
        ctype = self.program.arrays[a.target.array].ctype
        if s.atomic == "+":
            v = self.expr(a.value)
            v = f"-({v})" if a.op == "-=" else v
        else:
            v = self.expr(next(x for x in a.value.args if x != a.target))
        if ctype == "long":        # 64-bit two's complement: the unsigned and signed forms
            func = {"+": "atomicAdd", "max": "atomicMax", "min": "atomicMin"}[s.atomic]
            cast = "unsigned long long" if s.atomic == "+" else "long long"
            return [f"{ind}{func}(({cast} *)&{target}, ({cast})({v}));"]
        if s.atomic == "+" or ctype == "int":
            func = {"+": "atomicAdd", "max": "atomicMax", "min": "atomicMin"}[s.atomic]
            return [f"{ind}{func}(&{target}, {v});"]
        return [f"{ind}pm_atomic_{s.atomic}_{ctype}(&{target}, {v});"]

    def shared_decl(self, decl: kir.SharedDecl) -> str:
        """Static ``__shared__`` arrays (16-byte aligned, for vector copies), or, past
        48 KB per block, typed pointers into the kernel's dynamic shared memory
        (``extern __shared__``)."""
        if not self.kernel.dynamic_shared:
            return super().shared_decl(decl).replace("__shared__ ", "__shared__ __align__(16) ", 1)
        off = kir.shared_offsets(self.kernel.shared)[0][decl.name]
        inner = "".join(f"[{d}]" for d in decl.shape[1:])
        ptr = f"(*{decl.name}){inner}" if inner else f"*{decl.name}"
        cast = f"({decl.ctype} (*){inner})" if inner else f"({decl.ctype} *)"
        return f"{decl.ctype} {ptr} = {cast}(pm_dyn_shared + {off});"

    def print_kernel_body(self, level: int = 1) -> str:
        head = ""
        if self.kernel.dynamic_shared:
            head = (self.indent_unit * level + "extern __shared__ __align__(16) unsigned char "
                    f"pm_dyn_shared[];  /* {self.kernel.dynamic_shared} B, dynamic */\n")
        return head + super().print_kernel_body(level)

    def mapped_id(self, name: str) -> str:
        # signed: isl's bounds subtract from ids (``N - 32 * blockIdx.y - 1``)
        return f"((int){kir.MAPPED_IDS[name]})"


#: Floating-point atomic max/min (CUDA has none): a compare-and-swap loop that
#: stores ``fmax(old, v)`` (``fmin``) until no other thread changed the element
#: in between; printed only into programs that use them.
ATOMIC_HELPERS = {
    (op, ctype): f"""__device__ static __forceinline__ void pm_atomic_{op}_{ctype}({ctype} *p, {ctype} v)
{{
  {itype} *q = ({itype} *)p;
  {itype} old = *q, assumed;
  do {{
    assumed = old;
    {ctype} next = f{op}{suffix}({from_bits}(assumed), v);
    if ({to_bits}(next) == assumed) break;
    old = atomicCAS(q, assumed, {to_bits}(next));
  }} while (old != assumed);
}}
"""
    for op in ("max", "min")
    for ctype, itype, suffix, from_bits, to_bits in (
        ("float", "int", "f", "__int_as_float", "__float_as_int"),
        ("double", "unsigned long long", "", "__longlong_as_double",
         "(unsigned long long)__double_as_longlong"))}


def _atomic_helpers(program: kir.Program) -> list[str]:
    """The :data:`ATOMIC_HELPERS` the program's atomic updates call."""
    used = set()
    for k in program.kernels.values():
        for s in kir.walk(k.body):
            if isinstance(s, kir.Compute) and s.atomic in ("max", "min"):
                ctype = program.arrays[s.assign.target.array].ctype
                if (s.atomic, ctype) in ATOMIC_HELPERS:
                    used.add((s.atomic, ctype))
    return [ATOMIC_HELPERS[u] for u in sorted(used)]


def kernel_signature(program: kir.Program, kernel: kir.Kernel) -> str:
    params = []
    for p in kernel_params(program, kernel):
        if p.kind == "array":
            params.append(f"{p.ctype} *__restrict__ {p.name}")
        else:
            params.append(f"{p.ctype} {p.name}")
    bx, by, bz = kernel.block
    return (f'extern "C" __global__ void __launch_bounds__({bx * by * bz}) '
            f'{kernel.name}({", ".join(params)})')


def print_kernel(program: kir.Program, kernel: kir.Kernel) -> str:
    pr = CudaPrinter(program, kernel)
    head = f"/* {kernel.summary} */\n" if kernel.summary else ""
    return f"{head}{kernel_signature(program, kernel)}\n{{\n{pr.print_kernel_body(1)}}}\n"


def print_cuda(program: kir.Program) -> str:
    """The CUDA translation unit holding every kernel of ``program``."""
    parts = [f"/* polymagic: CUDA kernels for {program.name} */", PRELUDE_MACROS,
             f"#define {kir.ALIGNED16}(p) ((((unsigned long long)(p)) & 15ULL) == 0ULL)\n"]
    parts += [f"__constant__ {c.ctype} {c.name}[{c.capacity}];  /* {c.array}, read-only */\n"
              for c in program.constants.values()]
    parts += _atomic_helpers(program)
    parts += [print_kernel(program, k) for k in program.kernels.values()]
    return "\n".join(parts)
