"""A GPU-free performance report from sm_90 machine code (issue 16, item 7).

    python benchmarks/static_perf.py                     # the suite (large) + PPCG sizes
    python benchmarks/static_perf.py --kernels gemm,2mm --json

For each kernel of the 20-kernel suite (``benchmarks/suite.py``) at its GPU size (the
``large`` preset, what ``run_all.py --target gpu`` runs), and again for the kernels of
issue 16's PPCG table at PPCG's sizes and precisions, the generated CUDA (default
options) is compiled for sm_90 with NVRTC to a cubin
(:func:`polymagic.codegen.nvrtc.compile_cubin_with_log`) and disassembled with
``nvdisasm`` (PyPI ``nvidia-cuda-nvdisasm``).  Per generated kernel it reports

* **machine code** (measured from the cubin): registers (the ELF's ``EIATTR_REGCOUNT``),
  spill bytes and stack frame (ptxas's ``-v`` report through NVRTC), static shared
  memory, local-memory instructions (``LDL``/``STL``), blocks per SM on an H100 (from
  registers, shared memory and threads per block), and the hottest loop's instruction
  mix: FFMA/DFMA, LDS (of which LDS.64 / LDS.128), LDG, branches, all instructions;
  its FMA share and FMAs per shared-load instruction.  The hottest loop is the loop
  (a backward ``BRA``) with the most FMAs among those that hold FMAs and contain no
  other loop holding FMAs: a k loop whose sub-tile loop was unrolled keeps its
  copy loops inside and still counts;
* a **model** (a roofline estimate, not a measurement) of the kernel time on an H100:
  ``max(issue, shared loads, DRAM) + launches x 3 us``, see :class:`Machine` and
  :func:`model_kernel` for the figures and what each term counts.

Issue 16's measured PPCG 0.09 kernel times are printed next to the model, at PPCG's
sizes and precisions (kernels the suite holds in double and PPCG timed in float are
compiled from the same source with ``double`` -> ``float`` and ``0.5`` -> ``0.5f``).
``--json`` prints everything machine-readable instead.  No GPU is needed; NVRTC comes
with polymagic's dependencies, ``nvdisasm`` with its ``test`` extra.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from suite import EXAMPLES, SUITE, Kernel  # noqa: E402


# ---- the machine --------------------------------------------------------------------

@dataclass(frozen=True)
class Machine:
    """The H100 (SXM5, 132 SMs) figures the model and the occupancy use.

    Clock: 1.755 GHz, the clock Nsight Compute locks an H100 SXM to under its default
    ``--clock-control base`` (the board's default applications clock), at which issue
    16's PPCG figures were measured; the boost clock is 1.98 GHz.  Each SM has 4
    sub-partitions issuing one warp instruction per clock; 128 FP32 lanes (one FFMA
    warp instruction per sub-partition per clock) and 64 FP64 lanes (a DFMA occupies
    its sub-partition's FP64 pipe 2 clocks); shared memory delivers 128 bytes per
    clock per SM (an LDS.32 warp instruction takes 1 clock, LDS.64 2, LDS.128 4, with
    no bank conflicts).  DRAM: 2.86 TB/s (what a streaming kernel reaches; HBM3's peak
    is 3.35 TB/s).  A kernel launch costs about 3 us.  Occupancy limits: 65,536
    registers, 228 KB of shared memory (227 KB per block, 1 KB more reserved per
    block), 2,048 threads, 64 warps and 32 blocks per SM; registers are allocated
    per warp in units of 256, shared memory in units of 128 bytes."""
    name: str = "H100 SXM5"
    sms: int = 132
    subpartitions: int = 4
    clock_hz: float = 1.755e9
    clock_note: str = "1.755 GHz (Nsight Compute's base clock control; boost is 1.98 GHz)"
    fp64_issue_clocks: int = 2
    lds_bytes_per_clock: int = 128
    dram_bytes_per_s: float = 2.86e12
    launch_s: float = 3e-6
    registers: int = 65536
    register_unit: int = 256
    shared_bytes: int = 228 * 1024
    shared_per_block_max: int = 227 * 1024
    shared_reserved_per_block: int = 1024
    shared_unit: int = 128
    threads: int = 2048
    warps: int = 64
    blocks: int = 32


H100 = Machine()


# ---- PPCG's measured times (issue 16) -----------------------------------------------

@dataclass(frozen=True)
class Ppcg:
    """One of issue 16's PPCG 0.09 figures: best kernel time (ms, H100, Nsight Compute
    base clocks, best of tile sizes 16/32/64), and the size and precision it was taken
    at.  ``source`` is the kernel's C file here ("" when the repository has none)."""
    ms: float
    dtype: str
    size: str
    sizes: dict = field(default_factory=dict)
    source: str = ""


def _sq(n: int, *names: str) -> dict:
    return {k: n for k in names}


#: issue 16's table, in its order (4M for jacobi-1d read as 4 x 2^20 points)
PPCG: dict[str, Ppcg] = {
    "gemm": Ppcg(32.2, "float", "4096^3", {"N": 4096}, "gemm"),
    "2mm": Ppcg(9.3, "double", "2048", _sq(2048, "ni", "nj", "nk", "nl"), "2mm"),
    "doitgen": Ppcg(1794, "double", "256^3", _sq(256, "nr", "nq", "np"), "doitgen"),
    "syrk": Ppcg(22.2, "double", "2048", _sq(2048, "n", "m"), "syrk"),
    "jacobi-2d": Ppcg(2.50, "double", "4096^2 T10", {"tsteps": 10, "n": 4096}, "jacobi-2d"),
    "jacobi-2d-alt": Ppcg(9.94, "float", "4096^2 T10", {"tsteps": 10, "n": 4096},
                          "jacobi-2d-alt"),
    "heat-3d": Ppcg(4.62, "float", "256^3 T10", {"tsteps": 10, "n": 256}, "heat-3d"),
    "fdtd-2d": Ppcg(3.45, "float", "4096^2 T10", {"tmax": 10, "nx": 4096, "ny": 4096},
                    "fdtd-2d"),
    "jacobi-1d": Ppcg(0.95, "double", "4M T20", {"tsteps": 20, "n": 4 << 20}, "jacobi-1d"),
    "atax": Ppcg(2.01, "double", "8192^2", _sq(8192, "m", "n"), "atax"),
    "bicg": Ppcg(2.70, "double", "8192^2", _sq(8192, "m", "n"), "bicg"),
    "mvt": Ppcg(1.19, "float", "8192^2", {"n": 8192}, "mvt"),
    "gesummv": Ppcg(1.05, "float", "8192^2", {"n": 8192}, "gesummv"),
    "gemver": Ppcg(2.58, "double", "8192", {"n": 8192}, "gemver"),
    "conv2d": Ppcg(0.32, "float", "8192^2", _sq(8192, "ni", "nj"), "conv2d"),
    "transpose-add": Ppcg(0.59, "double", "8192^2"),
    "covariance": Ppcg(3.14, "double", "2048", _sq(2048, "m", "n"), "covariance"),
    "rbf-gram": Ppcg(21.6, "double", "8192x64"),
    "nbody-dist": Ppcg(4.35, "float", "32768"),
    "motion-est": Ppcg(0.51, "float", "2048^2"),
}


#: issue 16's "done when" kernels: written as people write them (a scalar accumulator
#: local to the loop body, alpha and beta), at PPCG's sizes and precisions
TARGETS: dict[str, tuple[str, dict]] = {
    "gemm-scalar f32 4096^3": ("gemm-scalar", {"N": 4096}),
    "2mm-scalar f64 2048": ("2mm-scalar", _sq(2048, "ni", "nj", "nk", "nl")),
    "syrk-scalar f64 2048": ("syrk-scalar", _sq(2048, "n", "m")),
}
#: issue 16's thresholds on each compute kernel's hottest loop
TARGET_FMA_SHARE = 0.60
TARGET_FMA_PER_LDS = 4.0


# ---- tools ----------------------------------------------------------------------------

def find_nvdisasm() -> str | None:
    """Path of ``nvdisasm``: the PyPI package's binary (``nvidia/*/bin/nvdisasm``
    beside this interpreter's site-packages), else one on ``PATH``; None if neither."""
    import site
    roots = list(site.getsitepackages()) + [site.getusersitepackages()]
    roots += [p for p in sys.path if p.endswith("site-packages")]
    for root in roots:
        for pattern in ("nvidia/*/bin/nvdisasm", "nvidia/bin/nvdisasm"):
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                if os.access(path, os.X_OK):
                    return path
    return shutil.which("nvdisasm")


def disassemble(cubin: bytes, nvdisasm: str) -> str:
    """``nvdisasm -c`` of a cubin (code sections only)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        path = f.name
    try:
        r = subprocess.run([nvdisasm, "-c", path], capture_output=True, text=True,
                           timeout=120)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        raise RuntimeError(f"nvdisasm failed: {r.stderr.strip()}")
    return r.stdout


# ---- the cubin's ELF attributes -------------------------------------------------------

#: ``.nv.info`` attribute codes read here (cuobjdump names them EIATTR_*)
EIATTR_REGCOUNT, EIATTR_FRAME_SIZE = 0x2F, 0x11


@dataclass(frozen=True)
class ElfInfo:
    """Per kernel: registers and stack frame from ``.nv.info``, and the size of its
    ``.nv.shared.<kernel>`` section (static shared memory, with the 1 KB the
    toolchain reserves per block on sm_80+ when the kernel uses shared memory)."""
    registers: int
    frame_bytes: int
    shared_section_bytes: int


def _nv_info_entries(data: bytes):
    """(attribute, value bytes) of an ``.nv.info`` section: each entry is a 1-byte
    format, a 1-byte attribute and 2 bytes holding the value (formats 1-3) or the
    size of the value that follows (format 4, EIFMT_SVAL)."""
    i = 0
    while i + 4 <= len(data):
        fmt, attr = data[i], data[i + 1]
        if fmt == 4:
            (n,) = struct.unpack_from("<H", data, i + 2)
            yield attr, data[i + 4:i + 4 + n]
            i += 4 + n
        else:
            yield attr, data[i + 2:i + 4]
            i += 4


def read_elf(cubin: bytes) -> dict[str, ElfInfo]:
    """Registers, frame size and static shared memory of every kernel of a cubin
    (a 64-bit little-endian ELF), read from its section headers and symbols."""
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    # (name, type, flags, addr, offset, size, link, info, align, entsize)
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize)
            for i in range(shnum)]

    def cstr(off: int) -> str:
        return cubin[off:cubin.index(b"\0", off)].decode()

    names = [cstr(secs[shstrndx][4] + s[0]) for s in secs]
    body = {n: cubin[s[4]:s[4] + s[5]] for n, s in zip(names, secs)}
    symtab = next(s for s in secs if s[1] == 2)
    strtab = secs[symtab[6]][4]
    syms = [cstr(strtab + struct.unpack_from("<I", cubin, symtab[4] + 24 * k)[0])
            for k in range(symtab[5] // 24)]
    per_sym: dict[str, dict[int, int]] = {}
    for attr, val in _nv_info_entries(body.get(".nv.info", b"")):
        if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and len(val) == 8:
            sym, value = struct.unpack("<II", val)
            per_sym.setdefault(syms[sym], {})[attr] = value
    size = {n: s[5] for n, s in zip(names, secs)}     # .nv.shared.* are NOBITS
    kernels = [n[len(".text."):] for n in names if n.startswith(".text.")]
    return {k: ElfInfo(per_sym.get(k, {}).get(EIATTR_REGCOUNT, 0),
                       per_sym.get(k, {}).get(EIATTR_FRAME_SIZE, 0),
                       size.get(f".nv.shared.{k}", 0))
            for k in kernels}


@dataclass(frozen=True)
class PtxasInfo:
    """ptxas's ``-v`` report of one kernel (through NVRTC's program log)."""
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack_bytes: int = 0
    shared_bytes: int = 0


def read_ptxas_log(log: str) -> dict[str, PtxasInfo]:
    """Per kernel, ptxas's registers, spill bytes, stack frame and shared memory."""
    out: dict[str, PtxasInfo] = {}
    for chunk in re.split(r"Compiling entry function '", log)[1:]:
        name = chunk.split("'", 1)[0]

        def num(pattern: str) -> int:
            m = re.search(pattern, chunk)
            return int(m.group(1)) if m else 0
        out[name] = PtxasInfo(num(r"Used (\d+) registers"),
                              num(r"(\d+) bytes spill stores"),
                              num(r"(\d+) bytes spill loads"),
                              num(r"(\d+) bytes stack frame"),
                              num(r"(\d+) bytes smem"))
    return out


