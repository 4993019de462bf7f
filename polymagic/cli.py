"""Command line: ``python -m polymagic run|cuda FILE.c [options]``.

This is a stable contract (scripts and CI jobs depend on it):

``run FILE.c [options]``
    Compile, run on the target, check against the CPU reference, print the text
    report (or, with ``--json``, exactly one JSON object on stdout).
    Exit status 0 iff the check passed (``ok``), 1 if it did not or the generated
    code failed (emulator found a race, NVRTC rejected the CUDA), 2 on a user error.
``cuda FILE.c [options]``
    Print only the generated CUDA.  Exit 0, or 2 on a user error.

User errors (bad C, bad options, missing file, inputs that do not fit) print one
message on stderr, no traceback; with ``--json`` the object
``{"ok": false, "error": "..."}`` is printed on stdout as well.  The options are
those of the ``%%polycuda`` magic (:func:`polymagic.options.add_arguments`).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Sequence

from .errors import CompileError, EmulatorError, OptionsError, PolymagicError
from .options import Options, add_arguments, options_from_namespace
from .version import __version__

if TYPE_CHECKING:
    from .api.autotune import AutotuneCandidate, AutotuneResult

# the api (hence the compiler, islpy and NumPy) is imported where a command needs
# it, so that --version, --help and option errors answer at once

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """Raises instead of exiting, so errors go through one reporting path."""

    def error(self, message):
        raise OptionsError(f"{self.prog}: {message} (see {self.prog} --help)")


def make_cli_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m polymagic",
                description="Affine C loop nests -> polyhedral model -> checked CUDA.")
    p.add_argument("--version", action="version", version=f"polymagic {__version__}")
    sub = p.add_subparsers(dest="command", metavar="{run,cuda}", parser_class=_Parser)
    sub.required = True
    for name, text in (("run", "compile, run, check against the CPU and print the report"),
                       ("cuda", "print only the generated CUDA")):
        sp = sub.add_parser(name, help=text, description=text)
        sp.add_argument("file", metavar="FILE.c", help="C source holding one function")
        add_arguments(sp)
    return p


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise OptionsError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise OptionsError(f"cannot read {path}: not UTF-8 text") from None


def run_autotune(source: str, options: Options, lang: str = "c"
                 ) -> tuple[AutotuneResult, Options]:
    """``--autotune``: try the candidates (progress on stderr unless --quiet) and
    return the result and the options with the chosen sizes."""
    from .api.commands import tune

    def progress(i: int, n: int, c: AutotuneCandidate) -> None:
        if options.quiet:
            return
        what = (c.skipped or c.error or
                (f"{c.seconds * 1e3:.3g} ms on the GPU" if c.loads is None and c.seconds
                 else f"{c.traffic:,} global loads+stores"))
        print(f"polymagic: autotune {i}/{n}: {c.label()}: {what}", file=sys.stderr)

    return tune(source, options, language=lang, progress=progress)


def cmd_cuda(source: str, options: Options, lang: str = "c") -> int:
    from .api.commands import compile_function
    if options.autotune:
        _, options = run_autotune(source, options, lang)
    compiled = compile_function(source, options, lang)
    sys.stdout.write(compiled.cuda if compiled.cuda.endswith("\n") else compiled.cuda + "\n")
    return EXIT_OK


def cmd_run(source: str, options: Options, lang: str = "c") -> int:
    from .api.commands import compile_function, run_compiled
    tuned = None
    if options.autotune:
        tuned, options = run_autotune(source, options, lang)
    compiled = compile_function(source, options, lang)
    compiled, options, report = run_compiled(compiled, options, namespace=None)
    if options.json:
        from .report.jsonout import to_json
        out = to_json(report, compiled)
        if tuned is not None:
            from .report.jsonout import clean
            out["autotune"] = clean(tuned.as_dict())
        print(json.dumps(out))
    elif not options.quiet:
        from .report.text import autotune_lines, to_text
        text = to_text(report, compiled, options.show)
        if tuned is not None:
            text += "\n".join(autotune_lines(tuned)) + "\n"
        sys.stdout.write(text)
    return EXIT_OK if report.ok else EXIT_FAIL


def _fail(e: PolymagicError, as_json: bool) -> int:
    """Print a user-facing error; generated-code failures exit 1, user errors 2."""
    msg = str(e)
    code = EXIT_FAIL if isinstance(e, (EmulatorError, CompileError)) else EXIT_USAGE
    if as_json:
        print(json.dumps({"ok": False, "error": msg, "kind": type(e).__name__}))
    print(f"polymagic: error: {msg}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m polymagic`` and the ``polymagic`` script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    try:
        ns = make_cli_parser().parse_args(argv)
        options = options_from_namespace(ns)
        source = _read(ns.file)
        from .api.commands import language, planned_notes
        for note in planned_notes(options):
            print(f"polymagic: note: {note}", file=sys.stderr)
        lang = language(options, ns.file)
        if ns.command == "cuda":
            return cmd_cuda(source, options, lang)
        return cmd_run(source, options, lang)
    except PolymagicError as e:
        return _fail(e, as_json)
    except KeyboardInterrupt as e:       # Ctrl-C; RunInterrupted says what it stopped
        print(f"polymagic: interrupted{': ' + str(e) if str(e) else ''}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
