"""The default mapping of an in-place recurrence, chosen by a cost MODEL (issue 16, item 6).

isl schedules an in-place recurrence (1-d SOR ``A[i] = (A[i-1] + A[i+1])/2`` in a
time loop, Gauss-Seidel, seidel-2d) as a skewed *wavefront*: an outer sequential
loop such as ``2k + i`` whose every value holds a few parallel points.  The single
mapping runs it on the host, one launch per wavefront value (1-d SOR, T=16,
N=512: 541 launches of at most 16 threads).  Three mappings are possible:

* ``wavefront`` — the host loop (the mapping without this module);
* ``block`` — the wavefront loop inside one block of one kernel, its data
  localised in shared memory along it (seed 001, Größlinger CC 2009, §4 and §5:
  "our experiments use only one multiprocessor at a time"; ``--localise LOOP``,
  :mod:`polymagic.schedule.timeblock`);
* ``tiles`` — time-skewed tiles launched once per tile wavefront
  (``--time-tiling``, issue 5), where isl finds a permutable time band.

This is a **model**, not a measurement: no candidate is compiled to be costed.
Its figures come from the schedule and the Scop at the sizes (barvinok counts,
:func:`polymagic.memory.counts.count_points`): launches are wavefront values,
global loads the counting rule of :mod:`polymagic.memory.counts` (an unbuffered
reference loads once per statement instance; a localised array once per element,
seed 001 §4.2), and the time of a candidate is

    launches · 3 µs                                   (issue 16: ≈ 3 µs per launch)
  + max(sequential steps, work / threads) · cycles per step / clock
  + bytes moved / DRAM bandwidth

where ``threads`` is what the candidate can run at once: the whole GPU for the
wavefront and the tiles (132 SMs · 2048 threads), one block of at most 1024
threads for ``block`` (the parallelism it gives up).  Per step a point costs one
global-memory latency (≈ 500 cycles on Hopper, the figure of
:class:`polymagic.tiles.model.GpuModel`) unless its data is in shared memory
(≈ 30 cycles) plus a barrier (≈ 40 cycles).  The cheapest candidate wins; a tie
keeps the host wavefront.  Without the sizes the model counts at :data:`MODEL_SIZE`
and leaves the time tiles out (isl takes seconds to generate their code).  Explicit
options always win: ``--localise``,
``--no-localise``, ``--time-tiling``, ``--tile auto`` and ``--device-mem`` (launches
split to fit device memory: a single block cannot be) skip the model, and
:attr:`CompileOptions.recurrence` (a hidden policy) forces a candidate.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping

import islpy as isl

from ..isl_util import TimedOut, has_parallelism, in_child, leading_coincident
from ..mapping.tree import member_text
from ..memory.counts import count_points
from ..notes import Note, Stage
from ..options import CompileOptions
from ..schedule import ScheduleResult
from ..scop import Scop, buffer_bytes

#: seconds per kernel launch on a GPU (issue 16's figure)
LAUNCH_SECONDS = 3e-6
#: SM clock (H100 SXM5 boost, as :data:`polymagic.tiles.model.H100`)
CLOCK_HZ = 1.98e9
#: threads the whole GPU runs at once: 132 SMs x 2048 resident threads
GPU_THREADS = 132 * 2048
#: most threads of one block
BLOCK_THREADS_MAX = 1024
#: cycles of a dependent global-memory access (HBM3, :class:`polymagic.tiles.model.GpuModel`)
GLOBAL_CYCLES = 500
#: cycles of a shared-memory access
SHARED_CYCLES = 30
#: cycles of a __syncthreads() between two steps of one block
BARRIER_CYCLES = 40
#: DRAM bandwidth, bytes per second (H100 SXM5 HBM3)
DRAM_BYTES_PER_S = 3.35e12
#: the value of every size parameter the model is evaluated at when the sizes are
#: not given (the code then does not depend on them; as
#: :data:`polymagic.memory.localcode.AUTO_SIZE`)
MODEL_SIZE = 256
#: shared memory the one-block kernel may localise into (bytes)
LOCAL_BYTES = 48 * 1024
#: the time tiles the ``tiles`` candidate is costed (and compiled) with: 4 time steps,
#: 32 points per spatial member (``--time-tiling 4``)
TIME_TILE = 4
#: seconds isl's scheduler may take to find the time band of the ``tiles`` candidate
#: (10-150 ms on the examples)
TILES_SECONDS = 2.0
CANDIDATES = ("wavefront", "block", "tiles")


@dataclass(frozen=True)
class Candidate:
    """One mapping of the recurrence with the model's figures."""
    name: str                    # wavefront | block | tiles
    launches: int
    loads: int                   # global element loads
    stores: int                  # global element stores
    seconds: float               # the model's time
    #: one block: its data fits in shared memory (localised); tiles: the tile sizes
    localised: bool = False
    tiles: tuple[int, ...] = ()

    def describe(self, loop: str, iterator: str) -> str:
        """The candidate in words, with its figures."""
        what = {"wavefront": f"a host wavefront over {loop}",
                "block": (f"one block running {loop} in the kernel, its data in shared memory "
                          f"(seed 001 localisation, the whole loop as one window)"
                          if self.localised
                          else f"one block running {loop} in the kernel (data too large to "
                               "localise, or sizes not given)"),
                "tiles": f"time tiles {','.join(map(str, self.tiles))} (--time-tiling)"}
        return (f"{what[self.name]}: {self.launches} launch{'es' if self.launches != 1 else ''}"
                f", {self.loads:,} global loads (model {_ms(self.seconds)})")