# ---- the disassembly: instructions, loops, mix ----------------------------------------

@dataclass(frozen=True)
class Instr:
    offset: int
    opcode: str          # with modifiers: LDS.128, FFMA.FTZ ...
    target: str = ""     # branch target label


_INSTR = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([A-Za-z_]\w*),")
_TARGET = re.compile(r"`\((\.L_x_\d+)\)")
BRANCHES = {"BRA", "BRX", "JMP", "JMX", "CALL", "RET"}


def parse_disassembly(text: str) -> dict[str, tuple[list[Instr], dict[str, int]]]:
    """Per kernel (``.text.<kernel>`` section): its instructions and its labels'
    offsets (a label is the offset of the instruction that follows it)."""
    out: dict[str, tuple[list[Instr], dict[str, int]]] = {}
    instrs: list[Instr] = []
    labels: dict[str, int] = {}
    pending: list[str] = []
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            instrs, labels, pending = [], {}, []
            out[m.group(1)] = (instrs, labels)
            continue
        m = _LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        offset, body = int(m.group(1), 16), m.group(2)
        words = body.split()
        if words and words[0].startswith("@"):
            words = words[1:]
        if not words:
            continue
        t = _TARGET.search(body)
        instrs.append(Instr(offset, words[0], t.group(1) if t else ""))
        for lab in pending:
            labels[lab] = offset
        pending = []
    return out


