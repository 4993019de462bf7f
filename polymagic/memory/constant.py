"""``__constant__`` memory for small read-only arrays invariant in the thread loops
(seed 004 §4.2).

Baskaran et al. (CC 2010, §4.2) put in constant memory the read-only arrays that
every thread of a block reads at the same address at the same time (an array
indexed only by sequential loops and parameters, like the atoms of the Coulombic
potential "cp"): the constant cache broadcasts such reads.  The 64 KB limit must
hold at run time while sizes are parameters, so an array is chosen only when the
sizes are given (``--size``): the whole array's bytes at those sizes, summed over the
chosen arrays, must fit.  The CUDA printer declares ``__constant__`` arrays with
the whole 64 KB shared among them (reruns with somewhat larger sizes still fit), the
GPU runtime copies the arrays to their symbols before the launches and refuses,
with a clear message, an array that has outgrown its symbol.  The emulator reads
them as read-only globals: the same KIR, the same subscripts.
"""
from __future__ import annotations


import islpy as isl
import numpy as np

from .. import kir
from ..expr import evaluate
from ..dtypes import DTYPES
from ..notes import Note, Stage
from ..scop import Scop

#: Bytes of constant memory a CUDA module may declare.
CONSTANT_LIMIT = 64 * 1024
#: isl operations deciding one kernel's constant arrays may take
PLAN_OPERATIONS = 2_000_000


def symbol(array: str) -> str:
    """Name of the ``__constant__`` symbol holding ``array``."""
    return f"pm_const_{array}"


def _thread_invariant(per_point: isl.Map, n_host: int) -> bool:
    """Every thread point of a launch reads every element that any thread point of
    that launch reads: the subscripts do not depend on the thread loops."""
    m = per_point.dim(isl.dim_type.in_) - n_host
    if m <= 0:
        return True
    host = per_point.project_out(isl.dim_type.in_, n_host, m)
    lifted = host.insert_dims(isl.dim_type.in_, n_host, m)
    lifted = lifted.intersect_domain(per_point.domain())
    return lifted.is_subset(per_point)


def array_bytes(scop: Scop, array: str, sizes: dict) -> int | None:
    """Bytes of the whole array at ``sizes`` (None if an extent is not given)."""
    arr = scop.arrays[array]
    env = {**scop.constants, **sizes}
    try:
        n = 1
        for e in arr.shape:
            n *= int(evaluate(e, env))
    except Exception:
        return None
    return n * np.dtype(DTYPES[arr.ctype]).itemsize


class ConstantChooser:
    """Chooses the ``__constant__`` arrays of a program, kernel by kernel (one chooser
    per mapping; the 64 KB are shared by the whole CUDA module)."""

    def __init__(self, scop: Scop, sizes: dict, enabled: bool = True):
        self.scop = scop
        self.sizes = dict(sizes)
        self.enabled = enabled
        self.chosen: dict[str, int] = {}          # array -> bytes at the given sizes
        self.refused: set[str] = set()
        self.written = set(scop.written_arrays())
        #: the choice read the values of the sizes: an array chosen at them, or refused
        #: because a size is not given or the arrays would not fit at them
        self.size_dependent = False

    def consider(self, kernel: str, domain: isl.UnionSet, point: isl.UnionMap,
                 n_host: int) -> tuple[set[str], list[Note]]:
        """:meth:`_consider` under an isl operation budget (then: no constants)."""
        from ..isl_util import OperationBudget
        try:
            with OperationBudget(self.scop.context.get_ctx(), PLAN_OPERATIONS):
                return self._consider(kernel, domain, point, n_host)
        except isl.Error:
            return set(), [Note(Stage.CONSTANT, f"no constant memory: deciding it took more than "
                                f"{PLAN_OPERATIONS} isl operations", kernel=kernel,
                                kind="fallback")]

    def _consider(self, kernel: str, domain: isl.UnionSet, point: isl.UnionMap,
                  n_host: int) -> tuple[set[str], list[Note]]:
        """Arrays of this kernel to read from constant memory, and one decision line
        per read-only array the kernel reads."""
        lines: list[Note] = []
        out: set[str] = set()
        point = point.intersect_domain(domain)
        reads: dict[str, isl.UnionMap] = {}
        for s in self.scop.statements:
            if domain.extract_set(s.domain.get_space()).is_empty():
                continue
            for a in s.accesses:
                arr = self.scop.arrays[a.array]
                if a.array in self.written or not arr.shape or arr.kind != "param" or \
                        a.array in self.scop.global_only:
                    continue
                rel = isl.UnionMap.from_map(a.relation).intersect_domain(domain)
                reads[a.array] = reads[a.array].union(rel) if a.array in reads else rel
        for array in [a for a in self.scop.arrays if a in reads]:
            def head(text: str, array: str = array) -> Note:
                return Note(Stage.CONSTANT, text, kernel=kernel, subject=array)
            if not self.enabled:
                continue
            if array in self.refused:
                continue
            if array in self.chosen:
                out.add(array)
                continue
            per_point = point.reverse().apply_range(reads[array])
            if per_point.is_empty():
                continue
            if not _thread_invariant(isl.Map.from_union_map(per_point), n_host):
                lines.append(head("not in constant memory (threads read different elements)"))
                self.refused.add(array)
                continue
            nbytes = array_bytes(self.scop, array, self.sizes)
            self.size_dependent = True
            if nbytes is None:
                lines.append(head("not in constant memory (read-only and the same for every "
                             "thread, but its size is unknown at compile time: give --size)"))
                self.refused.add(array)
                continue
            total = sum(self.chosen.values()) + nbytes
            if total > CONSTANT_LIMIT:
                lines.append(head(f"not in constant memory ({nbytes} B would bring the "
                             f"constant arrays to {total} B > {CONSTANT_LIMIT} B)"))
                self.refused.add(array)
                continue
            self.chosen[array] = nbytes
            out.add(array)
            lines.append(head(f"__constant__ {symbol(array)} (read-only, the same elements "
                         f"for every thread of a launch; {nbytes} B at the given sizes)"))
        return out, lines

    def decls(self) -> dict[str, kir.ConstantDecl]:
        """Declarations sharing the 64 KB in proportion to the arrays' sizes."""
        total = sum(self.chosen.values())
        out = {}
        for a, nbytes in self.chosen.items():
            ctype = self.scop.arrays[a].ctype
            item = np.dtype(DTYPES[ctype]).itemsize
            cap = max(nbytes // item, (CONSTANT_LIMIT * nbytes // total) // item)
            out[a] = kir.ConstantDecl(symbol(a), ctype, cap, a)
        return out
