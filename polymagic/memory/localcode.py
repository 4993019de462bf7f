"""Code for a localised sequential loop inside a kernel (seed 001 §4.2, §4.4, §4.5).

:mod:`.localise` computes the sets; this module puts them in the mapped schedule
tree.  For the loop ``t`` chosen with ``--localise LOOP[:w]`` (a sequential band
member that runs inside each thread: the ``k`` loop of gemm, the loop of a
one-thread kernel) the band is split after ``t`` and its child ``X`` is surrounded,
as in seed 001 Fig. 3, by

    move-in  (x ∈ I(p)):  L[ρ(x, p)] = A[x]
    X        with every served access A[f(i)] rewritten to L[ρ(f(i), p)]
    move-out (x ∈ O(p), live values only, §4.3):  A[x] = L[ρ(x, p)]
    reorganisation (§4.4, ``--reorg move``): L[ρ(x, p+1)] = L[ρ(x, p)], one ascending
        pass over the elements with negative drift, one descending pass over those
        with positive drift, in place

or, with modulo addressing (the default when the drift δ is constant), no moves
at all: every subscript is ``(ρ(x, p) − δ·t) mod s``, which keeps each element in
its slot from one step to the next.

The copies are isl extension nodes (statements ``pm_lin_<L>``, ``pm_lout_<L>``,
``pm_lmv{dn,up}_<L>``) scanned by isl's AST generator; the subscripts are piecewise
affine, so isl's build prints them and splits the domains by ρ's pieces (§4.5).
``L`` is private to a thread: a ``__shared__`` array with one row per thread of the
block (no barriers are needed); a one-thread kernel has a single row.  Arrays with
no reuse along ``t`` (``G`` empty) stay in global memory: serving them from L would
only add moves.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import islpy as isl

from .. import kir
from ..expr import Expr
from ..names import buffer_stem
from ..notes import Note, Stage
from ..options import CompileOptions
from ..scop import Scop, buffer_bytes
from ..thread_space import linear_thread_id_rows
from .localise import MAX_RHO_PIECES, LocaliseError, Localisation, live_move_out, localise

#: ρ with more pieces than this is not printed in a one-block kernel (box modulo instead)
COMPACT_PIECES = MAX_RHO_PIECES
#: the automatic localisation's reference size (every size parameter) and how many of
#: a kernel's sequential loops it tries
AUTO_SIZE = 256
AUTO_LOOPS = 3
#: each step of the automatic localisation (access sets, count, box, drift: seed 001
#: §4) is given this many isl operations: fuzz program 164's three kernels spent 15 s
#: of a 17 s compile in them under the 3,000,000 an asked-for localisation gets
AUTO_OPERATIONS = 300_000
#: each barvinok count of the automatic localisation is given this much CPU time: the
#: 66 compiles of the examples and benchmark kernels at ``--shared auto`` and ``none``
#: count within 0.2 s but one, nbody-potential's, which ran out of 2 s and left the
#: kernel unlocalised all the same (issue 22: a 3.7 s compile, 1.7 s with 0.5)
AUTO_SECONDS = 0.5
#: shared memory a block's localised buffers may use
LOCAL_LIMIT = 48 * 1024


@dataclass(frozen=True)
class LocalBuffer:
    """A localised array ``L`` of one kernel (one row per thread of the block)."""
    name: str
    array: str
    ctype: str
    extents: tuple[int, ...]          # (threads, *L's extents) or L's extents alone
    loc: Localisation
    prefix: isl.UnionMap              # statement instances -> p (down to t)
    index: list[isl.PwAff]            # L's subscripts on { [[p] -> A[x]] } (modulo applied)
    rows: int                         # threads sharing the declaration (one row each)
    block: tuple[int, int, int]
    refs: list[tuple[str, int]] = field(default_factory=list)
    moves: int = 0                    # passes of the in-situ reorganisation
    #: copy statement -> ``{ [p] -> A[x] }`` it copies, scanned over its simple hull
    #: with this set as a guard (:func:`graft_tile_box`)
    guards: dict[str, isl.Map] = field(default_factory=dict)
    #: a tile's write-back buffer: the elements the tile wrote, ``{ [p] -> A[x] }``
    #: (:func:`tile_footprint`); None for the others
    written: isl.Map | None = None

    @property
    def nbytes(self) -> int:
        return buffer_bytes(self.ctype, self.extents)

    def row(self) -> tuple[Expr, ...]:
        """The thread's row: ``tx + Bx * (ty + By * tz)`` (nothing for one thread)."""
        if self.rows == 1:
            return ()
        return (linear_thread_id_rows(self.block),)

    def access_index(self, stmt, k: int) -> list[isl.PwAff]:
        """``ρ(f(i), p(i))`` on the statement's space for its ``k``-th access."""
        maps: list[isl.Map] = []
        self.prefix.foreach_map(
            lambda m: maps.append(m) if m.get_tuple_name(isl.dim_type.in_) == stmt.name else None)
        acc = stmt.accesses[k].relation.intersect_domain(maps[0].domain())
        both = maps[0].align_params(acc.get_space()).range_product(
            acc.align_params(maps[0].get_space()))
        pma = isl.PwMultiAff.from_map(both)
        out = []
        for ix in self.index:
            pma_a = pma.align_params(ix.get_space())
            out.append(ix.align_params(pma_a.get_space()).pullback_pw_multi_aff(pma_a))
        return out

    def copy_index(self, stmt: str, n_prefix: int, next_step: bool = False) -> list[isl.PwAff]:
        """L's subscripts on a copy statement ``stmt[p..., x...]`` (at ``p + 1`` for
        the target of a reorganisation move)."""
        na = self.loc.cached.dim(isl.dim_type.out)
        ps = [f"p{i}" for i in range(n_prefix)]
        xs = [f"a{i}" for i in range(na)]
        params = self.index[0].get_space().params()
        pn = ", ".join(params.get_var_names(isl.dim_type.param))
        q = list(ps)
        if next_step:
            q[-1] = f"{q[-1]} + 1"
        ma = isl.MultiAff(f"[{pn}] -> {{ {stmt}[{', '.join(ps + xs)}] -> "
                          f"[[{', '.join(q)}] -> {self.array}[{', '.join(xs)}]] }}")
        out = []
        for ix in self.index:
            m = ma.align_params(ix.get_space())
            out.append(ix.align_params(m.get_space()).pullback_multi_aff(m))
        return out


