"""The options, split by concern, shared by the ``%%polycuda`` magic and the command line.

Both parse the same argument list with :func:`parse_options` into one
:class:`Options` facade, whose parts are handed to whoever needs them:
:class:`CompileOptions` (everything the generated code depends on: frozen and
hashable, it *is* the compile cache key; its :class:`ScheduleOptions` and
:class:`DependenceOptions` projections key those stages' caches),
:class:`RunOptions`, :class:`ReportOptions` and :class:`TuneOptions`.  Policies
that tests choose (isl budgets, whether the superposition must gain) are hidden
fields of :class:`CompileOptions`: never on the command line, never read from
the environment.
"""
from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace

from .errors import OptionsError

TARGETS = ("auto", "gpu", "emulator", "openmp")
MAPPINGS = ("superposition", "single")
SHOW = ("deps", "schedule", "cuda", "kir", "passes", "host", "emulator", "scop", "stages",
        "notes", "c")


class SizeMap(Mapping[str, "int | float"]):
    """Values of size parameters and scalars by name (``--size N=64,alpha=1.5``):
    a read-only, hashable mapping, so that :class:`CompileOptions` (which holds it)
    can key the compile caches.  Reads like a dict (``[]``, ``.get``, ``.items()``,
    ``in``, ``dict(...)``, ``{**sizes}``) and compares equal to a dict with the
    same items."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: "Mapping[str, int | float] | None" = None) -> None:
        # in the order given (messages list sizes as the user did), hashed and
        # compared regardless of order
        object.__setattr__(self, "_items", dict(items or {}))
        object.__setattr__(self, "_hash", hash(frozenset(self._items.items())))

    def __getitem__(self, name: str) -> "int | float":
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return self._hash

    def __setattr__(self, name, value):
        raise AttributeError("SizeMap is read-only")

    def __reduce__(self):
        return SizeMap, (self._items,)

    def __repr__(self) -> str:
        return repr(self._items)


def _sizes(value) -> SizeMap:
    return value if isinstance(value, SizeMap) else SizeMap(value)


def _tuple(value):
    """Lists given for tuple fields (``tile=[16, 16]``) as tuples: the options hash."""
    if isinstance(value, list):
        return tuple(_tuple(v) for v in value)
    return value


class _Frozen:
    """``with_`` and the normalisation shared by the option objects."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            fixed = _sizes(value) if f.name == "sizes" else _tuple(value)
            if fixed is not value:
                object.__setattr__(self, f.name, fixed)

    def with_(self, **kw):
        """A copy with the given fields replaced."""
        return replace(self, **kw)


