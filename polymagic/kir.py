"""Kernel IR: the one program representation that every printer reads.

The mapping stage lowers the isl AST into a :class:`Program`: host statements
(loops, guards, kernel launches) and kernels (thread-centric code, as in seed 004
§4.3: each thread runs the body with its own ``threadIdx``/``blockIdx``).  The CUDA
printer, the emulator/OpenMP C printer and the host printers all read the same
Program, so what the emulator checks is what the GPU runs.

Mapped ids appear in expressions as the variables of :data:`MAPPED_IDS`
(``pm_tx`` is threadIdx.x, ``pm_bx`` blockIdx.x, ``pm_ntx`` blockDim.x,
``pm_nbx`` gridDim.x, ...); each printer renames them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Union

from .dtypes import DTYPES
from .expr import Access, Assign, Expr, Var, map_expr, row_major_strides
# the id names and their isl parameter order are thread space's, used here and by kir's users
from .thread_space import AXES, BLOCK_IDS, ISL_IDS, THREAD_IDS, ids_in, linear_thread_id

BLOCK_DIMS = {a: f"pm_nt{a}" for a in AXES}     # blockDim.a
GRID_DIMS = {a: f"pm_nb{a}" for a in AXES}      # gridDim.a
MAPPED_IDS = {**{v: f"threadIdx.{a}" for a, v in THREAD_IDS.items()},
              **{v: f"blockIdx.{a}" for a, v in BLOCK_IDS.items()},
              **{v: f"blockDim.{a}" for a, v in BLOCK_DIMS.items()},
              **{v: f"gridDim.{a}" for a, v in GRID_DIMS.items()}}


def mupa_text(params: str, members: str) -> str:
    """isl text of a multi-union-pw-aff with members ``members`` over ``params``: no
    ``[] -> `` prefix without parameters, which isl reads as a zero-member
    expression (``[] -> [{ S[i] -> [(i)] }]`` parses as ``[]``; fuzz finding 45)."""
    return f"[{params}] -> [{members}]" if params else f"[{members}]"


def isl_params(sizes: list[str], text: str) -> str:
    """The parameter list to declare for isl text ``text``: the size parameters
    ``sizes`` and the ids it mentions (:func:`ids_in`)."""
    return ", ".join(list(sizes) + ids_in(text))


#: The 16-byte copy statements' thread split (memory.plan): ``pm_qg<R>`` is the
#: thread's group ``t div R``, ``t`` the linear thread id in the block.  isl sees it
#: as a parameter of its own (its AST generation then meets no division of the
#: thread ids); each kernel defines it from the thread ids (:func:`copy_split_value`).
COPY_GROUP = "pm_qg"


def copy_split_var(name: str) -> int | None:
    """R of a copy split variable's name (``pm_qg<R>``), else None."""
    if name.startswith(COPY_GROUP) and name[len(COPY_GROUP):].isdigit():
        return int(name[len(COPY_GROUP):])
    return None


def copy_split_value(name: str, block: tuple[int, int, int]) -> Expr:
    """The value of a copy split variable in a block of shape ``block``."""
    from .expr import Binary, Int
    r = copy_split_var(name)
    assert r is not None, name
    return Binary("/", linear_thread_id(block), Int(r))


@dataclass
class ArrayDecl:
    """A global-memory array as the kernels see it."""
    name: str
    ctype: str
    shape: tuple[Expr, ...]
    strides: tuple[Expr, ...] = ()   # element strides; row-major when empty
    kind: str = "param"              # 'param' or 'temp' (allocated by the runtime)

    def __post_init__(self):
        if not self.strides:
            self.strides = row_major_strides(self.shape)


@dataclass
class SharedDecl:
    """A per-block buffer in shared memory (filled by copy code; issue 3)."""
    name: str
    ctype: str
    shape: tuple[int, ...]


@dataclass
class RegisterDecl:
    """A per-thread local (seed 004 §4.2: registers for data indexed only by the thread
    loops): ``ctype name;`` or, one element per point a thread owns, ``ctype name[n];``.
    Accesses to it are :class:`expr.Access` nodes naming it (0-d: no subscript)."""
    name: str
    ctype: str
    shape: tuple[int, ...] = ()
    array: str = ""              # the global array it holds ("" for other temporaries)
    once_per_point: bool = False # loaded/stored once per thread point (see memory.counts)


@dataclass
class ConstantDecl:
    """A read-only array read from ``__constant__`` memory on the GPU (seed 004 §4.2):
    symbol ``name`` of ``capacity`` elements holds the whole of global array ``array``
    (row-major); the emulator reads ``array`` itself."""
    name: str
    ctype: str
    capacity: int
    array: str


@dataclass
class Loop:
    """``for (var = lower; var <= upper; var += step)``; bounds inclusive."""
    var: str
    lower: Expr
    upper: Expr
    step: int
    body: list["Stmt"]
    unroll: bool = False


@dataclass
class If:
    cond: Expr
    then: list["Stmt"]
    orelse: list["Stmt"] = field(default_factory=list)


@dataclass
class Let:
    """``const int var = value;`` (an isl AST degenerate loop, or a temporary)."""
    var: str
    value: Expr


@dataclass
class Compute:
    """One statement instance; ``stmt`` names the Scop statement (for reports).
    ``atomic``: the update is an atomic read-modify-write (``'+'``, ``'max'``,
    ``'min'``: :attr:`polymagic.scop.Statement.atomic`)."""
    stmt: str
    assign: Assign
    atomic: str | None = None


