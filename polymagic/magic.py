"""The ``%%polycuda`` cell magic (modelled on Cython's ``%%cython``).

::

    %load_ext polymagic

    %%polycuda --size N=200
    void gemm(int N, float A[N][N], float B[N][N], float C[N][N]) { ... }

The cell holds one C function with affine loop nests.  The magic compiles it
(polyhedral model -> GPU mapping -> CUDA), runs it on the GPU (or the CPU
emulator), runs the original C on the CPU, compares, and displays a report.
Arrays and scalars whose names match the function's parameters are taken from
the notebook namespace (and written back when the check passes); missing ones
are made up from ``--seed``.  Afterwards the function's name is bound to a
callable that reruns the compiled kernels: ``gemm(A=A, B=B, C=C, N=200)``.

Mistakes in the C or in the options are shown as one paragraph, without a
traceback (IPython prints :class:`UsageError` that way).
"""
from __future__ import annotations

import json
import shlex

from IPython.core.display_functions import display
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class

from .cli import language, planned_notes
from .errors import OptionsError, PolymagicError
from .options import Options, make_parser, options_from_namespace


def parse_line(line: str) -> Options:
    """The magic's argument line -> :class:`Options` (same parser as the CLI)."""
    try:
        argv = shlex.split(line)
    except ValueError as e:            # unbalanced quotes
        raise UsageError(f"%%polycuda: cannot split the option line: {e}") from None
    try:
        return options_from_namespace(make_parser().parse_args(argv))
    except PolymagicError as e:
        raise UsageError(f"{e} (`%%polycuda --help` lists the options)") from None


def _wants_help(line: str) -> bool:
    try:
        return any(a in ("-h", "--help") for a in shlex.split(line))
    except ValueError:
        return False


@magics_class
class PolyMagics(Magics):
    """Holds the ``%%polycuda`` magic; ``last`` keeps the latest (compiled, report)."""

    last: tuple | None = None
    last_autotune = None

    @cell_magic
    def polycuda(self, line: str, cell: str):
        """Compile a C function with affine loops to CUDA, run it and check it.

        Usage: %%polycuda [--size N=64,alpha=1.5] [--target gpu|emulator|openmp|auto]
                          [--tile 32,32] [--block 32,8] [--show cuda,deps,...] ...
        Run ``%%polycuda --help`` for every option.
        """
        if _wants_help(line):
            print(make_parser().format_help())
            return None
        options = parse_line(line)
        for note in planned_notes(options.with_(explore=False)):
            print(f"note: {note}")
        tuned = None
        if options.autotune:
            tuned = self._autotune(cell, options)
            if tuned is not None:
                options = tuned.options(options).with_(autotune=False)
        compiled, options, report = self._compile_and_run(cell, options)
        if compiled is None:          # a --python cell that ran as plain Python
            return None
        self.last = (compiled, report)
        self.last_autotune = tuned
        self._bind_callable(compiled, options, tuned)
        self._show(report, compiled, options, tuned)
        if options.explore and not options.quiet:   # widgets (report/widgets.py)
            from .report.widgets import explore
            display(explore(compiled, options, report, self.shell.user_ns))
        return None

    def _compile_and_run(self, cell: str, options: Options):
        """Pipeline + runtime; user mistakes become a traceback-free UsageError.
        Returns the compilation and options specialised to the namespace arrays'
        layout (:func:`polymagic.compiler.specialise_layout`) and the report."""
        from .compiler import compile_source, specialise_layout
        from .runtime.run import run
        try:
            compiled = compile_source(cell, options, language=language(options))
        except PolymagicError as e:
            if language(options) == "python" and not isinstance(e, OptionsError):
                from .frontend.python import run_as_python     # seed 002 §2.3 fallback
                print(f"note: {run_as_python(cell, options, self.shell.user_ns, e)}")
                return None, options, None
            raise UsageError(str(e)) from None
        try:
            compiled, options = specialise_layout(compiled, options, self.shell.user_ns)
            report = run(compiled, options, namespace=self.shell.user_ns)
        except PolymagicError as e:
            raise UsageError(str(e)) from None
        return compiled, options, report

    def _autotune(self, cell: str, options: Options):
        """``--autotune`` (polymagic.autotune) with a progress bar; None when a
        ``--python`` cell cannot be compiled (it then runs as plain Python)."""
        from .autotune import autotune
        bar = None
        if not options.quiet and not options.json:
            from .report.widgets import autotune_progress
            bar, progress = autotune_progress(options.autotune_candidates)
            display(bar)
        else:
            progress = None
        lang = language(options)
        try:
            return autotune(cell, options, language=lang, namespace=self.shell.user_ns,
                            progress=progress)
        except PolymagicError as e:
            if lang == "python" and not isinstance(e, OptionsError):
                return None
            raise UsageError(str(e)) from None
        finally:
            if bar is not None:
                bar.close()

    def _bind_callable(self, compiled, options: Options, tuned=None) -> None:
        """Put ``<function name>(**arrays_and_sizes)`` into the user namespace (with
        the autotuner's choice as its configuration, and its result as
        ``.autotune_result``)."""
        from .runtime.run import make_callable
        try:
            fn = make_callable(compiled, options)
        except PolymagicError as e:
            raise UsageError(str(e)) from None
        fn.autotune_result = tuned
        self.shell.user_ns[compiled.scop.name] = fn

    def _show(self, report, compiled, options: Options, tuned=None) -> None:
        if options.quiet:
            return
        if options.json:
            from .report.jsonout import clean, to_json
            out = to_json(report, compiled)
            if tuned is not None:
                out["autotune"] = clean(tuned.as_dict())
            print(json.dumps(out, indent=1))
            return
        from .report.html import HtmlReport
        if tuned is not None:
            from .report.html import AutotuneReport
            display(AutotuneReport(tuned))
        display(HtmlReport(report, compiled, options.show))


PolyMagics.polycuda.__doc__ = (PolyMagics.polycuda.__doc__ or "") + "\n" + make_parser().format_help()