@dataclass(frozen=True)
class DependenceOptions(_Frozen):
    """What :func:`polymagic.deps.compute_dependences` reads (its cache key): isl
    operation budgets, hidden policies (never on the command line)."""
    #: isl operations the whole analysis may take (a pathological nest gets an error)
    dependence_operations: int = 50_000_000
    #: isl operations one value-based (dataflow) query may take before the
    #: memory-based relation replaces it (no example, benchmark kernel or snapshot
    #: case needs more than 1,000,000; a fuzz program spent 2 x 2.6 s reaching 5,000,000)
    value_based_operations: int = 1_000_000

    @classmethod
    def of(cls, options) -> "DependenceOptions":
        """The dependence stage's options read off compile options (or the facade)."""
        return cls(**{f.name: getattr(options, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class ScheduleOptions(_Frozen):
    """What :func:`polymagic.schedule.compute_schedule` reads, and nothing else: it
    keys the schedule stage's cache, so a cached schedule never comes from other
    settings (``tests/test_pipeline_cache.py`` checks that every field matters)."""
    mapping: str = "superposition"                # the superposition is planned only for it
    reductions: bool = True                       # thread-level tree reductions (seed 003 §5.3)
    #: the tile search runs (it keeps the superposition's kernels, seed 000 §4.3)
    tile_auto: bool = False
    #: --localise LOOP: a host loop of the superposition keeps the single mapping
    localise_loop: str | None = None
    #: the arrays' real element strides (the DL model's, seed 003 §5.2)
    layout: tuple[tuple[str, tuple[int, ...]], ...] = ()
    time_tiling: tuple[int, ...] = ()
    # ---- policies (hidden: never on the command line) ----
    #: use the superposition only where it improves coalescing (the paper's gemm, 2mm...:
    #: both schedules coincide; only the single mapping unrolls and jams a thread's
    #: points inside the sub-tile loop and has larger default block tiles: gemm at
    #: N = 37 loads 6845 elements there against 10952 superposed); False runs every
    #: kernel through the superposed tree (tests, the fuzzer's campaigns)
    require_gain: bool = True
    #: CPU seconds one isl scheduler attempt may take (its ILPs ignore the
    #: operation budget, fuzz finding 32); past it Feautrier's scheduler is asked
    schedule_seconds: float = 10.0
    #: isl operations allowed per scheduling call (prevents hangs)
    schedule_operations: int = 20_000_000
    #: isl operations the superposition planning may take before the single mapping
    super_operations: int = 20_000_000

    @classmethod
    def of(cls, options) -> "ScheduleOptions":
        """The scheduler's options read off compile options (or the facade)."""
        kw = {f.name: getattr(options, f.name) for f in fields(cls) if f.name != "localise_loop"}
        localise = getattr(options, "localise", None)
        return cls(localise_loop=localise[0] if localise is not None else None, **kw)


@dataclass(frozen=True)
class CompileOptions(_Frozen):
    """Every setting the generated code depends on: frozen and hashable, it keys the
    compile cache (:func:`polymagic.compiler.compile_source`).  The stages read
    their settings from it by these names (``options.tile``, ``options.sizes``) and
    derive variants with :meth:`with_`."""
    tile: tuple[int, ...] | None = None           # block-tile sizes, outermost band member first
    block: tuple[int, ...] | None = None          # threads per block, x,y,z
    mapping: str = "superposition"                # seed 003 superposition | single schedule
    reductions: bool = True                       # superposition: tree reductions on threads
    # memory planning (seed 000 §3-4, seed 004 §4.2)
    shared: str = "auto"                          # auto (reuse-based) | all | none
    shared_mem: int = 48 * 1024                   # M_up: shared-memory bytes per block
    registers: bool = True
    # 16-byte (float4/double2) copies between global and shared memory (002 §3.4), for
    # the buffers whose copy rows are whole 16-byte chunks (memory.plan.vectorise)
    vector: bool = True
    # the tile search's model (seed 000 §4.3) is fitted on plans whose buffer set does
    # not depend on the tile sizes: it keeps register arrays' shared buffers too
    keep_register_buffers: bool = False
    delta: float = 0.3                            # constant-reuse threshold of seed 000 Alg. 1
    tile_levels: tuple[tuple[int, ...], ...] = () # --tile 64,64,16:4,4 -> block tile, per thread
    tile_auto: bool = False                       # --tile auto: seed 000 §4.3 search
    # localisation along a sequential loop (seed 001)
    localise: tuple[str, int] | None = None       # --localise LOOP[:w]
    # no --localise: localise where the analytic model predicts fewer global accesses
    # (seed 001; memory.localcode.auto_localise); --no-localise: never
    localise_auto: bool = True
    reorg: str = "auto"                           # auto | move | modulo (seed 001 §4.4)
    # --time-tiling T[,S1,...]: time-skewed tiles launched by wavefront (issue 5); () off
    time_tiling: tuple[int, ...] = ()
    # host<->device transfers and Python input (seed 002)
    device_mem: int | None = None                 # bytes of device memory kernels may use
    python: bool = False                          # the cell holds a Python function
    # element strides of arrays passed as non-row-major views, set from the arrays at
    # call time (compiler.specialise_layout), never by a flag: ((name, strides), ...)
    layout: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: size values: the tile search, localisation and ``__constant__`` memory are
    #: decided at them (the driver's cache leaves them out where the code does not
    #: read them, see :meth:`size_independent`)
    sizes: SizeMap = field(default_factory=SizeMap)
    # ---- policies (hidden: never on the command line; tests choose them here) ----
    require_gain: bool = True                     # ScheduleOptions.require_gain
    schedule_seconds: float = 10.0                # ScheduleOptions.schedule_seconds
    schedule_operations: int = 20_000_000         # ScheduleOptions.schedule_operations
    super_operations: int = 20_000_000            # ScheduleOptions.super_operations
    dependence_operations: int = 50_000_000       # DependenceOptions.dependence_operations
    value_based_operations: int = 1_000_000       # DependenceOptions.value_based_operations
    # hidden lowering policies (compiler/lowering.py, polymagic.lower.LowerOptions)
    per_kernel: bool = False                      # every kernel from its own AST
    exact_subscripts: bool = False                # subscripts printed with their domains
    time_tiling_operations: int = 3_000_000       # isl budget of the skewed tiles' AST
    # isl budget of lowering a mapping with the default localisation's moves (nobody
    # asked for them; past it the kernel is lowered without them, compiler/lowering.py):
    # every example and benchmark kernel lowers within it, fuzz program 13001000073's
    # moves took 21 s of isl's AST generator
    auto_localised_operations: int = 3_000_000
    # a host wavefront (an in-place recurrence): model (compiler/recurrence.py chooses)
    # | wavefront | block | tiles (forced; explicit --localise/--time-tiling win anyway)
    recurrence: str = "model"
    # the model's one block, set by compiler/recurrence.py on the options it compiles
    # with (never by a user): (the host wavefront loop's text, whether its footprint
    # goes to shared memory)
    time_block: tuple[str, bool] | None = None
    # the CPU target (issue 21): print tiled OpenMP C from the schedule
    # (polymagic.codegen.cpu_c); --target openmp and --show c set it
    cpu_code: bool = False
    cpu_l1: int = 32 * 1024                       # the CPU tile model's cache sizes (bytes)
    cpu_l2: int = 512 * 1024
    # statement instances per fork from which a parallel loop runs parallel
    # (polymagic.codegen.cpu_cost.MIN_WORK, issue 32 item 6); 0: always parallel
    cpu_min_work: int = 100_000
    # the device model of the default tiles (polymagic.mapping.grid_fill): multiprocessors
    # of the target GPU (an H100 SXM5: 132, as polymagic.tiles.model.H100); at the given
    # sizes a compute-bound band's register tiles shrink until the grid has a block per
    # multiprocessor; 0: today's 128 x 128 tiles regardless of the grid
    device_sms: int = 132

    @property
    def schedule(self) -> ScheduleOptions:
        """The scheduler's inputs (the schedule stage's cache key)."""
        return ScheduleOptions.of(self)

    @property
    def deps(self) -> DependenceOptions:
        """The dependence analysis' inputs."""
        return DependenceOptions.of(self)

    def size_independent(self) -> "CompileOptions":
        """These options without the sizes where no stage reads them before the code
        is known: only the tile search and localisation are decided at the sizes
        (``__constant__`` memory too, but whether it is used is known only after
        lowering: the driver then keys by the size parameters' values as well)."""
        return self if self.tile_auto or self.localise else replace(self, sizes=SizeMap())


@dataclass(frozen=True)
class RunOptions(_Frozen):
    """How a compiled function is run and checked (never changes the code)."""
    sizes: SizeMap = field(default_factory=SizeMap)   # name -> int/float (sizes and scalars)
    inputs: str | None = None                     # .npz with arrays by parameter name
    seed: int = 0                                 # random inputs and emulator orders
    target: str = "auto"
    check: bool = True                            # compare with the CPU reference
    emu_order: str = "shuffle"                    # shuffle | reverse | forward (emulator)
    device_mem: int | None = None                 # bytes of device memory kernels may use
    # runs refused before anything is allocated or run (polymagic.runtime.limits):
    # statement instances the emulator may run (about a minute on one core with its
    # checks) and the CPU reference (about half a minute of -O2 code); bytes the
    # arrays may take, three times over (inputs, device results, reference; None:
    # half the free memory)
    max_emulator_instances: int = 300_000_000
    max_cpu_instances: int = 20_000_000_000
    max_memory: int | None = None


@dataclass(frozen=True)
class ReportOptions(_Frozen):
    """What the report shows."""
    show: tuple[str, ...] = ()                    # extra views (SHOW)
    json: bool = False                            # one JSON object (CLI)
    quiet: bool = False
    explore: bool = False                         # widgets to explore the mapping


@dataclass(frozen=True)
class TuneOptions(_Frozen):
    """``--autotune``: a search over compiles and runs, above both (its own object:
    it changes neither the code of a given compile nor how one run goes)."""
    autotune: bool = False                        # --autotune: try tile/block candidates
    autotune_candidates: int = 12                 # at most this many candidates
    autotune_budget: float = 60.0                 # seconds; later candidates are skipped


#: the facade's parts, by attribute name; a field name found in several parts (sizes,
#: device_mem) is set in each and read from the first
_PARTS: tuple[tuple[str, type], ...] = (("compile", CompileOptions), ("run", RunOptions),
                                        ("report", ReportOptions), ("tune", TuneOptions))
_OWNERS: dict[str, tuple[str, ...]] = {}
for _part, _cls in _PARTS:
    for _f in fields(_cls):
        _OWNERS[_f.name] = _OWNERS.get(_f.name, ()) + (_part,)


def option_names() -> frozenset[str]:
    """Every keyword :class:`Options` takes (the fields of all its parts)."""
    return frozenset(_OWNERS)


@dataclass(frozen=True, init=False, repr=False)
class Options:
    """The user's options (what :func:`parse_options` returns), made of one part per
    concern: ``.compile`` (:class:`CompileOptions`, the compile cache key), ``.run``
    (:class:`RunOptions`), ``.report`` (:class:`ReportOptions`) and ``.tune``
    (:class:`TuneOptions`).  Built with any of their fields as keywords
    (``Options(tile=(16, 16), sizes={"N": 64})``), read by field name
    (``options.tile``), changed with :meth:`with_`.  Each stage is handed only the
    part it needs."""
    compile: CompileOptions
    run: RunOptions
    report: ReportOptions
    tune: TuneOptions

    def __init__(self, **kw) -> None:
        # the parts themselves may be given too (dataclasses.replace passes them)
        given = {part: kw.pop(part) for part, _cls in _PARTS if part in kw}
        unknown = sorted(set(kw) - set(_OWNERS))
        if unknown:
            raise TypeError(f"Options got unexpected keyword(s): {', '.join(unknown)}")
        for part, cls in _PARTS:
            mine = {k: v for k, v in kw.items() if part in _OWNERS[k]}
            base = given.get(part)
            object.__setattr__(self, part, cls(**mine) if base is None else
                               replace(base, **mine) if mine else base)

    @classmethod
    def of(cls, compile: CompileOptions = CompileOptions(), run: RunOptions = RunOptions(),
           report: ReportOptions = ReportOptions(), tune: TuneOptions = TuneOptions()
           ) -> "Options":
        """The facade over given parts."""
        return cls(compile=compile, run=run, report=report, tune=tune)

    def __reduce__(self):
        return Options.of, (self.compile, self.run, self.report, self.tune)

    def with_(self, **kw) -> "Options":
        """A copy with the given fields replaced (in every part that has them)."""
        return replace(self, **kw)

    def __repr__(self) -> str:
        given = []
        for name, parts in _OWNERS.items():
            value = getattr(getattr(self, parts[0]), name)
            if value != getattr(getattr(_DEFAULT, parts[0]), name):
                given.append(f"{name}={value!r}")
        return f"Options({', '.join(given)})"


def _delegate(part: str, name: str) -> property:
    return property(lambda self: getattr(getattr(self, part), name),
                    doc=f"``{part}.{name}``")


for _name, _parts in _OWNERS.items():
    setattr(Options, _name, _delegate(_parts[0], _name))
_DEFAULT = Options()


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # never exit the interpreter from a notebook
        raise OptionsError(f"{self.prog}: {message}")


#: the ranges of the numeric options (issue 18: every one is checked, with a one-line
#: error naming the option and its range)
MAX_TILE = 1 << 20                 # --tile, --time-tiling sizes: points per tile
BLOCK_DIMS = (1024, 1024, 64)      # --block x,y,z: CUDA's per-dimension limits
MAX_THREADS = 1024                 # threads per block
MAX_SHARED_MEM = 16 * 1024 ** 2    # --shared-mem (above 227 KB it is capped, with a note)
MAX_DEVICE_MEM = 1024 ** 4         # --device-mem: 1 TiB
MAX_SEED = 2 ** 64 - 1             # --seed: the emulator's 64-bit generator state
MAX_WINDOW = 1024                  # --localise LOOP:w
MAX_CANDIDATES = 10_000            # --autotune-candidates
MAX_BUDGET = 7 * 24 * 3600.0       # --autotune-budget, seconds
MAX_INSTANCES = 10 ** 18           # --max-emulator-instances, --max-cpu-instances
MAX_MEMORY = 1024 ** 5             # --max-memory: 1 PiB


def _ints(text: str, what: str, most: int = MAX_TILE) -> tuple[int, ...]:
    """Comma-separated integers in [1, most] (``x`` separates too: 32x8)."""
    try:
        vals = tuple(int(v) for v in text.replace("x", ",").split(",") if v.strip())
    except ValueError:
        raise OptionsError(f"{what} must be comma-separated integers from 1 to {most}, "
                           f"got {text!r}") from None
    if not vals or any(not 1 <= v <= most for v in vals):
        raise OptionsError(f"{what} must be comma-separated integers from 1 to {most}, "
                           f"got {text!r}")
    return vals


def _in_range(what: str, value, lo, hi, unit: str = "") -> None:
    """One-line OptionsError unless ``lo <= value <= hi`` (NaN fails too)."""
    if not lo <= value <= hi:
        raise OptionsError(f"{what} must lie between {lo}{unit} and {hi}{unit}, got {value}")


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise OptionsError(f"--size values must be numbers, got {text!r}")


_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024 ** 2, "MB": 1024 ** 2,
          "MIB": 1024 ** 2, "G": 1024 ** 3, "GB": 1024 ** 3, "GIB": 1024 ** 3,
          "T": 1024 ** 4, "TB": 1024 ** 4, "TIB": 1024 ** 4}


def parse_bytes(text: str, what: str, most: int | None = None) -> int:
    """'48KB' -> 49152; plain numbers are bytes.  A whole number of bytes from 1 to
    ``most`` (``--shared-mem 0.5`` is half a byte: refused, not rounded to 0)."""
    t = text.strip().upper().replace(" ", "")
    num = t.rstrip("KMGTIB")
    unit = t[len(num):]
    try:
        value = float(num)
    except ValueError:
        raise OptionsError(f"{what} takes a size such as 48KB or 512MB, got {text!r}") from None
    if unit not in _UNITS or not value > 0 or value == float("inf"):
        raise OptionsError(f"{what} takes a positive size such as 48KB or 512MB, got {text!r}")
    nbytes = value * _UNITS[unit]
    if nbytes != int(nbytes):
        raise OptionsError(f"{what} {text}: {nbytes:g} is not a whole number of bytes "
                           "(give a size such as 48KB or 512MB)")
    if most is not None and not 1 <= nbytes <= most:
        raise OptionsError(f"{what} must lie between 1 byte and {_size_text(most)}, "
                           f"got {text!r}")
    return int(nbytes)


def _size_text(n: int) -> str:
    """64 MB, 1 TB... for the ranges of the byte options."""
    for unit, k in (("TB", 1024 ** 4), ("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} bytes"


def parse_sizes(items: list[str]) -> dict:
    out: dict = {}
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise OptionsError(f"--size takes NAME=VALUE pairs, got {part!r}")
            k, v = part.split("=", 1)
            if not k.strip().isidentifier():
                raise OptionsError(f"--size: {k!r} is not a parameter name")
            out[k.strip()] = _number(v.strip())
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options common to the magic and the CLI's subcommands."""
    p.add_argument("--size", "-s", action="append", default=[], metavar="N=64,alpha=1.5",
                   help="values of size parameters and scalars")
    p.add_argument("--inputs", metavar="FILE.npz", help="arrays by parameter name")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs and emulator orders")
    p.add_argument("--target", default="auto", choices=TARGETS,
                   help="where the kernels run: the GPU when CuPy sees one, else the "
                        "emulator (auto); gpu; emulator (race-checking C); openmp (tiled "
                        "OpenMP C on this CPU)")
    p.add_argument("--tile", metavar="32,32",
                   help="block-tile sizes, outermost first (sub-tile sizes of the sequential "
                        "members after them), optionally ':' points per thread "
                        "(64,64,16:4,4), or 'auto' (seed 000 §4.3 search)")
    p.add_argument("--block", metavar="32,8", help="threads per block, x,y,z")
    p.add_argument("--mapping", default="superposition", choices=MAPPINGS,
                   help="blocks and threads from two superposed schedules (seed 003) or "
                        "from one schedule")
    p.add_argument("--no-reductions", dest="reductions", action="store_false",
                   help="superposition: never map a reduction loop to threads (no shared-"
                        "memory tree reductions, seed 003 §5.3)")
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="do not compare with the CPU reference (writes the device result back)")
    p.add_argument("--show", action="append", default=[], metavar="WHAT",
                   help="extra views: " + ", ".join(SHOW))
    p.add_argument("--emu-order", default="shuffle", choices=("shuffle", "reverse", "forward"),
                   help="order in which the emulator runs blocks and threads: a seeded "
                        "shuffle, reversed or in order (a different order exposes races)")
    p.add_argument("--shared", default=None, choices=("auto", "all", "none"),
                   help="shared-memory buffers: by reuse (auto), every partition (all), none")
    p.add_argument("--no-shared", dest="no_shared", action="store_true",
                   help="no shared-memory buffers (--shared none)")
    p.add_argument("--shared-mem", default="48KB", metavar="48KB",
                   help="shared memory per block (M_up)")
    p.add_argument("--no-registers", dest="registers", action="store_false",
                   help="no per-thread register tiles or accumulators in registers "
                        "(seed 004 §4.2)")
    p.add_argument("--vector", dest="vector", action="store_true", default=None,
                   help="16-byte float4/double2 copies between global and shared memory, "
                        "for buffers whose copied rows are whole 16-byte chunks (default)")
    p.add_argument("--no-vector", dest="no_vector", action="store_true",
                   help="element copies only")
    p.add_argument("--delta", type=float, default=0.3,
                   help="constant-reuse threshold (seed 000 Algorithm 1)")
    p.add_argument("--localise", metavar="LOOP[:w]",
                   help="keep what the sequential loop LOOP reuses in shared memory, with a "
                        "window of w steps (seed 001)")
    p.add_argument("--no-localise", dest="no_localise", action="store_true",
                   help="never localise (default: where the analytic model predicts fewer "
                        "global accesses)")
    p.add_argument("--time-tiling", metavar="T[,S1,...]", default=None,
                   help="time-skewed tiles of the stencil's time band (T time steps, S spatial "
                        "points, default 32), one launch per wavefront (off by default)")
    p.add_argument("--no-time-tiling", dest="no_time_tiling", action="store_true",
                   help="no time-skewed tiles (the default)")
    p.add_argument("--reorg", default=None, choices=("auto", "move", "modulo"),
                   help="localised data between steps: in-situ moves or modulo addressing")
    p.add_argument("--device-mem", metavar="512MB", help="device memory the kernels may use")
    p.add_argument("--max-emulator-instances", type=float, default=3e8, metavar="3e8",
                   help="refuse emulator runs of more statement instances (about a minute)")
    p.add_argument("--max-cpu-instances", type=float, default=2e10, metavar="2e10",
                   help="refuse CPU checks of more statement instances (about half a minute)")
    p.add_argument("--cpu-cache", default="32KB,512KB", metavar="32KB,512KB",
                   help="--target openmp: the L1 and L2 sizes its tile model fits tiles into")
    p.add_argument("--cpu-min-work", type=int, default=None, metavar="100000",
                   help="--target openmp: statement instances per fork from which a "
                        "parallel loop forks (fewer run serially); 0: every one forks")
    p.add_argument("--max-memory", metavar="16GB",
                   help="memory the arrays may take, three copies (default: half the free "
                        "memory)")
    p.add_argument("--python", action="store_true", help="the cell holds a Python function")
    p.add_argument("--explore", action="store_true", help="show widgets to explore the mapping")
    p.add_argument("--autotune", action="store_true",
                   help="try candidate tile/block sizes (timed on a GPU, else ranked with "
                        "the emulator's counters and the seed 000 §4.3 model); keep the best")
    p.add_argument("--autotune-candidates", type=int, default=12, metavar="12",
                   help="most candidates --autotune tries")
    p.add_argument("--autotune-budget", type=float, default=60.0, metavar="SECONDS",
                   help="time --autotune may take; later candidates are skipped")
    p.add_argument("--json", action="store_true", help="print one JSON object (CLI)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no report; errors still show")


def make_parser(prog: str = "%%polycuda") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, add_help=False)
    add_arguments(p)
    return p


def _conflicts(ns: argparse.Namespace) -> None:
    """Contradictory options, named both (argparse would let the last one win)."""
    pairs = [(ns.localise is not None and ns.no_localise, f"--localise {ns.localise}",
              "--no-localise"),
             (ns.reorg not in (None, "auto") and ns.no_localise, f"--reorg {ns.reorg}",
              "--no-localise (--reorg changes localised buffers only)"),
             (ns.vector and ns.no_vector, "--vector", "--no-vector"),
             (ns.shared not in (None, "none") and ns.no_shared, f"--shared {ns.shared}",
              "--no-shared"),
             (ns.time_tiling is not None and ns.no_time_tiling,
              f"--time-tiling {ns.time_tiling}", "--no-time-tiling"),
             (ns.json and ns.explore, "--json", "--explore")]
    for clash, a, b in pairs:
        if clash:
            raise OptionsError(f"contradictory options: {a} and {b}; give one of them")


def options_from_namespace(ns: argparse.Namespace) -> Options:
    _conflicts(ns)
    shared = "none" if ns.no_shared else ns.shared or "auto"
    vector = not ns.no_vector
    _in_range("--seed", ns.seed, 0, MAX_SEED)
    show: list[str] = []
    for s in ns.show:
        for w in s.split(","):
            w = w.strip()
            if w and w not in SHOW:
                raise OptionsError(f"--show: unknown view {w!r} (choose from {', '.join(SHOW)})")
            if w:
                show.append(w)
    block = _ints(ns.block, "--block", MAX_THREADS) if ns.block else None
    if block is not None:
        if len(block) > 3:
            raise OptionsError("--block takes at most three sizes (x,y,z)")
        for b, most, axis in zip(block, BLOCK_DIMS, "xyz"):
            if b > most:
                raise OptionsError(f"--block {ns.block}: {b} threads along {axis}, at most "
                                   f"{most} (CUDA's limits are {','.join(map(str, BLOCK_DIMS))})")
        prod = 1
        for b in block:
            prod *= b
        if prod > 1024:
            raise OptionsError(f"--block {ns.block}: {prod} threads per block, at most 1024")
    tile_auto = (ns.tile or "").strip().lower() == "auto"
    levels = tuple(_ints(lv, "--tile") for lv in ns.tile.split(":")) \
        if ns.tile and not tile_auto else ()
    per_thread_tile(levels, block)
    if not 0 <= ns.delta <= 1:
        raise OptionsError(f"--delta must lie in [0, 1], got {ns.delta}")
    _in_range("--autotune-candidates", ns.autotune_candidates, 1, MAX_CANDIDATES)
    for flag, value in (("--max-emulator-instances", ns.max_emulator_instances),
                        ("--max-cpu-instances", ns.max_cpu_instances)):
        _in_range(flag, value, 1, MAX_INSTANCES)
    if not 0 < ns.autotune_budget <= MAX_BUDGET:
        raise OptionsError(f"--autotune-budget must be a positive number of seconds, at most "
                           f"{MAX_BUDGET:g}, got {ns.autotune_budget}")
    return Options(localise=None if ns.no_localise else _localise(ns.localise),
                   localise_auto=not ns.no_localise, reorg=ns.reorg or "auto",
                   time_tiling=_ints(ns.time_tiling, "--time-tiling") if ns.time_tiling else (),
                   sizes=parse_sizes(ns.size), inputs=ns.inputs, seed=ns.seed,
                   target=ns.target, tile=levels[0] if levels else None, tile_levels=levels,
                   tile_auto=tile_auto,
                   shared=shared,
                   shared_mem=parse_bytes(ns.shared_mem, "--shared-mem", MAX_SHARED_MEM),
                   registers=ns.registers, vector=vector, delta=ns.delta,
                   device_mem=parse_bytes(ns.device_mem, "--device-mem", MAX_DEVICE_MEM)
                   if ns.device_mem else None,
                   max_emulator_instances=int(ns.max_emulator_instances),
                   max_cpu_instances=int(ns.max_cpu_instances),
                   max_memory=parse_bytes(ns.max_memory, "--max-memory", MAX_MEMORY)
                   if ns.max_memory else None,
                   python=ns.python, explore=ns.explore, autotune=ns.autotune,
                   autotune_candidates=ns.autotune_candidates,
                   autotune_budget=ns.autotune_budget,
                   block=block, mapping=ns.mapping, reductions=ns.reductions, check=ns.check, show=tuple(show), json=ns.json,
                   emu_order=ns.emu_order, quiet=ns.quiet,
                   cpu_code=ns.target == "openmp" or "c" in show,
                   **_cpu_cache(ns.cpu_cache), **_cpu_min_work(ns.cpu_min_work))


def _cpu_min_work(value: int | None) -> dict[str, int]:
    """``--cpu-min-work N`` (default: the cost model's, issue 32 item 6)."""
    if value is None:
        return {}
    if value < 0:
        raise OptionsError(f"--cpu-min-work takes a count of statement instances (0 or "
                           f"more), got {value}")
    return {"cpu_min_work": value}


def _cpu_cache(text: str) -> dict[str, int]:
    """``--cpu-cache 32KB,512KB``: the CPU tile model's L1 and L2 (issue 21)."""
    parts = text.split(",")
    if len(parts) != 2:
        raise OptionsError(f"--cpu-cache takes two sizes, L1 and L2 (such as 32KB,512KB), "
                           f"got {text!r}")
    l1, l2 = (parse_bytes(t, "--cpu-cache", MAX_MEMORY) for t in parts)
    return {"cpu_l1": l1, "cpu_l2": l2}


def per_thread_tile(levels: tuple[tuple[int, ...], ...],
                    block: tuple[int, ...] | None = None) -> tuple[int, ...] | None:
    """The second ``--tile`` level: points per thread along the block-tile members
    (seed 000 §4.1, inner tiles per thread), or None.  ``--tile 64,64,16:4,4``: a
    64x64 block tile (k sub-tile 16), each thread a 4x4 tile of points, hence 16x16
    threads.  Raises :class:`OptionsError` (one line) when a level is malformed."""
    if len(levels) > 2:
        raise OptionsError(f"--tile takes at most two levels (block tile:points per thread), "
                           f"got {len(levels)}")
    if len(levels) < 2:
        return None
    first, per = levels
    text = f"--tile {','.join(map(str, first))}:{','.join(map(str, per))}"
    if len(per) > min(len(first), 3):
        raise OptionsError(f"{text}: the per-thread level has {len(per)} sizes, at most "
                           f"{min(len(first), 3)} (one per block-tile member)")
    for t, p in zip(first, per):
        if p <= 0 or t % p:
            raise OptionsError(f"{text}: per-thread size {p} does not divide tile size {t}")
    threads = [t // p for t, p in zip(first, per)]
    n = 1
    for t in threads:
        n *= t
    if n > 1024:
        raise OptionsError(f"{text}: {' x '.join(map(str, threads))} = {n} threads per block, "
                           "at most 1024")
    if block is not None:
        want = tuple(reversed(threads))
        pad = lambda v: tuple(v) + (1,) * (3 - len(v))     # noqa: E731
        if pad(block) != pad(want):
            raise OptionsError(f"{text} gives {','.join(map(str, want))} threads per block "
                               f"(x,y,z), but --block is {','.join(map(str, block))}")
    return tuple(per)


def _localise(text: str | None) -> tuple[str, int] | None:
    """``LOOP`` or ``LOOP:w`` -> (LOOP, w)."""
    if text is None:
        return None
    loop, _, w = text.partition(":")
    if not loop.strip().isidentifier():
        raise OptionsError(f"--localise takes a loop iterator name, optionally with a "
                           f"window (t or t:2), got {text!r}")
    try:
        window = int(w) if w else 1
    except ValueError:
        window = 0
    if not 1 <= window <= MAX_WINDOW:
        raise OptionsError(f"--localise {text}: the window must be an integer from 1 to "
                           f"{MAX_WINDOW}")
    return loop.strip(), window


#: options that contradict each other (:func:`_conflicts`): a later line giving one
#: clears the other, so that a cell's option overrides a notebook default
_OPPOSITES = {"localise": ("no_localise",), "no_localise": ("localise", "reorg"),
              "reorg": ("no_localise",), "vector": ("no_vector",), "no_vector": ("vector",),
              "shared": ("no_shared",), "no_shared": ("shared",),
              "time_tiling": ("no_time_tiling",), "no_time_tiling": ("time_tiling",),
              "json": ("explore",), "explore": ("json",)}


def _given(argv: list[str]) -> dict:
    """The options an argument list names explicitly (argparse's defaults left out)."""
    p = make_parser()
    for action in p._actions:
        action.default = argparse.SUPPRESS
    return vars(p.parse_args(argv))


def merge_option_lines(lines: list[list[str]]) -> argparse.Namespace:
    """The argument lists of several option lines, later ones overriding earlier ones
    (the ``%polycuda`` line magic's notebook defaults, then a cell's line): a later
    option replaces an earlier one and clears its opposite (``--shared all`` after a
    default ``--no-shared``); ``--size`` and ``--show`` accumulate (a later size of
    the same name wins).  Raises :class:`OptionsError` on a malformed line, or on one
    that contradicts itself (``--localise i --no-localise`` in one cell)."""
    ns = make_parser().parse_args([])
    base = vars(make_parser().parse_args([]))
    for argv in lines:
        _conflicts(make_parser().parse_args(argv))
        for dest, value in _given(argv).items():
            for other in _OPPOSITES.get(dest, ()):
                setattr(ns, other, base[other])
            if dest in ("size", "show"):
                value = getattr(ns, dest) + value
            setattr(ns, dest, value)
    return ns


def parse_option_lines(lines: list[list[str]]) -> Options:
    """:func:`merge_option_lines` -> :class:`Options` (checked as one line is)."""
    return options_from_namespace(merge_option_lines(lines))


def parse_options(args: str | list[str]) -> Options:
    """Parse a magic line (string) or an argument list into :class:`Options`."""
    argv = shlex.split(args) if isinstance(args, str) else list(args)
    ns = make_parser().parse_args(argv)
    return options_from_namespace(ns)


__all__ = ["Options", "CompileOptions", "ScheduleOptions", "DependenceOptions", "RunOptions",
           "ReportOptions", "TuneOptions", "SizeMap", "option_names", "parse_options",
           "add_arguments", "options_from_namespace", "make_parser", "merge_option_lines",
           "parse_option_lines"]