@dataclass
class VectorCopy(Compute):
    """``width`` consecutive elements copied as one 16-byte access (seed 002 §3.4:
    float4/double2): ``assign`` is ``dst[.., j] = src[.., j]`` for the first element,
    the others follow along the last subscript.  Both addresses are 16-byte aligned
    (the memory plan's :func:`memory.plan.chunk_guards` says which chunks are whole, a
    ``pm_aligned16(array)`` guard checks the array's base); the emulator checks it."""
    width: int = 4


#: The run-time guard of vector copies: ``Call(ALIGNED16, (Var(array), Int(w)))`` is
#: true when the global array's element 0 is 16-byte aligned, its last stride is 1 and
#: its other strides are multiples of ``w`` (printers expand it with the strides of
#: :class:`ArrayDecl`, which :mod:`polymagic.transfers` may turn into kernel ints).
ALIGNED16 = "pm_aligned16"


@dataclass
class Barrier:
    """``__syncthreads()``; ``id`` distinguishes barrier sites for the emulator."""
    id: int


@dataclass
class Launch:
    """Host side: launch ``kernel`` on ``grid`` blocks (expressions of the size
    parameters and enclosing host loop variables)."""
    kernel: str
    grid: tuple[Expr, Expr, Expr]


Stmt = Union[Loop, If, Let, Compute, VectorCopy, Barrier, Launch]


@dataclass
class Kernel:
    name: str
    body: list[Stmt]
    block: tuple[int, int, int]       # threads per block (x, y, z)
    arrays: list[str]                 # global arrays used, in Program.arrays order
    scalars: list[str]                # scalar parameters used
    ints: list[str]                   # size parameters and host loop variables used
    shared: list[SharedDecl] = field(default_factory=list)
    summary: str = ""                 # one line: which loops went to blocks/threads
    registers: list[RegisterDecl] = field(default_factory=list)   # per-thread locals
    dynamic_shared: int = 0           # bytes of dynamic shared memory (0: static buffers)

    @property
    def has_barrier(self) -> bool:
        return any(isinstance(s, Barrier) for s in walk(self.body))


@dataclass
class Program:
    name: str
    arrays: dict[str, ArrayDecl]
    size_params: list[str]
    scalars: dict[str, str]           # scalar parameter -> ctype
    host: list[Stmt]                  # Loop / If / Let / Launch only
    kernels: dict[str, Kernel]
    dtype_of_index: str = "int"
    constants: dict[str, ConstantDecl] = field(default_factory=dict)   # by array name
    # size values a kernel is specialised to (a time loop inside one block, --localise t):
    # running at other values is refused with a one-line error (runtime.run.execute)
    specialised: dict[str, int] = field(default_factory=dict)

    def launches(self) -> list[Launch]:
        return [s for s in walk(self.host) if isinstance(s, Launch)]


#: Bytes of shared memory a block may declare statically; more needs dynamic shared
#: memory and the kernel's opt-in attribute (cudaFuncAttributeMaxDynamicSharedMemorySize).
STATIC_SHARED_BYTES = 48 * 1024


def shared_offsets(shared: list[SharedDecl]) -> tuple[dict[str, int], int]:
    """Byte offset of every buffer in a block's dynamic shared memory (each aligned to
    16 bytes, in declaration order) and the total."""
    import numpy as np
    out, off = {}, 0
    for d in shared:
        out[d.name] = off
        n = 1
        for e in d.shape:
            n *= int(e)
        off += -(-n * np.dtype(DTYPES[d.ctype]).itemsize // 16) * 16
    return out, off


def dynamic_shared_bytes(shared: list[SharedDecl]) -> int:
    """Dynamic shared memory a kernel needs: its buffers' bytes when they exceed
    :data:`STATIC_SHARED_BYTES` (0: they are declared statically)."""
    total = shared_offsets(shared)[1]
    return total if total > STATIC_SHARED_BYTES else 0


def map_body(body: list[Stmt], f: Callable[[Expr], Expr | None]) -> list[Stmt]:
    """The statement list rebuilt with :func:`expr.map_expr` ``f`` applied to every
    expression (loop bounds, conditions, ``Let`` values, assignments)."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Loop):
            out.append(replace(s, lower=map_expr(s.lower, f), upper=map_expr(s.upper, f),
                               body=map_body(s.body, f)))
        elif isinstance(s, If):
            out.append(replace(s, cond=map_expr(s.cond, f), then=map_body(s.then, f),
                               orelse=map_body(s.orelse, f)))
        elif isinstance(s, Let):
            out.append(replace(s, value=map_expr(s.value, f)))
        elif isinstance(s, Compute):
            a = s.assign
            out.append(replace(s, assign=replace(a, target=map_expr(a.target, f),
                                                 value=map_expr(a.value, f))))
        else:
            out.append(s)
    return out


def walk(body: list[Stmt]) -> Iterator[Stmt]:
    for s in body:
        yield s
        if isinstance(s, Loop):
            yield from walk(s.body)
        elif isinstance(s, If):
            yield from walk(s.then)
            yield from walk(s.orelse)


def used_vars(body: list[Stmt]) -> set[str]:
    """Names of all variables read in a body (for kernel parameter lists)."""
    from .expr import walk as walk_expr
    out: set[str] = set()

    def see(e: Expr):
        for x in walk_expr(e):
            if isinstance(x, Var):
                out.add(x.name)
            elif isinstance(x, Access):
                out.add(x.array)
    for s in walk(body):
        if isinstance(s, Loop):
            see(s.lower); see(s.upper)
        elif isinstance(s, If):
            see(s.cond)
        elif isinstance(s, Let):
            see(s.value)
        elif isinstance(s, Compute):
            see(s.assign.target); see(s.assign.value)
        elif isinstance(s, Launch):
            for g in s.grid:
                see(g)
    return out