@dataclass(frozen=True)
class RecurrenceChoice:
    """The model's decision for a host wavefront loop (a typed field of
    :class:`polymagic.compiler.Compiled`: code reads :attr:`chosen`, never the note)."""
    loop: str                    # the wavefront loop as text ("2k + i")
    iterator: str                # its iterator ``--localise`` names ("k")
    chosen: str                  # wavefront | block | tiles
    candidates: tuple[Candidate, ...]
    #: the sizes the model was evaluated at
    sizes: tuple[tuple[str, int], ...]
    #: the sizes were the user's (the code then depends on them), not :data:`MODEL_SIZE`
    at_given_sizes: bool
    #: forced by :attr:`CompileOptions.recurrence` instead of chosen by the model
    forced: bool = False
    #: a candidate the model preferred that could not be built (why), then the next one
    fallback: str | None = None

    def candidate(self, name: str) -> Candidate | None:
        return next((c for c in self.candidates if c.name == name), None)

    @property
    def choice(self) -> Candidate:
        return self.candidate(self.chosen)

    def options(self, options: CompileOptions) -> CompileOptions:
        """The compile options that build the chosen candidate."""
        c = self.choice
        if c.name == "block":
            return options.with_(time_block=(self.loop, c.localised))
        if c.name == "tiles":
            return options.with_(time_tiling=c.tiles)
        return options

    def note(self) -> Note:
        """The one note that says what was chosen and why, with the figures."""
        c = self.choice
        others = [o for o in self.candidates if o.name != c.name]
        at = ", ".join(f"{k}={v}" for k, v in self.sizes)
        how = "forced (policy)" if self.forced else "model"
        text = (f"{c.describe(self.loop, self.iterator)} instead of "
                + " or ".join(o.describe(self.loop, self.iterator) for o in others)
                + f" ({how}: {LAUNCH_SECONDS * 1e6:g} µs per launch, one block of at most "
                f"{BLOCK_THREADS_MAX} threads against the GPU's {GPU_THREADS:,}; at {at}"
                + ("" if self.at_given_sizes else
                   ", sizes not given: time tiles are costed only at given sizes") + ")")
        if self.fallback:
            text += f"; {self.fallback}"
        return Note(Stage.RECURRENCE, text, subject=self.loop, kind="decision")


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.2g} ms" if ms < 10 else f"{ms:.0f} ms"


