"""Command line of the fuzzer (``benchmarks/fuzz.py`` calls :func:`main`).

Runs a seeded campaign, shrinks one failure per (program, failure kind) and
saves each reproducer under ``tests/fuzz/regressions/`` (``--save-dir``), then
prints ``cases N, failures F, cases/s R`` as its last line and exits 0 iff F = 0.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import generator, regressions, runner, shrink


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="benchmarks/fuzz.py",
                                description="differential fuzzing of polymagic: random "
                                "affine C functions x option combinations, device vs CPU")
    p.add_argument("--cases", type=int, default=1000, help="cases to run (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    p.add_argument("--time-budget", type=float, default=None, metavar="SEC",
                   help="stop starting new cases after SEC seconds")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2,
                   help="worker processes (default: all cores)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    p.add_argument("--mappings", type=int, default=2,
                   help="code-changing option draws per program")
    p.add_argument("--runs", type=int, default=3, help="run-time option draws per mapping")
    p.add_argument("--no-shrink", dest="shrink", action="store_false")
    p.add_argument("--shrink-budget", type=float, default=300.0, metavar="SEC",
                   help="seconds per shrunk failure")
    p.add_argument("--shrink-timeout", type=float, default=30.0, metavar="SEC",
                   help="seconds per candidate while shrinking (a hang shrinks faster)")
    p.add_argument("--max-shrinks", type=int, default=10,
                   help="failures to shrink (one per program and kind)")
    p.add_argument("--save-dir", type=Path, default=regressions.DIR,
                   help="where reproducers go (default tests/fuzz/regressions)")
    p.add_argument("--force-superposition", action="store_true",
                   help="take the superposition wherever it maps, even without a coalescing "
                        "gain (the hidden compile option require_gain=False)")
    p.add_argument("--target", choices=("mixed", "openmp"), default="mixed",
                   help="mixed: the emulator mostly, OpenMP a quarter of the runs, every "
                        "GPU option drawn; openmp: the OpenMP target only, with its own "
                        "options (front end, --cpu-cache)")
    p.add_argument("--allow-known", action="store_true",
                   help="do not count failures of already-reported bugs (tests/fuzz/known.py)")
    return p.parse_args(argv)


def initial_state(case: runner.Case) -> shrink.State:
    """A shrinkable state: the structured program when the case was generated."""
    if case.seed >= 0:
        program = generator.generate(case.seed, case.attempt)
        if runner.program_source(program, case.args)[0] == case.source:
            return shrink.state_of(program, case.args)
    return shrink.State(None, case.source, tuple(case.sizes.items()), tuple(case.args))


def to_shrink(failures: list[runner.Failure], limit: int) -> list[runner.Failure]:
    """At most ``limit`` failures: one per signature first, then one per
    (program, signature)."""
    firsts, others, seen = [], [], set()
    for f in failures:
        key = (f.case.seed if f.case else None, f.outcome.signature)
        if f.case is None or key in seen:
            continue
        new_sig = all(g.outcome.signature != f.outcome.signature for g in firsts)
        (firsts if new_sig else others).append(f)
        seen.add(key)
    return (firsts + others)[:limit]


def shrink_and_save(f: runner.Failure, args: argparse.Namespace, pool: runner.Pool,
                    log) -> Path:
    state = initial_state(f.case)
    res = shrink.shrink(state, f.outcome.signature, pool, budget_s=args.shrink_budget,
                        stage=f.outcome.stage)
    case = res.state.case()
    case.seed = f.case.seed
    path = regressions.save(case, res.outcome if res.tests else f.outcome, args.save_dir)
    log(f"shrunk {f.outcome.kind} in {res.tests} tests / {res.seconds:.0f} s -> {path}")
    log(case.source.rstrip())
    log("  " + regressions.command(path.name, case))
    return path


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log = lambda s: print(s, flush=True)
    if args.force_superposition:
        runner.POLICY["require_gain"] = False
    if args.target == "openmp":
        runner.ONLY_TARGET[:] = ["openmp"]
    own_cache = not os.environ.get("POLYMAGIC_CACHE")
    if own_cache:      # thousands of builds: keep them out of ~/.cache, remove afterwards
        os.environ["POLYMAGIC_CACHE"] = tempfile.mkdtemp(prefix="polymagic-fuzz-")
    try:
        res = runner.campaign(args.cases, args.seed, args.workers, args.time_budget,
                              args.mappings, args.runs, args.timeout, log=log,
                              on_failure=lambda f: log(f"FAIL {f.outcome.kind}: "
                                                       f"{f.outcome.message.splitlines()[0][:200]}"
                                                       f"  [program seed {f.case.seed if f.case else '?'}"
                                                       f", {' '.join(f.case.cli()) if f.case else ''}]"))
        log(f"outcomes: {res.kinds}; programs {res.programs}")
        for f in res.failures:
            if f.known is not None:
                log(f"known bug {f.known.name}: {f.known.where}")
                break
        fresh = res.new_failures
        if fresh and args.shrink:
            t0 = time.monotonic()
            with runner.Pool(args.workers, args.shrink_timeout) as pool:
                for f in to_shrink(fresh, args.max_shrinks):
                    shrink_and_save(f, args, pool, log)
            log(f"shrinking took {time.monotonic() - t0:.0f} s")
    finally:
        if own_cache:
            shutil.rmtree(os.environ.pop("POLYMAGIC_CACHE"), ignore_errors=True)
    known = len(res.failures) - len(res.new_failures)
    if known:
        print(f"known failures {known} (already reported, see tests/fuzz/known.py)"
              + ("; not counted" if args.allow_known else ""), flush=True)
    print(res.summary_line(args.allow_known), flush=True)
    failures = res.new_failures if args.allow_known else res.failures
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