@dataclass(frozen=True)
class Mix:
    """Static instruction counts of a stretch of code (a loop or a whole kernel)."""
    instructions: int = 0
    ffma: int = 0
    dfma: int = 0
    fp_other: int = 0      # FADD, FMUL, DADD, DMUL, FMNMX, MUFU ...
    fp64: int = 0          # of the floating-point ones: DFMA, DADD, DMUL ... (half rate)
    lds: int = 0
    lds64: int = 0
    lds128: int = 0
    sts: int = 0
    ldg: int = 0
    stg: int = 0
    local: int = 0         # LDL / STL (spills or local arrays)
    branches: int = 0
    barriers: int = 0

    @property
    def fma(self) -> int:
        return self.ffma + self.dfma

    @property
    def fp(self) -> int:
        return self.fma + self.fp_other

    @property
    def fma_share(self) -> float:
        return self.fma / self.instructions if self.instructions else 0.0

    @property
    def fma_per_lds(self) -> float | None:
        return self.fma / self.lds if self.lds else None

    @property
    def lds_clocks(self) -> int:
        """Clocks of the SM's shared-memory bandwidth (128 B/clock) the loop's LDS
        warp instructions take: 1 per LDS.32, 2 per LDS.64, 4 per LDS.128."""
        return self.lds - self.lds64 - self.lds128 + 2 * self.lds64 + 4 * self.lds128


FP_OTHER = {"FADD", "FMUL", "DADD", "DMUL", "FMNMX", "DMNMX", "MUFU", "FSETP", "DSETP",
            "FCHK", "HADD2", "HMUL2", "HFMA2"}
