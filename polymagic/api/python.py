"""``@polymagic.gpu`` and the plain-Python fallback (seed 002 §2.3).

Seed 002 §2 (unPython/jit4GPU): the annotations are transparent to the Python
interpreter, and "if ... the compiler fails to generate GPU code, then execution
proceeds with the CPU code".  :class:`GpuFunction` compiles a Python function at
its first call with types inferred from the arguments
(:func:`polymagic.frontend.python.infer_type`), runs it on the device and writes the
results into the array arguments; when it cannot be compiled or run it runs the
function as plain Python, with the reason shown as a warning.
:func:`run_as_python` is the same fallback for a ``%%polycuda --python`` cell.
The Python front end itself (source -> Scop) is :mod:`polymagic.frontend.python`.
"""
from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import warnings
from typing import Callable

import numpy as np

from ..errors import PolymagicError, UnsupportedError, UserCodeError
from ..frontend.python import array_of_extent, infer_type, keyed_source
from ..options import Options, parse_options
from ..compiler import Compiled, compile_source, specialise_layout
from ..runtime.run import RunReport, execute, gather_inputs


class GpuFunction:
    """``@polymagic.gpu``: compile at the first call, run on the device (GPU, else
    the emulator), write results into the array arguments; fall back to plain
    Python (with a warning saying why) when the function cannot be compiled or
    run.  Keyword ``options`` (a magic/CLI option string such as ``"--tile 32,32"``)
    and ``check`` (compare with the CPU reference) configure it.  The last
    run's report is :attr:`last_report`; :attr:`fallback_reason` says why the
    last call ran as plain Python (None when it did not)."""

    def __init__(self, fn: Callable, options: str = "", check: bool = False,
                 target: str | None = None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.options_text = options
        self.check = check
        self.target = target
        self.last_report: RunReport | None = None
        self.fallback_reason: str | None = None
        #: compilations by the annotations inferred from the arguments
        self._compiled: dict[tuple[tuple[str, str], ...], Compiled] = {}
        try:
            self.source: str | None = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            self.source = None

    def _options(self) -> Options:
        o = parse_options(self.options_text)
        if self.target is not None:
            o = o.with_(target=self.target)
        return o

    def _fallback(self, why: str, args, kwargs):
        self.fallback_reason = why
        warnings.warn(f"polymagic: {self.fn.__name__} runs as plain Python: {why}",
                      RuntimeWarning, stacklevel=3)
        return self.fn(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        if self.source is None:
            return self._fallback("its source is not available", args, kwargs)
        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.fn.__name__}(): {e}") from None
        values = dict(bound.arguments)
        try:
            overrides = {n: infer_type(n, v) for n, v in values.items()
                         if n not in self._annotated()}
        except UnsupportedError as e:
            return self._fallback(str(e), args, kwargs)
        key = tuple(sorted(overrides.items()))
        try:
            options = self._options()
            compiled = self._compiled.get(key)
            if compiled is None:
                compiled = compile_source(keyed_source(self.source, key), options,
                                          language="python")
                self._compiled[key] = compiled
        except PolymagicError as e:
            return self._fallback(f"it cannot be compiled: {e}", args, kwargs)
        try:
            report = self._run(compiled, options, values)
        except PolymagicError as e:
            return self._fallback(f"the device run failed: {e}", args, kwargs)
        self.last_report = report
        if not report.ok:
            return self._fallback(f"the device result differs from the CPU reference "
                                  f"({report.mismatches} mismatches)", args, kwargs)
        self.fallback_reason = None
        return None

    def _annotated(self) -> set[str]:
        sig = inspect.signature(self.fn)
        return {n for n, p in sig.parameters.items() if p.annotation is not inspect.Parameter.empty}

    def _run(self, compiled: Compiled, options: Options, values: dict) -> RunReport:
        """Run on the arguments: sizes (hidden extents of inferred arrays read off
        the arrays), the compilation specialised to the arrays' layout."""
        scop = compiled.scop
        arrays = {k: v for k, v in values.items() if isinstance(v, np.ndarray)}
        sizes = {k: v for k, v in values.items() if k not in arrays}
        for p in scop.params:
            extent = array_of_extent(p.name) if p.kind == "size" else None
            if p.name not in sizes and extent is not None and extent[0] in arrays:
                sizes[p.name] = int(arrays[extent[0]].shape[extent[1]])
        o = options.with_(sizes={**options.sizes, **sizes}, inputs=None)
        inputs = gather_inputs(scop, o, arrays, where="the arguments")
        compiled, o = specialise_layout(compiled, o, arrays)
        return execute(compiled, o, inputs, check=self.check,
                       unchecked="not checked (@polymagic.gpu(check=True) compares with "
                                 "the CPU reference)")

    def __repr__(self) -> str:
        return f"<polymagic.gpu function {self.fn.__name__}>"


def gpu(fn: Callable | None = None, *, options: str = "", check: bool = False,
        target: str | None = None):
    """Decorator: ``@polymagic.gpu`` or ``@polymagic.gpu(options="--tile 16,16",
    check=True, target="emulator")`` (see :class:`GpuFunction`)."""
    if fn is None:
        return lambda f: GpuFunction(f, options, check, target)
    return GpuFunction(fn, options, check, target)


def run_as_python(cell: str, options: Options, namespace: dict, error: Exception) -> str:
    """A ``%%polycuda --python`` cell that could not be compiled: define its function
    in ``namespace`` and run it as plain Python on the namespace's arguments (and
    ``--size`` values) when they are all there.  Returns the note to show.

    A cell that is not valid Python raises ``error`` again (its message already
    locates the problem); an exception from running the plain-Python function
    becomes a :class:`UserCodeError` naming it and its line, one paragraph, and the
    arrays stay untouched (the function runs on copies, written back when it
    returns)."""
    source = textwrap.dedent(cell)
    try:
        tree = ast.parse(source)
        code = compile(source, "<polycuda cell>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise error from None
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    head = f"could not compile the cell ({error})" if fn is None else \
        f"could not compile {fn.name}: {error}"
    try:
        exec(code, namespace)
    except Exception as e:      # noqa: BLE001 — the user's module-level code
        raise UserCodeError(f"{head}\nRunning the cell as plain Python raised "
                            f"{_python_fault(e)}") from None
    if fn is None:
        return head
    names = [a.arg for a in fn.args.args]
    values = {**{k: v for k, v in namespace.items() if k in names}, **options.sizes}
    missing = [n for n in names if n not in values]
    if missing:
        return (f"{head}\n{fn.name} is defined as plain Python; it did not run "
                f"({', '.join(missing)} not in the notebook).")
    args = {n: (values[n].copy() if isinstance(values[n], np.ndarray) else values[n])
            for n in names}
    try:
        namespace[fn.name](**args)
    except Exception as e:      # noqa: BLE001 — the user's function, run as Python
        raise UserCodeError(f"{head}\nRunning {fn.name} as plain Python raised "
                            f"{_python_fault(e)}; the arrays are unchanged") from None
    for n in names:
        if isinstance(values[n], np.ndarray) and values[n].flags.writeable:
            np.copyto(values[n], args[n])
    return f"{head}\nRan {fn.name} as plain Python on the notebook's variables."


def _python_fault(e: BaseException) -> str:
    """``IndexError: ... (line 3 of the cell)``: the exception and the innermost
    line of the cell it came from."""
    line = None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<polycuda cell>":
            line = tb.tb_lineno
        tb = tb.tb_next
    where = f" (line {line} of the cell)" if line is not None else ""
    return f"{type(e).__name__}: {e}{where}"


__all__ = ["GpuFunction", "gpu", "run_as_python"]