@dataclass(frozen=True)
class LocalPlan:
    """What ``--localise`` did in one kernel: buffers and one line per decision."""
    buffers: tuple[LocalBuffer, ...] = ()
    decisions: tuple[Note, ...] = ()


class LocalPlanBuilder:
    """A :class:`LocalPlan` being built: buffers and decisions appended as the
    localisation decides them, the frozen plan made once at the end (:meth:`plan`)."""

    def __init__(self) -> None:
        self.buffers: list[LocalBuffer] = []
        self.decisions: list[Note] = []

    def plan(self) -> LocalPlan:
        return LocalPlan(tuple(self.buffers), tuple(self.decisions))


def local_note(kernel: str, array: str | None, text: str, kind: str = "decision") -> Note:
    """A decision of seed 001's localisation: ``kernel: array: text``."""
    return Note(Stage.LOCALISE, text, kernel=kernel, subject=array, kind=kind)


def _reusing(scop: Scop, prefix, array: str, window: int, who: tuple[str, str],
             decisions: list[Note]) -> Localisation | None:
    """The localisation of ``array`` along the loop (seed 001 §4.2) when it keeps
    something from one step to the next; else None, with the reason in ``decisions``."""
    try:
        loc = localise(scop, prefix, array, window, require_reuse=True)
    except (LocaliseError, isl.Error) as e:
        decisions.append(local_note(*who, f"not localised ({e})"))
        return None
    if loc.kept.is_empty():
        decisions.append(local_note(*who, "not localised (no reuse from one step to the next: "
                         "G is empty)"))
        return None
    return loc


def _identifiers(text: str) -> set[str]:
    import re
    return set(re.findall(r"[A-Za-z_]\w*", text))


def find_loop(node: isl.ScheduleNode, loop: str, member_text) -> tuple[isl.ScheduleNode, int] | None:
    """The band node below ``node`` with a member that is exactly the source loop
    ``loop`` (and the member's position)."""
    if node.get_type() == isl.schedule_node_type.band:
        mupa = node.band_get_partial_schedule()
        for j in range(node.band_n_member()):
            if member_text(mupa, j) == loop:
                return node, j
    for c in range(node.n_children()):
        found = find_loop(node.child(c), loop, member_text)
        if found is not None:
            return found
    return None


def _graft(scop: Scop, stmt: str, rel: isl.Map, descending: bool) -> isl.ScheduleNode:
    """An extension subtree adding ``stmt[p, x]`` for every ``x`` in ``rel(p)``,
    scanned in ascending (or descending) lexicographic order of ``x``."""
    na = rel.dim(isl.dim_type.out)
    np_ = rel.dim(isl.dim_type.in_)
    ext = rel.domain_map().reverse().flatten_range().set_tuple_name(isl.dim_type.out, stmt)
    graft = isl.ScheduleNode.from_extension(isl.UnionMap.from_map(ext))
    leaf = graft.child(0)
    if na:
        p = ", ".join([f"p{i}" for i in range(np_)] + [f"a{i}" for i in range(na)])
        sign = "-" if descending else ""
        members = ", ".join(f"{{ {stmt}[{p}] -> [({sign}a{i})] }}" for i in range(na))
        leaf = leaf.insert_partial_schedule(
            isl.MultiUnionPwAff(kir.mupa_text(kir.isl_params(scop.size_params, members),
                                              members)))
        for i in range(na):
            leaf = leaf.band_member_set_ast_loop_type(i, isl.ast_loop_type.separate)
    return leaf.root()


def _modulo(ix: isl.PwAff, drift: int, extent: int, np_: int) -> isl.PwAff:
    """``(ρ − δ·t) mod s`` (§4.4 modulo addressing, t the last prefix dimension)."""
    if drift == 0:
        return ix
    ls = isl.LocalSpace.from_space(ix.get_domain_space())
    t = isl.PwAff.var_on_domain(ls, isl.dim_type.set, np_ - 1)
    return ix.sub(t.scale_val(isl.Val(drift))).mod_val(isl.Val(extent)).coalesce()


