"""Shrink a failing case to a small reproducer (greedy delta debugging).

A *state* is (program, sizes, args).  :func:`candidates` proposes smaller
states, biggest cuts first: delete a statement or a whole loop/if, unwrap a
loop (its iterator replaced by its lower bound), drop an ``else`` or a
condition, simplify bounds (no ``min``/``max``, 0 and a size, step 1, upward),
drop terms of right-hand sides and of subscripts, make ``+=`` a ``=``, lower
the sizes, and drop or simplify options.  A candidate is kept when it still
fails the same way (same outcome kind); its reference output must stay in range
(:func:`.runner.checked_run`), so shrinking never trades the bug for an
overflow.  Because extents are derived from the program (see :mod:`.program`),
every candidate indexes inside its arrays.

Candidates are tried in parallel chunks (one per pool worker); the first
interesting one in order wins and the search restarts from it, until no
candidate is interesting or the budget (tests or seconds) is spent.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Iterator

from . import space
from .program import (Aff, Bound, Call, Decl, If, IntValue, Loop, Program, Ref, Stmt,
                      Term, Value, used_sizes)
from .runner import Case, Outcome, Pool, cases_job, program_source

Path = tuple  # a position in the tree: indices into nested blocks


@dataclass(frozen=True)
class State:
    program: Program | None      # None: only sizes and args can shrink
    source: str
    sizes: tuple[tuple[str, int], ...]
    args: tuple[str, ...]

    def case(self) -> Case:
        return Case(self.source, dict(self.sizes), list(self.args))


def state_of(program: Program, args: list[str]) -> State:
    source, args = program_source(program, list(args))
    return State(program, source, tuple(used_sizes(program).items()), tuple(args))


def with_program(s: State, program: Program) -> State:
    """``s`` with another program (rendered in the language of ``s.args``); a
    program with no Python equivalent drops ``--python``."""
    return state_of(program, list(s.args))


# ---- tree edits ----------------------------------------------------------------------

def _blocks(nodes: tuple, path: Path = ()) -> Iterator[tuple[Path, tuple]]:
    """Every block (tuple of nodes) with its path; a path step is (index, field)."""
    yield path, nodes
    for k, n in enumerate(nodes):
        if isinstance(n, Loop):
            yield from _blocks(n.body, path + ((k, "body"),))
        elif isinstance(n, If):
            yield from _blocks(n.then, path + ((k, "then"),))
            yield from _blocks(n.orelse, path + ((k, "orelse"),))


def _set_block(nodes: tuple, path: Path, new: tuple) -> tuple:
    """``nodes`` with the block at ``path`` replaced by ``new``."""
    if not path:
        return new
    (k, fld), rest = path[0], path[1:]
    node = nodes[k]
    child = _set_block(getattr(node, fld), rest, new)
    return nodes[:k] + (replace(node, **{fld: child}),) + nodes[k + 1:]


def _program_with_body(p: Program, body: tuple) -> Program:
    return Program(p.sizes, p.scalars, p.arrays, body, p.name, p.origin)


def node_edits(node) -> Iterator[list]:
    """Replacements (lists of nodes) for one node, smaller first."""
    if isinstance(node, Loop):
        lo = node.lo.args[0]
        yield [n.substitute(node.var, lo) for n in node.body]
        yield from ([replace(node, lo=b)] for b in _bound_edits(node.lo, lower=True))
        yield from ([replace(node, hi=b)] for b in _bound_edits(node.hi, lower=False))
        if node.step != 1:
            yield [replace(node, step=1)]
        if node.down:
            yield [replace(node, down=False)]
    elif isinstance(node, If):
        yield list(node.then)
        if node.orelse:
            yield list(node.orelse)
            yield [replace(node, orelse=())]
        for k in range(len(node.conds)):
            if len(node.conds) > 1:
                yield [replace(node, conds=node.conds[:k] + node.conds[k + 1:])]
    elif isinstance(node, Stmt):
        if node.op != "=":
            yield [replace(node, op="=")]
        yield from ([replace(node, value=v)] for v in _value_edits(node.value))
        yield from ([replace(node, target=r)] for r in _ref_edits(node.target))
        yield from ([_with_refs(node, old, new)] for old in node.value.refs()
                    for new in _ref_edits(old))
    elif isinstance(node, Decl):
        if node.init != Value((Term(0.0),)):
            yield [replace(node, init=Value((Term(0.0),)))]


def _bound_edits(b: Bound, lower: bool) -> Iterator[Bound]:
    if b.op:
        for a in b.args:
            yield Bound((a,))
    elif b.args[0] != Aff():
        if lower:
            yield Bound((Aff(),))
        for a in _aff_edits(b.args[0]):
            yield Bound((a,))


def _aff_edits(a: Aff) -> Iterator[Aff]:
    """Drop a term, zero the constant, make coefficients 1."""
    for k in range(len(a.terms)):
        if len(a.terms) > 1 or a.const:
            yield Aff(a.terms[:k] + a.terms[k + 1:], a.const)
    if a.const:
        yield Aff(a.terms, 0)
    if any(c != 1 for _, c in a.terms):
        yield Aff(tuple((v, 1) for v, _ in a.terms), a.const)


def _ref_edits(r: Ref) -> Iterator[Ref]:
    for d, s in enumerate(r.subs):
        for s2 in _aff_edits(s):
            yield Ref(r.array, r.subs[:d] + (s2,) + r.subs[d + 1:])


def _value_edits(v) -> Iterator:
    if isinstance(v, IntValue):
        for k in range(len(v.refs_)):
            if len(v.refs_) > 1:
                yield replace(v, refs_=v.refs_[:k] + v.refs_[k + 1:])
        if v.mod:
            yield replace(v, mod=0)
        if v.const:
            yield replace(v, const=0)
        return
    for k in range(len(v.terms)):
        if len(v.terms) > 1:
            yield Value(v.terms[:k] + v.terms[k + 1:])
    for k, t in enumerate(v.terms):
        for f2 in _term_edits(t):
            yield Value(v.terms[:k] + (f2,) + v.terms[k + 1:])


def _term_edits(t: Term) -> Iterator[Term]:
    for k, f in enumerate(t.factors):
        if len(t.factors) > 1:
            yield Term(t.coef, t.factors[:k] + t.factors[k + 1:])
        if isinstance(f, Call):
            for a in f.args:
                yield Term(t.coef, t.factors[:k] + (a,) + t.factors[k + 1:])


def _with_refs(node: Stmt, old: Ref, new: Ref) -> Stmt:
    """``node`` with its first read ``old`` replaced by ``new``."""
    done = [False]

    def sub(r):
        if isinstance(r, Ref) and r == old and not done[0]:
            done[0] = True
            return new
        if isinstance(r, Call):
            return Call(r.fn, tuple(sub(a) for a in r.args))
        return r
    v = node.value
    if isinstance(v, IntValue):
        return replace(node, value=replace(v, refs_=tuple(sub(r) for r in v.refs_)))
    return replace(node, value=Value(tuple(Term(t.coef, tuple(sub(f) for f in t.factors))
                                           for t in v.terms)))


def program_candidates(p: Program) -> Iterator[Program]:
    """Smaller programs: deletions first, then local edits."""
    blocks = list(_blocks(p.body))
    for path, nodes in blocks:                      # delete one node
        for k in range(len(nodes)):
            if len(nodes) > 1 or path:
                yield _program_with_body(p, _set_block(p.body, path, nodes[:k] + nodes[k + 1:]))
    for path, nodes in blocks:                      # replace one node
        for k, n in enumerate(nodes):
            for new in node_edits(n):
                body = _set_block(p.body, path, nodes[:k] + tuple(new) + nodes[k + 1:])
                if body:
                    yield _program_with_body(p, body)


def size_candidates(sizes: dict[str, int]) -> Iterator[dict[str, int]]:
    for name, v in sizes.items():
        for smaller in sorted({1, v // 2, v - 1}):
            if 1 <= smaller < v:
                yield {**sizes, name: smaller}


def _options(args: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Arguments grouped as (flag,) or (flag, value)."""
    out: list[tuple[str, ...]] = []
    for a in args:
        if a.startswith("--") or not out or len(out[-1]) == 2:
            out.append((a,))
        else:
            out[-1] = out[-1] + (a,)
    return out