FP64 = {"DFMA", "DADD", "DMUL", "DMNMX", "DSETP"}


def mix_of(instrs: list[Instr]) -> Mix:
    """Count FMAs, shared and global loads, branches... of ``instrs`` (NOPs excluded)."""
    c = dict.fromkeys(Mix.__dataclass_fields__, 0)
    for ins in instrs:
        parts = ins.opcode.split(".")
        op, mods = parts[0], set(parts[1:])
        if op == "NOP":
            continue
        c["instructions"] += 1
        c["fp64"] += op in FP64
        if op == "FFMA":
            c["ffma"] += 1
        elif op == "DFMA":
            c["dfma"] += 1
        elif op in FP_OTHER:
            c["fp_other"] += 1
        elif op == "LDS":
            c["lds"] += 1
            c["lds64"] += "64" in mods
            c["lds128"] += "128" in mods
        elif op == "STS":
            c["sts"] += 1
        elif op == "LDG":
            c["ldg"] += 1
        elif op == "STG":
            c["stg"] += 1
        elif op in ("LDL", "STL"):
            c["local"] += 1
        elif op in BRANCHES:
            c["branches"] += 1
        elif op == "BAR":
            c["barriers"] += 1
    return Mix(**c)


@dataclass(frozen=True)
class Loop:
    """A loop of the machine code: a backward branch at ``end`` to ``start``."""
    start: int
    end: int

    def contains(self, other: "Loop") -> bool:
        return self != other and self.start <= other.start and other.end <= self.end


def find_loops(instrs: list[Instr], labels: dict[str, int]) -> list[Loop]:
    """Every backward branch's [target, branch] range (the one-instruction self-loop
    after the final EXIT excluded)."""
    loops = {Loop(labels[i.target], i.offset) for i in instrs
             if i.opcode.split(".")[0] in ("BRA", "JMP") and i.target in labels
             and labels[i.target] < i.offset}
    return sorted(loops, key=lambda lp: (lp.start, -lp.end))


def loop_body(instrs: list[Instr], lp: Loop) -> list[Instr]:
    return [i for i in instrs if lp.start <= i.offset <= lp.end]


def hot_loop(instrs: list[Instr], labels: dict[str, int]) -> tuple[Loop | None, Mix]:
    """The hottest loop by proxy and its mix: among the loops holding floating-point
    instructions that contain no other such loop (innermost compute loops), the one
    with the most FMAs (then the fewest instructions, then the most floating-point
    instructions).  A kernel whose full tiles are generated apart holds the same loop
    twice, unguarded for the full tiles and guarded for the boundary ones; the full
    one, the shorter, is what the blocks run at the GPU sizes (multiples of the
    tile).  (None, the whole kernel's mix) when no loop computes (straight-line
    stencil bodies)."""
    mixes = {lp: mix_of(loop_body(instrs, lp)) for lp in find_loops(instrs, labels)}
    computing = [lp for lp, m in mixes.items() if m.fp]
    inner = [lp for lp in computing if not any(lp.contains(o) for o in computing)]
    if not inner:
        return None, mix_of(instrs)
    best = max(inner, key=lambda lp: (mixes[lp].fma, -mixes[lp].instructions, mixes[lp].fp))
    return best, mixes[best]


def outermost_loop(instrs: list[Instr], labels: dict[str, int], inner: Loop) -> Loop:
    """The outermost loop that contains ``inner`` (``inner`` itself if none): the
    whole loop nest, whose static mix issue 16's table quotes (all the points of a
    per-thread tile with their guards, copies and barriers, once each)."""
    around = [lp for lp in find_loops(instrs, labels) if lp.contains(inner)]
    return max(around, key=lambda lp: lp.end - lp.start, default=inner)


# ---- occupancy ------------------------------------------------------------------------