# ---- the host wavefront in the schedule ----------------------------------------------

def find_wavefront(sched: ScheduleResult) -> isl.ScheduleNode | None:
    """The band whose first member the single mapping would make a host loop (no
    leading parallel member, parallelism below it, as
    :meth:`polymagic.mapping.single.SingleMapper.visit`) and that is a wavefront: a
    combination of two or more loop iterators of some statement (``2k + i``).  Plain
    time loops (jacobi's ``t``) are not recurrences; None when there is none."""
    root = sched.schedule.get_root()
    return _walk(root.child(0)) if root.n_children() else None


def _walk(node: isl.ScheduleNode) -> isl.ScheduleNode | None:
    t = node.get_type()
    if t == isl.schedule_node_type.band:
        if leading_coincident(node) > 0 or not has_parallelism(node):
            return None
        if _skewed(node.band_get_partial_schedule().get_at(0)):
            return node
        return _walk(node.child(0)) if node.n_children() else None
    for i in range(node.n_children()):
        found = _walk(node.child(i))
        if found is not None:
            return found
    return None


def _skewed(upa: isl.UnionPwAff) -> bool:
    """Some piece of ``upa`` combines two or more input dimensions."""
    found = [False]

    def pw(pa: isl.PwAff) -> None:
        def piece(_set: isl.Set, aff: isl.Aff) -> None:
            n = aff.dim(isl.dim_type.in_)
            used = sum(1 for k in range(n)
                       if not aff.get_coefficient_val(isl.dim_type.in_, k).is_zero())
            found[0] = found[0] or used >= 2
        pa.foreach_piece(piece)
    upa.foreach_pw_aff(pw)
    return found[0]


def _kernels_below(node: isl.ScheduleNode) -> int:
    """Kernels the single mapping makes below a host loop: one per parallel band (or
    sequential leaf group) reached first on each path."""
    t = node.get_type()
    if t == isl.schedule_node_type.band and (leading_coincident(node) > 0
                                             or not has_parallelism(node)):
        return 1
    if t == isl.schedule_node_type.leaf:
        return 1
    if t == isl.schedule_node_type.band and node.band_n_member() > 1:
        return 1
    return max(1, sum(_kernels_below(node.child(i)) for i in range(node.n_children())))


# ---- the model ------------------------------------------------------------------------

@dataclass(frozen=True)
class _Figures:
    """What the candidates share, counted at the sizes."""
    steps: int                   # wavefront values (sequential steps), all outer loops' too
    kernels: int                 # kernels per step of the host loop
    outer: int                   # iterations of the host loops around the wavefront
    work: int                    # statement instances
    reads: int                   # reference executions that read (unbuffered loads)
    writes: int
    read_elems: int              # distinct elements read (the localised loads)
    written_elems: int
    footprint_bytes: int         # bytes of every element touched
    bytes_per_elem: int


