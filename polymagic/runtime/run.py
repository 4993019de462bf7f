"""Run a compiled function on a device target and check it against the CPU reference.

Used by the ``%%polycuda`` magic, the command line and the Python callable that
the magic binds.  One run:

1. **Inputs** (:func:`prepare_inputs`).  Arrays named like the C parameters come
   from the namespace (the notebook's variables) or from ``--inputs FILE.npz``
   (which wins over the namespace); their dtype must equal the C element type and
   their shape the declared extents.  A pointer parameter (``double *x``) takes a
   1-d array of at least the elements its accesses need (the first ones are used),
   or an array of exactly the model's shape; a delinearised one (``A[i*n + k]``
   read as ``A[i][k]``, :mod:`polymagic.frontend.c.delinearise`) is seen as that
   shape, row-major, through a view of the caller's buffer, after its
   delinearisation conditions are checked at the sizes (:func:`check_flat`).
   Size parameters come from ``--size``, else from the shapes of the given arrays
   (extents that are a plain size parameter), all of which must agree (a pointer's
   length gives a size only when nothing else does).  Arrays must not overlap in
   the elements used when one of them is written (the C code, like ``restrict``,
   assumes no aliasing; two read-only arguments may share memory).  Arrays nobody gave are seeded random: floats uniform
   in [0.5, 1.5) — away from zero, so divisions and LU-like kernels stay well
   conditioned and relative errors stay meaningful — and ints in [0, 10).  Each
   random array or scalar depends only on the seed and its name (its own stream),
   so giving one array never changes the values of another.  Scalars come from
   ``--size``, else a number of the same name in the namespace, else random.
   Arrays are used as they are, NumPy views included (see :func:`_usable`).
2. **Device** (the target): GPU through CuPy, the race-hunting emulator, or the
   emulator's OpenMP build.  Every target moves data the way the GPU does
   (:mod:`polymagic.transfers`, seed 002 §4): only what the kernels touch, packed
   from the arrays' real layouts into compact buffers, the kernels indexing those
   buffers; the written regions come back into copies of the written arrays.
   ``--device-mem`` tiles launches whose buffers do not fit (§4.4).  The report
   carries the planned bytes (``bytes_h2d``/``bytes_d2h``, per array against
   whole-array transfers).
3. **Reference**: the user's own C compiled by the system compiler, on separate
   copies of the same inputs (skipped with ``--no-check``).
4. **Compare** every parameter array the function writes, with tolerances suited
   to the dtype (:data:`TOLERANCES`; ints exactly; NaN equals NaN).
5. **Write back**: only when the comparison passed (or was skipped) are the device
   results copied into the caller's arrays, in place; a failed check or any
   exception leaves them untouched.
"""
from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Mapping

import numpy as np

from . import limits
from .gathers import check_gathers, index_high
from ..dtypes import DTYPES, INT32
from ..errors import DeviceError, InputError
from ..expr import Var, evaluate
from ..notes import Note, Stage
from ..options import Options
from ..scop import RETURN, Param, Scop, flat_violation
from ..transfers.session import TransferStats

if TYPE_CHECKING:
    from .emulator import EmuResult

#: dtype -> (rtol, atol as a fraction of max |reference|)
TOLERANCES = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12)}

RANDOM_FLOAT = (0.5, 1.5)    # [low, high) of random float arrays and scalars
RANDOM_INT = (0, 10)         # [low, high) of random int arrays


# ---- the report ----------------------------------------------------------------

@dataclass
class RunReport:
    ok: bool
    target: str                    # 'gpu' | 'emulator' | 'openmp'
    target_note: str               # why this target, e.g. "no GPU visible to CuPy: ran the emulator"
    checked: bool                  # compared with the CPU reference
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0       # over elements whose reference is non-zero
    mismatches: int = 0
    first_mismatch: tuple[str, tuple[int, ...]] | None = None   # (array, index)
    per_array: dict[str, dict] = field(default_factory=dict)
    cpu_s: float = 0.0
    device_s: float = 0.0
    h2d_s: float = 0.0
    d2h_s: float = 0.0
    launches: int = 0
    counters: dict = field(default_factory=dict)   # emulator: loads/stores per kernel + totals
    sizes: dict = field(default_factory=dict)      # size parameters and scalars used
    wrote_back: list[str] = field(default_factory=list)
    message: str = ""
    #: the run's notes (where inputs came from, transfers, not checked), as records
    notes: list[Note] = field(default_factory=list)
    bytes_h2d: int = 0             # planned host->device bytes (seed 002 §4)
    bytes_d2h: int = 0             # planned device->host bytes (written regions only)
    transfers: dict = field(default_factory=dict)  # mode, whole-array bytes, per array, buffers
    #: what the function returned (``return s;``: :data:`polymagic.scop.RETURN`), when
    #: it returns a value and the check passed (or was not asked for); None otherwise
    returned: int | float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