def plan_local(scop: Scop, x: isl.ScheduleNode, options: CompileOptions, kernel: str,
               block: tuple[int, int, int], buffered: set[tuple[str, int]],
               window: int) -> LocalPlan:
    """Localisation of every array accessed below ``x`` (the child of the localised
    band) that is reused along the loop; the others are listed with the reason."""
    out = LocalPlanBuilder()
    prefix = x.get_prefix_schedule_union_map().intersect_domain(x.get_domain())
    names: list[str] = []
    x.get_domain().foreach_set(lambda s: names.append(s.get_tuple_name()))
    arrays = [a for a in scop.arrays
              if any(acc.array == a for s in scop.statements if s.name in names
                     for acc in s.accesses)]
    rows = block[0] * block[1] * block[2]
    kid = kernel.rsplit("kernel", 1)[-1]
    total = 0
    for a in arrays:
        refs = [(s.name, k) for s in scop.statements if s.name in names
                for k, acc in enumerate(s.accesses) if acc.array == a]
        if any(r in buffered for r in refs):
            out.decisions.append(local_note(
                kernel, a,
                "not localised (a per-tile buffer or a register "
                "serves it)"))
            continue
        loc = _reusing(scop, prefix, a, window, (kernel, a), out.decisions)
        if loc is None:
            continue
        if loc.storage is None:
            out.decisions.append(local_note(
                kernel, a,
                "not localised (the cached set grows with "
                "the problem size)"))
            continue
        if loc.reorg == "unknown":
            out.decisions.append(local_note(kernel, a, "not localised (drift unknown)"))
            continue
        reorg = loc.reorg
        if reorg != "none" and options.reorg != "auto":
            if options.reorg == "modulo" and loc.constant_drift is None:
                out.decisions.append(local_note(
                    kernel, a,
                    "--reorg modulo needs a constant drift; "
                    "using the in-situ move"))
                reorg = "move"
            else:
                reorg = options.reorg
        exts = [e for e in loc.extents]
        np_ = loc.cached.dim(isl.dim_type.in_)
        index = list(loc.index)
        if reorg == "modulo":
            index = [_modulo(ix, d, e, np_) for ix, d, e in zip(index, loc.constant_drift, exts)]
        if max(ix.n_piece() for ix in index) > COMPACT_PIECES:
            out.decisions.append(local_note(
                kernel, a,
                "not localised (its placement has too many "
                "pieces to print)"))
            continue
        name = f"{buffer_stem(scop, f'lc{kid}')}_{a}"
        ext = tuple(([rows] if rows > 1 else []) + exts)
        lb = LocalBuffer(name, a, scop.arrays[a].ctype, ext, loc, prefix, index, rows, block,
                         refs, moves=2 if reorg == "move" else 0)
        if total + lb.nbytes > min(options.shared_mem, LOCAL_LIMIT):
            out.decisions.append(local_note(
                kernel, a,
                f"not localised ({lb.nbytes} bytes would "
                "exceed the shared memory of a block)"))
            continue
        total += lb.nbytes
        out.buffers.append(lb)
        drift = ("δ = " + ", ".join(map(str, loc.constant_drift))
                 if loc.constant_drift is not None else "δ varies")
        out.decisions.append(
            local_note(
                kernel, a,
                f"localised along the loop (seed 001): {name}"
                f"[{']['.join(map(str, ext))}], {loc.layout} placement, {drift}, "
                f"reorganisation: {reorg}" + (f", window {window}" if window > 1 else "")
                + "".join(f"; {n}" for n in loc.notes)))
    return out.plan()


def graft_local(scop: Scop, x: isl.ScheduleNode, plan: LocalPlan,
                copies: dict[str, tuple[str, LocalBuffer]]) -> isl.ScheduleNode:
    """Surround ``x`` with move-in, move-out and reorganisation statements."""
    node = x
    for lb in plan.buffers:
        loc = lb.loc
        if not loc.move_in.is_empty():
            stmt = f"pm_lin_{lb.name}"
            copies[stmt] = ("in", lb)
            node = node.graft_before(_graft(scop, stmt, loc.move_in, False))
        after = []
        out = live_move_out(loc, scop, lb.prefix)
        if not out.is_empty():
            stmt = f"pm_lout_{lb.name}"
            copies[stmt] = ("out", lb)
            after.append(_graft(scop, stmt, out, False))
        if lb.moves:
            for sign, tag in ((-1, "dn"), (1, "up")):
                mv = loc.moves(sign)
                if mv.is_empty():
                    continue
                stmt = f"pm_lmv{tag}_{lb.name}"
                copies[stmt] = ("move", lb)
                # §4.4: negative drifts in an ascending pass, positive in a descending one
                after.append(_graft(scop, stmt, mv, descending=sign > 0))
        for g in reversed(after):
            node = node.graft_after(g)
    return node


def localise_kernel(scop: Scop, root: isl.ScheduleNode, kernel: str,
                    block: tuple[int, int, int], options: CompileOptions,
                    buffered: set[tuple[str, int]],
                    copies: dict[str, tuple[str, LocalBuffer]], member_text,
                    refine=None) -> tuple[isl.ScheduleNode, LocalPlan | None]:
    """Apply ``--localise LOOP[:w]`` inside one kernel whose subtree is ``root``;
    returns the node at ``root``'s position and what was done (None: the loop is not
    a sequential loop of this kernel).  ``refine``, when given, is applied to each
    buffer before its moves are grafted (:func:`exposed_move_in`: a buffer in, the
    refined buffer out)."""
    loop, window = options.localise
    found = find_loop(root, loop, member_text)
    if found is None:
        return root, None
    depth = root.get_tree_depth()
    band, j = found
    if j + 1 < band.band_n_member():
        band = band.band_split(j + 1)
    x = band.child(0)
    plan = plan_local(scop, x, options, kernel, block, buffered, window)
    if refine is not None:
        plan = replace(plan, buffers=tuple(refine(scop, lb) for lb in plan.buffers))
    if plan.buffers:
        x = graft_local(scop, x, plan, copies)
    return x.ancestor(x.get_tree_depth() - depth), plan


