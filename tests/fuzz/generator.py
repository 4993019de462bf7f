"""Random valid affine C functions for differential fuzzing.

:func:`generate` builds a :class:`~.program.Program` from a seed: 1–4 statements
in loop nests of depth 1–4 (imperfect: statements between loops), bounds that
are affine in outer iterators and sizes with ``min``/``max``, triangular and
banded loops, strides and downward loops, time loops around everything,
``if`` conditions (with ``%``), subscripts that are shifted, transposed,
strided, reversed or sums of iterators, arrays shared between statements (flow,
anti and output dependences), reductions (``+=`` into cells that omit a loop
iterator), local scalar accumulators (``double acc = 0; for k: acc += ...``),
int arrays compared exactly.

Values stay bounded by construction: inputs are in [0.5, 1.5); a ``=``
statement's right-hand side is a weighted sum whose weights (products with a
scalar or ``fmax`` counted at their bound) add up to at most 2/3, so it never
exceeds the largest value read; ``+=`` adds at most half of a bounded term;
``*=`` multiplies by at most 0.75; int statements average or add ``% 3``.
There is no division by data, so no inf or NaN.  (Long ``+=`` chains can still
grow geometrically; the runner rejects the rare program whose reference output
exceeds :data:`MAX_MAGNITUDE` and asks for another — see :func:`generate`.)
"""
from __future__ import annotations

import random

from .program import (Aff, ArrayDef, Bound, Call, Cmp, Decl, If, IntValue, Loop, Program,
                      Ref, Scalar, Stmt, Term, Value, array_elements, statements,
                      work_estimate)

ITERATORS = ("i", "j", "k", "l")
SIZE_NAMES = ("N", "M", "K")
TIME = "T"
ARRAY_NAMES = tuple("ABCDEFGHPQRS")
SCALARS = ("alpha", "beta")
WORK_MAX = 60_000             # statement executions per program (emulator time)
ELEMENTS_MAX = 60_000         # array elements per program
MAX_MAGNITUDE = 1e6           # largest |reference output| a valid program may produce
COEFS = (0.5, 0.25, 0.125, 0.375, 0.0625)


