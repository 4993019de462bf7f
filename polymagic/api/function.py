"""The callable the magic binds under the function's name after a run.

``gemm(N=200, alpha=1.0, C=C, A=A, B=B)`` reruns the compiled kernels on new
arguments: the runtime (:mod:`polymagic.runtime.run`) prepares the inputs and
runs; when the arrays' layout differs from the declared one, the compiler first
specialises the compilation to it (seed 002 §2.3: layouts are discovered at call
time; :func:`polymagic.compiler.specialise_layout`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from ..errors import InputError
from ..options import Options
from ..compiler import Compiled, compile_source, specialise_layout
from ..runtime.run import RunReport, execute, gather_inputs

if TYPE_CHECKING:
    from ..report.widgets import Explorer
    from .autotune import AutotuneResult


class PolyFunction:
    """The compiled function as a Python callable: ``fn(A=a, B=b, alpha=1.5)``.

    Keyword arguments are C parameters by name: arrays (results are written into
    them), sizes and scalars.  Sizes not given are read off the arrays, else taken
    from the cell's ``--size``; arrays not given are seeded random.  Runs the
    device target only — pass ``check=True`` to also compare with the CPU
    reference (results are then written only if the check passes).  Nothing is
    recompiled, except for other sizes of an in-place recurrence (the recurrence
    model chooses at the sizes) or of a compute-bound band whose default tiles fit
    the grid to the sizes (:mod:`polymagic.mapping.grid_fill`), and for arrays whose layout (a transposed or strided view)
    changes which loop the superposition's coalescing model puts on thread x
    (:func:`polymagic.compiler.specialise_layout`, cached per layout); device
    modules are built once and reused.  Returns the :class:`RunReport`; a function
    that returns a value (``double dot(...)``) has it in ``.returned``.
    """

    def __init__(self, compiled: Compiled, options: Options,
                 autotune_result: AutotuneResult | None = None):
        self.compiled = compiled
        self.options = options
        #: the ``--autotune`` result whose choice ``options`` holds (None: not tuned)
        self.autotune_result = autotune_result
        self.source: str = compiled.scop.source
        self.__name__ = compiled.scop.name
        self.__doc__ = (f"{compiled.scop.name}({', '.join(p.name for p in compiled.scop.user_params)})"
                        f" — polymagic-compiled; call with keyword arguments.\n\n"
                        + (PolyFunction.__doc__ or ""))

    def __repr__(self) -> str:
        params = ", ".join(p.name for p in self.compiled.scop.user_params)
        return f"<polymagic function {self.compiled.scop.name}({params}), target={self.options.target}>"

    def __call__(self, *args, **kwargs) -> RunReport:
        scop = self.compiled.scop
        if args:
            raise TypeError(f"{scop.name}() takes keyword arguments only "
                            f"({', '.join(p.name for p in scop.user_params)})")
        names = {p.name for p in scop.user_params}
        check = bool(kwargs.pop("check", False)) if "check" not in names else False
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            raise InputError(f"{scop.name}() has no parameter {', '.join(unknown)} "
                             f"(parameters: {', '.join(p.name for p in scop.user_params)})")
        arrays = {p.name: kwargs[p.name] for p in scop.array_params if p.name in kwargs}
        values = {k: v for k, v in kwargs.items() if k not in arrays}
        options = self.options.with_(sizes=values, inputs=None)
        inputs = gather_inputs(scop, options, arrays, defaults=self.options.sizes,
                               where="the arguments")
        compiled = self._for_sizes(inputs.args)
        compiled, options = specialise_layout(compiled, options, arrays)
        return execute(compiled, options, inputs, check=check,
                       unchecked="not checked (pass check=True to compare with the CPU reference)")

    def _for_sizes(self, args: Mapping[str, object]) -> Compiled:
        """The compilation for the call's sizes: the recurrence model chose at the
        cell's sizes (:mod:`polymagic.compiler.recurrence`, a one-block kernel is
        specialised to them), and default tiles fit the grid to them
        (:mod:`polymagic.mapping.grid_fill`), so other sizes are compiled again
        (cached per sizes)."""
        compiled = self.compiled
        fitted = compiled.options.device_sms > 0 and any(
            p.grid_fill is not None for p in compiled.mapping.plans.values())
        if compiled.recurrence is None and not fitted:
            return compiled
        sizes = {p: int(args[p]) for p in compiled.scop.size_params if p in args}
        if all(compiled.options.sizes.get(p) == v for p, v in sizes.items()):
            return compiled
        options = compiled.options.with_(sizes={**compiled.options.sizes, **sizes})
        return compile_source(compiled.scop.source, options, language=compiled.language)

    def explore(self, namespace: Mapping | None = None, **kwargs) -> Explorer:
        """Widgets to explore tiles, threads and buffers of this function
        (:class:`polymagic.report.widgets.Explorer`); runs use copies of the arrays
        in ``namespace``."""
        from .explorer import explore
        return explore(self.compiled, self.options, namespace=namespace, **kwargs)


def make_callable(compiled: Compiled, options: Options,
                  autotune_result: AutotuneResult | None = None) -> PolyFunction:
    """The callable the magic binds under the function's name."""
    return PolyFunction(compiled, options, autotune_result)


__all__ = ["PolyFunction", "make_callable"]
