"""The compiler: source -> Scop -> Dependences -> Schedule -> lowering (the ladder of
:mod:`.lowering`: tile search, mapping, memory plan and Kernel IR within isl's
budgets, with their fallbacks) -> printers, driven from one place
(:func:`~polymagic.compiler.driver.compile_source`).

Stages never import this package: it imports them, in the order they run.
"""
from .driver import (Compiled, StageLog, array_layout, clear_caches, compile_source,
                     schedule_for, specialise_layout)

__all__ = ["compile_source", "Compiled", "StageLog", "clear_caches", "specialise_layout",
           "array_layout", "schedule_for"]