class _Gen:
    """The random choices of one program (see the module docstring)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        n_sizes = rng.choice((1, 1, 2, 2, 3))
        self.sizes = {s: self._size() for s in SIZE_NAMES[:n_sizes]}
        self.arrays: dict[str, ArrayDef] = {}
        self.written: list[str] = []
        self.read: list[str] = []
        self.scalars_used: set[str] = set()
        self.n_locals = 0
        self.max_depth = rng.choice((1, 2, 2, 3, 3, 4))

    # -- names and sizes --

    def _size(self) -> int:
        r = self.rng.random()
        if r < 0.15:
            return self.rng.randint(1, 3)
        return self.rng.randint(4, 24) if r < 0.9 else self.rng.randint(25, 40)

    def size(self) -> str:
        return self.rng.choice(list(self.sizes))

    def new_array(self, rank: int, ctype: str | None = None) -> ArrayDef:
        free = [n for n in ARRAY_NAMES if n not in self.arrays]
        if ctype is None:
            ctype = self.rng.choices(("double", "float", "int"), (6, 3, 1))[0]
        a = ArrayDef(free[0], ctype, rank)
        self.arrays[a.name] = a
        return a

    # -- affine pieces --

    def subscript(self, iters: list[str], avoid: set[str]) -> Aff:
        """One subscript: an iterator (mostly unused so far: transposes), shifted,
        strided, reversed, a sum of two, or a constant."""
        rng = self.rng
        if not iters or rng.random() < 0.07:
            return Aff((), rng.randint(0, 2))
        pool = [v for v in iters if v not in avoid] or iters
        v = rng.choice(pool)
        avoid.add(v)
        r = rng.random()
        if r < 0.55:
            return Aff.var(v, 1, rng.choice((0, 0, 0, 1, -1, 2, -2)))
        if r < 0.68:
            return Aff.var(v, 2, rng.choice((0, 1)))                    # strided
        if r < 0.78:
            return Aff(((self.size(), 1), (v, -1)), -1)                 # reversed: N - 1 - v
        if r < 0.9 and len(iters) > 1:
            w = rng.choice([x for x in iters if x != v])
            return Aff(((v, 1), (w, rng.choice((1, -1)))), 0)           # i + j, i - j
        return Aff.var(v, 1, 0)

    def subscripts(self, rank: int, iters: list[str]) -> tuple[Aff, ...]:
        avoid: set[str] = set()
        return tuple(self.subscript(iters, avoid) for _ in range(rank))

    def near(self, subs: tuple[Aff, ...]) -> tuple[Aff, ...]:
        """The same subscripts shifted by a little in one dimension (stencils)."""
        if not subs:
            return subs
        d = self.rng.randrange(len(subs))
        shifted = subs[d].plus(Aff((), self.rng.choice((-1, 1, 2, -2))))
        return subs[:d] + (shifted,) + subs[d + 1:]

    # -- loops --

    def loop_bounds(self, var: str, iters: list[str]) -> tuple[Bound, Bound, bool]:
        """(lo, hi, strict): rectangular, triangular, banded, min/max, constant."""
        rng = self.rng
        P = self.size()
        outer = [v for v in iters if v != "t"]
        r = rng.random()
        hi = Bound((Aff.var(P),))
        lo = Bound((Aff((), rng.choice((0, 0, 0, 1, 2))),))
        strict = True
        if r < 0.12 and outer:                                  # triangular, j < i
            hi = Bound((Aff.var(rng.choice(outer)),))
        elif r < 0.24 and outer:                                # triangular, j >= i + c
            lo = Bound((Aff.var(rng.choice(outer), 1, rng.choice((0, 1))),))
        elif r < 0.36 and outer:                                # band: max/min around i
            o = rng.choice(outer)
            lo = Bound((Aff((), 0), Aff.var(o, 1, -rng.randint(1, 3))), "max")
            hi = Bound((Aff.var(P), Aff.var(o, 1, rng.randint(1, 4))), "min")
        elif r < 0.46:                                          # P - 1, inclusive
            hi, strict = Bound((Aff.var(P, 1, -rng.randint(1, 2)),)), False
        elif r < 0.54:                                          # small constant trip
            hi = Bound((Aff((), lo.args[0].const + rng.randint(1, 6)),))
        elif r < 0.62:
            Q = self.size()
            hi = Bound((Aff.var(P), Aff.var(Q, 1, -1)), rng.choice(("min", "max")))
        return lo, hi, strict

    def loop(self, iters: list[str], locals_: list[str], n: int, depth_left: int) -> Loop:
        var = ITERATORS[len([v for v in iters if v != "t"])]
        lo, hi, strict = self.loop_bounds(var, iters)
        r = self.rng.random()
        step = 2 if r < 0.08 else 1
        down = 0.08 <= r < 0.16
        body = self.block(iters + [var], locals_, n, depth_left - 1)
        return Loop(var, lo, hi, body, step=step, down=down, strict=strict)

    # -- blocks and statements --

    def block(self, iters: list[str], locals_: list[str], n: int, depth_left: int) -> tuple:
        """``n`` statements (at least one), nested at most ``depth_left`` loops deeper."""
        items: list = []
        while n > 0:
            k = self.rng.randint(1, n)
            items.extend(self.item(iters, locals_, k, depth_left))
            n -= k
        return tuple(items)

    def item(self, iters, locals_, k: int, depth_left: int) -> list:
        rng = self.rng
        if depth_left > 0 and k >= 2 and iters and rng.random() < 0.2:
            return self.accumulator(iters, locals_, k, depth_left)
        if depth_left > 0 and (not iters or rng.random() < 0.65):
            node = self.loop(iters, locals_, k, depth_left)
        else:
            node = self.stmts(iters, locals_, k)
        if [v for v in iters if v != "t"] and rng.random() < 0.15:
            node = self.wrap_if(node, iters, locals_)
        return [node] if not isinstance(node, list) else node

    def stmts(self, iters, locals_, k: int) -> list:
        return [self.stmt(iters, locals_) for _ in range(k)]

    def wrap_if(self, node, iters, locals_) -> If:
        body = tuple(node) if isinstance(node, list) else (node,)
        orelse = (self.stmt(iters, locals_),) if self.rng.random() < 0.3 else ()
        return If(self.conditions(iters), body, orelse)

    def conditions(self, iters) -> tuple[Cmp, ...]:
        rng = self.rng
        outer = [v for v in iters if v != "t"]
        out = []
        for _ in range(rng.choice((1, 1, 2))):
            v = rng.choice(outer)
            r = rng.random()
            if r < 0.3 and len(outer) > 1:
                w = rng.choice([x for x in outer if x != v])
                out.append(Cmp(Aff.var(v), rng.choice(("<", "<=", ">", ">=")), Aff.var(w)))
            elif r < 0.5:
                out.append(Cmp(Aff.var(v), "==", Aff((), rng.randint(0, 1)), mod=2))
            elif r < 0.75:
                out.append(Cmp(Aff.var(v), rng.choice((">=", ">")), Aff((), rng.randint(0, 3))))
            else:
                out.append(Cmp(Aff.var(v, 1, rng.randint(0, 2)), "<", Aff.var(self.size())))
        return tuple(out)

    def accumulator(self, iters, locals_, k: int, depth_left: int) -> list:
        """``double accN = c; for (...) accN += ...; X[..] = ... accN ...;``"""
        name = f"acc{self.n_locals}"
        self.n_locals += 1
        init = Value((Term(self.rng.choice((0.0, 0.5, 1.0))),))
        inner = self.loop(iters, locals_ + [name], k - 2, depth_left)
        var = inner.var
        red = Stmt(Ref(name), "+=", self.value(iters + [var], locals_, "+=", "double"))
        inner = Loop(inner.var, inner.lo, inner.hi, inner.body + (red,), inner.step,
                     inner.down, inner.strict)
        store = self.stmt(iters, locals_ + [name], use_local=name)
        return [Decl(name, "double", init), inner, store]

    def target(self, iters) -> Ref:
        rng = self.rng
        pool = [a for a in self.written + self.read if self.arrays[a].ctype != "int"
                or rng.random() < 0.5]
        if pool and rng.random() < 0.6:
            a = self.arrays[rng.choice(pool)]
        else:
            a = self.new_array(rng.choice((1, 2, 2, 3)) if iters else rng.choice((1, 2)))
        if a.name not in self.written:
            self.written.append(a.name)
        time = ["t"] if "t" in iters and rng.random() < 0.05 else []
        return Ref(a.name, self.subscripts(a.rank, [v for v in iters if v != "t"] + time))

    def stmt(self, iters, locals_, use_local: str | None = None) -> Stmt:
        rng = self.rng
        tgt = self.target(iters)
        ctype = self.arrays[tgt.array].ctype
        if ctype == "int":
            op = rng.choice(("=", "=", "+="))
        else:
            op = rng.choices(("=", "+=", "*="), (6, 3, 1))[0]
        value = self.value(iters, locals_, op, ctype, tgt, use_local)
        return Stmt(tgt, op, value)

    # -- right-hand sides --

    def read_ref(self, iters, locals_, ctype: str, near: Ref | None = None) -> Ref:
        """A read: often the target array nearby (dependences), else another array."""
        rng = self.rng
        plain = [v for v in iters if v != "t"]
        if locals_ and ctype != "int" and rng.random() < 0.15:
            return Ref(rng.choice(locals_))
        if near is not None and near.subs and rng.random() < 0.35:
            return Ref(near.array, self.near(near.subs))
        same = [a for a in self.written + self.read
                if (self.arrays[a].ctype == "int") == (ctype == "int")]
        if same and rng.random() < 0.6:
            a = self.arrays[rng.choice(same)]
        else:
            a = self.new_array(rng.choice((1, 2, 2, 3)), "int" if ctype == "int" else None)
            self.read.append(a.name)
        return Ref(a.name, self.subscripts(a.rank, plain))

    def factor_term(self, iters, locals_, coef: float, tgt, ctype) -> Term:
        """coef * ref, coef * ref * scalar, or coef * fmax(ref, ref)."""
        rng = self.rng
        ref = self.read_ref(iters, locals_, ctype, tgt)
        r = rng.random()
        if r < 0.15:
            s = rng.choice(SCALARS)
            self.scalars_used.add(s)
            return Term(coef, (ref, Scalar(s)))
        if r < 0.25:
            other = self.read_ref(iters, locals_, ctype, tgt)
            return Term(coef, (Call(rng.choice(("fmax", "fmin")), (ref, other)),))
        return Term(coef, (ref,))

    def value(self, iters, locals_, op: str, ctype: str, tgt: Ref | None = None,
              use_local: str | None = None):
        """A bounded right-hand side for ``op`` (see the module docstring)."""
        if ctype == "int":
            return self.int_value(iters, locals_, op, tgt)
        rng = self.rng
        if op == "*=":
            return Value((Term(rng.choice((0.5, 0.75))),)) if rng.random() < 0.5 else \
                Value((Term(0.5, (self.read_ref(iters, locals_, ctype, tgt),)),))
        n = rng.choice((1, 2, 2, 3)) if op == "=" else rng.choice((1, 1, 2))
        budget = (2 / 3) if op == "=" else 1 / 3
        terms = []
        for _ in range(n):
            coef = rng.choice([c for c in COEFS if c * 1.5 <= budget] or [0.0625])
            budget -= coef * 1.5
            terms.append(self.factor_term(iters, locals_, coef, tgt, ctype))
        if use_local is not None:
            terms[0] = Term(terms[0].coef, (Ref(use_local),))
        if op == "=" and rng.random() < 0.2 and budget > 0.1:
            terms.append(Term(0.0625))
        return Value(tuple(terms))

    def int_value(self, iters, locals_, op: str, tgt: Ref | None) -> IntValue:
        rng = self.rng
        if op == "+=":
            return IntValue((self.read_ref(iters, locals_, "int", tgt),), 0, 1, 3)
        refs = tuple(self.read_ref(iters, locals_, "int", tgt) for _ in range(rng.randint(1, 3)))
        const = rng.choice((0, 0, 1, 3))
        return IntValue(refs, const, len(refs) + (1 if const else 0))


def _program(rng: random.Random) -> Program:
    g = _Gen(rng)
    n_stmts = rng.choice((1, 2, 2, 3, 3, 4))
    time_loop = rng.random() < 0.25
    depth = g.max_depth
    if time_loop and depth > 1:
        g.sizes[TIME] = rng.randint(1, 4)
        inner = g.block(["t"], [], n_stmts, depth - 1)
        body = (Loop("t", Bound((Aff((), 0),)), Bound((Aff.var(TIME),)), inner),)
    else:
        body = g.block([], [], n_stmts, depth)
    arrays = tuple(g.arrays[n] for n in sorted(g.arrays))
    return Program(tuple(g.sizes.items()), tuple(sorted(g.scalars_used)), arrays, body)


def _fit(program: Program) -> Program:
    """Halve the largest size until the work and the arrays are small enough."""
    while work_estimate(program) > WORK_MAX or array_elements(program) > ELEMENTS_MAX:
        sizes = dict(program.sizes)
        big = max(sizes, key=sizes.get)
        if sizes[big] <= 1:
            break
        sizes[big] = max(1, sizes[big] // 2)
        program = Program(tuple(sizes.items()), program.scalars, program.arrays,
                          program.body, program.name)
    return program


def generate(seed: int, attempt: int = 0) -> Program:
    """The program of ``seed`` (``attempt`` > 0: another one for the same seed,
    used when a program's reference output is out of range)."""
    rng = random.Random(f"polymagic-fuzz-{seed}-{attempt}")
    program = _fit(_program(rng))
    program.origin.update(seed=seed, attempt=attempt)
    assert statements(program.body)
    return program