# ---- inputs --------------------------------------------------------------------

@dataclass
class Inputs:
    """Everything one run needs, plus where it came from."""
    args: dict[str, np.ndarray | int | float]  # every C parameter: arrays, ints, floats
    user_arrays: dict[str, np.ndarray]       # caller's arrays (results go back here)
    origin: dict[str, str]                   # name -> 'namespace' | 'inputs' | 'random' | ...
    notes: list[Note] = field(default_factory=list)

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: v for k, v in self.args.items() if isinstance(v, np.ndarray)}


def prepare_inputs(scop: Scop, options: Options, namespace: Mapping | None = None
                   ) -> dict[str, object]:
    """Every C parameter's value by name (see the module docstring for the rules).

    Raises InputError when given arrays do not fit the declaration, overlap, or
    when a size parameter has no value."""
    return gather_inputs(scop, options, namespace).args


def gather_inputs(scop: Scop, options: Options, namespace: Mapping | None = None,
                  defaults: Mapping | None = None, where: str = "the namespace") -> Inputs:
    """:func:`prepare_inputs` with provenance.  ``defaults`` supplies size and
    scalar values used only when neither ``options.sizes`` nor the arrays give one
    (the callable falls back on the cell's ``--size`` this way)."""
    namespace = namespace if namespace is not None else {}
    check_value_names(scop, options.sizes)
    notes: list[Note] = []
    given, origin = _given_arrays(scop, options, namespace, notes, where)
    _check_overlap(scop, given, flat=False)
    sizes = _sizes(scop, options.sizes, given, defaults or {})
    shapes = _shapes(scop, sizes)
    limits.check_memory(scop, shapes, sizes, options.run)
    check_flat(scop, sizes)
    for name, a in given.items():
        given[name] = _fit(scop, name, a, shapes[name], sizes)
    _check_overlap(scop, given, flat=True)
    user = {n: a for n, a in given.items() if origin[n] == "namespace"}
    _check_writeable(scop, user)
    written = set(scop.written_arrays())
    args: dict[str, object] = {}
    for p in scop.params:
        if p.kind == "size":
            args[p.name] = sizes[p.name]
        elif p.kind == "scalar":
            args[p.name], origin[p.name] = _scalar(p, options, namespace, defaults or {},
                                                   notes)
        elif p.name in given:
            args[p.name] = _usable(p.name, given[p.name], p.name in written, notes)
        else:
            args[p.name] = random_array(p.name, shapes[p.name], scop.arrays[p.name].dtype,
                                        options.seed, index_high(scop, p.name, sizes))
            origin[p.name] = "random"
    return Inputs(args, user, origin, notes)


def check_value_names(scop: Scop, values: Mapping) -> None:
    """``--size`` may only name size parameters and scalars."""
    ok = {p.name for p in scop.params if p.kind in ("size", "scalar")}
    bad = [k for k in values if k not in ok]
    if bad:
        raise InputError(f"--size names {', '.join(bad)}, which "
                         f"{'is' if len(bad) == 1 else 'are'} not a size parameter or scalar "
                         f"of {scop.name} (those are: {', '.join(sorted(ok)) or 'none'})")