def auto_localise(scop: Scop, root: isl.ScheduleNode, kernel: str,
                  block: tuple[int, int, int], options: CompileOptions,
                  buffered: set[tuple[str, int]],
                  copies: dict[str, tuple[str, LocalBuffer]], member_text,
                  loops: list[str], refine=None) -> tuple[isl.ScheduleNode, LocalPlan | None]:
    """The default (no ``--localise``, no ``--no-localise``): localise along the one of
    ``loops`` (sequential loops each thread runs) whose localisation the analytic model
    predicts to save the most global accesses (seed 001 §4.2's I/O sets counted with
    barvinok, :func:`.localise.traffic_change`, for thread 0 of block 0), at
    :data:`AUTO_SIZE` for every size parameter so that the generated code stays
    independent of the sizes; nothing when
    no loop saves any.  ``buffered`` references (shared buffers, registers) are left
    alone."""
    from ..isl_util import TimedOut, in_child
    from .localise import traffic_change, trial_limits
    # the sets are parametric in the thread and block ids too: one thread's count
    sizes = {p: AUTO_SIZE for p in scop.size_params}
    sizes.update({v: 0 for v in (*kir.THREAD_IDS.values(), *kir.BLOCK_IDS.values())})
    best = None
    for loop in loops[:AUTO_LOOPS]:
        trial: dict[str, tuple[str, LocalBuffer]] = {}
        try:
            with trial_limits(AUTO_SECONDS, AUTO_OPERATIONS):
                node, plan = localise_kernel(scop, root, kernel, block,
                                             replace(options, localise=(loop, 1)), buffered,
                                             trial, member_text, refine)
            if plan is None or not plan.buffers:
                continue
            bufs = plan.buffers
            saved = in_child(lambda: -sum(sum(traffic_change(scop, lb.prefix, lb.loc, sizes))
                                          for lb in bufs), AUTO_SECONDS)
        except (LocaliseError, isl.Error, KeyError, TimedOut):
            continue
        if saved > 0 and (best is None or saved > best[0]):
            best = (saved, loop, node, plan, trial)
    if best is None:
        return root, None
    saved, loop, node, plan, trial = best
    copies.update(trial)
    return node, replace(plan, decisions=(local_note(
        kernel, None,
        f"localised along {loop} by default: the analytic "
        f"model predicts {saved} fewer global accesses at "
        f"{AUTO_SIZE} per size (--no-localise turns it off)"),) + plan.decisions)


def exposed_move_in(scop: Scop, lb: LocalBuffer) -> LocalBuffer:
    """Seed 001 §4.3 for the move-in (the superposition's L, window 1): an element of
    ``I(p)`` is loaded only if a read at step ``p`` sees a value from before the step
    (an upward-exposed read: its last writer in the original order, found by isl's
    dataflow on the access-level relations, is not at step ``p``).  The others are
    written at step ``p`` before any read of them (the mapped schedule respects those
    dependences, with barriers across threads), so loading them is wasted traffic: a
    recurrence's ``Y[s]``, jacobi-2d-alt's ``B``.  Every access of the array inside
    the loop is served by ``L`` (the planners take all of an array's references or
    none), so no read of the step goes to global memory.  Left as is on isl errors or
    windows above 1.  Returns the buffer with that move-in."""
    from .localise import tagged_accesses
    loc = lb.loc
    if loc.window != 1 or loc.move_in.is_empty():
        return lb
    try:
        prefix = lb.prefix
        reads = tagged_accesses(scop, lb.array, False, prefix)
        writes = tagged_accesses(scop, lb.array, True, prefix)
        tagged = reads.domain().union(writes.domain()).unwrap().domain_map()
        tsched = tagged.apply_range(scop.schedule.intersect_domain(prefix.domain()))
        tprefix = tagged.apply_range(prefix)
        if writes.is_empty():
            return lb
        info = isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
        flow = info.set_schedule_map(tsched).compute_flow().get_may_dependence()
        same = tprefix.apply_range(tprefix.reverse())
        covered = flow.intersect(same).range()
        exposed = reads.intersect_domain(reads.domain().subtract(covered))
        needed = tprefix.reverse().apply_range(exposed).extract_map(loc.move_in.get_space())
        return replace(lb, loc=replace(loc, move_in=loc.move_in.intersect(needed).coalesce()))
    except isl.Error:
        return lb


# ---- a time loop inside one block: L shared by the block's threads --------------------

def _at_sizes(pa: isl.PwAff, sizes: dict) -> int | None:
    """Largest value of ``pa`` with the size parameters fixed to ``sizes``."""
    from .localise import constant_bound
    sp = pa.get_space().params()
    names = sp.get_var_names(isl.dim_type.param)
    fixed = " and ".join(f"{n} = {int(sizes[n])}" for n in names if n in sizes)
    if fixed:
        pa = pa.intersect_params(isl.Set(f"[{', '.join(names)}] -> {{ : {fixed} }}"))
    return constant_bound(pa)


def _prefix_and_arrays(scop: Scop, x: isl.ScheduleNode
                       ) -> tuple[isl.UnionMap, list[str], list[str]]:
    """The prefix schedule of the instances below ``x``, their statements' names and
    the arrays they access (in the Scop's order)."""
    prefix = x.get_prefix_schedule_union_map().intersect_domain(x.get_domain())
    names: list[str] = []
    x.get_domain().foreach_set(lambda s: names.append(s.get_tuple_name()))
    arrays = [a for a in scop.arrays
              if any(acc.array == a for s in scop.statements if s.name in names
                     for acc in s.accesses)]
    return prefix, names, arrays


