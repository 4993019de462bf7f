"""Differential fuzzing of the polymagic pipeline.

A *case* is one random affine C function (:mod:`.program`, built by
:mod:`.generator`) together with one option combination drawn from
:data:`.space.OPTION_SPACE`.  :mod:`.runner` compiles and runs cases through
``polymagic.runtime.run.run`` (device result against the CPU reference, the
emulator hunting races) in worker processes with per-case timeouts, and
:mod:`.shrink` reduces a failing case to a small reproducer that
:mod:`.regressions` saves under ``tests/fuzz/regressions/``.

Why: hand-written tests cover the examples; the fuzzer covers the corners
(triangular and min/max bounds, odd tile sizes, imperfect nests, local scalars)
where mapping and code generation bugs hide.
"""