def _given_arrays(scop: Scop, options: Options, namespace: Mapping, notes: list[Note],
                  where: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Arrays the user supplied (namespace, then --inputs overriding), type-checked."""
    given: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    for p in scop.array_params:
        if p.name in namespace:
            given[p.name] = _check_array(scop, p, namespace[p.name], where)
            origin[p.name] = "namespace"
    if options.inputs:
        for name, a in _load_npz(scop, options.inputs).items():
            if name in given:
                notes.append(Note(Stage.RUN, f"{name} taken from {options.inputs}, not from "
                                  f"{where}", kind="info"))
            given[name] = _check_array(scop, scop_param(scop, name), a, options.inputs)
            origin[name] = "inputs"
    return given, origin


def scop_param(scop: Scop, name: str) -> Param:
    return next(p for p in scop.params if p.name == name)


def _load_npz(scop: Scop, path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file whose names are array parameters (others are an error)."""
    try:
        f = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"--inputs: no such file {path!r}") from None
    except Exception as e:
        raise InputError(f"--inputs: cannot read {path!r} as .npz: {e}") from None
    if not isinstance(f, np.lib.npyio.NpzFile):
        raise InputError(f"--inputs: {path!r} holds a single array, not an .npz archive "
                         f"of arrays by parameter name (use numpy.savez)")
    with f:
        try:
            data = {k: f[k] for k in f.files}
        except ValueError as e:             # object arrays: pickles, never loaded
            raise InputError(f"--inputs {path}: an array holds Python objects (dtype "
                             f"object), which polymagic does not unpickle; save numeric "
                             f"arrays ({e})") from None
        except Exception as e:              # noqa: BLE001 - a damaged member
            raise InputError(f"--inputs: cannot read {path!r} as .npz: {e}") from None
    names = {p.name for p in scop.array_params}
    unknown = [k for k in data if k not in names]
    if unknown:
        what = "is not an array parameter" if len(unknown) == 1 else "are not array parameters"
        raise InputError(f"--inputs {path}: {', '.join(unknown)} {what} of {scop.name} "
                         f"(those are: {', '.join(sorted(names))})")
    return data


def _check_array(scop: Scop, p: Param, value, where: str) -> np.ndarray:
    """Type and rank of one supplied array."""
    decl = scop.arrays[p.name]
    if not isinstance(value, np.ndarray):
        raise InputError(f"{p.name} in {where} is a {type(value).__name__}, not a NumPy array "
                         f"(the C parameter is {decl.ctype} {p.name}"
                         f"{''.join('[]' for _ in decl.shape)}; use numpy.asarray(..., "
                         f"dtype=numpy.{decl.dtype}) or rename the variable)")
    if value.dtype != np.dtype(decl.dtype):
        raise InputError(f"{p.name}: dtype {value.dtype} does not match the C type "
                         f"{decl.ctype} (expected {decl.dtype}; use "
                         f"{p.name}.astype(numpy.{decl.dtype}))")
    if value.ndim != len(decl.shape) and not (decl.flat is not None and value.ndim == 1):
        raise InputError(f"{p.name}: {value.ndim}-d array for a {len(decl.shape)}-d C parameter "
                         f"(shape {value.shape})")
    return value


def _check_overlap(scop: Scop, given: Mapping[str, np.ndarray], flat: bool) -> None:
    """Distinct C parameters must not share the elements they use when one of them
    is written: the model, like C's ``restrict``, assumes no aliasing (pointer
    parameters included, with or without ``restrict``: aliasing pointers would make
    the dependences the model computed wrong); read-only ones may share.  Declared
    arrays are checked as given (``flat=False``, before their shapes); pairs with a
    flat buffer once it is cut to the elements used (``flat=True``, :func:`_fit`)."""
    written = set(scop.written_arrays())
    items = list(given.items())
    for i, (n1, a1) in enumerate(items):
        for n2, a2 in items[i + 1:]:
            pair_flat = scop.arrays[n1].flat is not None or scop.arrays[n2].flat is not None
            if pair_flat == flat and (n1 in written or n2 in written) and \
                    np.shares_memory(a1, a2):
                ptr = [n for n in (n1, n2) if scop.arrays[n].flat is not None]
                why = (f" (polymagic assumes pointer parameters do not alias, as restrict "
                       f"says, and checks it: {' and '.join(ptr)} "
                       f"{'is a pointer' if len(ptr) == 1 else 'are pointers'})" if ptr else "")
                raise InputError(f"{n1} and {n2} share memory in the elements {scop.name} "
                                 f"uses, and {n1 if n1 in written else n2} is written{why}; "
                                 f"pass separate arrays (e.g. {n2}.copy())")


def _sizes(scop: Scop, values: Mapping, given: Mapping[str, np.ndarray],
           defaults: Mapping) -> dict[str, int]:
    """Values of all size parameters: --size, else inferred, else defaults."""
    sizes: dict[str, int] = {}
    for name in scop.size_params:
        if name in values:
            sizes[name] = _as_size(name, values[name])
    inferred = _infer_sizes(scop, given, set(sizes))
    sizes.update(inferred)
    for name in scop.size_params:
        if name not in sizes and name in defaults:
            sizes[name] = _as_size(name, defaults[name])
    missing = [n for n in scop.size_params if n not in sizes]
    if missing:
        hint = ",".join(f"{n}=..." for n in missing)
        raise InputError(f"no value for size parameter{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)}: pass --size {hint} (or arrays from which "
                         f"{'they' if len(missing) > 1 else 'it'} can be read)")
    check_context(scop, sizes)
    return {n: sizes[n] for n in scop.size_params}