def plan_shared(scop: Scop, x: isl.ScheduleNode, options: CompileOptions, kernel: str,
                block: tuple[int, int, int], window: int,
                skip: dict[str, str] | None = None, along: str = "the time loop",
                sharers: str = "the block") -> LocalPlan:
    """Localisation along the time loop of a one-block kernel: every array accessed
    below ``x`` whose cached set fits, addressed modulo its extents so that no
    element ever moves inside L (§4.4: ``(ρ − δ·t) mod s`` for a constant drift,
    else ``x_d mod e_d`` over the bounding box), extents at the ``--size`` values
    (none given: only extents bounded for every size).  ``skip``: arrays left alone,
    with the reason (a superposition step loop's arrays in block buffers or registers).
    ``along`` and ``sharers`` name the loop and the threads in the decision lines (a
    superposition step loop's: ``the step loop s``, ``the block's threads``)."""
    from .localise import box_index
    out = LocalPlanBuilder()
    prefix, names, arrays = _prefix_and_arrays(scop, x)
    kid = kernel.rsplit("kernel", 1)[-1]
    sizes = options.sizes
    total = 0
    np_ = x.get_schedule_depth()
    for a in arrays:
        if skip and a in skip:
            out.decisions.append(local_note(kernel, a, f"not localised ({skip[a]})"))
            continue
        loc = _reusing(scop, prefix, a, window, (kernel, a), out.decisions)
        if loc is None:
            continue
        index, s = None, None
        if loc.layout == "compact" and loc.constant_drift is not None \
                and loc.rho.n_piece() <= COMPACT_PIECES:
            try:
                s = loc.storage if loc.storage is not None else _at_sizes(
                    _storage_pw_aff(loc), sizes)
            except LocaliseError:    # |C(t)| not affine (fuzz finding 33): the box below
                s = 0
            if s is None:
                out.decisions.append(local_note(
                    kernel, a,
                    "not localised (unbounded at these sizes)"))
                continue
            if s:
                index = [_modulo(loc.rho, loc.constant_drift[0], s, np_)]
                exts, how = [s], (f"compact placement, δ = {loc.constant_drift[0]}, "
                                  "modulo addressing")
                if index[0].n_piece() > COMPACT_PIECES:   # ρ − δ·t mod s splits ρ's pieces
                    index = None
        if index is None:
            try:
                box, _ = box_index(loc.cached)
            except LocaliseError as e:
                out.decisions.append(local_note(kernel, a, f"not localised ({e})"))
                continue
            exts = []
            for ix in box:
                e = _at_sizes(ix, sizes)
                exts.append(None if e is None else e + 1)
            if None in exts:
                out.decisions.append(local_note(
                    kernel, a,
                    "not localised (unbounded at these sizes)"))
                continue
            index = [_array_mod(loc.cached, d, e) for d, e in enumerate(exts)]
            how = ("bounding box addressed modulo its extents ("
                   + ("the drift is not constant)" if loc.constant_drift is None
                      else "|C(t)| is not affine in the sizes)" if s == 0
                      else "ρ, or ρ modulo the storage, has too many pieces to print)"))
        lb = LocalBuffer(f"lc{kid}_{a}", a, scop.arrays[a].ctype, tuple(exts), loc, prefix,
                         index, 1, block, [(s.name, k) for s in scop.statements
                                           if s.name in names
                                           for k, acc in enumerate(s.accesses)
                                           if acc.array == a])
        if total + lb.nbytes > min(options.shared_mem, LOCAL_LIMIT):
            out.decisions.append(local_note(
                kernel, a,
                f"not localised ({lb.nbytes} bytes at these "
                "sizes would exceed the shared memory of a block)"))
            continue
        total += lb.nbytes
        out.buffers.append(lb)
        out.decisions.append(local_note(
            kernel, a,
            f"localised along {along} (seed 001): "
            f"{lb.name}[{']['.join(map(str, exts))}] shared by {sharers}, {how}"
            + (f", window {window}" if window > 1 else "")))
    return out.plan()


def _storage_pw_aff(loc: Localisation) -> isl.PwAff:
    """``|C(p)|`` as a PwAff when barvinok's count is affine in the sizes."""
    q = loc.cached.card()
    out = None
    pieces: list = []
    q.foreach_piece(lambda s, p: pieces.append((s, p)))
    for s, p in pieces:
        if not p.isa_aff():
            raise LocaliseError("the size of the cached set is not affine")
        pa = isl.PwAff.from_aff(p.as_aff()).intersect_domain(s)
        out = pa if out is None else out.union_max(pa)
    if out is None:
        raise LocaliseError("the cached set is empty")
    return out


def _array_mod(c: isl.Map, d: int, e: int) -> isl.PwAff:
    """``x_d mod e`` on ``{ [[p] -> A[x]] }``: a slot that never changes while the
    element stays in L (valid since no two elements of one C(p) are e apart)."""
    sp = c.wrap().get_space()
    ls = isl.LocalSpace.from_space(sp)
    xd = isl.PwAff.var_on_domain(ls, isl.dim_type.set, c.dim(isl.dim_type.in_) + d)
    return xd.mod_val(isl.Val(e))


def graft_shared(scop: Scop, x: isl.ScheduleNode, plan: LocalPlan,
                 copies: dict[str, tuple[str, LocalBuffer]], namer) -> isl.ScheduleNode:
    """``[sync, move-in, sync, x, move-out]`` with the moves distributed over the
    block's threads (the barrier ending ``x``'s last parallel band precedes the
    move-out; the next step's first barrier follows it)."""
    from .plan import copy_graft, sync_graft
    node = x
    ins = [lb for lb in plan.buffers if not lb.loc.move_in.is_empty()]
    node = node.graft_before(sync_graft(scop, node, namer.sync()))
    for lb in ins:
        stmt = f"pm_lin_{lb.name}"
        copies[stmt] = ("in", lb)
        node = node.graft_before(copy_graft(scop, node, stmt, lb.loc.move_in, lb.block))
    if ins:
        node = node.graft_before(sync_graft(scop, node, namer.sync()))
    for lb in reversed(plan.buffers):
        # every leaving element of a written array (the liveness refinement can take
        # minutes on skewed multi-statement nests, e.g. seidel-2d)
        out = lb.loc.move_out if lb.loc.written else lb.loc.move_out.subtract(lb.loc.move_out)
        if out.is_empty():
            continue
        stmt = f"pm_lout_{lb.name}"
        copies[stmt] = ("out", lb)
        node = node.graft_after(copy_graft(scop, node, stmt, out, lb.block))
    return node


# ---- a time tile (--time-tiling): L holds the tile's whole footprint ---------------------

def _same_tile_before(n: int, strict: bool) -> isl.Map:
    """``{ [p] -> [q] }``: ``q`` the same tile (outer dims) at an earlier step (``q_t < p_t``,
    or ``<=`` when not ``strict``), ``n`` prefix dims, the step last."""
    ps, qs = [f"p{k}" for k in range(n)], [f"q{k}" for k in range(n)]
    last = f"q{n - 1} {'<' if strict else '<='} p{n - 1}"
    cond = " and ".join([f"q{k} = p{k}" for k in range(n - 1)] + [last])
    return isl.Map(f"{{ [{', '.join(ps)}] -> [{', '.join(qs)}] : {cond} }}")


