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
  (:mod:`.sampling`; the model itself is :mod:`.model`.)
* ``t`` is the ``--tile`` vector: the block-tile members of each kernel's band,
  then its sub-tile (sequential) members, outermost first
  (``SingleMapper.tile_sizes``, ``SingleMapper.sub_tile_sizes`` in
  :mod:`polymagic.mapping.single`); one vector serves every kernel, as ``--tile``
  does.
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
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..mapping import DEFAULT_SUB_TILE
from ..notes import Note, Stage
from ..options import CompileOptions
from ..schedule import ScheduleResult
from ..scop import Scop
from ..memory.plan import STATIC_SHARED_LIMIT
from .model import H100, GpuModel, TileModel, min_blocks
from .sampling import FitError, default_tile, fallback_default, fit_model


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
    notes: list[Note] = field(default_factory=list)
    seconds: float = 0.0

    def options(self, options: CompileOptions) -> CompileOptions:
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
            gain = (f"; not the defaults {dflt}, because "
                    f"{self.model.violations(self.default_tile)[0]}")
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


def search_schedule(scop: Scop, sched: ScheduleResult, options: CompileOptions, sizes: dict,
                    gpu: GpuModel = H100,
                    starts: int = 6, workers: int | None = None, seed: int = 0,
                    prefer_round: float = 0.02, model: TileModel | None = None
                    ) -> TileSearchResult:
    """Seed 000 §4.3 on a compiled schedule (see :func:`search_tile_sizes`).

    ``model``: a model fitted earlier for the same source, options and sizes (e.g.
    for a sweep over M_up); only ``options.shared_mem`` and ``gpu`` may differ."""
    from scipy.optimize import minimize
    t0 = time.perf_counter()
    gpu = dataclasses.replace(gpu, min_blocks=options.device_sms)
    try:
        if model is not None:
            model = dataclasses.replace(
                model, gpu=gpu, m_up=min(options.shared_mem, STATIC_SHARED_LIMIT),
                min_blocks={})
            model.min_blocks.update(min_blocks(model))
            notes = [Note(Stage.TILES, "model reused: the planner was not sampled again",
                          kind="info")]
        else:
            sizes = {k: v for k, v in sizes.items() if k in scop.size_params}
            model, notes = fit_model(scop, sched, options, sizes, gpu, workers)
    except FitError as e:
        dflt = fallback_default(scop, sched, options)
        return TileSearchResult(dflt, False, str(e), None, dflt, None,
                                {}, {}, seconds=time.perf_counter() - t0)
    tiled = [k for k in model.kernels if k.m]
    big = max(tiled, key=lambda k: k.m + k.s)
    dflt = (tuple(big.defaults) + (DEFAULT_SUB_TILE,) * big.s if big.defaults
            else default_tile(big.m, big.s))
    dflt = tuple(dflt[j] if j < len(dflt) else DEFAULT_SUB_TILE
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
            notes.append(Note(Stage.TILES, "no tiles give every SM a block at these sizes: "
                              "min_blocks dropped", kind="fallback"))
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


def search_tile_sizes(scop: Scop, sched: ScheduleResult, options: CompileOptions,
                      sizes: dict[str, int] | None = None, gpu: GpuModel = H100,
                      **kw) -> TileSearchResult:
    """Seed 000 §4.3's tile-size search for one scheduled function (``sched``, the
    schedule of ``scop`` for ``options``: where the superposition, seed 003, maps
    the program, its block tiles TL_k are searched).

    ``sizes`` are the run's values of the size parameters (default:
    ``options.sizes``); ``options.shared_mem`` is M_up (capped at 48 KB, the
    planner's static limit); ``options.block`` fixes the threads per block.
    Returns the chosen ``--tile`` vector (block-tile members, then sub-tile members),
    its predicted cost and buffer sizes, and every evaluated candidate.  When the
    planner's sizes are not affine in the tile sizes, the defaults are kept and
    ``reason`` says why.  Keyword arguments go to :func:`search_schedule` (``model=``
    reuses an earlier result's model: no sampling).
    """
    sizes = dict(options.sizes if sizes is None else sizes)
    return search_schedule(scop, sched, options, sizes, gpu, **kw)


__all__ = ["Candidate", "TileSearchResult", "search_schedule", "search_tile_sizes"]
