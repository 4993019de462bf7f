"""A readable dump of the kernel IR (``--show kir``): host program and kernels as
indented pseudo-C, with mapped ids shown as CUDA names (``threadIdx.x`` ...)."""
from __future__ import annotations

from .. import kir
from ..expr import CPrinter

_P = CPrinter(names=kir.MAPPED_IDS)


def _stmts(body: list, depth: int, out: list[str]) -> None:
    pad = "  " * depth
    for s in body:
        if isinstance(s, kir.Loop):
            step = f"{s.var} += {s.step}" if s.step != 1 else f"{s.var}++"
            unroll = "  /* unroll */" if s.unroll else ""
            out.append(f"{pad}for ({s.var} = {_P(s.lower)}; {s.var} <= {_P(s.upper)}; {step}){unroll}")
            _stmts(s.body, depth + 1, out)
        elif isinstance(s, kir.If):
            out.append(f"{pad}if ({_P(s.cond)})")
            _stmts(s.then, depth + 1, out)
            if s.orelse:
                out.append(f"{pad}else")
                _stmts(s.orelse, depth + 1, out)
        elif isinstance(s, kir.Let):
            out.append(f"{pad}{s.var} = {_P(s.value)}")
        elif isinstance(s, kir.Compute):
            a = s.assign
            vec = f"  /* {s.width} elements, one 16-byte access */" \
                if isinstance(s, kir.VectorCopy) else ""
            atomic = f"  /* atomic {s.atomic} */" if s.atomic else ""
            out.append(f"{pad}{s.stmt}: {_P(a.target)} {a.op} {_P(a.value)}{vec}{atomic}")
        elif isinstance(s, kir.Barrier):
            out.append(f"{pad}__syncthreads()  /* barrier {s.id} */")
        elif isinstance(s, kir.Launch):
            grid = ", ".join(_P(g) for g in s.grid)
            out.append(f"{pad}launch {s.kernel}<<<({grid})>>>")
        else:
            out.append(f"{pad}{s!r}")


def format_program(program: kir.Program) -> str:
    """The whole program: arrays, host driver, then each kernel."""
    out = [f"program {program.name}"]
    for a in program.arrays.values():
        out.append(f"  {a.kind} {a.ctype} {a.name}" + "".join(f"[{_P(e)}]" for e in a.shape))
    out.append("host:")
    _stmts(program.host, 1, out)
    for k in program.kernels.values():
        out.append("")
        bx, by, bz = k.block
        out.append(f"kernel {k.name}  block {bx}x{by}x{bz}"
                   f"  arrays({', '.join(k.arrays)})  scalars({', '.join(k.scalars)})"
                   f"  ints({', '.join(k.ints)})")
        if k.summary:
            out.append(f"  // {k.summary}")
        for sh in k.shared:
            out.append(f"  __shared__ {sh.ctype} {sh.name}" + "".join(f"[{d}]" for d in sh.shape))
        _stmts(k.body, 1, out)
    return "\n".join(out)


def format_passes(logs) -> str:
    """Each Kernel-IR pass over each kernel (``--show passes``): its time, what it
    changed and the kernel's body after it (:mod:`polymagic.lower.passes`)."""
    out: list[str] = []
    for log in logs:
        out.append(f"== {log.kernel}: after {log.name} ({log.seconds * 1e3:.2f} ms; "
                   f"{log.change})")
        for r in log.registers:
            out.append(f"  register {r.ctype} {r.name}")
        _stmts(list(log.body), 1, out)
    return "\n".join(out) or "(no kernel)"