def _box_extents(m: isl.Map) -> list[int | None]:
    """The largest extent of each output dimension of ``m`` over its domain and every
    parameter (``None``: unbounded).  The extent ``hi − lo + 1`` is rounded up to an
    integer first: on small-size pieces isl writes it as a rational expression whose
    maximum it refuses to compute."""
    from .localise import constant_bound
    n = m.dim(isl.dim_type.out)
    out: list[int | None] = []
    for d in range(n):
        md = _project_on(m, d)
        lo = md.lexmin_pw_multi_aff().get_pw_aff(0)
        hi = md.lexmax_pw_multi_aff().get_pw_aff(0)
        out.append(constant_bound(hi.sub(lo).add_constant_val(isl.Val(1)).ceil()))
    return out


def array_writes(scop: Scop, array: str) -> isl.UnionMap | None:
    """``{ S[i] -> A[x] }``: every write access to ``array`` (None: never written)."""
    writes = None
    for st in scop.statements:
        for acc in st.accesses:
            if acc.is_write and acc.array == array:
                w = isl.UnionMap.from_map(acc.relation)
                writes = w if writes is None else writes.union(w)
    return writes


def _writes_at(scop: Scop, lb: LocalBuffer) -> isl.Map:
    """``{ [p] -> A[x] }``: the elements of ``lb``'s array written at prefix ``p``."""
    writes = array_writes(scop, lb.array)
    space = lb.loc.cached.get_space()
    if writes is None:
        return isl.Map.empty(space)
    at = lb.prefix.reverse().apply_range(writes.intersect_domain(lb.prefix.domain()))
    return at.extract_map(space)


def tile_footprint(scop: Scop, lb: LocalBuffer, limit: int, used: int
                   ) -> tuple[LocalBuffer | None, LocalBuffer | None, str]:
    """Seed 001 inside one time tile with L holding the tile's whole footprint (every
    element it touches at any of its steps, a bounding box addressed modulo its
    extents, so no two live elements share a slot): an element moves in when the
    tile first touches it, ``I(p) = C(p) − ∪_{q<p} C(q)`` (isl), and the elements
    the tile wrote move out once, after its last step.  This keeps isl's code small
    where the per-step move-out ``C(p) − C(p+1)`` of skewed 2-d tiles costs minutes
    of AST generation.  Returns (the buffer, with its move-in, for the steps; the
    buffer of the write-back, on the tile's prefix; the decision about ``lb.array``), or
    ``(None, None, why)`` when the footprint is unbounded or too large."""
    cached = lb.loc.cached
    n = cached.dim(isl.dim_type.in_)
    tile = cached.project_out(isl.dim_type.in_, n - 1, 1)          # { [w, c..] -> A[x] }
    exts = _box_extents(tile)
    if None in exts:
        return None, None, "not localised (the tile's footprint is unbounded)"
    exts = [e for e in exts]
    if used + buffer_bytes(lb.ctype, tuple(exts)) > limit:
        return None, None, (f"not localised (the tile's footprint, "
                            f"{'x'.join(map(str, exts))}, exceeds the shared memory of a block)")
    before = _same_tile_before(n, True).align_params(cached.get_space())
    lb = replace(lb, loc=replace(lb.loc, move_in=cached.subtract(before.apply_range(cached))
                                 .coalesce(), move_out=isl.Map.empty(cached.get_space())),
                 extents=tuple(exts), index=[_array_mod(cached, d, e) for d, e in enumerate(exts)])
    written = _writes_at(scop, lb).project_out(isl.dim_type.in_, n - 1, 1).coalesce()
    back = None
    if lb.loc.written and not written.is_empty():
        back = LocalBuffer(lb.name, lb.array, lb.ctype, lb.extents, lb.loc, lb.prefix,
                           [_array_mod(written, d, e) for d, e in enumerate(exts)],
                           lb.rows, lb.block, [], written=written)
    return lb, back, (f"the tile's whole footprint {lb.name}"
                      f"[{']['.join(map(str, exts))}] in shared memory (modulo addressing), "
                      "moved in at first touch" + (", written back after the tile's last step"
                                                   if back is not None else ""))


def graft_tile_writeback(scop: Scop, band: isl.ScheduleNode, backs: list[LocalBuffer],
                         copies: dict[str, tuple[str, LocalBuffer]], namer
                         ) -> isl.ScheduleNode:
    """After the tile's time loop ``band``: a barrier, then ``A[x] = L[x mod e]`` for
    every element the tile wrote (distributed over the block's threads)."""
    from .plan import copy_graft, sync_graft
    node = band
    for lb in reversed(backs):
        stmt = f"pm_lout_{lb.name}"
        copies[stmt] = ("out", lb)
        node = node.graft_after(copy_graft(scop, node, stmt, lb.written, lb.block))
    if backs:
        node = node.graft_after(sync_graft(scop, node, namer.sync()))
    return node


# ---- a time tile's whole footprint, moved in once (the default for 2-d tiles) ------------

