"""What the mapping stage hands on: one :class:`KernelPlan` per kernel and the mapped
schedule tree (:class:`MappingResult`), with the names and defaults the later stages
share (kernel marks, block/thread ids, the host-loop parameters, default tiles).

The default tile and block sizes are seed 004 §4.1's single-schedule mapping's
(``DEFAULT_TILES``: one block tile per block, ``DEFAULT_BLOCKS``: threads per block,
innermost member on ``x``); ``DEFAULT_SUB_TILE`` is seed 000 §4.1's sub-tile of the
sequential loops around the shared-memory buffers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from .. import kir
from ..memory.localcode import LocalBuffer, LocalPlan
from ..memory.plan import BufferPlan, KernelMemory
from ..names import generated
from .grid_fill import GridFill

DEFAULT_TILES = {1: (256,), 2: (32, 32), 3: (4, 8, 32)}
DEFAULT_BLOCKS = {1: (256,), 2: (32, 8), 3: (32, 4, 2)}
DEFAULT_SUB_TILE = 16
#: The parameters ``pm_h0, pm_h1, ...`` a kernel receives the values of its host
#: loops in (per-kernel code generation, :func:`polymagic.lower.per_kernel.kernel_schedule`).
HOST_PARAM = "pm_h"
#: kernel marks of the mapped tree are named ``pm_kernel0``, ``pm_kernel1``, ...
MARK_PREFIX = generated("kernel")


def kernel_mark(node: isl.ScheduleNode) -> str | None:
    """The kernel's name when ``node`` is a kernel mark of the mapped tree."""
    if node.get_type() == isl.schedule_node_type.mark:
        name = node.mark_get_id().get_name()
        if name.startswith(MARK_PREFIX):
            return name
    return None


@dataclass(frozen=True)
class MappedMember:
    """One band member mapped to a block and thread axis."""
    axis: str                 # 'x', 'y' or 'z'
    tile: int                 # tile size T
    threads: int              # threads along this axis B (≤ T)
    loop: str                 # the member as an expression of source iterators, e.g. 'i'
    tile_min: isl.PwAff       # smallest tile index (parameters only)
    tile_max: isl.PwAff


@dataclass(frozen=True)
class KernelPlan:
    """One kernel of the mapping: its mapped band members (blocks and threads), its
    sequential loops, statements, memory plan (seed 000 §3 buffers, seed 004 §4.2
    registers) and seed 001 localisation.  The mappers build it up with
    :func:`dataclasses.replace` while they walk the tree; what the lowering decides
    comes back in its own result (:class:`polymagic.lower.LowerResult`)."""
    name: str
    members: list[MappedMember]          # outermost first; empty for one-thread kernels
    sequential: list[str] = field(default_factory=list)   # unmapped band members
    statements: list[str] = field(default_factory=list)
    sub_tiles: list[str] = field(default_factory=list)    # sequential members sub-tiled
    memory: KernelMemory | None = None
    threads: tuple[int, int, int] | None = None   # block dims when not those of members
    text: str = ""                                 # summary when not derived from members
    local: LocalPlan | None = None       # --localise (seed 001)
    per_thread: tuple[int, ...] = ()     # points per thread per member (--tile T:t)
    jammed: bool = False                 # its point loops moved inside the sub-tile loops
    full_tiles: bool = False             # full tiles generated apart (pieces of the body)
    #: the kernel's statement instances in full block tiles (:mod:`.full_tiles`), whose
    #: code the lowering generates apart; None when the kernel is not split
    full_instances: isl.UnionSet | None = None
    specialised: dict[str, int] = field(default_factory=dict)  # sizes the domain is fixed to
    #: the thread point loops of the kernel body are its members' (tile, threads) loops, so
    #: the lowering may keep one register per point a thread owns; False for the
    #: superposition, whose thread loops need not be its block members' point loops
    member_points: bool = True
    #: a time-tiled kernel's tile sizes (time steps first, then the spatial points of
    #: each member), one launch per wavefront of tiles; () for other kernels (the
    #: report describes the kernel in words from it)
    time_tile: tuple[int, ...] = ()
    # the instances of one launch as an affine set in the host loops' values
    # ``pm_h<k>`` (:data:`HOST_PARAM`) and the block ids, when the mapper knows one
    # (time tiles: no floor of the wavefront for isl's AST generator to project)
    launch_domain: isl.UnionSet | None = None
    #: the default tiles of a compute-bound band and why (:mod:`.grid_fill`); None
    #: when the band is not one or tiles were given
    grid_fill: GridFill | None = None

    @property
    def block(self) -> tuple[int, int, int]:
        if self.threads is not None:
            return self.threads
        b = {m.axis: m.threads for m in self.members}
        return (b.get("x", 1), b.get("y", 1), b.get("z", 1))


@dataclass(frozen=True)
class TreeReduction:
    """A reduction loop mapped to ``threadIdx.x`` (seed 003 §5.3 reduction loops on
    threads).  Statement ``stmt``'s instances accumulate into the per-thread register
    ``acc`` (each thread its cyclic share of the loop); ``pm_rini_S`` (one instance per
    point of the enclosing loops, every thread of the block) sets ``acc`` to the
    identity, ``pm_rfin_S`` stores it into shared ``buf`` (one element per thread),
    reduces the buffer by halving (``⌈n/2⌉`` steps, any block size, a barrier after
    each) and thread 0 combines ``buf[0]`` with the global element."""
    stmt: str
    op: str               # '+', '*', 'max', 'min', 'fmax', ...
    loop: int             # position of the reduction iterator in the statement
    acc: str
    buf: str
    block: tuple[int, int, int] = (1, 1, 1)   # threads per block of its kernel
    #: the other statements of its thread group (one pass over the loop, one tree
    #: pass): the first statement's ``pm_rfin`` combines them all; theirs is not made
    partners: tuple[str, ...] = ()
    lead: bool = True


@dataclass(frozen=True)
class MappingResult:
    """The mapping stage's result: the mapped schedule tree (tiled, with a mark per
    kernel, block/thread filters, grafted copy statements) and what the lowering
    needs to print each kernel."""
    schedule: isl.Schedule               # the mapped schedule tree (tiled, marked)
    plans: dict[str, KernelPlan]
    host_loops: list[str]
    #: grafted copy statement -> (direction, buffer) of seed 000's shared buffers
    copies: dict[str, tuple[str, BufferPlan]] = field(default_factory=dict)
    #: grafted seed 001 move statement -> (kind, localised buffer)
    local_copies: dict[str, tuple[str, LocalBuffer]] = field(default_factory=dict)
    constants: dict[str, kir.ConstantDecl] = field(default_factory=dict)
    #: tree reductions (superposition): grafted statement -> its :class:`TreeReduction`
    reductions: dict[str, TreeReduction] = field(default_factory=dict)
    #: the code depends on the values given for the sizes (``--size``): seed 004 §4.2's
    #: ``__constant__`` arrays are chosen, or refused, at those values
    #: (:attr:`.memory.constant.ConstantChooser.size_dependent`)
    size_dependent: bool = False
