"""Array subscripts printed by isl at a point of the AST (PPCG's ``at_each_domain``).

An access function — for a buffered reference the local one, ``F'(y) - g`` of seed
000 §3.1.2; for a localised one seed 001 §4.2's ``ρ(x, p)`` — is pulled back to the
loop iterators at the statement instance and printed by isl's AST build, which
simplifies it with what it knows of the loops.  The helpers here compute those
functions (copy statements, chunk guards, statement prefixes) and splice the printed
subscripts back into a statement's accesses.
"""
from __future__ import annotations

import functools

import islpy as isl

from ..errors import PolymagicError
from ..expr import Access, Assign, Expr, Int, map_expr
from ..expr import walk as walk_expr
from ..isl_util import ast_expr_to_expr, pw_aff_to_expr, set_to_expr
from ..memory.plan import BufferPlan


def iterator_map(build: isl.AstBuild, stmt: str) -> isl.PwMultiAff | None:
    """Loop iterators -> statement instance at this point of the AST (None when the
    schedule is not invertible there)."""
    maps: list[isl.Map] = []
    build.get_schedule().foreach_map(
        lambda m: maps.append(m) if m.get_tuple_name(isl.dim_type.in_) == stmt else None)
    if len(maps) != 1:
        return None
    try:
        return isl.PwMultiAff.from_map(maps[0].reverse())
    except isl.Error:
        return None


def access_affs(relation: isl.Map) -> list[isl.PwAff] | None:
    """The subscripts of an access relation as piecewise affine functions."""
    try:
        pma = isl.PwMultiAff.from_map(relation)
    except isl.Error:
        return None
    return [pma.get_pw_aff(i) for i in range(relation.dim(isl.dim_type.out))]


def copy_local_index(stmt: str, n_prefix: int, buf: BufferPlan, bare: bool = False,
                     width: int = 1) -> list[isl.PwAff]:
    """``a - g(p)`` on the copy statement's space ``stmt[p..., a...]``; with ``bare``
    a one-piece ``g`` loses its domain first (:func:`build_index` would drop it);
    with ``width`` > 1 the last dim is a chunk ``k`` of the buffer row
    (:func:`memory.plan.chunk_domain`): its buffer subscript ``width * k``, then the
    array's ``g(p) + width * k`` follow."""
    na = len(buf.extents)
    params = buf.lower[0].get_space().params() if buf.lower else None
    dims = [f"p{i}" for i in range(n_prefix)] + [f"a{i}" for i in range(na)]
    pnames = ", ".join(params.get_var_names(isl.dim_type.param)) if params is not None else ""
    proj = _parsed(isl.MultiAff, f"[{pnames}] -> {{ {stmt}[{', '.join(dims)}] -> "
                                 f"[{', '.join(dims[:n_prefix])}] }}")
    out = []
    for i, g in enumerate(buf.lower):
        g = (drop_domain(g) if bare else g).pullback_multi_aff(proj)
        if width > 1 and i == na - 1:
            k = _parsed(isl.PwAff, f"[{pnames}] -> {{ {stmt}[{', '.join(dims)}] -> "
                                   f"[({width} * a{i})] }}")
            out += [k, k.add(g)]
        else:
            a = _parsed(isl.PwAff, f"[{pnames}] -> {{ {stmt}[{', '.join(dims)}] -> [(a{i})] }}")
            out.append(a.sub(g))
    return out


#: the names of a chunk statement's dims in its guards (substituted by the AST's)
CHUNK_DIM = "pm_k"


def chunk_cond(chunks: isl.Map) -> Expr:
    """A set of chunks ``{ [p] -> A[a', c] }`` (simplified against the statement's
    domain) as a condition on the statement's dims ``pm_k0 ..`` (``Int(1)``/``Int(0)``:
    always/never), printed by isl once per copy statement."""
    cond = chunks.wrap().flatten()
    if cond.is_empty():
        return Int(0)
    n = cond.dim(isl.dim_type.set)
    if cond.is_equal(isl.Set.universe(cond.get_space())):
        return Int(1)
    npar = cond.dim(isl.dim_type.param)
    cond = cond.move_dims(isl.dim_type.param, npar, isl.dim_type.set, 0, n)
    for i in range(n):
        cond = cond.set_dim_id(isl.dim_type.param, npar + i, isl.Id(f"{CHUNK_DIM}{i}"))
    return set_to_expr(cond)


@functools.lru_cache(maxsize=1024)
def _parsed(cls, text: str):
    """``cls(text)``, parsed once (isl objects are immutable; the copy statements'
    spaces come back at every regeneration)."""
    return cls(text)


#: subscripts with more pieces than this are substituted instead of printed by isl
MAX_INDEX_PIECES = 4


