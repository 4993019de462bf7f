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

The line magic ``%polycuda`` answers ``--help`` and ``--version`` and keeps
options as the notebook's defaults for the cells after it (``%polycuda --target
emulator``; a cell's own options override them; ``%polycuda --reset`` forgets
them, ``%polycuda`` alone lists them).  ``%%polycuda --help`` works with or without
a body.

Names IPython keeps for itself (``Out``, ``In``, ``_``, ``exit``…) never make a
cell fail: as inputs they are ignored unless they hold an array or a number, and a
function of such a name is still defined (with a note) or, where IPython would
overwrite it or needs it, a note says what to rename.

Mistakes in the C or in the options are shown as one paragraph, without a
traceback (IPython prints :class:`UsageError` that way).
"""
from __future__ import annotations

import json
import numbers
import re
import shlex
from collections.abc import Mapping

import numpy as np
from IPython.core.display_functions import display
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

from .api.autotune import AutotuneResult
from .api.commands import (Compiled, RunReport, compile_function, language, planned_notes,
                           run_compiled, tune)
from .api.explorer import explore
from .api.function import make_callable
from .api.python import run_as_python
from .errors import InputError, OptionsError, PolymagicError
from .options import Options, make_parser, parse_option_lines
from .report.progress import StatusLine, notebook_sink
from .version import __version__

#: what ``%polycuda --help`` says before the option list
USAGE = """\
%polycuda --help | --version | --reset | [OPTIONS]
    line magic: help, the version, or OPTIONS as this notebook's defaults for the
    %%polycuda cells after it (a cell's own options override them; --reset forgets
    them; %polycuda alone lists them)
%%polycuda [OPTIONS]
    cell magic: the cell below the line holds one C function (or, with --python, a
    Python function); compile it, run it, check it against the CPU, show a report
"""


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as e:            # unbalanced quotes
        raise UsageError(f"%%polycuda: cannot split the option line: {e}") from None


def parse_line(line: str, defaults: tuple[list[str], ...] = ()) -> Options:
    """The magic's argument line (after the notebook's ``defaults``) ->
    :class:`Options` (same parser as the CLI)."""
    try:
        return parse_option_lines([*defaults, _split(line)])
    except PolymagicError as e:
        raise UsageError(f"{e} (`%polycuda --help` lists the options)") from None


def _flag(line: str, *names: str) -> bool:
    try:
        return any(a in names for a in shlex.split(line))
    except ValueError:
        return False


def help_text() -> str:
    """``%polycuda --help``: both magics' usage, then every option."""
    return USAGE + "\n" + make_parser().format_help()


#: names IPython binds in the user namespace (its history, its output caches,
#: ``exit``): ``_12``, ``_i12`` too
_IPYTHON_NAMES = re.compile(r"^(In|Out|_|__|___|_i|_ii|_iii|_i\d+|_\d+|_oh|_ih|_dh|exit|quit|"
                            r"get_ipython)$")
#: of those, the ones IPython rebinds after every output or needs to work: a
#: function bound there would vanish or break the notebook, so it is not bound
_KEEP_OFF = re.compile(r"^(_|__|___|_i|_ii|_iii|_i\d+|_\d+|exit|quit|get_ipython)$")


def ipython_name(name: str) -> bool:
    """Whether IPython binds ``name`` itself (``Out``, ``In``, ``_``, ``exit``…)."""
    return bool(_IPYTHON_NAMES.match(name))


