"""Tile-size search: seed 000 §4.3 (Baskaran et al., PPoPP'08), on the real planner.

Seed 000 §4.2 determines "the local memory storage needed for data accessed in
a tile (as a function of tile sizes)" with the §3 framework; §4.3 then picks the
tile sizes that minimise the data-movement cost under the local-memory limit::

    minimise   Σ_{k∈I} Π_{i≤r_k} N_i/t_i · (P·S + V_k^in ·L/P)
             + Σ_{k∈O} Π_{i≤r_k} N_i/t_i · (P·S + V_k^out·L/P)
    subject to 0 < t_i ≤ N_i,   Σ_k M_k ≤ M_up,   t_1·…·t_m ≥ P ≥ P_low

solved as a relaxed (real-valued) problem by sequential quadratic programming,
then rounded to integers (§4.3, last paragraph).

How the pieces are obtained here
--------------------------------
* **The model comes from the real planner** (:func:`polymagic.mapping.map_schedule`
  and :func:`polymagic.memory.plan.plan_kernel_memory`), not from a re-derivation:
  the planner is run at ``L + 1`` tile vectors (a base point and one step along each
  tile size), and every buffer extent and every per-dimension extent of the copy-in
  and copy-out sets of one block (the §3.1.3 volumes, bounded by their box as §4.3's
  "upper bounds on the volume" allows) is fitted as an affine function of the tile
  sizes (rectangular tiles: ``t_i``, ``t_i + 2`` for a halo, ``t_k`` ...).  The fit
  is checked at a held-out tile vector, and the occurrence count ``N`` (host
  launches × tiles, ``r_k``: block level or sub-tile level, seed 000 §4.2's hoisting)
  is checked against the number of prefix points of the planner's copy sets there.
  When a check fails the search refuses and keeps the default sizes, saying why.
* ``t`` is the ``--tile`` vector: the block-tile members of each kernel's band,
  then its sub-tile (sequential) members, outermost first (``mapping.tile_sizes``,
  ``mapping.sub_tile_sizes``); one vector serves every kernel, as ``--tile`` does.
* ``P`` is the number of threads the mapping gives a block, ``Π_j min(B_j, t_j)``
  with ``B`` from ``--block`` or ``mapping.DEFAULT_BLOCKS``; §5 fixes ``P_low`` to a
  warp (32 threads), and CUDA caps a block at 1024 threads.
* ``M_up`` is ``--shared-mem`` capped by the planner's static limit (48 KB); a
  candidate whose buffers exceed it would have buffers dropped by the planner.
* Beyond the paper's constraints, the grid must cover the SMs when the problem is
  large enough (``min_blocks``): §4.1 fixes the number of outer-level processes to a
  multiple of the number of physical processors; without this the cost model, which
  only counts data movement, would pick one huge tile for small problems.

The relaxed problem is solved in ``log2 t`` (every term is a product of powers of the
``t_i``, so the logarithm is well scaled) by ``scipy.optimize.minimize(method="SLSQP")``
from several starting points; each solution is rounded (floor/ceil/powers of two;
the innermost block member — threadIdx.x, coalescing — to a power of two or a
multiple of 32), constraints are re-checked exactly on integers, and the integer
neighbourhood of the best point is searched.  Every exactly evaluated integer
vector, plus a powers-of-two grid, is kept in ``TileSearchResult.candidates``.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction

import islpy as isl
import numpy as np

from .. import mapping as _mapping
from ..errors import OptionsError
from ..options import Options
from ..dtypes import DTYPES
from .plan import STATIC_SHARED_LIMIT


# ---- the machine -------------------------------------------------------------------

@dataclass(frozen=True)
class GpuModel:
    """Constants of seed 000 §4.3's cost model for one GPU (defaults: an H100 SXM5).

    Times are in SM clock cycles.  Seed 000 §5 uses a GeForce 8800 GTX (16 SMs,
    16 KB shared memory, warp 32); the H100 numbers below replace them.

    * ``sync`` (S, cycles per thread per data movement): §4.3 charges ``P·S`` per
      occurrence.  An occurrence is a barrier after loads whose global-memory latency
      the barrier exposes: roughly 500 cycles on Hopper (HBM3 latency measured by
      micro-benchmarks is about 450-550 cycles) plus ~20-40 for ``__syncthreads``;
      for the default 256-thread block ``P·S`` = 512 cycles, hence S = 2.
    * ``per_byte`` (L per byte, cycles per byte per thread): §4.3 charges ``V·L/P``.
      When every SM streams, an SM gets 3.35 TB/s / (132 SMs · 1.98 GHz) ≈ 12.8 B per
      cycle, so moving V bytes takes V/12.8 cycles; with 256 threads ``L/P = 1/12.8``
      gives L ≈ 20 cycles per byte (80 per float, 160 per double).  ``L`` per element
      of the paper is ``per_byte · sizeof(element)``.
    * ``p_low``: §5's lower limit on threads, one warp (32); ``max_threads``: 1024.
    * ``min_blocks``: 132 SMs (see the module docstring; 0 disables it).
    """
    name: str = "NVIDIA H100 SXM5 (132 SMs, 1.98 GHz, HBM3 3.35 TB/s)"
    sync: float = 2.0
    per_byte: float = 20.0
    p_low: int = 32
    max_threads: int = 1024
    min_blocks: int = 132


H100 = GpuModel()


# ---- fitted model ------------------------------------------------------------------

@dataclass(frozen=True)
class Affine:
    """``const + Σ coeffs[i]·t_i`` with exact rational coefficients."""
    const: Fraction
    coeffs: tuple[Fraction, ...]

    def __call__(self, t):
        """Value at one tile vector (ints: exact) or at rows of an array."""
        if isinstance(t, np.ndarray):
            out = np.full(t.shape[:-1], float(self.const))
            for i, c in enumerate(self.coeffs):
                if c:
                    out = out + float(c) * t[..., i]
            return out
        v = self.const + sum(c * x for c, x in zip(self.coeffs, t))
        return int(v) if v.denominator == 1 else float(v)

    @functools.cached_property
    def _floats(self) -> tuple[float, tuple[tuple[int, float], ...]]:
        return float(self.const), tuple((i, float(c)) for i, c in enumerate(self.coeffs) if c)

    def real(self, t) -> float:
        """Value at a real tile vector (a tuple of floats): the relaxed problem's
        inner loop, without Fractions or arrays."""
        c0, cs = self._floats
        return c0 + sum(c * t[i] for i, c in cs)

    def text(self) -> str:
        terms = []
        for i, c in enumerate(self.coeffs):
            if c:
                terms.append(("" if c == 1 else f"{c}*") + f"t{i}")
        if self.const or not terms:
            terms.append(str(self.const))
        return " + ".join(terms).replace("+ -", "- ")


@dataclass
class BufferModel:
    """One planned buffer as functions of the tile sizes (seed 000 §4.2-4.3)."""
    kernel: str
    name: str
    array: str
    level: str                              # 'block' or 'sub-tile' (r_k of §4.3)
    itemsize: int
    extents: tuple[Affine, ...]             # Algorithm 2's box, per dimension
    copy_in: tuple[Affine, ...] | None      # box of one block's copy-in set (V^in)
    copy_out: tuple[Affine, ...] | None     # box of one block's copy-out set (V^out)
    fill: float = 1.0                       # planner's copies / launches × tiles (< 1:
                                            # non-rectangular tile space), at the held-out t;
                                            # superposition: × step loops, thread tiles
    fill_out: float | None = None           # the same for its copy-out (None: ``fill``)
    r: int | None = None                    # tile loops around its copies (None: by level)
    thread_tiles: tuple[int, ...] = ()      # block members j whose tile is split into
                                            # ⌈t_j/B_j⌉ thread tiles, one copy each
                                            # (superposition, seed 003 §4.2)

    def describe(self) -> str:
        ext = "][".join(e.text() for e in self.extents)
        return f"{self.name}[{ext}] ({self.level})"


@dataclass
class KernelModel:
    """A tiled kernel: its band at the run's sizes and its buffers."""
    name: str
    m: int                                  # block-tile members (thread blocks)
    s: int                                  # sub-tile members (sequential)
    block: tuple[int, ...]                  # B_j: threads per block-tile member, outermost first
    lo: tuple[int, ...]                     # per band member: smallest value at the sizes
    hi: tuple[int, ...]                     # largest value
    launches: int                           # host-loop iterations (kernel launches)
    buffers: list[BufferModel] = field(default_factory=list)
    #: threads on the axes no block-tile member caps (superposition: a thread loop that
    #: is not a block loop, jacobi-2d-alt's j); P = fixed_threads · Π min(B_j, t_j)
    fixed_threads: int = 1
    #: per block member, the threads of the thread axis running the same loop (the
    #: thread tiles of a superposition kernel: ⌈t_j/tied_j⌉ per block), 0: none
    tied: tuple[int, ...] = ()
    defaults: tuple[int, ...] = ()          # the mapping's own sizes without --tile
    superposed: bool = False                # a seed 003 superposition kernel
    given_block: bool = False               # --block given: threads not capped by tiles

    @property
    def extents(self) -> tuple[int, ...]:
        """N_i of §4.3: the index range of each band member."""
        return tuple(max(h - l + 1, 0) for l, h in zip(self.lo, self.hi))

    def r(self, b: BufferModel) -> int:
        """Number of tile loops around the buffer's copies (r_k of §4.3)."""
        if b.r is not None:
            return b.r
        return self.m if b.level == "block" else self.m + self.s

    def occurrences(self, b: BufferModel, tiles: list, t, out: bool = False) -> object:
        """N of §4.3 for buffer ``b``'s copy-in (``out``: copy-out): launches × the
        tiles of its r_k enclosing tile loops × (superposition) the thread tiles of
        each block tile, scaled by ``b.fill`` (``b.fill_out``); ``tiles`` and ``t``
        are ints, floats or arrays alike."""
        fill = b.fill_out if out and b.fill_out is not None else b.fill
        n = fill * self.launches
        for j in range(self.r(b)):
            n = n * tiles[j]
        for j in b.thread_tiles:
            n = n * _ceil_div(t[j], self.tied[j])
        return n

    def clamp(self, b: BufferModel, t):
        """The tile vector a buffer's extents are affine in: a thread-tile buffer spans
        at most one thread tile along a split block loop, ``min(t_j, B_j)``."""
        if not b.thread_tiles:
            return t
        if isinstance(t, np.ndarray):
            t = t.copy()
            for j in b.thread_tiles:
                t[..., j] = np.minimum(t[..., j], self.tied[j])
            return t
        return tuple(min(v, self.tied[j]) if j in b.thread_tiles else v
                     for j, v in enumerate(t))

    def split_vars(self) -> list[int]:
        """Block members split into thread tiles by a buffer of this kernel."""
        return sorted({j for b in self.buffers for j in b.thread_tiles})

    def aligned(self, j: int, t):
        """Thread tiles of member j align with its block tiles (the model's extents
        and ⌈t/B⌉ are exact): t ≤ B (the tile caps the threads; with --block only
        when t divides B) or a multiple of B."""
        b = self.tied[j]
        small = (b % t == 0) if self.given_block else (t <= b)
        return small | (t % b == 0)

    def threads_at(self, t) -> int:
        """P of §4.3: threads per block at an integer tile vector."""
        return self.fixed_threads * math.prod(min(bj, t[j]) for j, bj in enumerate(self.block))


