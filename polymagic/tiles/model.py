"""Seed 000 §4.3's cost model of tile sizes (Baskaran et al., PPoPP'08), fitted to
the real planner by :mod:`.sampling` and minimised by :mod:`.search`.

The model: per tiled kernel, each planned buffer's extents and the boxes of one
block's copy-in and copy-out sets as affine functions of the tile sizes (§4.2), the
occurrence counts ``N`` (launches × tiles of the ``r_k`` enclosing tile loops), the
threads per block ``P``; the cost (§4.3)::

    Σ_{k∈I} N_k · (P·S + V_k^in ·L/P) + Σ_{k∈O} N_k · (P·S + V_k^out·L/P)

under ``Σ_k M_k ≤ M_up`` and ``P_low ≤ P ≤ 1024`` (and, beyond the paper, a grid
that covers the SMs: :func:`min_blocks`).  Evaluated exactly on integer tile
vectors (vectorised) and relaxed to real ``log2 t`` for SLSQP.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..names import strip_generated


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
    * ``min_blocks``: 132 SMs (see the module docstring; 0 disables it).  The tile
      search sets it from :attr:`CompileOptions.device_sms`, the one place the
      target's multiprocessor count is given (the default tiles' grid fill reads it
      too).
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

    def occurrences(self, b: BufferModel, tiles: list, t, out: bool = False
                    ) -> "float | np.ndarray":
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
            # in words (issue 20), naming the kernel as the reports do (kernel0)
            name = strip_generated(k.name)
            for j in k.split_vars():
                if not k.aligned(j, t[j]):
                    out.append(f"{name}: t{j}={t[j]} splits unevenly into thread tiles "
                               f"of {k.tied[j]}")
            if sb[k.name] > self.m_up:
                out.append(f"{name}: its shared-memory buffers need {sb[k.name]} B, more "
                           f"than the {self.m_up} B a block may use (M_up, --shared-mem)")
            p = self.threads(t)[k.name]
            if p < g.p_low:
                out.append(f"{name}: {p} threads per block, fewer than one warp of "
                           f"{g.p_low} (P_low)")
            if p > g.max_threads:
                out.append(f"{name}: {p} threads per block, more than {g.max_threads}")
            need = self.min_blocks.get(k.name, 0)
            blocks = self.blocks(t)[k.name]
            if need and blocks < need:
                idle = max(g.min_blocks - blocks, 0)
                out.append(f"{name}: {blocks} thread blocks would leave {idle} of the GPU's "
                           f"{g.min_blocks} multiprocessors idle" if idle else
                           f"{name}: {blocks} thread blocks, fewer than the {need} the "
                           "sizes allow")
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


#: the share of the SMs a grid must give a block to count as filling the GPU: 95 %
#: (126 of 132) rather than all, so that power-of-two tiles qualify (gemm at N = 128:
#: 8x16 tiles give 128 blocks; demanding 132 chose 15x8 tiles, 144 blocks, issue 20)
FILL = 0.95


def min_blocks(model: TileModel) -> dict[str, int]:
    """Blocks each kernel's grid should have: :data:`FILL` of the SMs, or as many as
    P_low-thread tiles allow (seed 000 §4.1: outer processes a multiple of the
    processors)."""
    out = {}
    for k in model.kernels:
        if k.m and model.gpu.min_blocks:
            # a superposition kernel's thread loops that are not block loops give
            # threads too (fixed_threads): tiles of one point may still fill a warp,
            # but there are no more blocks than points of the block loops
            points = math.prod(k.extents[:k.m])
            most = min(points, points * k.fixed_threads // model.gpu.p_low)
            out[k.name] = max(1, min(math.ceil(FILL * model.gpu.min_blocks), most))
    return out