def blocks_per_sm(registers: int, shared_bytes: int, threads: int,
                  m: Machine = H100) -> tuple[int, str]:
    """Resident blocks per SM and the resource that limits them (CUDA occupancy
    calculator's rules, at the machine's limits)."""
    warps = -(-threads // 32)
    limits = {"blocks": m.blocks, "threads": min(m.threads // threads, m.warps // warps)}
    if registers:
        per_warp = -(-registers * 32 // m.register_unit) * m.register_unit
        limits["registers"] = (m.registers // per_warp) // warps
    if shared_bytes:
        per_block = -(-(shared_bytes + m.shared_reserved_per_block) // m.shared_unit) \
            * m.shared_unit
        limits["shared"] = 0 if shared_bytes > m.shared_per_block_max \
            else m.shared_bytes // per_block
    what = min(limits, key=lambda k: (limits[k], k != "blocks"))
    return limits[what], what


# ---- the generated program at a size --------------------------------------------------

def compile_program(source: str, sizes: dict):
    """Compile C source at default options and ``sizes`` (polymagic's public
    contract: ``parse_options`` and ``compile_source``)."""
    from polymagic.options import parse_options
    try:
        from polymagic.compiler import compile_source
    except ImportError:
        from polymagic.compiler import compile_source
    args = ["--size", ",".join(f"{k}={v}" for k, v in sizes.items())] if sizes else []
    options = parse_options(args)
    return compile_source(source, options), options


def count_launches(host_py: str, ints: dict) -> dict[str, list[int]]:
    """Per kernel, the number of blocks of each launch the host driver makes at
    ``ints`` (its ``host(ints, launch)`` run with a launch that only records)."""
    ns: dict = {}
    exec(compile(host_py, "<polymagic host driver>", "exec"), ns)
    grids: dict[str, list[int]] = {}

    def launch(name, grid, *_args):
        grids.setdefault(name, []).append(int(math.prod(int(g) for g in grid)))
    ns["host"](dict(ints), launch)
    return grids


def fp_ops(assign) -> int:
    """Floating-point instructions one instance of a statement needs, FMA-fused: a
    multiplication and an addition make one FMA, so max(multiplications, additions
    and subtractions) plus divisions and calls (array subscripts not counted)."""
    from polymagic.expr import Access, Binary, Call, Cast, Cond, Unary
    n = {"*": 0, "+": 0, "/": 0}
    op = assign.op.rstrip("=")
    if op:
        n["+" if op in "+-" else "*" if op == "*" else "/"] += 1

    def walk(e) -> None:
        if isinstance(e, Access):
            return
        if isinstance(e, Binary):
            if e.op in ("*", "+", "-", "/"):
                n["+" if e.op in "+-" else e.op] += 1
            walk(e.a)
            walk(e.b)
        elif isinstance(e, (Unary, Cast)):
            walk(e.a)
        elif isinstance(e, Call):
            n["/"] += 1
            for a in e.args:
                walk(a)
        elif isinstance(e, Cond):
            for a in (e.cond, e.a, e.b):
                walk(a)
    walk(assign.value)
    return max(n["*"], n["+"]) + n["/"]


def kernel_statements(compiled) -> dict[str, list[str]]:
    """The source statements each generated kernel computes (its KIR ``Compute``
    nodes that name a statement of the Scop; copies and register moves excluded)."""
    from polymagic import kir
    names = {st.name for st in compiled.scop.statements}
    return {k: sorted({n.stmt for n in kir.walk(kk.body)
                       if isinstance(n, kir.Compute) and n.stmt in names})
            for k, kk in compiled.program.kernels.items()}


CTYPE_BYTES = {"float": 4, "double": 8, "int": 4, "long": 8, "short": 2, "char": 1}


# ---- the model ------------------------------------------------------------------------

@dataclass(frozen=True)
class Model:
    """A roofline estimate of one kernel over the whole run (seconds): a **model**,
    not a measurement.

    ``warp_fp`` floating-point warp instructions (statement instances x
    :func:`fp_ops` / 32) execute ``warp_fp / loop.fp`` iterations of the hot loop
    (its static mix stands for the whole kernel); ``issue_s``: those iterations'
    instructions at one per clock per sub-partition, or the FP64 pipe's half rate if
    slower; ``lds_s``: their shared loads at 128 B per clock per SM; ``dram_s``: the
    memory plan's global loads and stores (``polymagic.memory.counts``: every access
    counted, no cache, so an upper bound on DRAM traffic) at 2.86 TB/s.  A launch of
    fewer blocks than SMs issues on only that many SMs: ``sms_used`` = min(132, mean
    blocks per launch) for the issue and shared-load terms.  Not modelled: the DRAM
    bandwidth few blocks cannot reach, latency (too few warps to hide it), bank
    conflicts, caches, tail effects.
    ``total_s = max(issue, lds, dram) + launches x 3 us``."""
    warp_fp: float
    sms_used: float
    issue_s: float
    lds_s: float
    dram_s: float
    launch_s: float
    bound: str

    @property
    def total_s(self) -> float:
        return max(self.issue_s, self.lds_s, self.dram_s) + self.launch_s


def model_kernel(mix: Mix, warp_fp: float, global_bytes: int, grids: list[int],
                 m: Machine = H100) -> Model:
    """:class:`Model` of one kernel from its hot loop's mix and the run's counts."""
    launches = len(grids)
    sms = min(m.sms, sum(grids) / launches) if launches else m.sms
    iters = warp_fp / mix.fp if mix.fp else 0.0
    issue_clocks = iters * max(mix.instructions, mix.fp + mix.fp64 * (m.fp64_issue_clocks - 1))
    issue_s = issue_clocks / (sms * m.subpartitions * m.clock_hz)
    lds_s = iters * mix.lds_clocks / (sms * m.clock_hz)     # lds_clocks: 128 B each
    dram_s = global_bytes / m.dram_bytes_per_s
    terms = {"issue": issue_s, "shared": lds_s, "DRAM": dram_s}
    bound = max(terms, key=terms.get) if any(terms.values()) else "launch"
    return Model(warp_fp, sms, issue_s, lds_s, dram_s, launches * m.launch_s, bound)


# ---- one program's report -------------------------------------------------------------

@dataclass(frozen=True)
class KernelReport:
    """Machine-code figures of one generated kernel (from the cubin) and its model."""
    kernel: str
    threads: int
    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    shared_bytes: int
    local_instructions: int
    blocks_per_sm: int
    occupancy_limit: str
    hot_loop: str
    mix: Mix
    nest: str            # the outermost loop around the hot loop, and its mix
    nest_mix: Mix
    launches: int
    global_bytes: int
    model: Model


@dataclass(frozen=True)
class ProgramReport:
    name: str
    source: str
    dtype: str
    sizes: dict
    kernels: list[KernelReport]
    ppcg: Ppcg | None = None
    error: str = ""

    @property
    def model_s(self) -> float:
        return sum(k.model.total_s for k in self.kernels)

    @property
    def launches(self) -> int:
        return sum(k.launches for k in self.kernels)

    def hottest(self) -> KernelReport | None:
        """The kernel whose model time is the largest."""
        return max(self.kernels, key=lambda k: k.model.total_s, default=None)


def machine_figures(cuda: str, nvdisasm: str):
    """(ELF info, ptxas report, parsed disassembly) of CUDA source for sm_90."""
    from polymagic.codegen.nvrtc import compile_cubin_with_log
    cubin, log = compile_cubin_with_log(cuda, "sm_90",
                                        extra_options=("--ptxas-options=-v",))
    return read_elf(cubin), read_ptxas_log(log), parse_disassembly(disassemble(cubin,
                                                                               nvdisasm))


def kernel_report(name: str, kir_kernel, elf: ElfInfo, ptxas: PtxasInfo,
                  code: tuple[list[Instr], dict[str, int]], warp_fp: float,
                  global_bytes: int, grids: list[int]) -> KernelReport:
    """Figures and model of one kernel."""
    instrs, labels = code
    loop, mix = hot_loop(instrs, labels)
    threads = int(math.prod(kir_kernel.block))
    shared = ptxas.shared_bytes + int(getattr(kir_kernel, "dynamic_shared", 0) or 0)
    regs = elf.registers or ptxas.registers
    blocks, limit = blocks_per_sm(regs, shared, threads)
    where = (f"{loop.start:#06x}-{loop.end:#06x}" if loop is not None
             else "no computing loop: whole kernel")
    nest = outermost_loop(instrs, labels, loop) if loop is not None else None
    nest_where = f"{nest.start:#06x}-{nest.end:#06x}" if nest is not None else where
    nest_mix = mix_of(loop_body(instrs, nest)) if nest is not None else mix
    return KernelReport(name, threads, regs, ptxas.spill_stores, ptxas.spill_loads,
                        max(ptxas.stack_bytes, elf.frame_bytes), shared,
                        mix_of(instrs).local, blocks, limit, where, mix, nest_where,
                        nest_mix, len(grids),
                        global_bytes, model_kernel(mix, warp_fp, global_bytes, grids))


def program_report(name: str, source_path: Path, sizes: dict, nvdisasm: str,
                   to_float: bool = False, ppcg: Ppcg | None = None) -> ProgramReport:
    """Compile one C file at ``sizes`` (optionally in float), read its machine code
    and model every kernel."""
    from polymagic.memory.counts import count_points, predict_for
    source = source_path.read_text()
    if to_float:
        source = as_float(source)
    compiled, options = compile_program(source, sizes)
    program = compiled.program
    elf, ptxas, code = machine_figures(compiled.cuda, nvdisasm)
    ints = {p: int(sizes[p]) for p in program.size_params if p in sizes}
    grids = count_launches(compiled.host_py, ints)
    counts = predict_for(compiled, sizes)
    stmts = kernel_statements(compiled)
    reports = []
    for kname, kk in program.kernels.items():
        warp_fp = sum(count_points(compiled.scop.statement(s).domain, sizes)
                      * fp_ops(compiled.scop.statement(s).body)
                      for s in stmts.get(kname, [])) / 32
        elsize = max((CTYPE_BYTES.get(program.arrays[a].ctype, 8) for a in kk.arrays),
                     default=8)
        kc = counts.get(kname)
        nbytes = (kc.loads + kc.stores) * elsize if kc is not None else 0
        reports.append(kernel_report(kname, kk, elf.get(kname, ElfInfo(0, 0, 0)),
                                     ptxas.get(kname, PtxasInfo()),
                                     code.get(kname, ([], {})), warp_fp, nbytes,
                                     grids.get(kname, [])))
    dtypes = sorted({a.ctype for a in program.arrays.values()})
    return ProgramReport(name, str(source_path.relative_to(ROOT)), "/".join(dtypes),
                         dict(sizes), reports, ppcg)


def as_float(source: str) -> str:
    """The same C function in single precision: ``double`` -> ``float`` and floating
    literals suffixed ``f`` (``0.5`` -> ``0.5f``), as an fp32 kernel is written."""
    source = re.sub(r"\bdouble\b", "float", source)
    return re.sub(r"(?<![\w.])(\d+\.\d*|\.\d+)([eE][-+]?\d+)?(?![\w.])", r"\1\2f", source)


def safe_report(name: str, path: Path, sizes: dict, nvdisasm: str, **kw) -> ProgramReport:
    """:func:`program_report`, or a report carrying the error (one line)."""
    try:
        return program_report(name, path, sizes, nvdisasm, **kw)
    except Exception as e:  # a failing kernel is reported, the others go on
        msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return ProgramReport(name, str(path.relative_to(ROOT)), "", dict(sizes), [],
                             kw.get("ppcg"), msg)


def source_of(name: str) -> Path:
    """The C file of a kernel name (an example, else ``benchmarks/kernels``)."""
    path = EXAMPLES / f"{name}.c"
    return path if path.exists() else ROOT / "benchmarks" / "kernels" / f"{name}.c"


def suite_reports(kernels: list[Kernel], preset: str, nvdisasm: str) -> list[ProgramReport]:
    """Every suite kernel at the preset's sizes."""
    out = []
    for k in kernels:
        out.append(safe_report(k.name, k.path, k.sizes(preset), nvdisasm))
        print(f"  {k.name}: done", file=sys.stderr, flush=True)
    return out


def ppcg_reports(names: list[str] | None, nvdisasm: str) -> list[ProgramReport]:
    """Issue 16's PPCG kernels that have a source here, at PPCG's sizes and precision."""
    out = []
    for name, p in PPCG.items():
        if names and name not in names:
            continue
        if not p.source:
            out.append(ProgramReport(name, "", p.dtype, {}, [], p,
                                     "no source of this kernel in the repository"))
            continue
        path = source_of(p.source)
        to_float = p.dtype == "float" and re.search(r"\bdouble\b", path.read_text()) is not None
        sizes = dict(p.sizes)
        if "float_n" in path.read_text():
            sizes["float_n"] = float(sizes["n"])
        out.append(safe_report(name, path, sizes, nvdisasm, to_float=to_float, ppcg=p))
        print(f"  {name} (PPCG size): done", file=sys.stderr, flush=True)
    return out


def target_reports(nvdisasm: str) -> list[ProgramReport]:
    """Issue 16's done-when kernels (:data:`TARGETS`) at default options."""
    out = []
    for label, (source, sizes) in TARGETS.items():
        out.append(safe_report(label, source_of(source), dict(sizes), nvdisasm))
        print(f"  {label}: done", file=sys.stderr, flush=True)
    return out


def target_met(k) -> bool:
    """Issue 16's bar for a kernel's hottest loop: FMA share and FMAs per shared load
    at least the targets, no spills."""
    m = k.mix
    return (m.fma_share >= TARGET_FMA_SHARE and m.fma_per_lds is not None
            and m.fma_per_lds >= TARGET_FMA_PER_LDS and k.spill_stores == 0
            and k.spill_loads == 0)


def target_rows(reports: list[ProgramReport]) -> list[str]:
    """Markdown rows: each computing kernel of the done-when programs against the bar."""
    rows = ["| program | kernels | kernel | regs | spills | hot loop FMA share | "
            "FMA per LDS | target met |", "|---|---|---|---|---|---|---|---|"]
    for r in reports:
        if r.error:
            rows.append(f"| {r.name} | {r.error} | | | | | | no |")
            continue
        for i, k in enumerate(x for x in r.kernels if x.mix.fma):
            rows.append(f"| {r.name if i == 0 else ''} | {len(r.kernels) if i == 0 else ''} | "
                        f"{k.kernel} | {k.registers} | {k.spill_stores + k.spill_loads} B | "
                        f"{k.mix.fma_share:.0%} | {_ratio(k.mix.fma_per_lds)} | "
                        f"{'yes' if target_met(k) else 'no'} |")
    return rows


# ---- output ---------------------------------------------------------------------------

def _ms(s: float) -> str:
    ms = s * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:,.0f}"


def _ratio(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def _sizes_text(sizes: dict) -> str:
    return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in sizes.items())


KERNEL_HEADER = ("| program | kernel | threads | regs | spills st/ld (B) | smem (B) | "
                 "blocks/SM (limit) | hot loop | FMA / instr (share) | FMA per LDS | "
                 "LDS (.64/.128) | LDG | branches | loop nest: FMA / instr (share) | "
                 "launches | model ms (bound) |")


def kernel_rows(reports: list[ProgramReport]) -> list[str]:
    """Markdown rows: one per generated kernel."""
    rows = [KERNEL_HEADER, "|" + "---|" * (KERNEL_HEADER.count("|") - 1)]
    for r in reports:
        if r.error:
            rows.append(f"| {r.name} | {r.error} |" + " |" * 14)
            continue
        for i, k in enumerate(r.kernels):
            m = k.mix
            rows.append(
                f"| {r.name if i == 0 else ''} | {k.kernel} | {k.threads} | {k.registers} | "
                f"{k.spill_stores}/{k.spill_loads} | {k.shared_bytes} | "
                f"{k.blocks_per_sm} ({k.occupancy_limit}) | {k.hot_loop} | "
                f"{m.fma}/{m.instructions} ({m.fma_share:.0%}) | {_ratio(m.fma_per_lds)} | "
                f"{m.lds} ({m.lds64}/{m.lds128}) | {m.ldg} | {m.branches} | "
                f"{k.nest_mix.fma}/{k.nest_mix.instructions} ({k.nest_mix.fma_share:.0%}) | "
                f"{k.launches} | "
                f"{_ms(k.model.total_s)} ({k.model.bound}) |")
    return rows


def ppcg_rows(reports: list[ProgramReport]) -> list[str]:
    """Markdown rows: model beside PPCG's measured time, per program."""
    head = ("| kernel (PPCG size) | precision here | kernels | launches | "
            "hottest kernel: FMA share, FMA per LDS, regs | **model** ms (bound) | "
            "PPCG measured ms | model / PPCG |")
    rows = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in reports:
        p = r.ppcg
        label = f"{r.name} f{'32' if p.dtype == 'float' else '64'} {p.size}"
        if r.error:
            rows.append(f"| {label} | – | – | – | {r.error} | – | {p.ms:g} | – |")
            continue
        h = r.hottest()
        hot = (f"{h.kernel}: {h.mix.fma_share:.0%}, {_ratio(h.mix.fma_per_lds)}, "
               f"{h.registers}") if h else "–"
        rows.append(f"| {label} | {r.dtype} | {len(r.kernels)} | {r.launches} | {hot} | "
                    f"{_ms(r.model_s)} ({h.model.bound if h else '–'}) | {p.ms:g} | "
                    f"{r.model_s * 1e3 / p.ms:.2f} |")
    return rows


def markdown(suite: list[ProgramReport], ppcg: list[ProgramReport], preset: str,
             targets: list[ProgramReport] = ()) -> str:
    m = H100
    out = []
    if targets:
        out += ["## Issue 16's targets: kernels as people write them, default options", "",
                f"Bar: the hottest loop of each computing kernel at least "
                f"{TARGET_FMA_SHARE:.0%} FMAs and {TARGET_FMA_PER_LDS:g} FMAs per "
                "shared-load instruction, no spills (measured from the sm_90 cubin).", ""]
        out += target_rows(list(targets)) + [""]
    out += [f"## Machine code (sm_90 cubin, NVRTC + nvdisasm) and **model**: suite, "
           f"`{preset}` sizes", "",
           "Figures measured from the cubin: registers, spills, shared memory, "
           "blocks per SM (H100 limits), the hot loop's static instruction mix.  "
           "`model ms` is a roofline **model**, not a measurement: max(issue, shared "
           f"loads, DRAM at {m.dram_bytes_per_s / 1e12:.2f} TB/s) + launches x "
           f"{m.launch_s * 1e6:.0f} us, {m.sms} SMs at {m.clock_note}.", ""]
    out += kernel_rows(suite)
    if ppcg:
        out += ["", "## **Model** beside PPCG 0.09's measured kernel times (issue 16), at "
                "PPCG's sizes", "",
                "PPCG measured: H100, Nsight Compute base clocks, best of tile sizes "
                "16/32/64.  Model: as above (every kernel of the program, summed).  "
                "Kernels kept in double here and timed by PPCG in float are compiled "
                "with double -> float.", ""]
        out += ppcg_rows(ppcg)
        out += ["", "Per generated kernel at PPCG's sizes:", ""]
        out += kernel_rows([r for r in ppcg if r.kernels])
    return "\n".join(out)


def to_json(r: ProgramReport) -> dict:
    d = {"name": r.name, "source": r.source, "dtype": r.dtype, "sizes": r.sizes,
         "error": r.error, "launches": r.launches, "model_ms": r.model_s * 1e3,
         "ppcg_measured_ms": r.ppcg.ms if r.ppcg else None,
         "ppcg_size": r.ppcg.size if r.ppcg else None, "kernels": []}
    for k in r.kernels:
        kd = asdict(k)
        for key, mix in (("mix", k.mix), ("nest_mix", k.nest_mix)):
            kd[key].update(fma=mix.fma, fp=mix.fp, fma_share=mix.fma_share,
                           fma_per_lds=mix.fma_per_lds)
        kd["model"]["total_s"] = k.model.total_s
        d["kernels"].append(kd)
    return d


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", default="", help="comma list (default: all)")
    p.add_argument("--preset", default="large", choices=("small", "medium", "large"),
                   help="suite sizes (default: large, the GPU size)")
    p.add_argument("--no-ppcg", dest="ppcg", action="store_false",
                   help="skip the kernels at PPCG's sizes")
    p.add_argument("--no-suite", dest="suite", action="store_false",
                   help="only the kernels at PPCG's sizes")
    p.add_argument("--no-targets", dest="targets", action="store_false",
                   help="skip issue 16's done-when kernels (benchmarks/kernels/*-scalar.c)")
    p.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    p.add_argument("--out", type=Path, help="also write the output to this file")
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        print("nvdisasm not found: pip install nvidia-cuda-nvdisasm (polymagic's test "
              "extra)", file=sys.stderr)
        return 2
    from suite import select
    names = [n.strip() for n in a.kernels.split(",") if n.strip()]
    in_suite = [n for n in names if n in {k.name for k in SUITE}]
    t0 = time.perf_counter()
    suite = suite_reports(select(in_suite), a.preset, nvdisasm) \
        if a.suite and (in_suite or not names) else []
    ppcg = ppcg_reports(names or None, nvdisasm) if a.ppcg else []
    targets = target_reports(nvdisasm) if a.targets and not names else []
    if a.json:
        text = json.dumps({"machine": asdict(H100), "preset": a.preset,
                           "suite": [to_json(r) for r in suite],
                           "ppcg_sizes": [to_json(r) for r in ppcg],
                           "targets": [to_json(r) for r in targets],
                           "seconds": time.perf_counter() - t0}, indent=1)
    else:
        text = markdown(suite, ppcg, a.preset, targets)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    failed = [r for r in suite + ppcg + targets if r.error and (r.ppcg is None or r.ppcg.source)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