def time_slices(seq: isl.ScheduleNode, prefix: isl.UnionMap, steps: int
                ) -> list[isl.UnionMap] | None:
    """``prefix`` (instances -> the tile's prefix ``[w, c_1, ..]``) cut into the tile's
    ``steps`` time steps: slice ``k`` holds the instances whose skewed time ``b_0`` (the
    first member of ``seq``) is ``T·c_0 + k``, with ``c_0 = w − c_1 − ...`` the tile's
    time coordinate (:func:`..schedule.timeblock.wavefront_tile_map`).  With the step an
    affine function of the prefix, the image of a slice under an access has no
    existential variable, where the image of the whole tile keeps the time step as
    one (with the skew's strides): isl's AST generator scans the union of the slices'
    images in about a second, the projection not in minutes.  None when the slices
    do not cover the tile's instances (checked with isl)."""
    np_ = seq.get_schedule_depth()
    if np_ < 1:
        return None
    b0 = isl.UnionMap.from_union_pw_aff(seq.band_get_partial_schedule().get_at(0))
    both = prefix.range_product(b0)
    ps = [f"p{i}" for i in range(np_)]
    c0 = " - ".join(ps)
    out, covered = [], None
    for k in range(steps):
        cond = isl.Set(f"{{ [[{', '.join(ps)}] -> [b]] : b = {steps} * ({c0}) + {k} }}")
        sl = both.intersect_range(isl.UnionSet(cond.align_params(both.get_space())))
        sl = sl.range_factor_domain()
        out.append(sl)
        covered = sl if covered is None else covered.union(sl)
    if covered is None or not covered.is_equal(prefix):
        return None
    return out


def _tile_maps(scop: Scop, slices: list[isl.UnionMap], array: str
               ) -> tuple[list[tuple[str, int]], isl.Map | None, isl.Map | None, isl.Map | None]:
    """``(refs, F, R, W)`` of ``array`` in one time tile, each ``{ [p] -> A[x] }`` on the
    tile's prefix ``p`` (the wavefront and tile coordinates, no time step), the union
    of the images of the tile's time ``slices``: every element the tile touches,
    reads, writes (``None`` where it does none)."""
    from .scratchpad import data_spaces
    refs: list[tuple[str, int]] = []
    touched, reads, writes = None, None, None
    for sl in slices:
        for ds in data_spaces(scop, sl, {array}):
            if (ds.stmt, ds.ref) not in refs:
                refs.append((ds.stmt, ds.ref))
            touched = ds.relation if touched is None else touched.union(ds.relation)
            if ds.is_write:
                writes = ds.relation if writes is None else writes.union(ds.relation)
            else:
                reads = ds.relation if reads is None else reads.union(ds.relation)
    co = lambda m: None if m is None else m.coalesce()   # noqa: E731
    return refs, co(touched), co(reads), co(writes)


def plan_tile_box(scop: Scop, seq: isl.ScheduleNode, options: CompileOptions, kernel: str,
                  block: tuple[int, int, int], steps: int, whole: bool = False) -> LocalPlan:
    """Every array a time tile touches in shared memory for the whole tile (seed 001
    §4 with the tile's time loop as the localised loop and a window covering all its
    steps, §4.4's modulo addressing over the bounding box): ``L`` is the box of the
    tile's footprint, ``x_d mod e_d`` with ``e_d`` one more than the largest distance
    of two elements of one tile along ``d`` (:func:`_span_extents` on one tile's image,
    parametric in the tile's coordinates: the union of its :func:`time_slices`' images),
    so no two elements of one tile share a slot and nothing moves between steps.

    ``seq`` is the tile's band of sequential points; its prefix ``p`` (wavefront,
    tile coordinates) identifies the tile.  Each buffer's ``loc.move_in`` is ``R(p)``,
    the elements the tile reads, copied in once before its first step, and
    ``loc.move_out`` is ``W(p)``, the elements it writes, copied back once after its
    last step.  Why the global values are the right ones (with isl's dependences,
    flow and output value-based, anti memory-based): the tiled schedule respects
    every dependence and two tiles of one wavefront are joined by none, so for a
    read ``r`` of ``x`` either its last writer is an earlier instance of this tile
    (``L[x]`` already holds that value, the global one copied in is never used) or
    it ran in an earlier wavefront, which has finished and written its ``W`` back,
    the last of them in program order last (output dependences); no tile of the
    same launch writes ``x`` (its write would be joined to ``r`` by an anti
    dependence, or by the chain of output dependences ending in ``r``'s flow
    dependence), so the copies race with nothing.  The write-back stores every
    written element: later tiles may read any of them (no liveness analysis,
    which is what costs minutes on skewed multi-statement nests).

    Only the tile's set is computed, never per-step sets, so isl's AST generation
    stays at about a second where seed 001's per-step ``I(t)``/``O(t)`` of skewed
    2-d tiles took 40 s to minutes.  An array whose box does not fit what is left
    of ``--shared-mem`` (at most :data:`LOCAL_LIMIT`) stays in global memory, with
    the reason in the decisions.

    ``whole``: ``seq`` is the time loop of a one-block kernel (the recurrence model's
    choice, :mod:`polymagic.compiler.recurrence`), whose whole footprint is one
    "tile": copied in once at the kernel's start and back once at its end, no time
    slices (the kernel is specialised to the sizes, so the footprint is constant;
    seidel-2d: isl's code in about a second where seed 001's per-step sets of the
    wavefront took 40 s)."""
    out = LocalPlanBuilder()
    prefix, names, arrays = _prefix_and_arrays(scop, seq)
    kid = kernel.rsplit("kernel", 1)[-1]
    limit = min(options.shared_mem, LOCAL_LIMIT)
    slices = [prefix] if whole else time_slices(seq, prefix, steps)
    what = "kernel" if whole else "tile"
    if slices is None:
        out.decisions.append(local_note(
            kernel, None,
            "the tile's data not localised (its time steps are "
            "not T·c_0 + k of its prefix)"))
        return out.plan()
    total = 0
    for a in arrays:
        refs, touched, reads, writes = _tile_maps(scop, slices, a)
        if touched is None:
            continue
        exts = _span_extents(touched)
        if None in exts:
            out.decisions.append(local_note(
                kernel, a,
                f"not localised (the {what}'s footprint is "
                "unbounded)"))
            continue
        ctype = scop.arrays[a].ctype
        nbytes = buffer_bytes(ctype, tuple(exts))
        if total + nbytes > limit:
            out.decisions.append(
                local_note(
                    kernel, a,
                    f"not localised (the box of the {what}'s footprint, "
                    f"{'x'.join(map(str, exts))}, {nbytes} bytes, exceeds the shared memory "
                    f"left to the block, {limit - total} of {limit} bytes)"))
            continue
        empty = isl.Map.empty(touched.get_space())
        index = [_array_mod(touched, d, e) for d, e in enumerate(exts)]
        loc = Localisation(a, 1, refs, touched, reads if reads is not None else empty,
                           writes if writes is not None else empty, empty, None, index,
                           list(exts), "box", [], None, writes is not None)
        lb = LocalBuffer(f"lc{kid}_{a}", a, ctype, tuple(exts), loc, prefix, index, 1,
                         block, refs)
        total += nbytes
        out.buffers.append(lb)
        out.decisions.append(
            local_note(
                kernel, a,
                f"the {what}'s whole footprint in shared memory (seed 001 with "
                f"the {what}'s steps as one window): {lb.name}[{']['.join(map(str, exts))}], its "
                f"bounding box addressed modulo its extents; the elements the {what} reads copied "
                "in once before its first step" + (", those it writes copied back once after "
                "its last step" if writes is not None else "")))
    return out.plan()


