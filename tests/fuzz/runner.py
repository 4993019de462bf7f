"""Run fuzz cases: in process (:func:`run_case`), in worker processes with
per-case timeouts (:class:`.pool.Pool`), and as a seeded campaign (:func:`campaign`).

A case passes when ``polymagic.runtime.run.run`` reports ``ok``: the device
target's result equals the CPU reference within the runtime's tolerances and
the emulator found no race, out-of-bounds access or divergent barrier.  Any
other outcome is a failure with a *signature* (its kind, e.g. ``mismatch``,
``emulator:race``, ``crash:KeyError``, and where it happened) that shrinking
must preserve.

Batching: one job is one program with several option combinations, run by one
worker, so the CPU reference is built once per program and one emulator build
serves every run-time option (target, order, seed) of a mapping.
"""
from __future__ import annotations

import os
import random
import re
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from . import generator, space
from .case import PASS, REFUSED, SKIPPED, Case, Outcome
from .pool import Pool
from .program import Program, render, render_flat, render_python, used_sizes

#: Options whose small values may legitimately be refused ("does not fit").
LIMIT_OPTIONS = ("--device-mem", "--shared-mem")

__all__ = ["Case", "Outcome", "Pool", "PASS", "SKIPPED", "REFUSED", "run_case",
           "checked_run", "campaign", "valid_program", "program_job", "cases_job"]


# ---- one case, in process -------------------------------------------------------

def _emulator_kind(message: str) -> str:
    low = message.lower()
    for word, kind in (("race", "race"), ("out of bounds", "bounds"), ("out-of-bounds", "bounds"),
                       ("bounds", "bounds"), ("uninit", "uninitialised"),
                       ("barrier", "barrier")):
        if word in low:
            return kind
    return "other"