def build_index(build: isl.AstBuild, iters: isl.PwMultiAff, affs: list[isl.PwAff],
                drop_domains: bool = True, memo: dict[str, Expr] | None = None
                ) -> tuple[Expr, ...] | None:
    """Subscripts pulled back to the loop iterators and printed by the build; with
    ``drop_domains`` and a one-piece iterator map, one-piece subscripts lose their
    domains first (:func:`drop_domain`: the same text, faster).  ``memo``: the
    subscripts already printed at this build by their functions' text (a stencil's
    references share most of theirs: ``A[i+1][j][k]`` and ``A[i][j][k]`` two of three;
    a twentieth of a tile change on heat-3d, issue 22)."""
    try:
        out = []
        one = drop_domains and iters.n_piece() == 1
        for f in affs:
            key = f.to_str() if memo is not None else ""
            if key in (memo or {}):
                out.append(memo[key])
                continue
            f = drop_domain(f) if one else f
            f = f.align_params(iters.get_space())
            it = iters.align_params(f.get_space())
            g = f.pullback_pw_multi_aff(it)
            if g.n_piece() > MAX_INDEX_PIECES:     # printing it would be slow and long
                return None
            out.append(ast_expr_to_expr(build.expr_from_pw_aff(g)))
            if memo is not None:
                memo[key] = out[-1]
        return tuple(out)
    except isl.Error:
        return None


def guard_expr(build: isl.AstBuild, iters: isl.PwMultiAff, stmt: str, guard: isl.Map
                ) -> Expr:
    """The condition ``(p, x) ∈ guard`` of a copy statement ``stmt[p..., x...]`` scanned
    over a superset (:func:`.memory.localcode.graft_tile_box`), printed by the build."""
    g = guard.wrap().flatten().set_tuple_name(stmt)
    g = g.align_params(iters.get_space())
    it = iters.align_params(g.get_space())
    cond = g.preimage_pw_multi_aff(it)
    return ast_expr_to_expr(build.expr_from_set(cond))


def drop_domain(f: isl.PwAff) -> isl.PwAff:
    """A one-piece subscript with its domain dropped.

    The domain of a subscript (the statement's domain, a buffer's blocks: unions of
    polyhedra with floors) holds every instance printed at the AST point, so isl
    prints the same expression without it: for one piece pulled back by one piece,
    :func:`build_index`'s expression is the affine function simplified against the
    build's domain, the piece's condition being dropped as isl's last piece.  The
    domain only made the pullback and isl's gist slow (2-3x the time of the whole
    subscript printing on lu and fdtd-2d)."""
    if f.n_piece() != 1:
        return f
    pieces: list[isl.Aff] = []
    f.foreach_piece(lambda _s, a: pieces.append(a))
    return isl.PwAff.from_aff(pieces[0])


def prefix_expr(g: isl.PwAff) -> Expr:
    """A buffer lower bound (a function of the prefix dims) with dims named p0, p1..."""
    for i in range(g.dim(isl.dim_type.in_)):
        g = g.set_dim_id(isl.dim_type.in_, i, isl.Id(f"p{i}"))
    return pw_aff_to_expr(g)


def stmt_prefix(buf: BufferPlan, stmt) -> isl.PwMultiAff:
    """The prefix schedule of the buffer's level as a function of the statement's
    instance (e.g. gemm's ``S0[i, j, k] -> [floor(i/32), floor(j/32), floor(k/16)]``)."""
    maps: list[isl.Map] = []
    buf.prefix.foreach_map(lambda m: maps.append(m) if m.get_tuple_name(isl.dim_type.in_) == stmt.name else None)
    m = maps[0]
    for i, it in enumerate(stmt.iterators):
        m = m.set_dim_id(isl.dim_type.in_, i, isl.Id(it))
    return isl.PwMultiAff.from_map(m)


def _post_order(e: Expr) -> list[Access]:
    """Accesses of ``e``, an access after those in its own subscripts (a gather
    ``x[perm[j]]``: ``perm[j]`` then ``x[..]``, as the front end records them)."""
    if isinstance(e, Access):
        return [x for i in e.index for x in _post_order(i)] + [e]
    return [x for c in e.children() for x in _post_order(c)]


def access_order(a: Assign) -> list[Access]:
    """Accesses in the front end's order: the target's subscripts' reads, target read
    (compound ops), value reads left to right, target write."""
    idx = [x for i in a.target.index for x in _post_order(i)]
    vals = _post_order(a.value)
    return idx + ([a.target] if a.op != "=" else []) + vals + [a.target]


def rewrite_accesses(a: Assign, repl: dict) -> Assign:
    """Replace the k-th access (in :func:`access_order`) by ``repl[k](access)``; an
    access whose subscripts read arrays gets its subscripts rewritten first."""
    counter = iter(range(len(access_order(a))))

    def f(e):
        if isinstance(e, Access):
            inner = Access(e.array, tuple(map_expr(i, f) for i in e.index)) \
                if any(isinstance(x, Access) for i in e.index for x in walk_expr(i)) else e
            k = next(counter)
            return repl[k](inner) if k in repl else inner
        return None
    t0 = Access(a.target.array, tuple(map_expr(i, f) for i in a.target.index))
    r = next(counter) if a.op != "=" else None
    value = map_expr(a.value, f)
    w = next(counter)
    target = repl[w](t0) if w in repl else t0
    if r is not None and (r in repl) != (w in repl):
        raise PolymagicError("internal: read and write of one target in different buffers")
    return Assign(target, a.op, value)