def _as_size(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise InputError(f"size parameter {name} must be an integer, got {v!r}")
    v = int(v)
    if not INT32[0] <= v <= INT32[1]:
        raise InputError(f"size parameter {name}={v} does not fit a C int")
    return v


def _infer_sizes(scop: Scop, given: Mapping[str, np.ndarray], known: set[str]
                 ) -> dict[str, int]:
    """Sizes read off array shapes where an extent is a plain size parameter; every
    array that determines a size must agree."""
    seen: dict[str, tuple[int, str]] = {}
    pointers: dict[str, tuple[int, str]] = {}
    for name, a in given.items():
        decl = scop.arrays[name]
        if decl.flat is not None and a.ndim == 1:
            ext = decl.shape[0]
            if len(decl.shape) == 1 and decl.flat.declared is None and isinstance(ext, Var) \
                    and ext.name in scop.size_params and ext.name not in known:
                v = int(a.shape[0])          # a pointer: at least this long; the shortest
                if ext.name not in pointers or v < pointers[ext.name][0]:
                    pointers[ext.name] = (v, f"len({name})")
            continue
        for k, ext in enumerate(decl.shape):
            if not (isinstance(ext, Var) and ext.name in scop.size_params) or ext.name in known:
                continue
            v = int(a.shape[k])
            prev = seen.get(ext.name)
            if prev is not None and prev[0] != v:
                raise InputError(f"the shapes disagree on {ext.name}: {prev[1]} gives "
                                 f"{ext.name}={prev[0]}, {name}.shape[{k}] gives {v}")
            seen.setdefault(ext.name, (v, f"{name}.shape[{k}]"))
    for n, v in pointers.items():
        seen.setdefault(n, v)
    return {n: v for n, (v, _) in seen.items()}


def check_context(scop: Scop, sizes: Mapping[str, int]) -> None:
    """The sizes must satisfy the function's assumptions (scop.context, e.g. N >= 1)."""
    ctx = scop.context
    try:
        import islpy as isl
        for name, v in sizes.items():
            pos = ctx.find_dim_by_name(isl.dim_type.param, name)
            if pos >= 0:
                ctx = ctx.fix_val(isl.dim_type.param, pos, isl.Val.int_from_si(ctx.get_ctx(), v))
        empty = ctx.is_empty()
    except Exception:   # a context we cannot evaluate: leave it to the shape checks
        return
    if empty:
        vals = _sizes_text(sizes)
        raise InputError(f"{vals} violates what {scop.name} assumes about its sizes: "
                         f"{scop.context}")


def _shapes(scop: Scop, sizes: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Declared extents of the array parameters, evaluated; each must be >= 1."""
    env = {**scop.constants, **sizes}
    out: dict[str, tuple[int, ...]] = {}
    for p in scop.array_params:
        shape = tuple(int(evaluate(e, env)) for e in scop.arrays[p.name].shape)
        if any(d < 1 for d in shape):
            raise InputError(f"{p.name} would have shape {shape} {_with(sizes)}; "
                             f"every extent must be at least 1")
        out[p.name] = shape
    return out


def check_flat(scop: Scop, sizes: Mapping[str, int]) -> None:
    """The delinearisation conditions at these sizes (Grosser et al., ICS 2015,
    section 5): each inner subscript of a split access stays below its dimension's
    size, else the split would name other elements than the flat subscript."""
    env = {**scop.constants, **sizes}
    bad = flat_violation(scop.arrays, env)
    if bad is not None:
        b, v = bad
        raise InputError(f"line {b.line}, column {b.col}: {b.explain(dict(sizes), v)}")


def _fit(scop: Scop, name: str, a: np.ndarray, expected: tuple[int, ...],
         sizes: Mapping[str, int]) -> np.ndarray:
    """The caller's array as the model's shape: itself when the shapes are equal; for
    a flat buffer (a pointer, a delinearised array) given 1-d, a row-major view of
    its first elements."""
    flat = scop.arrays[name].flat
    if flat is None or (a.ndim == len(expected) > 1) or \
            (a.ndim == 1 and len(expected) == 1 and flat.declared is not None):
        _check_shape(name, a, expected, sizes)
        return a
    need = int(np.prod(expected))
    if flat.declared is not None:
        declared = int(evaluate(flat.declared, {**scop.constants, **sizes}))
        if a.shape[0] != declared:
            raise InputError(f"{name}: shape {tuple(a.shape)} does not match the declaration, "
                             f"which gives ({declared},) {_with(sizes)}")
        if declared < need:
            raise InputError(f"{name} is declared with {declared} elements {_with(sizes)}, but "
                             f"{scop.name} uses it as a {expected} row-major array "
                             f"({need} elements)")
    elif a.shape[0] < need:
        shown = f"as a {expected} row-major array" if len(expected) > 1 else \
            f"elements 0 to {need - 1}"
        raise InputError(f"{name}: {a.shape[0]} elements are too few: {scop.name} uses "
                         f"the pointer parameter {shown} {_with(sizes)}, which needs at "
                         f"least {need} elements")
    return a[:need].reshape(expected)


def _check_shape(name: str, a: np.ndarray, expected: tuple[int, ...],
                 sizes: Mapping[str, int]) -> None:
    if tuple(a.shape) != expected:
        raise InputError(f"{name}: shape {tuple(a.shape)} does not match the declaration, "
                         f"which gives {expected} {_with(sizes)}")


def _sizes_text(sizes: Mapping[str, int]) -> str:
    """``N=8, M=4``, or "its constant sizes" (issue 18: an empty list was printed)."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "its constant sizes"


def _with(sizes: Mapping[str, int]) -> str:
    """``with N=8, M=4``, or ``at its constant sizes``."""
    return f"with {_sizes_text(sizes)}" if sizes else "at its constant sizes"


def _check_writeable(scop: Scop, user: Mapping[str, np.ndarray]) -> None:
    """Arrays that receive results must be writeable (checked before running)."""
    for name in scop.written_arrays():
        if name in user and not user[name].flags.writeable:
            raise InputError(f"{name} is read-only, but {scop.name} writes it")


def _usable(name: str, a: np.ndarray, written: bool, notes: list[Note]) -> np.ndarray:
    """The array as given — any view: steps, transposes, negative strides, offsets,
    Fortran order; the transfer planner reads its real strides (seed 002 §2.3) —
    unless its layout cannot be packed (byte strides not a multiple of the item
    size, or a written array whose elements overlap): then a contiguous copy."""
    from ..transfers.plan import layout_problem
    why = layout_problem(a, written)
    if why is None:
        return a
    notes.append(Note(Stage.RUN, f"ran on a contiguous copy ({why})", subject=name, kind="info"))
    return np.ascontiguousarray(a)


def _rng(seed: int, name: str) -> np.random.Generator:
    """A random stream of its own for each parameter name."""
    return np.random.default_rng([int(seed) % 2**64, zlib.crc32(name.encode())])


def random_array(name: str, shape: tuple[int, ...], dtype: str, seed: int,
                 high: int | None = None) -> np.ndarray:
    """Seeded random values: floats uniform in [0.5, 1.5), ints in [0, 10), or in
    [0, ``high``) for an index array (:func:`.gathers.index_high`)."""
    rng = _rng(seed, name)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        lo, hi = RANDOM_FLOAT
        return (rng.random(shape) * (hi - lo) + lo).astype(dt)
    lo, hi = RANDOM_INT
    return rng.integers(lo, hi if high is None else max(1, high), size=shape, dtype=dt)


def _is_number(v) -> bool:
    if isinstance(v, bool) or isinstance(v, np.bool_):
        return False
    if isinstance(v, np.ndarray):
        return v.ndim == 0 and v.dtype.kind in "iuf"
    return isinstance(v, (int, float, np.integer, np.floating))


def _scalar(p: Param, options: Options, namespace: Mapping, defaults: Mapping,
            notes: list[Note]) -> tuple[object, str]:
    """A scalar's value and its origin, cast to the C type."""
    if p.name in options.sizes:
        v, origin = options.sizes[p.name], "size"
    elif p.name in namespace and _is_number(namespace[p.name]):
        v, origin = namespace[p.name], "namespace"
    elif p.name in defaults:
        v, origin = defaults[p.name], "size"
    else:
        if p.name in namespace:
            notes.append(Note(Stage.RUN, f"{p.name} in the namespace is not a number: used a "
                              "random value", kind="fallback"))
        lo, hi = RANDOM_FLOAT
        v, origin = float(_rng(options.seed, p.name).uniform(lo, hi)), "random"
    return cast_scalar(p.name, p.ctype, v), origin


def cast_scalar(name: str, ctype: str, v) -> object:
    """The value a C parameter of type ``ctype`` receives (float32 rounding included)."""
    dtype = np.dtype(DTYPES.get(ctype, "float64"))
    if dtype.kind == "f":
        return float(dtype.type(v))
    if not float(v).is_integer():
        raise InputError(f"{name} is a C {ctype}, got {v!r}")
    return int(v)


# ---- comparison ----------------------------------------------------------------

@dataclass
class Comparison:
    max_abs_err: float
    max_rel_err: float
    mismatches: int
    first: tuple[int, ...] | None
    rtol: float
    atol: float

    def info(self) -> dict:
        d = {"max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
             "mismatches": self.mismatches}
        if self.mismatches:
            d["first_mismatch"] = self.first
            d["rtol"], d["atol"] = self.rtol, self.atol
        return d


def tolerances(dtype, ref: np.ndarray) -> tuple[float, float]:
    """(rtol, atol) for comparing results of ``dtype``; atol scales with max |ref|."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        return 0.0, 0.0
    rtol, afrac = TOLERANCES.get(dt.name, TOLERANCES["float32"])
    finite = np.abs(ref[np.isfinite(ref)])
    return rtol, afrac * float(finite.max()) if finite.size else 0.0


def compare(ref: np.ndarray, out: np.ndarray) -> Comparison:
    """Compare a device result with the reference: |out-ref| <= atol + rtol·|ref|,
    exact for ints, NaN == NaN and equal infinities count as equal."""
    rtol, atol = tolerances(ref.dtype, ref)
    if ref.dtype.kind != "f":
        bad = ref != out
        diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        return _summary(bad, diff, ref.astype(np.float64), rtol, atol)
    r, o = ref.astype(np.float64), out.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        same = (r == o) | (np.isnan(r) & np.isnan(o))
        diff = np.where(same, 0.0, np.abs(o - r))
        diff = np.where(np.isnan(diff), np.inf, diff)
        bad = ~same & ~(diff <= atol + rtol * np.abs(r))
    return _summary(bad, diff, r, rtol, atol)


def _summary(bad: np.ndarray, diff: np.ndarray, ref: np.ndarray, rtol: float,
             atol: float) -> Comparison:
    n = int(np.count_nonzero(bad))
    first = None
    if n:
        first = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape))
    max_abs = float(diff.max()) if diff.size else 0.0
    nz = ref != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff[nz] / np.abs(ref[nz])
    max_rel = float(rel.max()) if rel.size else 0.0
    return Comparison(max_abs, max_rel, n, first, rtol, atol)


def compare_all(names: list[str], ref: Mapping[str, np.ndarray],
                out: Mapping[str, np.ndarray]) -> tuple[dict[str, Comparison], dict]:
    """Compare each named array; returns the per-array comparisons and the totals
    (the RunReport fields max_abs_err, max_rel_err, mismatches, first_mismatch)."""
    per = {n: compare(ref[n], out[n]) for n in names}
    first = next(((n, c.first) for n, c in per.items() if c.mismatches), None)
    totals = {"max_abs_err": max((c.max_abs_err for c in per.values()), default=0.0),
              "max_rel_err": max((c.max_rel_err for c in per.values()), default=0.0),
              "mismatches": sum(c.mismatches for c in per.values()),
              "first_mismatch": first}
    return per, totals


# ---- targets -------------------------------------------------------------------

@dataclass
class DeviceRun:
    seconds: float
    h2d_s: float = 0.0
    d2h_s: float = 0.0
    launches: int = 0
    counters: dict = field(default_factory=dict)
    note: str = ""
    transfers: TransferStats | None = None


def choose_target(requested: str) -> tuple[str, str]:
    """The target to run and why: 'auto' means the GPU when CuPy sees one."""
    from .gpu import gpu_available, unavailable_reason
    if requested == "auto":
        if gpu_available():
            return "gpu", "a GPU is visible to CuPy"
        return "emulator", f"{unavailable_reason()}: ran the emulator"
    if requested == "gpu":
        if not gpu_available():
            raise DeviceError(f"--target gpu: {unavailable_reason()} "
                              f"(use --target emulator to run without a GPU)")
        return "gpu", "requested with --target gpu"
    if requested in ("emulator", "openmp"):
        return requested, f"requested with --target {requested}"
    raise DeviceError(f"unknown target {requested!r}")


_MODULES: dict[tuple, object] = {}


def device_module(compiled, target: str):
    """The GPU module or emulator build for ``compiled`` (built once, then reused).

    Inputs are always C-contiguous arrays of the declared dtypes, so the generated
    source and the target identify a build."""
    key = (target, compiled.cuda, compiled.host_py, compiled.scop.source)
    mod = _MODULES.get(key)
    if mod is None:
        if target == "gpu":
            from .gpu import GpuModule
            mod = GpuModule(compiled)
        else:
            from .emulator import build
            mod = build(compiled.program, "emulate" if target == "emulator" else "openmp")
        _MODULES[key] = mod
    return mod


def run_device(compiled, target: str, options: Options, arrays: dict[str, np.ndarray],
               ints: dict[str, int], scalars: dict[str, float],
               sources: Mapping[str, np.ndarray] | None = None,
               work: int | None = None) -> DeviceRun:
    """Run the target on data read from ``sources`` (default ``arrays``); the written
    regions land in ``arrays`` (modified in place).  ``work``: the run's statement
    instances (the emulator builds small runs at ``-O0``)."""
    sources = arrays if sources is None else sources
    if target == "gpu":
        mod = device_module(compiled, target)
        r = mod.run(arrays, ints, scalars, sources=sources, device_mem=options.device_mem)
        return DeviceRun(r.kernel_s, r.h2d_s, r.d2h_s, r.launches, {}, f"on {r.device_name}",
                         r.transfers)
    if target == "openmp":
        return run_cpu(compiled, arrays, ints, scalars, sources)
    from .emulator import run_transferred
    mode = "emulate" if target == "emulator" else "openmp"
    r, st = run_transferred(compiled.program, compiled.scop, mode, sources, arrays, ints,
                            scalars, options.seed, options.emu_order,
                            device_mem=options.device_mem, cache=_MODULES, work=work)
    return DeviceRun(r.seconds, 0.0, 0.0, r.launches, emulator_counters(r), transfers=st)


def with_cpu_code(compiled):
    """``compiled`` with the CPU target's code (compiled again with
    :attr:`CompileOptions.cpu_code`, cached, when it was compiled without)."""
    if compiled.cpu is not None:
        return compiled
    from ..compiler.driver import compile_source
    return compile_source(compiled.scop.source, compiled.options.with_(cpu_code=True),
                          language=compiled.language)


def run_cpu(compiled, arrays: dict[str, np.ndarray], ints: Mapping[str, int],
            scalars: Mapping[str, float], sources: Mapping[str, np.ndarray]) -> DeviceRun:
    """The CPU target (issue 21): the tiled OpenMP C, in place on C-contiguous copies
    of ``sources``; the written arrays' results land in ``arrays``."""
    from .openmp import module
    compiled = with_cpu_code(compiled)
    mod = module(compiled.scop, compiled.cpu)
    written = set(compiled.scop.written_arrays())
    bufs = {n: (np.array(a, order="C", copy=True) if n in written else
                np.ascontiguousarray(a)) for n, a in sources.items()}
    seconds = mod.run({**bufs, **ints, **scalars})
    for n in written:
        if n in arrays:
            arrays[n][...] = bufs[n]
    decided = mod.describe_decisions({**ints, **scalars})
    return DeviceRun(seconds, 0.0, 0.0, 1, {}, f"{compiled.cpu.summary()}; "
                     + (f"{decided}; " if decided else "")
                     + f"{mod.describe_threads()}, -O3 -march=native, no FMA contraction "
                     "(the reference's rounding)")


def emulator_counters(r: EmuResult) -> dict:
    """Loads/stores per kernel and in total, and the warp transactions per kernel
    when they were counted, from an emulator result."""
    out = {"loads": int(r.loads), "stores": int(r.stores)}
    if r.counters:
        out["per_kernel"] = r.counters
    if r.tx_counters is not None:       # warp transactions per kernel (seed 003 §6.3)
        out["transactions"] = r.tx_counters
    return out


_REFERENCES: dict[tuple[str, str], object] = {}


def cpu_reference(scop: Scop, opt: str = "-O2"):
    """The compiled CPU reference of ``scop`` (built once per source); a Python
    function's is its C translation (``scop.c_source``: same Scop, same semantics)."""
    from .cpu import CpuReference
    key = (scop.source, opt)
    ref = _REFERENCES.get(key)
    if ref is None:
        if scop.language == "python":
            scop = replace(scop, source=scop.c_source, language="c", c_source=None)
        ref = _REFERENCES[key] = CpuReference(scop, opt)
    return ref


# ---- one run -------------------------------------------------------------------

def run(compiled, options: Options, namespace: Mapping | None = None) -> RunReport:
    """Prepare inputs, run the device target and the CPU reference, compare, and
    write the results into the namespace's arrays when the check passed."""
    inputs = gather_inputs(compiled.scop, options, namespace)
    return execute(compiled, options, inputs, check=options.check,
                   unchecked="not checked (--no-check): the CPU reference did not run")


def execute(compiled, options: Options, inputs: Inputs, check: bool,
            unchecked: str = "not checked against the CPU reference") -> RunReport:
    """The device run, the optional check and the write-back, for prepared inputs."""
    scop = compiled.scop
    target, why = choose_target(options.target)
    ints = {n: inputs.args[n] for n in scop.size_params}
    scalars = {p.name: inputs.args[p.name] for p in scop.scalar_params}
    written = [n for n in scop.written_arrays() if scop.arrays[n].kind == "param"]
    fixed = compiled.program.specialised
    other = {k: v for k, v in fixed.items() if k in ints and int(ints[k]) != v}
    if other:
        raise InputError(
            "this compilation's localised buffers are specialised to "
            + ", ".join(f"{k}={v}" for k, v in fixed.items()) + " (--localise naming a host "
            "loop or a superposition step loop); got " + ", ".join(f"{k}={ints[k]}" for k in other)
            + ": compile again with --size " + ",".join(f"{k}={ints[k]}" for k in fixed))
    work = limits.check_work(scop, ints, target, check, options.run)
    sources = inputs.arrays()
    check_gathers(scop, ints, sources)
    # results land in copies of the written arrays; the others are only read
    dev = {n: (np.array(a, copy=True) if n in written else a) for n, a in sources.items()}
    if check:     # first: a fault in the user's code is named before any target runs it
        ref = {n: a.copy() for n, a in inputs.arrays().items()}
        cpu_s = cpu_reference(scop).run({**inputs.args, **ref})
    d = run_device(compiled, target, options, dev, ints, scalars, sources=sources, work=work)
    report = RunReport(ok=True, target=target, target_note=_join(why, d.note), checked=check,
                       device_s=d.seconds, h2d_s=d.h2d_s, d2h_s=d.d2h_s, launches=d.launches,
                       counters=d.counters, sizes={**ints, **scalars})
    notes = list(inputs.notes)
    if d.transfers is not None:
        report.bytes_h2d, report.bytes_d2h = d.transfers.bytes_h2d, d.transfers.bytes_d2h
        report.transfers = d.transfers.as_dict()
        notes.append(Note(Stage.TRANSFERS, d.transfers.summary(), kind="info"))
    if check:
        report.cpu_s = cpu_s
        per, totals = compare_all(written, ref, dev)
        report.per_array = {n: c.info() for n, c in per.items()}
        for k, v in totals.items():
            setattr(report, k, v)
        report.ok = totals["mismatches"] == 0
    else:
        notes.append(Note(Stage.RUN, unchecked, kind="info"))
    if report.ok:
        report.wrote_back = write_back(written, inputs.user_arrays, dev)
        if scop.returns is not None:
            report.returned = dev[RETURN][0].item()
    elif inputs.user_arrays:
        notes.append(Note(Stage.RUN, "the check failed: nothing was written back", kind="info"))
    report.message = "; ".join(str(n) for n in notes)
    report.notes = notes
    return report


def write_back(names: list[str], user: Mapping[str, np.ndarray],
               results: Mapping[str, np.ndarray]) -> list[str]:
    """Copy results into the caller's arrays in place; returns the names written."""
    done = []
    for n in names:
        if n in user:
            user[n][...] = results[n]
            done.append(n)
    return done


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


__all__ = ["RunReport", "prepare_inputs", "gather_inputs", "run", "execute", "compare",
           "compare_all", "tolerances", "random_array", "choose_target", "TOLERANCES",
           "Inputs", "DeviceRun"]