def crash_site(exc: BaseException) -> str:
    """``file.py:function`` of the innermost polymagic frame of a traceback."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f"{os.sep}polymagic{os.sep}" in f.filename]
    if not frames:
        return ""
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].name}"


def compiler_error(message: str) -> str:
    """The first ``error:`` of a compiler log, without paths, positions and numbers."""
    m = re.search(r"error: ([^\n]*)", message.split("\n", 1)[-1])
    return re.sub(r"\d+", "N", m.group(1)).strip() if m else ""


def classify(exc: BaseException) -> str:
    """The failure kind of an exception raised while running a case."""
    from polymagic import errors
    if isinstance(exc, errors.EmulatorError):
        return "emulator:" + _emulator_kind(str(exc))
    if isinstance(exc, errors.CompileError):
        return "compile-error"
    if isinstance(exc, errors.SourceError):
        return "rejected"                   # the front end refused a generated program
    if isinstance(exc, errors.PolymagicError):
        return "error:" + type(exc).__name__
    return "crash:" + type(exc).__name__


def _refusal(exc: BaseException, case: Case) -> bool:
    """A user error (not an internal one) naming a limit option the case set."""
    from polymagic import errors
    if not isinstance(exc, (errors.DeviceError, errors.OptionsError, errors.InputError)):
        return False
    text = str(exc)
    return any(opt in case.args and opt in text for opt in LIMIT_OPTIONS)


#: hidden compile options (policies, never on the command line) every case runs under:
#: ``--force-superposition`` sets ``require_gain=False``; set before the workers fork
POLICY: dict = {}
#: ``--target openmp`` campaigns draw from :func:`space.draw_openmp` (set before the
#: workers fork)
ONLY_TARGET: list[str] = []


def run_case(case: Case, compile_only: bool = False) -> Outcome:
    """Compile and run one case (only compile with ``compile_only``: enough to
    shrink a failure of the pipeline itself); never raises."""
    from polymagic import compiler
    from polymagic.options import parse_options
    from polymagic.runtime import run as rt
    t0 = time.perf_counter()
    stage, compiled = "options", None
    try:
        opts = parse_options(case.cli()).with_(**POLICY)
        stage = "compile"
        compiled = compiler.compile_source(case.source, opts, language=case.language)
        if compile_only:
            return Outcome(PASS, "", time.perf_counter() - t0, stage)
        stage = "run"
        report = rt.run(compiled, opts)
    except Exception as e:       # noqa: BLE001 — every failure is an outcome
        kind, msg = classify(e), f"{type(e).__name__}: {e}"
        if _refusal(e, case):
            return Outcome(REFUSED, msg, time.perf_counter() - t0, stage)
        code = compiled.cuda if compiled is not None else ""
        where = ""
        if kind.startswith("crash"):
            msg += "\n" + "".join(traceback.format_exception(e)[-4:])
            where = crash_site(e)
        elif kind == "compile-error":
            where = compiler_error(msg)
        return Outcome(kind, msg, time.perf_counter() - t0, stage, where, code)
    dt = time.perf_counter() - t0
    if report.ok:
        return Outcome(PASS, "", dt, stage)
    return Outcome("mismatch", f"{report.mismatches} mismatches, first at "
                   f"{report.first_mismatch}, max abs err {report.max_abs_err:g}", dt, stage,
                   code=compiled.cuda)


def reference_range(source: str, sizes: dict, language: str = "c") -> float:
    """Largest |value| of the CPU reference's outputs on seed-0 random inputs
    (inf when not finite).  Raises what the front end raises."""
    from polymagic.frontend import parse
    from polymagic.options import Options
    from polymagic.runtime import run as rt
    scop = parse(source, language)
    inputs = rt.gather_inputs(scop, Options(sizes=dict(sizes)), {})
    arrays = {n: a.copy() for n, a in inputs.arrays().items()}
    rt.cpu_reference(scop).run({**inputs.args, **arrays})
    top = 0.0
    for name in scop.written_arrays():
        a = arrays.get(name)
        if a is None or a.size == 0:
            continue
        if not np.all(np.isfinite(a)):
            return float("inf")
        top = max(top, float(np.max(np.abs(a))))
    return top


def in_range(source: str, sizes: dict, language: str = "c") -> bool:
    return reference_range(source, sizes, language) <= generator.MAX_MAGNITUDE


def valid_program(seed: int, attempts: int = 30) -> Program:
    """The first program of ``seed`` whose reference output stays in range (the
    front end's errors propagate: a rejected generated program is a finding)."""
    program = None
    for attempt in range(attempts):
        program = generator.generate(seed, attempt)
        if in_range(render(program), used_sizes(program)):
            return program
    return program


# ---- jobs (run inside workers) ----------------------------------------------------

def program_job(seed: int, arg_lists: list[list[str]]) -> Iterator[tuple[Case, Outcome]]:
    """Generate the program of ``seed`` and run it under each argument list."""
    t0 = time.perf_counter()
    try:
        program = valid_program(seed)
    except Exception as e:       # noqa: BLE001 — e.g. the front end rejects it
        program = generator.generate(seed, 0)
        case = Case(render(program), used_sizes(program), arg_lists[0], seed, 0)
        yield case, Outcome(classify(e), f"{type(e).__name__}: {e}", time.perf_counter() - t0)
        return
    for k, args in enumerate(arg_lists):
        source, args = program_source(program, args)
        sizes = used_sizes(program)
        if "--python" not in args:
            source, sizes = flat_form(program, source, sizes, seed, k)
        case = Case(source, sizes, args, seed, program.origin.get("attempt", 0))
        yield case                          # announced: a timeout blames this case
        yield case, run_case(case)


def program_source(program: Program, args: list[str]) -> tuple[str, list[str]]:
    """The source for ``args``: Python with ``--python`` when the program has a
    Python equivalent (else C, and ``--python`` is dropped); a ``--localise @k``
    names the k-th loop iterator of the program (window 2 for every third k)."""
    args = _resolve_localise(render(program), args)
    if "--python" in args:
        py = render_python(program)
        if py is not None:
            return py, args
        args = [a for a in args if a != "--python"]
    return render(program), args


#: how often a C case is drawn on flat buffers (pointers, A[(i) * N + (j)]) and
#: through index macros (#define A_IDX(i0, i1) ...): issue 19's C as people write it
FLAT_P, MACRO_P = 0.15, 0.1


def flat_form(program: Program, source: str, sizes: dict, seed: int, k: int
              ) -> tuple[str, dict]:
    """The ``k``-th case's source and sizes: the program as rendered, or on flat
    buffers (plain or through index macros, leading dimensions padded in a third of
    them), drawn from a stream of its own so the option draws stay as they were."""
    rng = random.Random(f"polymagic-fuzz-flat-{seed}-{k}")
    u = rng.random()
    if u >= FLAT_P + MACRO_P or not program.arrays:
        return source, sizes
    pad = rng.choice((0, 0, 1, 3))
    return render_flat(program, macros=u >= FLAT_P, pad=pad)


def _resolve_localise(c_source: str, args: list[str]) -> list[str]:
    out = list(args)
    for i, a in enumerate(out[:-1]):
        if a == "--localise" and out[i + 1].startswith("@"):
            k = int(out[i + 1][1:])
            names = list(dict.fromkeys(re.findall(r"for \(int (\w+)", c_source)))
            if not names:
                return out[:i] + out[i + 2:]
            out[i + 1] = names[k % len(names)] + (":2" if k % 3 == 0 else "")
    return out


def cases_job(cases: list[Case], compile_only: bool = False) -> Iterator:
    """Run given cases (shrinking candidates, saved regressions); a case whose
    reference output is out of range is an ``out-of-range`` outcome."""
    for case in cases:
        yield case
        yield case, checked_run(case, compile_only)


def checked_run(case: Case, compile_only: bool = False) -> Outcome:
    """:func:`run_case`, after checking the reference output stays in range
    (unless only compiling)."""
    if compile_only:
        return run_case(case, compile_only=True)
    try:
        ok = in_range(case.source, case.sizes, case.language)
    except Exception:            # noqa: BLE001 — run_case reports the same error
        ok = True
    if not ok:
        return Outcome("out-of-range", "reference output out of range")
    return run_case(case)


# ---- campaigns ----------------------------------------------------------------------

@dataclass
class Failure:
    case: Case | None
    outcome: Outcome

    @property
    def known(self):
        """The already-reported bug this failure matches (see :mod:`.known`), or None."""
        from .known import known
        return known(self.outcome)


@dataclass
class CampaignResult:
    cases: int = 0
    lost: int = 0                # cases never run (their worker timed out earlier)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    programs: int = 0
    kinds: dict = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0

    @property
    def new_failures(self) -> list[Failure]:
        """Failures that match no known open bug."""
        return [f for f in self.failures if f.known is None]

    def summary_line(self, allow_known: bool = False) -> str:
        n = len(self.new_failures if allow_known else self.failures)
        return f"cases {self.cases}, failures {n}, cases/s {self.rate:.2f}"


def program_options(seed: int, mappings: int, runs: int) -> list[list[str]]:
    """The option combinations of one program: ``mappings`` code-changing draws,
    each with ``runs`` run-time draws (runs share one emulator build)."""
    rng = random.Random(f"polymagic-fuzz-options-{seed}")
    out = []
    draw = space.draw_openmp if ONLY_TARGET == ["openmp"] else space.draw
    for _ in range(mappings):
        code = draw(rng, code=True)
        for _ in range(runs):
            out.append(code + draw(rng, code=False))
    return out


def campaign_jobs(seed: int, mappings: int, runs: int, counter: list[int],
                  more: Callable[[int], bool]) -> Iterator[tuple]:
    """(program_job, args, count) for program seeds seed*1e6 + k, k = counter[0],
    counter[0] + 1, ... while ``more(k)``; ``counter`` keeps k across calls."""
    while more(counter[0]):
        pseed = seed * 1_000_000 + counter[0]
        counter[0] += 1
        yield program_job, (pseed, program_options(pseed, mappings, runs)), mappings * runs


def campaign(cases: int, seed: int = 0, workers: int = 2, time_budget: float | None = None,
             mappings: int = 2, runs: int = 3, timeout: float = 120.0,
             log: Callable[[str], None] | None = None,
             on_failure: Callable[[Failure], None] | None = None,
             stop_on_failure: bool = False) -> CampaignResult:
    """Run about ``cases`` cases (whole programs; stops early at ``time_budget``
    seconds, or at the first failure with ``stop_on_failure``) and return the
    counts and the failures."""
    per = mappings * runs
    res = CampaignResult()
    t0 = time.monotonic()
    counter = [0]
    stop = (lambda: bool(res.failures)) if stop_on_failure else None
    with Pool(workers, timeout) as pool:
        # rounds: cases lost to a timeout are made up for by another round
        while res.cases < cases and not (stop and stop()) and \
                (time_budget is None or time.monotonic() - t0 <= time_budget):
            jobs = campaign_jobs(seed, mappings, runs, counter,
                                 lambda k: k * per - res.lost < cases)
            for results in pool.imap(_budgeted(jobs, t0, time_budget, stop)):
                _tally(res, results[1], per, on_failure)
                if log and res.programs % 25 == 0:
                    log(f"  {res.cases} cases, {len(res.failures)} failures, "
                        f"{time.monotonic() - t0:.0f} s")
    res.seconds = time.monotonic() - t0
    return res


def _tally(res: CampaignResult, results: list, per: int,
           on_failure: Callable[[Failure], None] | None) -> None:
    """Count one program's outcomes into ``res``."""
    res.programs += 1
    res.lost += per - len(results)
    for case, outcome in results:
        if outcome.kind == SKIPPED:
            continue
        res.cases += 1
        res.kinds[outcome.kind] = res.kinds.get(outcome.kind, 0) + 1
        if outcome.failed:
            f = Failure(case, outcome)
            res.failures.append(f)
            if on_failure:
                on_failure(f)


def _budgeted(jobs: Iterator, t0: float, budget: float | None,
              stop: Callable[[], bool] | None = None) -> Iterator:
    """Stop handing out jobs once ``budget`` seconds have passed or ``stop()``."""
    for job in jobs:
        if budget is not None and time.monotonic() - t0 > budget:
            return
        if stop is not None and stop():
            return
        yield job