@dataclass
class TileModel:
    """M(t), V_in(t), V_out(t), N(t) and the cost C(t) of seed 000 §4.3."""
    n_vars: int
    kernels: list[KernelModel]
    gpu: GpuModel
    m_up: int
    sizes: dict
    min_blocks: dict = field(default_factory=dict)   # kernel -> required blocks (0: none)

    # -- exact integer evaluation (vectorised over rows of T) --
    def _eval(self, T: np.ndarray) -> dict:
        T = np.atleast_2d(np.asarray(T, dtype=np.int64))
        Tf = T.astype(float)
        g = self.gpu
        cost = np.zeros(len(T))
        max_bytes = np.zeros(len(T))
        ok = np.ones(len(T), dtype=bool)
        min_threads = np.full(len(T), np.inf)
        min_blocks_ok = np.ones(len(T), dtype=bool)
        for k in self.kernels:
            if not k.m:
                continue
            tiles = []
            for j in range(k.m + k.s):
                t = T[:, j]
                tiles.append((np.floor_divide(k.hi[j], t) - np.floor_divide(k.lo[j], t) + 1)
                             .astype(float))
            P = np.full(len(T), float(k.fixed_threads))
            for j in range(k.m):
                P = P * np.minimum(k.block[j], Tf[:, j])
            blocks = np.prod(np.array(tiles[:k.m]), axis=0)
            nbytes = np.zeros(len(T))
            cols = [Tf[:, j] for j in range(Tf.shape[1])]
            for j in k.split_vars():
                ok &= k.aligned(j, T[:, j])
            for b in k.buffers:
                Tb = k.clamp(b, Tf)
                nbytes += b.itemsize * np.prod([e(Tb) for e in b.extents], axis=0)
                for out, sets in ((False, b.copy_in), (True, b.copy_out)):
                    if sets is not None:
                        occ = k.occurrences(b, tiles, cols, out) * np.ones(len(T))
                        vol = np.prod([np.maximum(e(Tb), 0) for e in sets], axis=0)
                        cost += occ * (P * g.sync + vol * b.itemsize * g.per_byte / P)
            max_bytes = np.maximum(max_bytes, nbytes)
            min_threads = np.minimum(min_threads, P)
            ok &= (nbytes <= self.m_up) & (P >= g.p_low) & (P <= g.max_threads)
            need = self.min_blocks.get(k.name, 0)
            if need:
                min_blocks_ok &= blocks >= need
        ok &= np.all(T >= 1, axis=1) & np.all(T <= np.array(self.upper), axis=1)
        return {"cost": cost, "bytes": max_bytes, "ok": ok, "blocks_ok": min_blocks_ok,
                "threads": min_threads}

    @property
    def upper(self) -> tuple[int, ...]:
        """Largest useful tile size per variable: N_i (over the kernels using it)."""
        up = [1] * self.n_vars
        for k in self.kernels:
            for j, n in enumerate(k.extents):
                up[j] = max(up[j], n)
        return tuple(up)

    def cost(self, t) -> float:
        """Predicted data-movement cost C(t) in cycles (seed 000 §4.3)."""
        return float(self._eval(np.array([t]))["cost"][0])

    def feasible(self, t, with_min_blocks: bool = True) -> bool:
        r = self._eval(np.array([t]))
        return bool(r["ok"][0] and (r["blocks_ok"][0] or not with_min_blocks))

    def violations(self, t) -> list[str]:
        """Which constraints ``t`` breaks, in words (empty: feasible)."""
        out = []
        g = self.gpu
        for j, (x, u) in enumerate(zip(t, self.upper)):
            if not 0 < x <= u:
                out.append(f"t{j}={x} outside 1..{u}")
        sb = self.shared_bytes(t)
        for k in self.kernels:
            if not k.m:
                continue
            for j in k.split_vars():
                if not k.aligned(j, t[j]):
                    out.append(f"{k.name}: t{j}={t[j]} splits unevenly into thread tiles "
                               f"of {k.tied[j]}")
            if sb[k.name] > self.m_up:
                out.append(f"{k.name}: buffers {sb[k.name]} B > M_up {self.m_up} B")
            p = self.threads(t)[k.name]
            if p < g.p_low:
                out.append(f"{k.name}: {p} threads < P_low {g.p_low}")
            if p > g.max_threads:
                out.append(f"{k.name}: {p} threads > {g.max_threads}")
            need = self.min_blocks.get(k.name, 0)
            if need and self.blocks(t)[k.name] < need:
                out.append(f"{k.name}: {self.blocks(t)[k.name]} blocks < {need}")
        return out

    def extents(self, t) -> dict[tuple[str, str], tuple[int, ...]]:
        """Predicted buffer extents at an integer tile vector."""
        return {(k.name, b.name): tuple(e(k.clamp(b, t)) for e in b.extents)
                for k in self.kernels for b in k.buffers}

    def buffer_bytes(self, t) -> dict[tuple[str, str], int]:
        return {(k.name, b.name): b.itemsize * math.prod(e(k.clamp(b, t)) for e in b.extents)
                for k in self.kernels for b in k.buffers}

    def shared_bytes(self, t) -> dict[str, int]:
        """M(t) = Σ buffer sizes, per kernel."""
        bb = self.buffer_bytes(t)
        return {k.name: sum(bb[(k.name, b.name)] for b in k.buffers) for k in self.kernels}

    def volumes(self, t) -> dict[tuple[str, str], tuple[int, int]]:
        """(V_in, V_out) in elements per occurrence (upper bounds: boxes)."""
        out = {}
        for k in self.kernels:
            for b in k.buffers:
                tb = k.clamp(b, t)
                vi = math.prod(e(tb) for e in b.copy_in) if b.copy_in is not None else 0
                vo = math.prod(e(tb) for e in b.copy_out) if b.copy_out is not None else 0
                out[(k.name, b.name)] = (vi, vo)
        return out

    def tiles(self, k: KernelModel, t) -> list[int]:
        return [k.hi[j] // t[j] - k.lo[j] // t[j] + 1 for j in range(k.m + k.s)]

    def occurrences(self, t) -> dict[tuple[str, str], int]:
        """N of §4.3 per buffer: launches × tiles of the r_k enclosing tile loops."""
        return {(k.name, b.name): round(k.occurrences(b, self.tiles(k, t), t))
                for k in self.kernels for b in k.buffers}

    def threads(self, t) -> dict[str, int]:
        return {k.name: k.threads_at(t) for k in self.kernels}

    def blocks(self, t) -> dict[str, int]:
        return {k.name: math.prod(self.tiles(k, t)[:k.m]) for k in self.kernels}

    # -- relaxed (real-valued, log2 t) problem for SLSQP --
    def _relaxed(self, x: np.ndarray) -> tuple[float, list[float]]:
        t = tuple(float(v) for v in np.exp2(x))
        g = self.gpu
        cost = 0.0
        cons: list[float] = []
        for k in self.kernels:
            if not k.m:
                continue
            tiles = [(k.hi[j] - k.lo[j]) / t[j] + 1.0 for j in range(k.m + k.s)]
            logp = math.log2(k.fixed_threads) + sum(_softmin(math.log2(k.block[j]), x[j])
                                                    for j in range(k.m))
            P = 2.0 ** logp
            nbytes = 0.0
            # ⌈t/B⌉ relaxed to a smooth max(1, t/B)
            split = [2.0 ** -_softmin(0.0, math.log2(k.tied[j]) - x[j]) if j < len(k.tied)
                     and k.tied[j] else 1.0 for j in range(k.m)]
            for b in k.buffers:
                tb = k.clamp(b, t)
                nbytes += b.itemsize * math.prod(max(e.real(tb), 0.5) for e in b.extents)
                for out, sets in ((False, b.copy_in), (True, b.copy_out)):
                    if sets is not None:
                        fill = b.fill_out if out and b.fill_out is not None else b.fill
                        occ = fill * k.launches * math.prod(tiles[:k.r(b)]) * \
                            math.prod(split[j] for j in b.thread_tiles)
                        vol = math.prod(max(e.real(tb), 0.5) for e in sets)
                        cost += occ * (P * g.sync + vol * b.itemsize * g.per_byte / P)
            if k.buffers:
                cons.append(math.log2(self.m_up) - math.log2(nbytes))
            cons.append(logp - math.log2(g.p_low))
            cons.append(math.log2(g.max_threads) - logp)
            need = self.min_blocks.get(k.name, 0)
            if need:
                cons.append(sum(math.log2(v) for v in tiles[:k.m]) - math.log2(need))
        return math.log(max(cost, 1e-300)), cons


def _ceil_div(t, b: int):
    """⌈t/b⌉ of an int, a float or an array of them (b ≥ 1)."""
    if isinstance(t, np.ndarray):
        return np.ceil(t / b)
    return -(-t // b) if isinstance(t, int) else math.ceil(t / b)


def _softmin(a: float, b: float, k: float = 8.0) -> float:
    """Smooth min(a, b) (log-sum-exp), within 1/k of the true min."""
    lo = min(a, b)
    return lo - math.log2(2.0 ** (-k * (a - lo)) + 2.0 ** (-k * (b - lo))) / k


# ---- sampling the real planner -----------------------------------------------------

class _Recorder(_mapping._Mapper):
    """The mapping's own mapper, remembering each tiled band before it is tiled."""

    def __init__(self, scop, options):
        super().__init__(scop, options)
        self.bands: dict[str, tuple] = {}

    def parallel_kernel(self, node):
        self.bands[self.new_name()] = (node.band_get_partial_schedule(), node.get_domain(),
                                       node.get_prefix_schedule_union_map())
        return super().parallel_kernel(node)


class _SuperRecorder(_mapping._SuperMapper):
    """The superposition's own mapper (seed 003 §4.2), remembering per kernel what
    seed 000 §4.3's model needs: its domain and host prefix, the block loops
    ``Θ_out`` before they are tiled by ``TL_k``, the loop sub-tiled inside its thread
    groups, the thread axes tied to each block loop, its default sizes, and per
    thread-tile buffer (:meth:`_SuperMemory.plan_group`) the block loops whose tiles
    its thread tiles split and whether its copies sit inside the sub-tile loop."""

    def __init__(self, scop, plan, options):
        super().__init__(scop, plan, options)
        self.bands: dict[str, dict] = {}
        self._info: dict = {}
        self._chunk = None

    def kernel(self, node, k):
        name = f"{_mapping.MARK_PREFIX}{len(self.plans)}"
        domain = node.get_domain()
        plain = self.options
        self.options = plain.with_(tile=None, tile_levels=())
        defaults, _ = self.tiles_and_threads(k)
        self.options = plain
        self._info = {
            "domain": domain, "statements": list(k.statements),
            "host": node.get_prefix_schedule_union_map().intersect_domain(domain),
            "block": (self._mupa([{s: self._loop(b[s]) for s in k.statements}
                                  for b in k.block]) if k.block else None),
            "sub": {}, "bufs": {}, "tied": self.tied_axes(k),
            "default_block": self.default_block(k), "defaults": tuple(defaults)}
        node = super().kernel(node, k)
        self.bands[name] = self._info
        return node

    def thread_tiles(self, node, g):
        chunk = super().thread_tiles(node, g)
        self._chunk = chunk
        return chunk

    def thread_group(self, node, g):
        mem = self.memory
        n0 = len(mem.mem.buffers) if mem is not None else 0
        self._chunk = None
        free = self.free_loops(g)
        node = super().thread_group(node, g)
        if mem is None or self._chunk is None or len(mem.mem.buffers) == n0:
            return node
        sub = self._chunk.dim(isl.dim_type.set) > len(g.dims)
        tied = tuple(j for j, b in enumerate(self.kernel_block)
                     if any(all(b.get(s) == d[s] for s in g.statements) for d in g.dims))
        for b in mem.mem.buffers[n0:]:
            self._info["bufs"][b.name] = (tied, sub)
        if sub:
            self._info["sub"].update({s: lp for s, lp in free.items() if lp})
        return node


def _map(scop, sched, options):
    """What :func:`polymagic.mapping.map_schedule` does, keeping the recorder
    (:class:`_SuperRecorder` where the superposition maps the program)."""
    if _mapping._superposed(sched, options):
        mapper = _SuperRecorder(scop, sched.superposition, options)
        dom = mapper.domain().align_params(_mapping._mapped_param_space(scop))
        mapper.items(isl.Schedule.from_domain(dom).get_root().child(0),
                     sched.superposition.items, False)
        return mapper
    mapper = _Recorder(scop, options)
    root = sched.schedule.align_params(_mapping._mapped_param_space(scop)).get_root()
    if root.n_children():
        mapper.visit(root.child(0))
    return mapper


def _fix(s, sizes: dict):
    """Fix every parameter of a set to its size (0 for block/thread ids), drop them."""
    for pos in range(s.dim(isl.dim_type.param)):
        name = s.get_dim_name(isl.dim_type.param, pos)
        s = s.fix_val(isl.dim_type.param, pos, isl.Val(int(sizes.get(name, 0))))
    return s.project_out(isl.dim_type.param, 0, s.dim(isl.dim_type.param))


def _card(s: isl.Set) -> int:
    """Number of points of a parameter-free set: its box when it is one, else barvinok."""
    if s.is_empty():
        return 0
    n = s.dim(isl.dim_type.set)
    lo = [s.dim_min_val(d).to_python() for d in range(n)]
    hi = [s.dim_max_val(d).to_python() for d in range(n)]
    box = isl.Set("{ [%s] : %s }" % (", ".join(f"x{d}" for d in range(n)),
                                       " and ".join(f"{a} <= x{d} <= {b}" for d, (a, b)
                                                    in enumerate(zip(lo, hi))) or "1 = 1"))
    if s.reset_tuple_id().is_equal(box):
        return math.prod(b - a + 1 for a, b in zip(lo, hi))
    return int(s.count_val().to_python())


def _box_extents(rel: isl.Map) -> tuple[int, ...] | None:
    """Per-dimension extent of one block's elements, largest over every block (the
    deltas of two elements of one block, as Algorithm 2's bounding box does)."""
    d = rel.reverse().apply_range(rel).deltas()
    d = d.project_out(isl.dim_type.param, 0, d.dim(isl.dim_type.param))
    out = []
    for k in range(d.dim(isl.dim_type.set)):
        v = d.dim_max_val(k)
        if not v.is_int():
            return None
        out.append(int(v.to_python()) + 1)
    return tuple(out)


_WORK: tuple | None = None      # (scop, sched, options, sizes) for forked workers


def _sample(tile: tuple[int, ...], bands: bool = False, counts: bool = False) -> dict:
    """Run the planner at one tile vector; plain data only (crosses processes).
    Vector copies off: their row padding (16-byte pitch) is not affine in the tile
    sizes; the final plan adds it and re-checks M_up."""
    scop, sched, options, sizes = _WORK
    opts = options.with_(tile=tuple(tile), tile_levels=(tuple(tile),),
                         keep_register_buffers=True, vector=False)
    mapper = _map(scop, sched, opts)
    out: dict = {"tile": tuple(tile), "kernels": {}}
    superposed = isinstance(mapper, _SuperRecorder)
    for name, plan in mapper.plans.items():
        if not plan.members:
            continue
        mem = plan.memory
        info = mapper.bands[name] if superposed else None
        kd = {"m": len(plan.members), "s": len(plan.sub_tiles),
              "threads": math.prod(plan.block), "superposed": superposed,
              "dropped": any(" dropped: " in d for d in (mem.decisions if mem else [])),
              "buffers": {}}
        if superposed:
            kd["s"] = int(any(sub for _, sub in info["bufs"].values()))
            kd.update(_super_threads(info, options, kd["m"]))
        for b in (mem.buffers if mem else []):
            occ = occ_in = occ_out = None
            if counts:
                rel = b.copy_in if b.copy_in is not None else b.copy_out
                occ = _card(_fix(rel.domain(), sizes)) if rel is not None else None
                if superposed:
                    occ_in = occ if b.copy_in is not None else None
                    occ_out = (_card(_fix(b.copy_out.domain(), sizes))
                               if b.copy_out is not None else None)
            kd["buffers"][b.name] = {
                "array": b.array, "level": b.level,
                "itemsize": int(np.dtype(DTYPES[b.ctype]).itemsize),
                "extents": tuple(b.extents),
                "in": _box_extents(b.copy_in) if b.copy_in is not None else None,
                "out": _box_extents(b.copy_out) if b.copy_out is not None else None,
                "occ": occ, "occ_in": occ_in, "occ_out": occ_out}
            if superposed:
                tied, sub = info["bufs"].get(b.name, ((), False))
                kd["buffers"][b.name].update(
                    r=kd["m"] + (1 if sub else 0), tt=tied)
        if bands and superposed:
            kd.update(_super_band(scop, mapper, info, kd, sizes))
        elif bands:
            full, domain, host = mapper.bands[name]
            n = kd["m"] + kd["s"]
            rng = isl.UnionMap.from_multi_union_pw_aff(full).intersect_domain(domain).range()
            rng = _fix(isl.Set.from_union_set(rng).intersect_params(scop.context), sizes)
            if rng.is_empty():
                kd["lo"], kd["hi"] = (0,) * n, (-1,) * n
            else:
                kd["lo"] = tuple(rng.dim_min_val(j).to_python() for j in range(n))
                kd["hi"] = tuple(rng.dim_max_val(j).to_python() for j in range(n))
            hp = host.intersect_domain(domain).range()
            sets: list[isl.Set] = []
            hp.foreach_set(sets.append)
            kd["launches"] = (_card(_fix(sets[0].intersect_params(
                scop.context.align_params(sets[0].get_space())), sizes)) if sets else 0)
        out["kernels"][name] = kd
    return out


def _split_design(b: int) -> tuple[int, int, int]:
    """Base, step and held-out sizes of a block loop split into thread tiles of ``b``
    threads: where the thread tiles align with the block tiles (t | b or b | t), the
    held-out point at ``b`` itself (the extents are affine in ``min(t, b)``)."""
    if b >= 4:
        return (b // 4, b // 2, b)
    return (1, b, 2 * b) if b > 1 else (1, 2, 3)


def _tied_vars(scop, sched, options: Options) -> dict[int, int]:
    """Tile variables that some superposition kernel splits into thread tiles (a
    block loop its thread groups also run on a thread axis), with the fewest threads
    on such an axis."""
    mapper = _mapping._SuperMapper(scop, sched.superposition, options)
    out: dict[int, int] = {}
    for k in sched.superposition.kernels():
        blk = mapper.default_block(k)
        for j, axes in enumerate(mapper.tied_axes(k)):
            for a in axes:
                b = blk["xyz".index(a)]
                out[j] = min(out.get(j, b), b)
    return out


def _super_threads(info: dict, options: Options, m: int) -> dict:
    """Threads of a superposition kernel as the model's ``P = fixed · Π min(B_j, t_j)``
    (:meth:`_mapping._SuperMapper.tiles_and_threads`: without ``--block`` a block
    loop's tile caps the threads of the axis running the same loop), and per block
    loop the threads of that axis (its thread tiles).  ``caps`` None: a block loop
    on several thread axes, or an axis tied to several block loops (not modelled)."""
    blk = info["default_block"]
    tied = [0] * m
    caps: list[int] | None = [1] * m
    fixed = 1
    owners: dict[str, list[int]] = {}
    for j, axes in enumerate(info["tied"]):
        for a in axes:
            owners.setdefault(a, []).append(j)
        if axes:
            tied[j] = blk["xyz".index(axes[0])]
    if options.block:
        fixed = math.prod(blk)
    else:
        for a, n in zip("xyz", blk):
            js = sorted(set(owners.get(a, [])))
            if not js:
                fixed *= n
            elif len(js) == 1 and len(set(info["tied"][js[0]])) == 1:
                caps[js[0]] = n
            else:
                caps = None
                break
    return {"caps": tuple(caps) if caps is not None else None, "fixed": fixed,
            "tied": tuple(tied), "defaults": info["defaults"]}


def _super_band(scop, mapper, info: dict, kd: dict, sizes: dict) -> dict:
    """lo/hi of a superposition kernel's block loops ``Θ_out`` (and of the loop its
    thread groups sub-tile), and its launches (points of the host prefix)."""
    def bounds(mupa, dom) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        um = isl.UnionMap.from_multi_union_pw_aff(mupa).intersect_domain(dom)
        rng = um.range()
        if rng.is_empty():
            return None
        st = isl.Set.from_union_set(rng)
        st = _fix(st.intersect_params(scop.context.align_params(st.get_space())), sizes)
        if st.is_empty():
            return None
        n = st.dim(isl.dim_type.set)
        return (tuple(st.dim_min_val(j).to_python() for j in range(n)),
                tuple(st.dim_max_val(j).to_python() for j in range(n)))
    lo: tuple[int, ...] = ()
    hi: tuple[int, ...] = ()
    b = bounds(info["block"], info["domain"]) if info["block"] is not None else None
    lo, hi = b if b is not None else ((0,) * kd["m"], (-1,) * kd["m"])
    if kd["s"]:
        sub = info["sub"]
        dom = info["domain"].intersect(mapper._filter(list(sub)))
        b = bounds(mapper._mupa([sub]), dom)
        lo, hi = lo + (b[0] if b else (0,)), hi + (b[1] if b else (-1,))
    hp = info["host"].range()
    sets: list[isl.Set] = []
    hp.foreach_set(sets.append)
    launches = (_card(_fix(sets[0].intersect_params(
        scop.context.align_params(sets[0].get_space())), sizes)) if sets else 0)
    return {"lo": lo, "hi": hi, "launches": launches}


def _run_samples(points: list[tuple[int, ...]], flags: list[dict], workers: int) -> list[dict]:
    """The samples, in ``workers`` forked processes (the planner is isl-bound, one core
    each); in turn where fork is unavailable or unsafe (other threads: a Jupyter
    kernel's heartbeat and I/O threads)."""
    if (workers > 1 and len(points) > 1 and threading.active_count() == 1
            and "fork" in multiprocessing.get_all_start_methods()):
        try:
            with ProcessPoolExecutor(min(workers, len(points)),
                                     mp_context=multiprocessing.get_context("fork")) as ex:
                futs = [ex.submit(_sample, p, **f) for p, f in zip(points, flags)]
                return [f.result() for f in futs]
        except (OSError, RuntimeError):
            pass                                    # no processes here: run them in turn
    return [_sample(p, **f) for p, f in zip(points, flags)]


def _fit(points: list[tuple[int, ...]], values: list[int]) -> Affine:
    """The affine function through L+1 points (base, base + step·e_i)."""
    A = np.array([[1.0, *p] for p in points])
    sol = np.linalg.solve(A, np.array(values, dtype=float))
    fr = [Fraction(float(c)).limit_denominator(64) for c in sol]
    return Affine(fr[0], tuple(fr[1:]))


class FitError(Exception):
    """The planner's extents are not affine in the tile sizes (or changed shape)."""


def _fit_buffers(samples: list[dict], points: list[tuple[int, ...]], held: dict
                 ) -> list[KernelModel]:
    base = samples[0]["kernels"]
    kernels = []
    for name, kd in base.items():
        for smp in samples[1:] + [held]:
            other = smp["kernels"].get(name)
            if other is None or (other["m"], other["s"]) != (kd["m"], kd["s"]):
                raise FitError(f"{name}: the band's mapping changes with the tile sizes")
            if set(other["buffers"]) != set(kd["buffers"]):
                raise FitError(f"{name}: the planner buffers {sorted(kd['buffers'])} at "
                               f"{samples[0]['tile']} but {sorted(other['buffers'])} at "
                               f"{smp['tile']} (its decisions depend on the tile sizes)")
        bufs = []
        for bname, bd in kd["buffers"].items():
            per = [smp["kernels"][name]["buffers"][bname] for smp in samples]
            hb = held["kernels"][name]["buffers"][bname]
            for other in per + [hb]:
                if (other["level"], other["array"], other.get("r"), other.get("tt")) != \
                        (bd["level"], bd["array"], bd.get("r"), bd.get("tt")):
                    raise FitError(f"{name}: {bname} changes level with the tile sizes")
            fitted = {}
            for key in ("extents", "in", "out"):
                if bd[key] is None:
                    fitted[key] = None
                    continue
                if any(o[key] is None or len(o[key]) != len(bd[key]) for o in per + [hb]):
                    raise FitError(f"{name}: {bname}: {key} unbounded or of changing rank")
                affs = tuple(_fit(points, [o[key][d] for o in per])
                             for d in range(len(bd[key])))
                # a thread-tile buffer spans min(t_j, B_j) along a split block loop
                at = tuple(min(v, kd["tied"][j]) if j in (bd.get("tt") or ()) else v
                           for j, v in enumerate(held["tile"]))
                pred = tuple(a(at) for a in affs)
                if pred != tuple(hb[key]):
                    what = {"extents": "extents", "in": "copy-in box", "out": "copy-out box"}
                    raise FitError(
                        f"{name}: {bname}: {what[key]} not affine in the tile sizes: the "
                        f"fit predicts {list(pred)} at {held['tile']}, the planner gives "
                        f"{list(hb[key])}")
                fitted[key] = affs
            bufs.append(BufferModel(name, bname, bd["array"], bd["level"], bd["itemsize"],
                                    fitted["extents"], fitted["in"], fitted["out"],
                                    r=bd.get("r"), thread_tiles=tuple(bd.get("tt") or ())))
        kernels.append((name, kd, bufs))
    return kernels


def _blocks_of(options: Options, m: int) -> tuple[int, ...]:
    """B_j, threads of block-tile member j (outermost first), as mapping.tile_sizes."""
    blk = list(options.block or _mapping.DEFAULT_BLOCKS[m])
    blk = (blk + [1, 1, 1])[:3]
    return tuple(blk[m - 1 - j] for j in range(m))


def fit_model(scop, sched, options: Options, sizes: dict, gpu: GpuModel = H100,
              workers: int | None = None) -> tuple[TileModel, list[str]]:
    """Sample the real planner and fit M(t), V(t), N(t) (raises :class:`FitError`)."""
    global _WORK
    missing = [p for p in scop.size_params if p not in sizes]
    if missing:
        raise OptionsError(f"tile search: give the size of {', '.join(missing)} (--size)")
    notes: list[str] = []
    depth = max((s.domain.dim(isl.dim_type.set) for s in scop.statements), default=1)
    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    # the buffers' sizes do not depend on M_up: sample under the planner's own limit
    # so that no buffer is dropped at the sample points
    _WORK = (scop, sched, options.with_(shared_mem=STATIC_SHARED_LIMIT), sizes)
    superposed = _mapping._superposed(sched, options)
    tied = _tied_vars(scop, sched, options) if superposed else {}
    try:
        for scale in (8, 4):
            # base, step and held-out size per variable; a block loop split into thread
            # tiles (superposition) is sampled where they align (_split_design)
            design = [_split_design(tied[j]) if j in tied else
                      (scale, 2 * scale, scale + scale // 2 * (j + 1))
                      for j in range(max(depth, 1))]
            # the superposition's copies are also counted at the base point: its N
            # (step loops, thread tiles) is calibrated at one point, checked at another
            first = _sample(tuple(d[0] for d in design), bands=True, counts=superposed)
            ks = first["kernels"]
            if not ks:
                raise FitError("no tiled kernel: nothing to search")
            L = max(kd["m"] + kd["s"] for kd in ks.values())
            base = tuple(d[0] for d in design[:L])
            first["tile"] = base
            pts = [base] + [tuple(design[i][1] if i == j else design[i][0] for i in range(L))
                            for j in range(L)]
            held_pt = tuple(d[2] for d in design[:L])
            rest = _run_samples(pts[1:] + [held_pt], [{}] * L + [{"counts": True}], workers)
            samples, held = [first] + rest[:-1], rest[-1]
            if any(kd["dropped"] for smp in samples + [held] for kd in smp["kernels"].values()):
                notes.append(f"sampling at tiles of {scale}: buffers over the planner's "
                             "limit were dropped; sampling at smaller tiles")
                continue
            break
        else:
            raise FitError("buffers are dropped even at the smallest sampled tiles")
        fitted = _fit_buffers(samples, pts, held)
    finally:
        _WORK = None
    kernels = []
    for name, kd, bufs in fitted:
        if kd["superposed"]:
            if kd["caps"] is None:
                raise FitError(f"{name}: a block loop runs on several thread axes: its "
                               "threads are not modelled")
            km = KernelModel(name, kd["m"], kd["s"], kd["caps"], kd["lo"], kd["hi"],
                             kd["launches"], bufs, kd["fixed"], kd["tied"], kd["defaults"],
                             True, bool(options.block))
        else:
            km = KernelModel(name, kd["m"], kd["s"], _blocks_of(options, kd["m"]), kd["lo"],
                             kd["hi"], kd["launches"], bufs)
        hk = held["kernels"][name]
        if km.threads_at(held["tile"]) != hk["threads"]:
            raise FitError(f"{name}: {hk['threads']} threads at {held['tile']}, the model "
                           f"expects {km.threads_at(held['tile'])}")
        kernels.append(km)
    m_up = min(options.shared_mem, STATIC_SHARED_LIMIT)
    model = TileModel(L, kernels, gpu, m_up, dict(sizes))
    occ = model.occurrences(held["tile"])
    for k in kernels:
        for b in k.buffers:
            got = held["kernels"][k.name]["buffers"][b.name]["occ"]
            want = occ[(k.name, b.name)]
            if got is None:
                continue
            if k.superposed:
                notes += _calibrate(model, k, b, held["tile"], held, samples[0])
                continue
            if got > want:
                raise FitError(f"{k.name}: {b.name}: the planner copies {got} times at "
                               f"{held['tile']}, the model counts {want}")
            if got < want:
                b.fill = got / want
                notes.append(f"{k.name}: {b.name}: the planner copies {got} times at "
                             f"{held['tile']}, launches × tiles give {want} (non-rectangular "
                             f"tile space): N scaled by {b.fill:.3g}")
    model.min_blocks.update(_min_blocks(model))
    return model, notes


#: relative error of a superposition buffer's N at the base sample point past which the
#: model is refused (its thread tiles need not align with the block tiles: ⌈t/B⌉ is exact
#: only when B divides t or t ≤ B)
SUPER_COUNT_TOLERANCE = 0.25


def _calibrate(model: TileModel, k: KernelModel, b: BufferModel, tile: tuple[int, ...],
               held: dict, base: dict) -> list[str]:
    """N of a superposition buffer's copy-in and copy-out (§4.3's sums over I and O):
    launches × block tiles × thread tiles per block tile
    (:meth:`KernelModel.occurrences`), scaled so that it equals the planner's count
    at the held-out ``tile`` (the step loops inside the kernel and the thread tiles of
    thread loops that are not block loops are constant in the tile sizes), and
    compared with the planner's count at the base sample point.  Where the two
    disagree by more than :data:`SUPER_COUNT_TOLERANCE` (a copy-in skipped in a
    thread's first sub-tile, thread tiles not aligned with the block tiles) the
    larger ratio is kept, so the model over- rather than under-estimates N; the notes
    say so."""
    notes = []
    hb = held["kernels"][k.name]["buffers"][b.name]
    bb = base["kernels"][k.name]["buffers"][b.name]
    for out in (False, True):
        key = "occ_out" if out else "occ_in"
        got, got0 = hb.get(key), bb.get(key)
        if got is None:
            continue
        want = k.occurrences(b, model.tiles(k, tile), tile, out) / \
            ((b.fill_out if out and b.fill_out is not None else b.fill) or 1)
        want0 = k.occurrences(b, model.tiles(k, base["tile"]), base["tile"], out) / \
            ((b.fill_out if out and b.fill_out is not None else b.fill) or 1)
        ratios = [g / w for g, w in ((got, want), (got0, want0)) if g is not None and w]
        fill = ratios[0] if ratios else 1.0
        if len(ratios) == 2 and abs(ratios[1] - ratios[0]) > \
                SUPER_COUNT_TOLERANCE * max(ratios):
            fill = max(ratios)
            notes.append(f"{k.name}: {b.name}: copy-{'out' if out else 'in'} counted "
                         f"{got0} times at {base['tile']} and {got} at {tile}: N over-"
                         "estimated where they differ (not a product of tile counts)")
        if out:
            b.fill_out = fill
        else:
            b.fill = fill
    return notes


def _min_blocks(model: TileModel) -> dict[str, int]:
    """Blocks each kernel's grid should have: the SMs, or as many as P_low-thread
    tiles allow (seed 000 §4.1: outer processes a multiple of the processors)."""
    out = {}
    for k in model.kernels:
        if k.m and model.gpu.min_blocks:
            # a superposition kernel's thread loops that are not block loops give
            # threads too (fixed_threads): tiles of one point may still fill a warp,
            # but there are no more blocks than points of the block loops
            points = math.prod(k.extents[:k.m])
            most = min(points, points * k.fixed_threads // model.gpu.p_low)
            out[k.name] = max(1, min(model.gpu.min_blocks, most))
    return out


# ---- search ------------------------------------------------------------------------

@dataclass
class Candidate:
    """One integer tile vector evaluated exactly (a row of the heat-map table)."""
    tile: tuple[int, ...]
    cost: float              # predicted cycles (seed 000 §4.3), inf when unknown
    shared_bytes: int        # largest M(t) over the kernels
    threads: int             # fewest threads per block over the kernels
    feasible: bool           # every constraint, min_blocks included
    source: str              # 'default', 'grid', 'slsqp', 'round', 'neighbour'


@dataclass
class TileSearchResult:
    """The chosen ``--tile`` vector and how it was found."""
    tile: tuple[int, ...]                   # chosen sizes: block-tile members, then sub-tiles
    searched: bool                          # False: defaults kept (see ``reason``)
    reason: str                             # why these sizes, in one line
    cost: float | None                      # predicted cost of ``tile`` (cycles)
    default_tile: tuple[int, ...]
    default_cost: float | None
    shared_bytes: dict[str, int]            # per kernel, at ``tile``
    buffer_bytes: dict[tuple[str, str], int]
    relaxed: list[tuple[float, ...]] = field(default_factory=list)   # SLSQP optima (real t)
    candidates: list[Candidate] = field(default_factory=list)
    model: TileModel | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def options(self, options: Options) -> Options:
        """``options`` with the chosen tile sizes."""
        return options.with_(tile=self.tile, tile_levels=(self.tile,),
                             keep_register_buffers=True, vector=False)

    def table(self) -> list[dict]:
        """Every evaluated candidate as plain rows (for a heat map)."""
        return [{"tile": c.tile, "cost": c.cost, "shared_bytes": c.shared_bytes,
                 "threads": c.threads, "feasible": c.feasible, "source": c.source}
                for c in self.candidates]

    def summary(self) -> str:
        if not self.searched:
            return (f"tile search kept the defaults --tile {','.join(map(str, self.tile))}: "
                    f"{self.reason}")
        dflt = ",".join(map(str, self.default_tile))
        if self.model is not None and self.model.violations(self.default_tile):
            gain = f"; the defaults {dflt} break: {self.model.violations(self.default_tile)[0]}"
        elif self.tile == self.default_tile:
            gain = "; the defaults are the model's optimum"
        elif self.default_cost and self.cost:
            gain = f", {self.default_cost / self.cost:.2f}x less than the defaults {dflt}"
        else:
            gain = ""
        mem = max(self.shared_bytes.values(), default=0)
        return (f"tile search (seed 000 §4.3): --tile {','.join(map(str, self.tile))}, "
                f"predicted data movement {self.cost:.3g} cycles{gain}; "
                f"{mem} B of shared memory per block")


def _default_tile(m: int, s: int) -> tuple[int, ...]:
    """The sizes the mapping uses without --tile for a band of m + s members."""
    return tuple(_mapping.DEFAULT_TILES[m]) + (_mapping.DEFAULT_SUB_TILE,) * s


def _nice(v: int, up: int) -> list[int]:
    """Powers of two and multiples of 32 next to v (innermost member: coalescing)."""
    out = set()
    if v >= 1:
        p = 1 << max(0, int(math.floor(math.log2(v))))
        out |= {p, p * 2}
    if v >= 32:
        out |= {v // 32 * 32, (v + 31) // 32 * 32}
    if up < 32 or up & (up - 1) == 0:
        out.add(up)
    return sorted(x for x in out if 1 <= x <= up) or [min(up, 32)]


def _roundness(tile: tuple[int, ...]) -> int:
    """How round a tile vector is: trailing zero bits of each size, up to 5 (32)."""
    return sum(min((v & -v).bit_length() - 1, 5) for v in tile)


def search_schedule(scop, sched, options: Options, sizes: dict, gpu: GpuModel = H100,
                    starts: int = 6, workers: int | None = None, seed: int = 0,
                    prefer_round: float = 0.02, model: TileModel | None = None
                    ) -> TileSearchResult:
    """Seed 000 §4.3 on a compiled schedule (see :func:`search_tile_sizes`).

    ``model``: a model fitted earlier for the same source, options and sizes (e.g.
    for a sweep over M_up); only ``options.shared_mem`` and ``gpu`` may differ."""
    from scipy.optimize import minimize
    t0 = time.perf_counter()
    try:
        if model is not None:
            model = dataclasses.replace(
                model, gpu=gpu, m_up=min(options.shared_mem, STATIC_SHARED_LIMIT),
                min_blocks={})
            model.min_blocks.update(_min_blocks(model))
            notes = ["model reused: the planner was not sampled again"]
        else:
            sizes = {k: v for k, v in sizes.items() if k in scop.size_params}
            model, notes = fit_model(scop, sched, options, sizes, gpu, workers)
    except FitError as e:
        dflt = _fallback_default(scop, sched, options)
        return TileSearchResult(dflt, False, str(e), None, dflt, None,
                                {}, {}, seconds=time.perf_counter() - t0)
    tiled = [k for k in model.kernels if k.m]
    big = max(tiled, key=lambda k: k.m + k.s)
    dflt = (tuple(big.defaults) + (_mapping.DEFAULT_SUB_TILE,) * big.s if big.defaults
            else _default_tile(big.m, big.s))
    dflt = tuple(dflt[j] if j < len(dflt) else _mapping.DEFAULT_SUB_TILE
                 for j in range(model.n_vars))
    if not any(k.buffers for k in model.kernels):
        return TileSearchResult(dflt, False, "no shared-memory buffers, "
                                "so the §4.3 data-movement cost does not depend on the tiles",
                                None, dflt, None, model.shared_bytes(dflt),
                                model.buffer_bytes(dflt), model=model, notes=notes,
                                seconds=time.perf_counter() - t0)
    L = model.n_vars
    up = model.upper
    inner = sorted({k.m - 1 for k in tiled})          # innermost block member: x axis
    seen: dict[tuple[int, ...], Candidate] = {}

    def evaluate(rows: list[tuple[int, ...]], source: str):
        rows = [r for r in dict.fromkeys(tuple(int(v) for v in r) for r in rows)
                if r not in seen]
        if not rows:
            return
        res = model._eval(np.array(rows))
        for i, r in enumerate(rows):
            seen[r] = Candidate(r, float(res["cost"][i]), int(res["bytes"][i]),
                                int(res["threads"][i]) if np.isfinite(res["threads"][i]) else 0,
                                bool(res["ok"][i] and res["blocks_ok"][i]), source)

    evaluate([dflt], "default")
    # powers-of-two grid (the heat map's backbone, and starting points)
    axes = [[1 << e for e in range(0, min(int(math.log2(u)), 10) + 1)] for u in up]
    while math.prod(len(a) for a in axes) > 20000:
        axes = [a[::2] if len(a) > 4 else a for a in axes]
    evaluate(list(itertools.product(*axes)), "grid")

    # the relaxed problem, from several starting points
    bounds = [(0.0, math.log2(u)) for u in up]
    rng = np.random.default_rng(seed)
    x0s = [np.clip(np.log2(np.array(dflt, float)), [b[0] for b in bounds], [b[1] for b in bounds])]
    grid_ok = sorted((c for c in seen.values() if c.feasible), key=lambda c: c.cost)
    x0s += [np.log2(np.array(c.tile, float)) for c in grid_ok[:2]]
    x0s.append(np.array([b[1] / 2 for b in bounds]))
    while len(x0s) < starts:
        x0s.append(np.array([rng.uniform(*b) for b in bounds]))
    relaxed = []
    for x0 in x0s:
        try:
            r = minimize(lambda x: model._relaxed(x)[0], x0, method="SLSQP", bounds=bounds,
                         constraints=[{"type": "ineq",
                                       "fun": lambda x: np.array(model._relaxed(x)[1])}],
                         options={"maxiter": 200, "ftol": 1e-10})
        except (ValueError, ArithmeticError):
            continue
        t = tuple(float(v) for v in np.exp2(r.x))
        if min(model._relaxed(r.x)[1], default=0) >= -1e-3:
            relaxed.append(t)
            # round: floor/ceil and powers of two; the innermost member to nice sizes
            choices = []
            for j, v in enumerate(t):
                opts_j = _nice(int(round(v)), up[j]) if j in inner else sorted(
                    {max(1, min(up[j], x)) for x in (math.floor(v), math.ceil(v),
                                                     1 << int(math.floor(math.log2(max(v, 1)))),
                                                     1 << int(math.ceil(math.log2(max(v, 1)))))})
                choices.append(opts_j)
            evaluate(list(itertools.product(*choices)), "round")

    def best(require_blocks: bool = True, tol: float = 0.0) -> Candidate | None:
        ok = [c for c in seen.values() if c.feasible or
              (not require_blocks and model.feasible(c.tile, with_min_blocks=False))]
        ok = [c for c in ok if all(c.tile[j] in _nice(c.tile[j], up[j]) for j in inner)] or ok
        top = min(ok, key=lambda c: (c.cost, c.tile), default=None)
        if top is None or not tol:
            return top
        # within tol of the cheapest, the roundest sizes (powers of two) win
        near = [c for c in ok if c.cost <= top.cost * (1 + tol)]
        return min(near, key=lambda c: (-_roundness(c.tile), c.cost, c.tile))

    cur = best()
    relax_blocks = cur is None
    if relax_blocks:
        cur = best(require_blocks=False)
        if cur is not None:
            notes.append("no tiles give every SM a block at these sizes: min_blocks dropped")
            model.min_blocks.clear()
            for c in seen.values():
                c.feasible = model.feasible(c.tile)
    if cur is None:
        return TileSearchResult(dflt, False, "no tile sizes satisfy the "
                                f"constraints (M_up = {model.m_up} B, P_low = {gpu.p_low})",
                                None, dflt, seen[dflt].cost, model.shared_bytes(dflt),
                                model.buffer_bytes(dflt), relaxed, list(seen.values()), model,
                                notes, time.perf_counter() - t0)
    # integer neighbourhood: steps of ±1, ±2, ±4 ... per member (nice sizes innermost)
    for _ in range(50):
        moves = []
        for j in range(L):
            if j in inner:
                for v in _nice(cur.tile[j], up[j]) + [cur.tile[j] // 2, cur.tile[j] * 2,
                                                       cur.tile[j] - 32, cur.tile[j] + 32]:
                    if 1 <= v <= up[j] and v in _nice(v, up[j]):
                        moves.append(cur.tile[:j] + (v,) + cur.tile[j + 1:])
            else:
                step = 1
                while step <= up[j]:
                    for v in (cur.tile[j] - step, cur.tile[j] + step):
                        if 1 <= v <= up[j]:
                            moves.append(cur.tile[:j] + (v,) + cur.tile[j + 1:])
                    step *= 2
        evaluate(moves, "neighbour")
        nxt = best()
        if nxt is None or nxt.tile == cur.tile:
            break
        cur = nxt
    cur = best(tol=prefer_round) or cur
    chosen = cur.tile
    return TileSearchResult(
        chosen, True,
        f"seed 000 §4.3 model fitted to the planner; M_up = {model.m_up} B, "
        f"P_low = {gpu.p_low}, {gpu.name}",
        cur.cost, dflt, seen[dflt].cost if dflt in seen else model.cost(dflt),
        model.shared_bytes(chosen), model.buffer_bytes(chosen), relaxed,
        list(seen.values()), model, notes, time.perf_counter() - t0)


def _fallback_default(scop, sched, options: Options) -> tuple[int, ...]:
    """Default sizes of the largest tiled band, from a plain mapping (no planning)."""
    try:
        mapper = _map(scop, sched, options.with_(tile=None, tile_levels=(),
                                                    keep_register_buffers=True, vector=False))
        ms = [(len(p.members), len(p.sub_tiles)) for p in mapper.plans.values() if p.members]
        if isinstance(mapper, _SuperRecorder) and mapper.bands:
            info = max(mapper.bands.values(), key=lambda i: len(i["defaults"]))
            if info["defaults"]:
                return tuple(info["defaults"])
    except Exception:          # noqa: BLE001 - the defaults are only a fallback
        ms = []
    if not ms:
        return tuple(_mapping.DEFAULT_TILES[2])
    return _default_tile(*max(ms, key=sum))


def search_tile_sizes(source: str, options: Options, sizes: dict[str, int] | None = None,
                      gpu: GpuModel = H100, language: str = "c", **kw) -> TileSearchResult:
    """Seed 000 §4.3's tile-size search for one C function.

    ``sizes`` are the run's values of the size parameters (default:
    ``options.sizes``); ``options.shared_mem`` is M_up (capped at 48 KB, the
    planner's static limit); ``options.block`` fixes the threads per block.
    Returns the chosen ``--tile`` vector (block-tile members, then sub-tile members),
    its predicted cost and buffer sizes, and every evaluated candidate.  When the
    planner's sizes are not affine in the tile sizes, the defaults are kept and
    ``reason`` says why.  Keyword arguments go to :func:`search_schedule` (``model=``
    reuses an earlier result's model: no parsing, no sampling).
    """
    from ..deps import compute_dependences
    from ..frontend import parse
    from ..options import DependenceOptions, ScheduleOptions
    from ..schedule import compute_schedule
    sizes = dict(options.sizes if sizes is None else sizes)
    if kw.get("model") is not None:
        return search_schedule(None, None, options, sizes, gpu, **kw)
    scop = parse(source, language)
    # the options' mapping: where the superposition (seed 003) maps the program, its
    # block tiles TL_k are searched
    sched = compute_schedule(scop, compute_dependences(scop, DependenceOptions.of(options)),
                             ScheduleOptions.of(options))
    return search_schedule(scop, sched, options, sizes, gpu, **kw)


__all__ = ["GpuModel", "H100", "Affine", "BufferModel", "KernelModel", "TileModel",
           "Candidate", "TileSearchResult", "FitError", "fit_model", "search_schedule",
           "search_tile_sizes"]