def _figures(scop: Scop, band: isl.ScheduleNode, sizes: Mapping[str, int]) -> _Figures:
    domain = band.get_domain()
    upa = band.band_get_partial_schedule().get_at(0)
    wave = isl.UnionMap.from_union_pw_aff(upa).intersect_domain(domain)
    outer = 1
    if band.get_schedule_depth() > 0:
        # host loops around the wavefront: a launch (or one block) per iteration
        prefix = band.get_prefix_schedule_union_map().intersect_domain(domain)
        outer = _count(prefix.range(), sizes)
        wave = prefix.flat_range_product(wave)
    steps = _count(wave.range(), sizes)
    names: set[str] = set()
    domain.foreach_set(lambda s: names.add(s.get_tuple_name()))
    work = reads = writes = 0
    touched: dict[tuple[str, bool], isl.UnionSet] = {}
    for st in scop.statements:
        if st.name not in names:
            continue
        n = count_points(st.domain, sizes)
        work += n
        for acc in st.accesses:
            if acc.is_write:
                writes += n
            else:
                reads += n
            elems = isl.UnionSet(acc.relation.intersect_domain(st.domain).range())
            key = (acc.array, acc.is_write)
            touched[key] = elems if key not in touched else touched[key].union(elems)
    counted = {k: _count(v, sizes)
               for k, v in touched.items()}
    arrays = {a for a, _w in touched}
    itemsize = max((buffer_bytes(scop.arrays[a].ctype, ()) for a in arrays), default=8)
    foot = 0
    for a in arrays:
        both = touched.get((a, False))
        w = touched.get((a, True))
        u = both.union(w) if both is not None and w is not None else (both or w)
        foot += buffer_bytes(scop.arrays[a].ctype,
                             (_count(u, sizes),))
    return _Figures(steps, _kernels_below(band.child(0)), outer, work, reads, writes,
                    sum(v for (_a, w), v in counted.items() if not w),
                    sum(v for (_a, w), v in counted.items() if w), foot, itemsize)


def _count(us: isl.UnionSet, sizes: Mapping[str, int]) -> int:
    """Points of a union set at ``sizes`` (barvinok, :func:`.memory.counts.count_points`)."""
    sets: list[isl.Set] = []
    us.foreach_set(sets.append)
    return sum(count_points(s, sizes) for s in sets)


def _seconds(launches: int, steps: float, parallel: float, cycles: float, bytes_: int) -> float:
    """launches · 3 µs + max(sequential steps, parallel work) · cycles / clock + bytes / BW."""
    return (launches * LAUNCH_SECONDS + max(steps, parallel) * cycles / CLOCK_HZ
            + bytes_ / DRAM_BYTES_PER_S)


def wavefront_candidate(f: _Figures) -> Candidate:
    """The host loop: a launch per wavefront value and kernel, every reference to
    global memory (the skewed kernels plan no buffers)."""
    launches = f.steps * f.kernels
    return Candidate("wavefront", launches, f.reads, f.writes,
                     _seconds(launches, f.steps, f.work / GPU_THREADS, GLOBAL_CYCLES,
                              (f.reads + f.writes) * f.bytes_per_elem))


def block_candidate(f: _Figures, threads: int, can_localise: bool) -> Candidate:
    """One block of ``threads`` threads runs every step with a barrier after each;
    localised (seed 001) when everything it touches fits in shared memory: each
    element loaded and stored once."""
    threads = max(1, min(threads, BLOCK_THREADS_MAX))
    local = can_localise and f.footprint_bytes <= LOCAL_BYTES
    # under outer host loops each iteration loads its own footprint (at most the total)
    loads, stores = ((min(f.reads, f.read_elems * f.outer), min(f.writes, f.written_elems * f.outer))
                     if local else (f.reads, f.writes))
    cycles = (SHARED_CYCLES if local else GLOBAL_CYCLES) + BARRIER_CYCLES
    return Candidate("block", f.outer, loads, stores,
                     _seconds(f.outer, f.steps, f.work / threads, cycles,
                              (loads + stores) * f.bytes_per_elem), localised=local)


