"""One function through the ``%%polycuda`` magic or ``python -m polymagic``: which
front end reads it, notes on options that do nothing there, ``--autotune``, the
compile, and the run on the caller's arrays.

The magic and the command line call only these (plus the options, the errors and
the report formatting), so that what they do stays the same and neither reaches
into the compiler or the runtime.
"""
from __future__ import annotations

import importlib.util
from typing import Mapping

from ..errors import OptionsError
from ..notes import Note, Stage
from ..options import Options
from ..compiler import Compiled, compile_source, specialise_layout
from ..runtime.run import RunReport, check_value_names, run
from .autotune import AutotuneResult, Progress, autotune


def language(options: Options, path: str = "") -> str:
    """Python for ``--python`` or a ``.py`` file, else C; OptionsError when this
    version has no front end for it (so users get a message, not a traceback)."""
    lang = "python" if options.python or path.endswith(".py") else "c"
    if lang != "c" and importlib.util.find_spec(f"polymagic.frontend.{lang}") is None:
        raise OptionsError(f"{lang} functions are planned but not supported by this "
                           f"version yet: write the function in C")
    return lang


def planned_notes(options: Options) -> list[Note]:
    """Notes for options that do nothing where they were given (never silent): the
    widgets of ``--explore`` need a notebook."""
    if options.explore:
        return [Note(Stage.OPTIONS, "--explore shows widgets in a notebook (%%polycuda "
                     "--explore); the command line ignores it", subject=None, kind="refusal")]
    return []


def tune(source: str, options: Options, language: str = "c",
         namespace: Mapping | None = None, progress: Progress | None = None
         ) -> tuple[AutotuneResult, Options]:
    """``--autotune``: try the candidates (:func:`polymagic.api.autotune.autotune`,
    ``progress(i, n, candidate)`` after each) and return the result and ``options``
    with the chosen tile and block sizes (``--autotune`` then off)."""
    result = autotune(source, options, language=language, namespace=namespace,
                      progress=progress)
    return result, result.options(options).with_(autotune=False)


def compile_function(source: str, options: Options, language: str = "c") -> Compiled:
    """The compiler's result for one function's source (cached by source and options);
    ``--size`` naming something that is not a size parameter or scalar is refused
    here too, not only when the kernels run (``polymagic cuda`` never runs them)."""
    compiled = compile_source(source, options, language=language)
    check_value_names(compiled.scop, options.sizes)
    return compiled


def run_compiled(compiled: Compiled, options: Options, namespace: Mapping | None = None
                 ) -> tuple[Compiled, Options, RunReport]:
    """Run ``compiled`` on the arrays and values of ``namespace`` (results written
    back when the check passes): first specialised to the arrays' real layout
    (seed 002 §2.3, :func:`polymagic.compiler.specialise_layout`), which may
    recompile.  Returns the compilation and options that ran, and the report."""
    compiled, options = specialise_layout(compiled, options, namespace or {})
    return compiled, options, run(compiled, options, namespace=namespace)


#: the compile result and the run report are what the magic and the CLI hand to the
#: report formatting; they are named here so that neither imports the layers below
__all__ = ["language", "planned_notes", "tune", "compile_function", "run_compiled",
           "Compiled", "RunReport"]
