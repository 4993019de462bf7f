"""Snapshot of everything the compiler generates, to prove a refactor changes no code.

Usage::

    python scripts/codegen_snapshot.py write DIR      # record the current outputs
    python scripts/codegen_snapshot.py check DIR      # compare with a recorded DIR
    python scripts/codegen_snapshot.py check DIR --only gemm

For each of the 21 examples under several option sets, and for every saved fuzz
regression with its own options, the script runs the command-line front door
(``python -m polymagic cuda FILE OPTIONS``, in this process) and records the CUDA it
prints, or the one-line error it gives.  The same cases are also compiled through
the library so that the host driver and the plain-text notes and summary are
recorded beside the CUDA.  ``check`` exits 1 and names every case whose CUDA (or
error) differs; differences in host code, summary or notes are listed separately,
so a commit that changes only a note's wording says so.

The cases read nothing but the public contract (the CLI and
``polymagic.options.parse_options``), so the same script runs before and after a
redesign of the internals (issue 17: "byte-identical CUDA before and after").
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXAMPLES = ROOT / "examples"
REGRESSIONS = ROOT / "tests" / "fuzz" / "regressions"

#: option sets every example is compiled with (name -> argument list)
VARIANTS: dict[str, list[str]] = {
    "default": [],
    "single": ["--mapping", "single"],
    "tile16": ["--tile", "16,16"],
    "shared-all": ["--shared", "all", "--no-vector"],
    "noreg": ["--no-registers", "--shared", "none"],
    "auto": ["--tile", "auto"],          # + every int parameter at 64 (see _sizes)
}
#: extra cases on single examples (name -> (example, arguments))
EXTRA: dict[str, tuple[str, list[str]]] = {
    "gemm-pt": ("gemm", ["--tile", "64,64,16:4,4"]),
    "gemm-pt-super": ("gemm", ["--tile", "32,32:2,2"]),
    "2mm-pt": ("2mm", ["--tile", "32,32,8:2,2", "--mapping", "single"]),
    "jacobi-2d-tt": ("jacobi-2d", ["--time-tiling", "4,32,32"]),
    "jacobi-1d-tt": ("jacobi-1d", ["--time-tiling", "4"]),
    "jacobi-1d-loc": ("jacobi-1d", ["--localise", "t"]),
    "sor-1d-loc": ("sor-1d-seq", ["--localise", "i", "--reorg", "modulo"]),
    "jacobi-2d-alt-loc": ("jacobi-2d-alt", ["--localise", "t"]),
    "gemm-devmem": ("gemm", ["--device-mem", "64KB", "--size", "N=64"]),
    "atax-sizes": ("atax", ["--size", "m=37,n=41"]),
    "gemver-noloc": ("gemver", ["--no-localise", "--no-reductions"]),
}


def _sizes(src: pathlib.Path) -> list[str]:
    """``--size`` giving 64 to every ``int`` parameter of the function (the tile
    search needs the sizes)."""
    head = src.read_text().split("{", 1)[0]
    names = re.findall(r"\bint\s+([A-Za-z_]\w*)\s*[,)]", head)
    return ["--size", ",".join(f"{n}=64" for n in names)] if names else []


def cases() -> dict[str, tuple[pathlib.Path, list[str]]]:
    """Every case: name -> (source file, CLI options)."""
    out: dict[str, tuple[pathlib.Path, list[str]]] = {}
    for src in sorted(EXAMPLES.glob("*.c")):
        for v, args in VARIANTS.items():
            extra = _sizes(src) if v == "auto" else []
            out[f"{src.stem}@{v}"] = (src, list(args) + extra)
    for name, (ex, args) in EXTRA.items():
        out[f"{ex}@{name}"] = (EXAMPLES / f"{ex}.c", list(args))
    for meta in sorted(REGRESSIONS.glob("*.json")):
        src = meta.with_suffix(".c")
        if not src.exists():
            src = meta.with_suffix(".py")
        if not src.exists():
            continue
        args = [a for a in json.loads(meta.read_text())["args"]]
        out[f"fuzz-{meta.stem}"] = (src, args)
    return out


def _cli_cuda(src: pathlib.Path, args: list[str]) -> str:
    from polymagic.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["cuda", str(src), *args])
    if rc != 0:
        return f"<exit {rc}>\n{err.getvalue()}"
    return out.getvalue()


def _compile():
    try:
        from polymagic.compiler import compile_source
    except ImportError:
        from polymagic.pipeline import compile_source
    return compile_source


def _library_views(src: pathlib.Path, args: list[str]) -> str:
    """Host driver, summary and notes (as text) of the same compile."""
    from polymagic.errors import PolymagicError
    from polymagic.options import parse_options
    try:
        options = parse_options(args)
        lang = "python" if src.suffix == ".py" else "c"
        c = _compile()(src.read_text(), options, language=lang)
    except PolymagicError as e:
        return f"<error> {e}\n"
    notes = "\n".join(str(n) for n in c.notes)
    return f"## summary\n{c.summary}\n## notes\n{notes}\n## host\n{c.host_py}\n"


def record(only: str | None) -> dict[str, tuple[str, str]]:
    out = {}
    for name, (src, args) in cases().items():
        if only and only not in name:
            continue
        out[name] = (_cli_cuda(src, args), _library_views(src, args))
        print(f"  {name}", file=sys.stderr, flush=True)
    return out


def write(directory: pathlib.Path, only: str | None) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    for name, (cuda, views) in record(only).items():
        (directory / f"{name}.cu").write_text(cuda)
        (directory / f"{name}.views.txt").write_text(views)
    return 0


def check(directory: pathlib.Path, only: str | None, show_diff: bool) -> int:
    code_diff, view_diff, missing = [], [], []
    for name, (cuda, views) in record(only).items():
        cu, vw = directory / f"{name}.cu", directory / f"{name}.views.txt"
        if not cu.exists():
            missing.append(name)
            continue
        for path, text, names, context in ((cu, cuda, code_diff, 2), (vw, views, view_diff, 1)):
            if path.read_text() != text:
                names.append(name)
                if show_diff:
                    sys.stdout.writelines(difflib.unified_diff(
                        path.read_text().splitlines(True), text.splitlines(True),
                        f"{name} before", f"{name} after", n=context))
    for what, names in (("CUDA differs", code_diff), ("host/summary/notes differ", view_diff),
                        ("not recorded", missing)):
        if names:
            print(f"{what} ({len(names)}): {', '.join(names)}")
    if not (code_diff or view_diff):
        print("snapshot: identical")
    return 1 if code_diff or view_diff else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=("write", "check"))
    p.add_argument("directory", type=pathlib.Path)
    p.add_argument("--only", help="cases whose name contains this text")
    p.add_argument("--diff", action="store_true", help="print unified diffs (check)")
    a = p.parse_args()
    if a.command == "write":
        return write(a.directory, a.only)
    return check(a.directory, a.only, a.diff)


if __name__ == "__main__":
    sys.exit(main())