def tiles_candidate(scop: Scop, deps, f: _Figures, sizes: Mapping[str, int]
                    ) -> Candidate | None:
    """Time tiles of isl's permutable time band (``--time-tiling``), when there is
    one: a launch per tile wavefront (``Σ_j ⌈E_j / T_j⌉ − m + 1`` for band extents
    ``E_j``), each tile a chain of ``T_0 + Σ T_j`` steps in shared memory after one
    global latency; each element loaded once per time tile it lives in."""
    from ..schedule.timeblock import time_tiles, time_tiling_band

    def band_text() -> str | None:
        band, _why = time_tiling_band(scop, deps)
        return None if band is None else str(band)
    try:
        # isl's scheduler ignores its operation budget (fuzz finding 32): a child
        # process, abandoned after TILES_SECONDS (the tiles are then no candidate)
        text = in_child(band_text, TILES_SECONDS)
    except (TimedOut, isl.Error):
        return None
    if text is None:
        return None
    band = isl.MultiUnionPwAff.read_from_str(scop.context.get_ctx(), text)
    m = band.dim(isl.dim_type.set)
    tiles = time_tiles((TIME_TILE,), m)
    extents = []
    for j in range(m):
        image = isl.UnionMap.from_union_pw_aff(band.get_at(j)).intersect_domain(
            scop.domain).range()
        extents.append(max(1, _count(image, sizes)))
    launches = max(1, sum(math.ceil(e / t) for e, t in zip(extents, tiles)) - m + 1)
    chain = sum(tiles)
    loads = min(f.reads, f.read_elems * math.ceil(extents[0] / tiles[0]))
    stores = min(f.writes, f.written_elems * math.ceil(extents[0] / tiles[0]))
    per_launch = GLOBAL_CYCLES + chain * (SHARED_CYCLES + BARRIER_CYCLES)
    seconds = (launches * LAUNCH_SECONDS
               + max(launches * per_launch, f.work * SHARED_CYCLES / GPU_THREADS) / CLOCK_HZ
               + (loads + stores) * f.bytes_per_elem / DRAM_BYTES_PER_S)
    return Candidate("tiles", launches, loads, stores, seconds, tiles=tiles)


def choose(scop: Scop, deps, sched: ScheduleResult, options: CompileOptions
           ) -> RecurrenceChoice | None:
    """The model's choice for the host wavefront of ``sched`` (None: no wavefront, the
    superposition is used, or an explicit option decides)."""
    if options.recurrence == "wavefront" or sched.use_superposition:
        return None
    forced = options.recurrence != "model"
    if not forced and (options.localise is not None or not options.localise_auto
                       or options.time_tiling or options.tile_auto
                       or options.device_mem is not None):
        return None
    band = find_wavefront(sched)
    if band is None:
        return None
    loop = member_text(band.band_get_partial_schedule(), 0)
    iterator = next((w for w in re.findall(r"[A-Za-z_]\w*", loop)
                     if w not in scop.size_params), None)
    if iterator is None:
        return None
    given = all(p in options.sizes for p in scop.size_params)
    sizes = {p: int(options.sizes[p]) if given else MODEL_SIZE for p in scop.size_params}
    f = _figures(scop, band, sizes)
    threads = (options.block or (256,))[0]
    cands = [wavefront_candidate(f), block_candidate(f, threads, given)]
    # time tiles only at the user's sizes: their code takes isl 7-20 s to generate
    # (Gauss-Seidel 2-d, seidel-2d at 4,32,32), paid only where the sizes show a gain
    tiles = tiles_candidate(scop, deps, f, sizes) if given or forced else None
    if tiles is not None:
        cands.append(tiles)
    if forced:
        chosen = options.recurrence if any(c.name == options.recurrence for c in cands) \
            else "wavefront"
    else:
        chosen = min(cands, key=lambda c: (c.seconds, CANDIDATES.index(c.name))).name
    return RecurrenceChoice(loop, iterator, chosen, tuple(cands),
                            tuple(sorted(sizes.items())), given, forced)


def without(choice: RecurrenceChoice, name: str, why: str) -> RecurrenceChoice:
    """``choice`` after candidate ``name`` could not be built: the next cheapest."""
    rest = [c for c in choice.candidates if c.name != name]
    nxt = min(rest, key=lambda c: (c.seconds, CANDIDATES.index(c.name)))
    return RecurrenceChoice(choice.loop, choice.iterator, nxt.name, choice.candidates,
                            choice.sizes, choice.at_given_sizes, choice.forced,
                            f"{name} not built ({why}): {nxt.name} instead")


__all__ = ["Candidate", "RecurrenceChoice", "choose", "find_wavefront", "without"]
