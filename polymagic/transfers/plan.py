"""Transfer planning: descriptors from a Scop and NumPy arrays, compact device buffers,
and the per-array layouts the kernels index them with (seed 002 §4.1–4.3, §4.5).

jit4GPU "discovers array layouts before compiling code" (seed 002 §2.3): the
runtime reads each argument's real byte strides at call time, so NumPy views
(slices with steps, transposes, negative strides, offsets into a larger buffer,
Fortran order) are used as they are, without a contiguous copy.

1. **References** (:func:`scop_references`): for every access relation of every
   statement, the box hull of the elements it touches over the statement's domain,
   as isl piecewise affine bounds of the size parameters (computed once per Scop)
   evaluated with the run's sizes.  A reference's counters are its box offsets
   ``t_a = x_a - lo_a``, so with the array's element strides ``h_a`` it is the
   CSLMAD ``addr(lo) + Σ_a h_a·t_a`` over ``0 <= t_a < u_a`` (§4.2).
2. **Groups** (§4.3): the overlap graph of the references' byte intervals, with an
   extra edge between references of one array (a kernel reaches an array through
   one pointer, so all of its references must land in one buffer); each connected
   component is analysed by :func:`polymagic.transfers.lmad.analyse_group` and
   becomes one compact device buffer.
3. **Layouts**: each member's device offset is affine in its counters; re-expressed
   in the array's subscripts it must be one affine map per array,
   ``offset + Σ_a strides_a·x_a`` with non-negative element strides — exactly
   what the kernels compute (``ArrayDecl.strides`` become kernel ints, the offset
   goes into the pointer), so the device code's address arithmetic *is* the
   packed layout (the "address mapping problem" of §4).  Where host strides are
   negative the packed buffer is laid out backwards along that dimension
   (:meth:`GroupPlacement.reflected`).  When a component cannot be expressed this
   way its arrays are planned one by one, and as a last resort an array's
   covering box is packed densely (always possible).
4. **Copies**: per array, the boxes gathered into the buffer (``copy_in``: the
   covering box when the layout maps it one-to-one into the buffer, else each
   reference's box) and the boxes scattered back (``copy_out``: written
   references only, "only written regions are copied back"); the device range
   read back covers exactly the written slots.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import prod
from typing import Iterable, Mapping, Sequence

import islpy as isl
import numpy as np

from ..notes import Note, Stage
from ..scop import Scop
from .lmad import CSLMAD, GroupPlacement, analyse_group, is_restricted, overlap_components


# ---- boxes ------------------------------------------------------------------------

@dataclass(frozen=True)
class Box:
    """Subscripts ``lo[a] <= x[a] <= hi[a]`` (inclusive) of one array."""
    lo: tuple[int, ...]
    hi: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(h - l + 1 for l, h in zip(self.lo, self.hi))

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(l, h + 1) for l, h in zip(self.lo, self.hi))

    def contains(self, other: "Box") -> bool:
        return all(a <= c and d <= b for a, b, c, d in zip(self.lo, self.hi, other.lo, other.hi))

    def intersects(self, other: "Box") -> bool:
        return all(a <= d and c <= b for a, b, c, d in zip(self.lo, self.hi, other.lo, other.hi))

    def clip(self, shape: Sequence[int]) -> "Box | None":
        lo = tuple(max(0, l) for l in self.lo)
        hi = tuple(min(n - 1, h) for n, h in zip(shape, self.hi))
        return Box(lo, hi) if all(l <= h for l, h in zip(lo, hi)) else None

    @staticmethod
    def hull(boxes: Iterable["Box"]) -> "Box":
        boxes = list(boxes)
        return Box(tuple(min(b.lo[a] for b in boxes) for a in range(len(boxes[0].lo))),
                   tuple(max(b.hi[a] for b in boxes) for a in range(len(boxes[0].lo))))

    def __str__(self) -> str:
        return "[" + ", ".join(f"{l}:{h + 1}" for l, h in zip(self.lo, self.hi)) + "]"


def prune_boxes(boxes: Iterable[Box]) -> list[Box]:
    """Distinct boxes, dropping those contained in another (their elements are
    covered already)."""
    uniq = list(dict.fromkeys(boxes))
    uniq.sort(key=lambda b: -b.size)
    out: list[Box] = []
    for b in uniq:
        if not any(o.contains(b) for o in out):
            out.append(b)
    return out


@dataclass(frozen=True)
class Reference:
    """One array reference's box (a superset of the elements it touches)."""
    array: str
    box: Box
    write: bool = False
    label: str = ""


