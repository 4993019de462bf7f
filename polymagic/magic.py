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

from .api.autotune import AutotuneResult
from .api.commands import (Compiled, RunReport, compile_function, language, planned_notes,
                           run_compiled, tune)
from .api.explorer import explore
from .api.function import make_callable
from .api.python import run_as_python
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

    last: tuple[Compiled, RunReport] | None = None
    last_autotune: AutotuneResult | None = None

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
            tuned, options = self._autotune(cell, options)
        compiled, options, report = self._compile_and_run(cell, options)
        if compiled is None:          # a --python cell that ran as plain Python
            return None
        self.last = (compiled, report)
        self.last_autotune = tuned
        self._bind_callable(compiled, options, tuned)
        self._show(report, compiled, options, tuned)
        if options.explore and not options.quiet:   # widgets (report/widgets.py)
            display(explore(compiled, options, report, self.shell.user_ns))
        return None

    def _compile_and_run(self, cell: str, options: Options
                         ) -> tuple[Compiled | None, Options, RunReport | None]:
        """Compile and run; user mistakes become a traceback-free UsageError.
        Returns the compilation and options specialised to the namespace arrays'
        layout (:func:`polymagic.api.commands.run_compiled`) and the report."""
        try:
            compiled = compile_function(cell, options, language(options))
        except PolymagicError as e:
            if language(options) == "python" and not isinstance(e, OptionsError):
                # seed 002 §2.3: what cannot be compiled runs as plain Python
                try:
                    note = run_as_python(cell, options, self.shell.user_ns, e)
                except PolymagicError as why:
                    raise UsageError(str(why)) from None
                print(f"note: {note}")
                return None, options, None
            raise UsageError(str(e)) from None
        try:
            return run_compiled(compiled, options, self.shell.user_ns)
        except PolymagicError as e:
            raise UsageError(str(e)) from None

    def _autotune(self, cell: str, options: Options
                  ) -> tuple[AutotuneResult | None, Options]:
        """``--autotune`` (polymagic.api.autotune) with a progress bar: the result
        and the options with its choice; (None, options) when a ``--python`` cell
        cannot be compiled (it then runs as plain Python)."""
        bar = None
        if not options.quiet and not options.json:
            from .report.widgets import autotune_progress
            bar, progress = autotune_progress(options.autotune_candidates)
            display(bar)
        else:
            progress = None
        lang = language(options)
        try:
            return tune(cell, options, language=lang, namespace=self.shell.user_ns,
                        progress=progress)
        except PolymagicError as e:
            if lang == "python" and not isinstance(e, OptionsError):
                return None, options
            raise UsageError(str(e)) from None
        finally:
            if bar is not None:
                bar.close()

    def _bind_callable(self, compiled: Compiled, options: Options,
                       tuned: AutotuneResult | None = None) -> None:
        """Put ``<function name>(**arrays_and_sizes)`` into the user namespace (with
        the autotuner's choice as its configuration, and its result as
        ``.autotune_result``)."""
        try:
            fn = make_callable(compiled, options, tuned)
        except PolymagicError as e:
            raise UsageError(str(e)) from None
        self.shell.user_ns[compiled.scop.name] = fn

    def _show(self, report: RunReport, compiled: Compiled, options: Options,
              tuned: AutotuneResult | None = None) -> None:
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