def arg_candidates(args: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Drop an option (flag and value), or simplify its value."""
    opts = _options(args)
    for k in range(len(opts)):
        yield tuple(x for j, o in enumerate(opts) if j != k for x in o)
    for k, opt in enumerate(opts):
        if len(opt) != 2:
            continue
        for v2 in _value_candidates(*opt):
            yield tuple(x for j, o in enumerate(opts) for x in (o if j != k else (opt[0], v2)))


def _value_candidates(flag: str, value: str) -> Iterator[str]:
    simple = dict(zip(space.defaults()[::2], space.defaults()[1::2]))
    if flag in simple and value != simple[flag]:
        yield simple[flag]
    if flag == "--tile" and ":" in value:          # tile levels: try the block tile alone
        yield value.split(":", 1)[0]
        return
    if flag in ("--tile", "--block") and value != "auto":
        vals = value.split(",")
        if len(vals) > 1:
            yield ",".join(vals[:-1])
        for k, v in enumerate(vals):
            for v2 in sorted({1, int(v) // 2}):
                if 1 <= v2 < int(v):
                    yield ",".join(vals[:k] + [str(v2)] + vals[k + 1:])
    if flag == "--seed" and value != "0":
        yield "0"


def candidates(s: State) -> Iterator[State]:
    """Options first (cheap, and they make every later test faster), then the
    program, then the sizes."""
    for args in arg_candidates(s.args):
        yield replace(s, args=args) if s.program is None else state_of(s.program, list(args))
    if s.program is None:
        for sizes in size_candidates(dict(s.sizes)):
            yield State(None, s.source, tuple(sizes.items()), s.args)
        return
    for p in program_candidates(s.program):
        yield with_program(s, p)
    for sizes in size_candidates(dict(s.program.sizes)):
        p = s.program
        yield with_program(s, Program(tuple(sizes.items()), p.scalars, p.arrays, p.body,
                                      p.name, p.origin))


# ---- the search ----------------------------------------------------------------------

@dataclass
class ShrinkResult:
    state: State
    outcome: Outcome
    tests: int
    seconds: float


def shrink(state: State, signature: str, pool: Pool, max_tests: int = 400,
           budget_s: float = 300.0, stage: str = "") -> ShrinkResult:
    """Greedily shrink ``state`` while its outcome's signature stays ``signature``
    (see :attr:`.runner.Outcome.signature`).  When the failure happened in the
    pipeline (``stage == "compile"``), candidates are only compiled, not run."""
    compile_only = stage == "compile"
    t0 = time.monotonic()
    seen: dict[tuple, Outcome] = {}
    best, best_outcome, tests = state, Outcome(signature.split("|")[0]), 0
    progress = True
    while progress and tests < max_tests and time.monotonic() - t0 < budget_s:
        progress = False
        chunk: list[State] = []
        for cand in candidates(best):
            key = (cand.source, cand.sizes, cand.args)
            if key in seen:
                continue
            chunk.append(cand)
            if len(chunk) < max(1, pool.n):
                continue
            found = _try(chunk, pool, seen, compile_only)
            tests += len(chunk)
            chunk = []
            hit = next(((c, o) for c, o in found if o.signature == signature), None)
            if hit:
                best, best_outcome = hit
                progress = True
                break
            if tests >= max_tests or time.monotonic() - t0 > budget_s:
                break
        if chunk and not progress:
            found = _try(chunk, pool, seen, compile_only)
            tests += len(chunk)
            hit = next(((c, o) for c, o in found if o.signature == signature), None)
            if hit:
                best, best_outcome = hit
                progress = True
    return ShrinkResult(best, best_outcome, tests, time.monotonic() - t0)


def _try(chunk: list[State], pool: Pool, seen: dict, compile_only: bool
         ) -> list[tuple[State, Outcome]]:
    """Run candidates (one job each, in parallel); results in chunk order."""
    jobs = [(cases_job, ([c.case()], compile_only), 1) for c in chunk]
    results: dict[int, Outcome] = {}
    for k, got in pool.imap(jobs):
        outcome = got[-1][1] if got else Outcome("crash:no-result")
        results[k] = outcome
    out = []
    for k, c in enumerate(chunk):
        seen[(c.source, c.sizes, c.args)] = results[k]
        out.append((c, results[k]))
    return out