@dataclass(frozen=True)
class HostArray:
    """What the planner needs of a NumPy array: its layout in memory."""
    name: str
    ptr: int                      # byte address of element [0, ..., 0]
    byte_strides: tuple[int, ...]
    itemsize: int
    shape: tuple[int, ...]

    @staticmethod
    def of(name: str, a: np.ndarray) -> "HostArray":
        return HostArray(name, int(a.__array_interface__["data"][0]), tuple(a.strides),
                         int(a.itemsize), tuple(a.shape))

    def element_strides(self) -> tuple[int, ...] | None:
        """Strides in elements, None when a byte stride is not a multiple of the
        item size (such arrays are planned on a contiguous copy)."""
        if any(s % self.itemsize for s in self.byte_strides):
            return None
        return tuple(s // self.itemsize for s in self.byte_strides)

    def byte_interval(self, box: Box) -> tuple[int, int]:
        """Lowest and highest byte (inclusive) of the elements of ``box``."""
        lo = self.ptr + sum(min(l * s, h * s) for l, h, s in zip(box.lo, box.hi, self.byte_strides))
        hi = self.ptr + sum(max(l * s, h * s) for l, h, s in zip(box.lo, box.hi, self.byte_strides))
        return lo, hi + self.itemsize - 1

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * self.itemsize

    def span_bytes(self) -> int:
        """Bytes from the lowest to the highest element (what copying the memory the
        view covers, gaps included, would move)."""
        if not all(self.shape):
            return 0
        lo, hi = self.byte_interval(Box((0,) * len(self.shape), tuple(n - 1 for n in self.shape)))
        return hi - lo + 1


def layout_problem(a: np.ndarray, written: bool) -> str | None:
    """Why ``a`` cannot be used in place (then it is planned on a contiguous copy):
    byte strides that are not multiples of the item size, or a written array whose
    elements overlap in memory (a stride-0 broadcast, say)."""
    h = HostArray.of("", a)
    es = h.element_strides()
    if es is None:
        return "its byte strides are not multiples of its item size"
    if written and a.size > 1:
        dims = [k for k in range(a.ndim) if a.shape[k] > 1]
        dims.sort(key=lambda k: -abs(es[k]))
        if not is_restricted([abs(es[k]) for k in dims], [a.shape[k] for k in dims]) or \
                any(es[k] == 0 for k in dims):
            return "it is written but its elements overlap in memory"
    return None


# ---- the plan ---------------------------------------------------------------------

@dataclass
class ArrayLayout:
    """How a kernel sees one array in its device buffer: element ``x`` lives at
    ``offset + Σ_a strides[a]·x[a]`` of buffer ``component`` (``strides >= 0``)."""
    name: str
    component: int
    offset: int
    strides: tuple[int, ...]
    copy_in: list[Box]
    copy_out: list[Box]
    itemsize: int

    def slot(self, x: Sequence[int]) -> int:
        return self.offset + sum(s * i for s, i in zip(self.strides, x))

    def slot_range(self, box: Box) -> tuple[int, int]:
        return self.slot(box.lo), self.slot(box.hi)

    @property
    def bytes_in(self) -> int:
        return sum(b.size for b in self.copy_in) * self.itemsize

    @property
    def bytes_out(self) -> int:
        return sum(b.size for b in self.copy_out) * self.itemsize


@dataclass
class Component:
    """One compact device buffer (a connected component of the overlap graph)."""
    index: int
    arrays: list[str]
    size: int                         # elements
    itemsize: int
    case: str
    d2h: list[tuple[int, int]] = field(default_factory=list)   # [lo, hi) element ranges
    notes: list[Note] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def bytes_d2h(self) -> int:
        return sum(h - l for l, h in self.d2h) * self.itemsize


@dataclass
class TransferPlan:
    components: list[Component]
    layouts: dict[str, ArrayLayout]
    notes: list[Note] = field(default_factory=list)

    @property
    def bytes_h2d(self) -> int:
        return sum(c.nbytes for c in self.components)

    @property
    def bytes_d2h(self) -> int:
        return sum(c.bytes_d2h for c in self.components)

    def describe(self) -> list[str]:
        out = []
        for c in self.components:
            out.append(f"buffer {c.index} ({', '.join(c.arrays)}): {c.case}, {c.size} elements"
                       + "".join(f"; {n}" for n in c.notes))
        return out


def plan_transfers(refs: Sequence[Reference], arrays: Mapping[str, HostArray]) -> TransferPlan:
    """Group ``refs`` (boxes of the arrays in ``arrays``) into compact device buffers
    and give every array a layout (see the module docstring)."""
    by_array: dict[str, list[Reference]] = {}
    for r in refs:
        box = r.box.clip(arrays[r.array].shape)
        if box is not None:
            by_array.setdefault(r.array, []).append(Reference(r.array, box, r.write, r.label))
    # one CSLMAD per distinct box of an array (boxes inside another add nothing)
    members: list[tuple[str, Box]] = []
    for name, rs in by_array.items():
        for b in prune_boxes(r.box for r in rs):
            members.append((name, b))
    intervals = [arrays[n].byte_interval(b) for n, b in members]
    first: dict[str, int] = {}
    links = []
    for i, (n, _) in enumerate(members):
        if n in first:
            links.append((first[n], i))
        first.setdefault(n, i)
    plan = TransferPlan([], {})
    for comp in overlap_components(intervals, links):
        group = [members[i] for i in comp]
        for part in _place(group, arrays, by_array):
            part.component.index = len(plan.components)
            plan.components.append(part.component)
            for lay in part.layouts:
                lay.component = part.component.index
                plan.layouts[lay.name] = lay
    for c in plan.components:
        c.d2h = _merge([plan.layouts[n].slot_range(b) for n in c.arrays
                        for b in plan.layouts[n].copy_out])
    return plan


@dataclass
class _Part:
    component: Component
    layouts: list[ArrayLayout]


def _place(group: list[tuple[str, Box]], arrays: Mapping[str, HostArray],
           by_array: Mapping[str, list[Reference]]) -> list[_Part]:
    """Layouts for one connected component, falling back to one buffer per array
    and then to an array's covering box."""
    names = list(dict.fromkeys(n for n, _ in group))
    part = _place_lmad(group, arrays, by_array)
    if part is not None:
        return [part]
    if len(names) > 1:
        out = []
        for n in names:
            sub = [(m, b) for m, b in group if m == n]
            p = _place_lmad(sub, arrays, by_array)
            out.append(p if p is not None else _place_box(n, arrays[n], by_array[n]))
            out[-1].component.notes.append(Note(
                Stage.TRANSFERS, "planned alone: the shared buffer of its overlap group has no "
                "per-array layout", kind="fallback"))
        return out
    return [_place_box(names[0], arrays[names[0]], by_array[names[0]])]


def _place_lmad(group: list[tuple[str, Box]], arrays: Mapping[str, HostArray],
                by_array: Mapping[str, list[Reference]]) -> _Part | None:
    names = list(dict.fromkeys(n for n, _ in group))
    itemsize = {arrays[n].itemsize for n in names}
    if len(itemsize) != 1:
        return None
    isz = itemsize.pop()
    estr = {n: arrays[n].element_strides() for n in names}
    if any(v is None for v in estr.values()):
        return None
    origin = min(arrays[n].ptr for n in names)
    if any((arrays[n].ptr - origin) % isz for n in names):
        return None
    base = {n: (arrays[n].ptr - origin) // isz for n in names}
    spanned = {n: {a for m, b in group if m == n for a, u in enumerate(b.shape) if u > 1}
               for n in names}
    cslmads, keep = [], []
    for n, b in group:
        h = estr[n]
        cslmads.append(CSLMAD(base[n] + sum(l * s for l, s in zip(b.lo, h)), h, b.shape))
        keep.append(spanned[n])
    hint = _box_hint(group, arrays, estr, base) if len(names) == 1 else None
    g = analyse_group(cslmads, keep, hint)
    layouts = _layouts(g, group, spanned)
    if layouts is None:
        g = _reflect(g)
        layouts = _layouts(g, group, spanned) if g is not None else None
    if layouts is None:
        return None
    comp = Component(0, names, g.size, isz, g.case, notes=list(g.notes))
    out = []
    for n in names:
        off, strides = layouts[n]
        lay = ArrayLayout(n, 0, off, strides, [], [], isz)
        _copies(lay, [b for m, b in group if m == n], by_array[n], g.size,
                alone=len(names) == 1)
        out.append(lay)
    return _Part(comp, out)


def _box_hint(group: list[tuple[str, Box]], arrays, estr, base):
    """For references of one array: the ILP solution of §4.3.4 their covering box
    gives (``r = 0``, shifts = box offsets within it, ``u'`` = its extents), in the
    canonical dimensions of the members :func:`analyse_group` passes."""
    name = group[0][0]
    h = estr[name]
    boxes = [b for _, b in group]
    cover = Box.hull(boxes)
    lo_addr = base[name] + sum(min(l * s, hi * s) for l, hi, s in zip(cover.lo, cover.hi, h))

    def hint(cans):
        c0 = cans[0]
        dims = c0.dims
        if any(c.dims != dims for c in cans):
            return None
        up = [cover.shape[a] for a in dims]
        t = []
        for c in cans:
            m = next(b for b, (_, box) in zip(range(len(group)), group)
                     if _member_base(base[name], box, h) == c.base and
                     tuple(box.shape[a] for a in dims) == c.bounds)
            box = boxes[m]
            t.append([box.lo[a] - cover.lo[a] if h[a] > 0 else cover.hi[a] - box.hi[a]
                      for a in dims])
        return lo_addr, [0] * len(cans), t, up
    return hint


def _member_base(b0: int, box: Box, h) -> int:
    """Lowest address of a box (the canonical base of its CSLMAD)."""
    return b0 + sum(min(l * s, hi * s) for l, hi, s in zip(box.lo, box.hi, h))


def _reflect(g: GroupPlacement) -> GroupPlacement | None:
    """Lay the buffer out backwards along canonical dimensions whose host strides are
    negative (the same for every member), so subscript strides become >= 0."""
    flips = {mp.canonical.flips for mp in g.members}
    if not g.packed:
        allf = {all(f) and len(f) > 0 for f in flips}
        anyf = any(any(f) for f in flips)
        if allf == {True}:
            return g.reflected(None)
        return None if anyf else g
    d = len(g.periods)
    full = [f for f in flips if len(f) == d]
    if not full or any(len(f) not in (0, d) for f in flips) or len(set(full)) != 1:
        return None
    for k, fk in enumerate(full[0]):
        if fk:
            g = g.reflected(k)
    return g


def _layouts(g: GroupPlacement, group: list[tuple[str, Box]],
             spanned: Mapping[str, set[int]]) -> dict[str, tuple[int, tuple[int, ...]]] | None:
    """One affine layout per array from the members' maps, or None when they do not
    agree or need a negative stride."""
    out = {}
    names = list(dict.fromkeys(n for n, _ in group))
    for n in names:
        idx = [i for i, (m, _) in enumerate(group) if m == n]
        nd = len(group[idx[0]][1].lo)
        known: dict[int, int] = {}
        rows = []
        for i in idx:
            c, e = g.affine(i)
            lo = group[i][1].lo
            for a in spanned[n]:
                if known.setdefault(a, e[a]) != e[a]:
                    return None
            rows.append((lo, c))
        free = [a for a in range(nd) if a not in known]
        eqs = [([1] + [lo[a] for a in free], c - sum(known[a] * lo[a] for a in known))
               for lo, c in rows]
        sol = _solve(eqs, 1 + len(free))
        if sol is None:
            return None
        strides = [0] * nd
        for a, v in known.items():
            strides[a] = v
        for a, v in zip(free, sol[1:]):
            strides[a] = v
        if any(s < 0 for s in strides):
            return None
        out[n] = (sol[0], tuple(strides))
    return out


def _solve(eqs: list[tuple[list[int], int]], nvars: int) -> list[int] | None:
    """An integer solution of the linear system (free variables 0), or None."""
    rows = [[Fraction(x) for x in a] + [Fraction(b)] for a, b in eqs]
    piv_cols = []
    r = 0
    for col in range(nvars):
        p = next((i for i in range(r, len(rows)) if rows[i][col] != 0), None)
        if p is None:
            continue
        rows[r], rows[p] = rows[p], rows[r]
        pv = rows[r][col]
        rows[r] = [x / pv for x in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][col] != 0:
                f = rows[i][col]
                rows[i] = [x - f * y for x, y in zip(rows[i], rows[r])]
        piv_cols.append(col)
        r += 1
    for row in rows[r:]:
        if row[-1] != 0:
            return None
    sol = [Fraction(0)] * nvars
    for i, col in enumerate(piv_cols):
        sol[col] = rows[i][-1]
    if any(x.denominator != 1 for x in sol):
        return None
    return [int(x) for x in sol]


def _injective_box(strides: Sequence[int], shape: Sequence[int]) -> bool:
    """Whether ``Σ strides·x`` is one-to-one over a box of ``shape`` (the no-overlap
    test of Definition 1 on the device layout)."""
    dims = [k for k in range(len(shape)) if shape[k] > 1]
    if any(strides[k] == 0 for k in dims):
        return False
    dims.sort(key=lambda k: -strides[k])
    return is_restricted([strides[k] for k in dims], [shape[k] for k in dims])


def _copies(lay: ArrayLayout, boxes: list[Box], refs: list[Reference], size: int,
            alone: bool) -> None:
    """``copy_in``/``copy_out`` of one array: its covering box when the layout maps it
    one-to-one into the buffer (one strided copy instead of several overlapping
    ones), else the reference boxes."""
    written = prune_boxes(r.box for r in refs if r.write)
    cover = Box.hull(boxes)
    lo, hi = lay.slot_range(cover)
    if alone and _injective_box(lay.strides, cover.shape) and lo >= 0 and hi < size:
        lay.copy_in = [cover]
        lay.copy_out = [Box.hull(written)] if written else []
    else:
        lay.copy_in = list(boxes)
        lay.copy_out = written


def _place_box(name: str, h: HostArray, refs: list[Reference]) -> _Part:
    """Last resort: the covering box of the array's references, packed densely with
    dimensions in host-stride order (a superset, always one-to-one)."""
    boxes = prune_boxes(r.box for r in refs)
    cover = Box.hull(boxes)
    order = sorted(range(len(cover.lo)), key=lambda a: (-abs(h.byte_strides[a]), a))
    strides = [0] * len(cover.lo)
    acc = 1
    for a in reversed(order):
        strides[a] = acc
        acc *= cover.shape[a]
    off = -sum(s * l for s, l in zip(strides, cover.lo))
    comp = Component(0, [name], cover.size, h.itemsize, "covering-box",
                     notes=[Note(Stage.TRANSFERS, "the covering box of the references, packed "
                                 "densely", kind="info")])
    lay = ArrayLayout(name, 0, off, tuple(strides), [], [], h.itemsize)
    _copies(lay, boxes, refs, cover.size, alone=True)
    return _Part(comp, [lay])


def _merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Inclusive slot ranges -> merged half-open ranges."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi + 1)
        else:
            out.append([lo, hi + 1])
    return [(a, b) for a, b in out]


# ---- references from a Scop ------------------------------------------------------

@dataclass
class _ScopBoxes:
    """Per access: array, write, statement, and per dimension the parametric
    minimum and maximum of the elements it touches."""
    entries: list[tuple[str, bool, str, list[tuple[isl.PwAff, isl.PwAff]]]]


_BOXES: dict[int, tuple[Scop, _ScopBoxes]] = {}


def _scop_boxes(scop: Scop) -> _ScopBoxes:
    """Parametric box hulls of every access of every statement (cached per Scop)."""
    hit = _BOXES.get(id(scop))
    if hit is not None and hit[0] is scop:
        return hit[1]
    entries = []
    for st in scop.statements:
        for acc in st.accesses:
            if scop.arrays[acc.array].kind != "param":
                continue
            rng = acc.relation.intersect_domain(st.domain).range()
            nd = rng.dim(isl.dim_type.set)
            if nd == 0:
                continue
            bounds = [(rng.dim_min(a).coalesce(), rng.dim_max(a).coalesce()) for a in range(nd)]
            entries.append((acc.array, acc.is_write, st.name, bounds))
    boxes = _ScopBoxes(entries)
    _BOXES[id(scop)] = (scop, boxes)
    return boxes


def _eval(pa, sizes: Mapping[str, int]) -> int | None:
    sp = pa.get_domain_space()
    pt = isl.Point.zero(sp)
    for i in range(sp.dim(isl.dim_type.param)):
        name = sp.get_dim_name(isl.dim_type.param, i)
        pt = pt.set_coordinate_val(isl.dim_type.param, i, int(sizes[name]))
    v = pa.eval(pt)
    if v.is_nan() or not v.is_int():
        return None
    return int(v.to_python())


def scop_references(scop: Scop, sizes: Mapping[str, int]) -> list[Reference]:
    """Every access of every statement as a :class:`Reference`: the box hull of its
    elements over the statement's domain, evaluated with ``sizes``.  Accesses whose
    domain is empty for these sizes are left out."""
    out = []
    for array, write, label, bounds in _scop_boxes(scop).entries:
        lo, hi = [], []
        for pmin, pmax in bounds:
            a, b = _eval(pmin, sizes), _eval(pmax, sizes)
            if a is None or b is None:
                break
            lo.append(a)
            hi.append(b)
        else:
            out.append(Reference(array, Box(tuple(lo), tuple(hi)), write, label))
    return out


def covering_references(refs: Sequence[Reference], arrays: Iterable[str]) -> list[Reference]:
    """One extra read reference per named array: the covering box of its references,
    for accesses the Scop does not describe (shared-memory copy statements move
    boxes of the references' footprints).  It is uploaded; what comes back stays
    the statements' written boxes (a copy-out writing more only writes back values
    it read, which the host still holds)."""
    out = []
    for n in arrays:
        boxes = [r.box for r in refs if r.array == n]
        if boxes:
            out.append(Reference(n, Box.hull(boxes), False, "copy code"))
    return out


def whole_array_references(shapes: Mapping[str, tuple[int, ...]],
                           written: Iterable[str]) -> list[Reference]:
    written = set(written)
    return [Reference(n, Box((0,) * len(s), tuple(x - 1 for x in s)), n in written, "whole")
            for n, s in shapes.items() if all(s)]


# ---- checks -----------------------------------------------------------------------

def verify_plan(plan: TransferPlan, arrays: Mapping[str, HostArray],
                refs: Sequence[Reference] = ()) -> None:
    """Enumerate every copied element and check the plan (tests, small sizes):
    slots inside their buffer, one host element per slot, every reference covered
    and every written reference copied back.  Raises AssertionError."""
    owner: dict[tuple[int, int], int] = {}
    for lay in plan.layouts.values():
        comp = plan.components[lay.component]
        h = arrays[lay.name]
        for b in lay.copy_in:
            for x in np.ndindex(*b.shape):
                xs = tuple(l + i for l, i in zip(b.lo, x))
                s = lay.slot(xs)
                assert 0 <= s < comp.size, f"{lay.name}{list(xs)} -> slot {s} outside [0, {comp.size})"
                addr = h.ptr + sum(i * st for i, st in zip(xs, h.byte_strides))
                prev = owner.setdefault((lay.component, s), addr)
                assert prev == addr, f"slot {s} of buffer {lay.component} holds two elements"
        for b in lay.copy_out:
            assert any(c.contains(b) for c in lay.copy_in), f"{lay.name}: copy-out {b} not uploaded"
            lo, hi = lay.slot_range(b)
            assert any(l <= lo and hi < h_ for l, h_ in comp.d2h), f"{lay.name}: {b} not read back"
    for r in refs:
        lay = plan.layouts[r.array]
        box = r.box.clip(arrays[r.array].shape)
        if box is None:
            continue
        assert any(c.contains(box) for c in lay.copy_in) or _covered(box, lay.copy_in), \
            f"reference {r.array}{box} not uploaded"
        if r.write:
            assert any(c.contains(box) for c in lay.copy_out) or _covered(box, lay.copy_out), \
                f"written reference {r.array}{box} not copied back"


def _covered(box: Box, boxes: list[Box]) -> bool:
    mark = np.zeros(box.shape, dtype=bool)
    for c in boxes:
        if c.intersects(box):
            sl = tuple(slice(max(l, cl) - l, min(h, ch) - l + 1)
                       for l, h, cl, ch in zip(box.lo, box.hi, c.lo, c.hi))
            mark[sl] = True
    return bool(mark.all())


__all__ = ["Box", "Reference", "HostArray", "ArrayLayout", "Component", "TransferPlan",
           "plan_transfers", "scop_references", "covering_references", "layout_problem",
           "verify_plan", "prune_boxes", "whole_array_references"]