class UserInputs(Mapping):
    """The notebook namespace as the run reads it: IPython's own objects under its
    names (``Out``: the output history, a dict; ``In``: a list) are left out, so a
    parameter of that name gets made-up inputs instead of failing the cell; the
    names that were hidden are kept in ``hidden``."""

    def __init__(self, ns: Mapping) -> None:
        self._ns = ns
        self.hidden: list[str] = []

    def _visible(self, name: str, asked: bool = False) -> bool:
        if name not in self._ns:
            return False
        if not ipython_name(name):
            return True
        value = self._ns[name]
        if isinstance(value, (np.ndarray, numbers.Number)) and not isinstance(value, bool):
            return True
        if asked and name not in self.hidden:
            self.hidden.append(name)
        return False

    def __getitem__(self, name: str):
        if not self._visible(name, asked=True):
            raise KeyError(name)
        return self._ns[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._visible(name, asked=True)

    def __iter__(self):
        return (n for n in self._ns if self._visible(n))

    def __len__(self) -> int:
        return sum(1 for _ in self)


@magics_class
class PolyMagics(Magics):
    """Holds the ``%polycuda`` / ``%%polycuda`` magic; ``last`` keeps the latest
    (compiled, report); ``defaults`` the option lines of ``%polycuda OPTIONS``."""

    last: tuple[Compiled, RunReport] | None = None
    last_autotune: AutotuneResult | None = None

    def __init__(self, shell=None, **kw) -> None:
        super().__init__(shell, **kw)
        self.defaults: list[list[str]] = []

    @line_cell_magic
    def polycuda(self, line: str, cell: str | None = None):
        """Compile a C function with affine loops to CUDA, run it and check it.

        Usage: %%polycuda [--size N=64,alpha=1.5] [--target gpu|emulator|openmp|auto]
                          [--tile 32,32] [--block 32,8] [--show cuda,notes,...] ...
               %polycuda --help | --version | --reset | OPTIONS (notebook defaults)
        Run ``%polycuda --help`` for every option.
        """
        if _flag(line, "-h", "--help"):
            print(help_text())
            return None
        if _flag(line, "--version"):
            print(f"polymagic {__version__}")
            return None
        if cell is None:
            return self._line(line)
        if not cell.strip():
            raise UsageError("%%polycuda: the cell holds no function below its option line; "
                             "`%polycuda OPTIONS` (one %) sets defaults for later cells, "
                             "`%polycuda --help` lists the options")
        options = parse_line(line, tuple(self.defaults))
        for note in planned_notes(options.with_(explore=False)):
            print(f"note: {note}")
        inputs = UserInputs(self.shell.user_ns)
        tuned = None
        if options.autotune:
            tuned, options = self._autotune(cell, options, inputs)
        compiled, options, report = self._compile_and_run(cell, options, inputs)
        if compiled is None:          # a --python cell that ran as plain Python
            return None
        params = {p.name for p in compiled.scop.params}
        for name in inputs.hidden:
            if name in params:
                print(f"note: {name} in the notebook is a "
                      f"{type(self.shell.user_ns[name]).__name__} (a name IPython uses), not "
                      f"an array or a number: the parameter {name} got made-up values; "
                      f"assign a NumPy array to {name} or rename the parameter to pass yours")
        self.last = (compiled, report)
        self.last_autotune = tuned
        self._bind_callable(compiled, options, tuned)
        self._show(report, compiled, options, tuned)
        if options.explore and not options.quiet:   # widgets (report/widgets.py)
            display(explore(compiled, options, report, self.shell.user_ns))
        return None

    def _line(self, line: str) -> None:
        """``%polycuda OPTIONS``: check the options and keep them as defaults;
        ``--reset`` forgets them; nothing: list them."""
        argv = _split(line)
        if "--reset" in argv:
            argv.remove("--reset")
            self.defaults = []
            if not argv:
                print("%polycuda: no notebook defaults (each cell's options only)")
                return None
        if argv:
            parse_line(shlex.join(argv), tuple(self.defaults))   # a mistake is named now
            self.defaults.append(argv)
        if not self.defaults:
            print("%polycuda: no notebook defaults; `%polycuda --target emulator` sets one, "
                  "`%polycuda --help` lists the options")
            return None
        given = " ".join(shlex.join(a) for a in self.defaults)
        print(f"%polycuda defaults for the cells below: {given} (a cell's own options "
              "override them; %polycuda --reset forgets them)")
        return None

    def _compile_and_run(self, cell: str, options: Options, inputs: Mapping
                         ) -> tuple[Compiled | None, Options, RunReport | None]:
        """Compile and run; user mistakes become a traceback-free UsageError.
        Returns the compilation and options specialised to the namespace arrays'
        layout (:func:`polymagic.api.commands.run_compiled`) and the report."""
        sink = None if options.quiet or options.json else notebook_sink()
        name = _function_name(cell)
        with StatusLine(name, sink) as status:
            return self._compile_and_run_in(cell, options, inputs, status)

    def _compile_and_run_in(self, cell: str, options: Options, inputs: Mapping,
                            status: StatusLine
                            ) -> tuple[Compiled | None, Options, RunReport | None]:
        try:
            compiled = compile_function(cell, options, language(options))
        except PolymagicError as e:
            if language(options) == "python" and not isinstance(e, (OptionsError, InputError)):
                # seed 002 §2.3: what cannot be compiled runs as plain Python
                try:
                    note = run_as_python(cell, options, self.shell.user_ns, e)
                except PolymagicError as why:
                    raise UsageError(str(why)) from None
                print(f"note: {note}")
                return None, options, None
            raise UsageError(str(e)) from None
        status.phase("running" + ("" if options.target == "auto" else
                                  f" ({options.target})") + " and checking")
        try:
            return run_compiled(compiled, options, inputs)
        except PolymagicError as e:
            raise UsageError(str(e)) from None

    def _autotune(self, cell: str, options: Options, inputs: Mapping
                  ) -> tuple[AutotuneResult | None, Options]:
        """``--autotune`` (polymagic.api.autotune) with a progress bar (a status
        line without ipywidgets): the result and the options with its choice; (None,
        options) when a ``--python`` cell cannot be compiled (it then runs as plain
        Python)."""
        bar = status = progress = None
        if not options.quiet and not options.json:
            try:
                from .report.widgets import autotune_progress
                bar, progress = autotune_progress(options.autotune_candidates)
                display(bar)
            except ImportError:        # no ipywidgets: the text status line
                status = StatusLine(_function_name(cell), notebook_sink(), after=0.0,
                                    first="autotune: trying candidates")
                status.__enter__()

                def progress(i, n, candidate):
                    status.phase(f"autotune: candidate {i}/{n} ({candidate.label()})")
        lang = language(options)
        try:
            return tune(cell, options, language=lang, namespace=inputs,
                        progress=progress)
        except PolymagicError as e:
            if lang == "python" and not isinstance(e, (OptionsError, InputError)):
                return None, options
            raise UsageError(str(e)) from None
        finally:
            if bar is not None:
                bar.close()
            if status is not None:
                status.__exit__(None, None, None)

    def _bind_callable(self, compiled: Compiled, options: Options,
                       tuned: AutotuneResult | None = None) -> None:
        """Put ``<function name>(**arrays_and_sizes)`` into the user namespace (with
        the autotuner's choice as its configuration, and its result as
        ``.autotune_result``)."""
        try:
            fn = make_callable(compiled, options, tuned)
        except PolymagicError as e:
            raise UsageError(str(e)) from None
        name = compiled.scop.name
        if _KEEP_OFF.match(name):
            print(f"note: the function was not bound to {name}: IPython rebinds {name} "
                  "itself (or needs it); rename the C function to call it from Python")
            return
        if ipython_name(name):
            print(f"note: {name} now names the function; it was IPython's "
                  f"{type(self.shell.user_ns.get(name)).__name__} (rename the C function "
                  f"to keep IPython's {name})")
        self.shell.user_ns[name] = fn

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


def _function_name(cell: str) -> str:
    """The name of the cell's function for the status line (its first
    ``name(`` after a type or ``def``), or "polycuda"."""
    m = re.search(r"\b(?:void|int|float|double|def)\s+([A-Za-z_]\w*)\s*\(", cell)
    return m.group(1) if m else "polycuda"


def _empty_cell_body(lines: list[str]) -> list[str]:
    """An input transformer: ``%%polycuda --help`` alone in a cell reaches the magic
    with an empty body instead of IPython's "the cell body is empty" (which would
    suggest the line magic and never show the help)."""
    if lines and lines[0].startswith("%%polycuda") and all(not ln.strip() for ln in lines[1:]):
        return [lines[0] if lines[0].endswith("\n") else lines[0] + "\n", "\n"]
    return lines


def register(ipython) -> None:
    """``%load_ext polymagic``: the magics and the empty-body transformer (once)."""
    ipython.register_magics(PolyMagics)
    cleanup = ipython.input_transformers_cleanup
    if not any(getattr(t, "__name__", "") == _empty_cell_body.__name__ for t in cleanup):
        cleanup.append(_empty_cell_body)


PolyMagics.polycuda.__doc__ = (PolyMagics.polycuda.__doc__ or "") + "\n" + help_text()
