"""Host-side packing and unpacking of compact device buffers (seed 002 §4.5).

"The run-time system uses the fastest method to transfer data depending on strides
and alignment of data in CPU memory" (§4.5).  Here every copy is one NumPy strided
assignment between a box of the caller's array (any view: steps, transposes,
negative strides, offsets) and the same box of the buffer seen through the
array's device layout (:class:`~polymagic.transfers.plan.ArrayLayout`).  The GPU
runtime packs into (pinned) host staging buffers and moves each one with a single
contiguous copy; the emulator receives the very same staging buffers as its
device memory, so it runs, and checks, the remapped addressing.

:class:`Staging` can surround a buffer with guard zones filled with a sentinel
byte (0xFF: NaN for floats): the emulator then detects a kernel writing outside
the packed elements, and a read of a slot no host element was packed into yields
NaN, which the comparison with the CPU reference catches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .plan import ArrayLayout, Box, Component, TransferPlan

SENTINEL = 0xFF


@dataclass
class Staging:
    """The host image of one device buffer: ``raw`` bytes, with buffer slot 0 at
    element ``shift`` of ``raw`` (``shift > 0`` leaves a guard zone in front)."""
    component: Component
    raw: np.ndarray            # uint8
    shift: int = 0             # elements before slot 0

    @property
    def itemsize(self) -> int:
        return self.component.itemsize

    def view(self, lay: ArrayLayout, box: Box, dtype) -> np.ndarray:
        """The elements of ``box`` in the buffer, as an array of ``box.shape``
        (NumPy checks that the view lies inside the buffer)."""
        off = (self.shift + lay.slot(box.lo)) * self.itemsize
        return np.ndarray(box.shape, dtype=dtype, buffer=self.raw, offset=off,
                          strides=tuple(s * self.itemsize for s in lay.strides))

    def pointer(self, lay: ArrayLayout) -> int:
        """Host address the kernel receives for ``lay``'s array: the buffer slot of
        subscript 0 (may lie outside the buffer; only packed slots are accessed)."""
        return int(self.raw.ctypes.data) + (self.shift + lay.offset) * self.itemsize

    def body(self) -> np.ndarray:
        """The buffer itself (``size`` elements' bytes, no guards)."""
        n = self.component.nbytes
        return self.raw[self.shift * self.itemsize:self.shift * self.itemsize + n]

    def guards_intact(self) -> bool:
        s = self.shift * self.itemsize
        e = s + self.component.nbytes
        return bool(np.all(self.raw[:s] == SENTINEL) and np.all(self.raw[e:] == SENTINEL))


def allocate(plan: TransferPlan, guard_for: Mapping[str, int] | None = None,
             empty=np.empty) -> list[Staging]:
    """One staging buffer per component.  With ``guard_for`` (array name -> the
    number of elements a kernel may address from its pointer, i.e. the span of its
    declared shape under its layout), the buffer is surrounded by sentinel-filled
    guard zones covering every address a kernel could reach, and its own phantom
    slots are filled with the sentinel too."""
    out = []
    for c in plan.components:
        if guard_for is None:
            raw = empty(c.nbytes, dtype=np.uint8)
            out.append(Staging(c, raw, 0))
            continue
        lo, hi = 0, c.size
        for n in c.arrays:
            lay = plan.layouts[n]
            lo = min(lo, lay.offset)
            hi = max(hi, lay.offset + max(1, int(guard_for.get(n, 0))))
        shift = -lo
        raw = np.full((hi - lo) * c.itemsize, SENTINEL, dtype=np.uint8)
        out.append(Staging(c, raw, shift))
    return out


def pack(plan: TransferPlan, sources: Mapping[str, np.ndarray], staging: list[Staging]) -> int:
    """Gather every array's ``copy_in`` boxes into the staging buffers; returns the
    number of bytes gathered."""
    n = 0
    for name, lay in plan.layouts.items():
        src = sources[name]
        st = staging[lay.component]
        for b in lay.copy_in:
            st.view(lay, b, src.dtype)[...] = src[b.slices]
            n += b.size * src.itemsize
    return n


def unpack(plan: TransferPlan, staging: list[Staging], targets: Mapping[str, np.ndarray],
           names=None) -> list[str]:
    """Scatter the ``copy_out`` boxes of the staging buffers into ``targets`` (any
    arrays of the declared shapes); returns the names written."""
    done = []
    for name, lay in plan.layouts.items():
        if (names is not None and name not in names) or name not in targets or not lay.copy_out:
            continue
        dst = targets[name]
        st = staging[lay.component]
        for b in lay.copy_out:
            dst[b.slices] = st.view(lay, b, dst.dtype)
        done.append(name)
    return done


def transfer_table(plan: TransferPlan, arrays: Mapping[str, np.ndarray]) -> dict[str, dict]:
    """Per array: bytes gathered into / scattered from its buffer vs what a
    whole-array transfer moves: the memory the array spans, gaps included (what
    copying it while keeping its layout moves; ``nbytes`` for a contiguous array),
    up, and down when written."""
    out = {}
    for name, lay in plan.layouts.items():
        a = arrays[name]
        c = plan.components[lay.component]
        whole = whole_bytes(a)
        out[name] = {"bytes_h2d": lay.bytes_in, "bytes_d2h": lay.bytes_out,
                     "whole_h2d": whole, "whole_d2h": whole if lay.copy_out else 0,
                     "nbytes": int(a.nbytes),
                     "buffer": lay.component, "case": c.case,
                     "layout": {"offset": lay.offset, "strides": list(lay.strides)}}
    return out


def whole_bytes(a: np.ndarray) -> int:
    """Bytes of the memory ``a`` spans, from its lowest to its highest element."""
    from .plan import HostArray
    return HostArray.of("", a).span_bytes()


__all__ = ["whole_bytes", "Staging", "allocate", "pack", "unpack", "transfer_table", "SENTINEL"]