def _project_on(m: isl.Map, d: int) -> isl.Map:
    """``{ [p] -> [x_d] }`` from ``{ [p] -> A[x] }``."""
    n = m.dim(isl.dim_type.out)
    return m.project_out(isl.dim_type.out, d + 1, n - d - 1).project_out(isl.dim_type.out, 0, d)


def _span_extents(m: isl.Map) -> list[int | None]:
    """Per dimension ``d``, one more than the largest ``|x_d − y_d|`` of two elements of
    one ``m(p)`` (over every ``p`` and every parameter; ``None``: unbounded): the
    extents of a box holding any ``m(p)`` addressed modulo them.  isl's ``deltas`` of
    ``{ x_d -> y_d }``, cheaper than the lexmin and lexmax of the box's bounds."""
    out: list[int | None] = []
    for d in range(m.dim(isl.dim_type.out)):
        md = _project_on(m, d)
        spans = md.reverse().apply_range(md).deltas()
        try:
            v = spans.dim_max_val(0)
        except isl.Error:
            out.append(None)
            continue
        out.append(None if not v.is_int() else int(v.to_python()) + 1)
    return out


def _box_hull(rel: isl.Map) -> isl.Map:
    """A box containing ``rel(p)`` for every ``p``: per dimension, the simple hull's
    bounds on ``x_d`` alone (of the projection, existential variables removed), so
    each constraint couples one coordinate with ``p``.  Constraints on ``p`` alone are
    dropped: the copy runs only for the tile's prefix anyway."""
    n = rel.dim(isl.dim_type.out)
    box = isl.Map.universe(rel.get_space())
    for d in range(n):
        hull = _project_on(rel, d).simple_hull().remove_divs()
        keep = isl.BasicMap.universe(hull.get_space())
        for c in hull.get_constraints():
            if c.involves_dims(isl.dim_type.out, 0, 1):
                keep = keep.add_constraint(c)
        lifted = isl.Map.from_basic_map(keep).insert_dims(isl.dim_type.out, 0, d)
        lifted = lifted.insert_dims(isl.dim_type.out, d + 1, n - d - 1)
        lifted = lifted.set_tuple_id(isl.dim_type.out, rel.get_tuple_id(isl.dim_type.out))
        box = box.intersect(lifted)
    return box


def _hull_and_guard(rel: isl.Map) -> tuple[isl.Map, isl.Map | None]:
    """The set a copy scans and the guard its statement tests: ``rel`` itself when it
    is one polyhedron without existential variables, else a box containing it
    (:func:`_box_hull`, cheap for isl's AST generator) with ``rel`` as the guard (the
    strides of Gauss-Seidel's ``j += 2`` give its images a parity variable).  A
    union of a tile's per-step images (jacobi-2d: 12 pieces) scanned directly cost
    isl's AST generator minutes (with the copy's cyclic distribution over threads);
    the box plus a guard printed by isl (``expr_from_set``) costs a fraction of a
    second, and skips the same elements."""
    divs = any(b.dim(isl.dim_type.div) for b in rel.get_basic_maps())
    if rel.n_basic_map() <= 1 and not divs:
        return rel, None
    box = _box_hull(rel)
    return box, rel.gist(box).coalesce()      # the guard is only tested inside the box


def graft_tile_box(scop: Scop, seq: isl.ScheduleNode, plan: LocalPlan,
                   copies: dict[str, tuple[str, LocalBuffer]], namer) -> isl.ScheduleNode:
    """``[move-in, sync, seq, sync, write-back]`` around the tile's sequential band
    ``seq`` (:func:`plan_tile_box`), the copies distributed over the block's threads;
    returns the node at ``seq``'s position."""
    from .plan import copy_graft, sync_graft

    def copy(lb: LocalBuffer, stmt: str, kind: str, rel: isl.Map) -> isl.ScheduleNode:
        copies[stmt] = (kind, lb)
        scan, guard = _hull_and_guard(rel)
        if guard is not None:
            lb.guards[stmt] = guard
        return copy_graft(scop, node, stmt, scan, lb.block)
    node = seq
    ins = [lb for lb in plan.buffers if not lb.loc.move_in.is_empty()]
    for lb in ins:
        node = node.graft_before(copy(lb, f"pm_lin_{lb.name}", "in", lb.loc.move_in))
    if ins:
        node = node.graft_before(sync_graft(scop, node, namer.sync()))
    outs = [lb for lb in plan.buffers if not lb.loc.move_out.is_empty()]
    for lb in reversed(outs):
        node = node.graft_after(copy(lb, f"pm_lout_{lb.name}", "out", lb.loc.move_out))
    if outs:
        node = node.graft_after(sync_graft(scop, node, namer.sync()))
    return node
