"""One options object shared by the ``%%polycuda`` magic and the command line.

Both parse the same argument list with :func:`parse_options`; every stage reads
its settings from :class:`Options`, so an option added for a later stage appears
in both front doors at once.
"""
from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field, fields, replace

from .errors import OptionsError

TARGETS = ("auto", "gpu", "emulator", "openmp")
SHOW = ("deps", "schedule", "cuda", "kir", "host", "emulator", "scop")


@dataclass(frozen=True)
class Options:
    sizes: dict = field(default_factory=dict)     # name -> int/float (size params and scalars)
    inputs: str | None = None                     # .npz with arrays by parameter name
    seed: int = 0
    target: str = "auto"
    tile: tuple[int, ...] | None = None           # block-tile sizes, outermost band member first
    block: tuple[int, ...] | None = None          # threads per block, x,y,z
    check: bool = True                            # compare with the CPU reference
    show: tuple[str, ...] = ()
    json: bool = False
    emu_order: str = "shuffle"                    # shuffle | reverse | forward (emulator)
    quiet: bool = False

    def key(self) -> tuple:
        """What the generated code depends on (for compile caches)."""
        return (self.tile, self.block)

    def with_(self, **kw) -> "Options":
        return replace(self, **kw)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # never exit the interpreter from a notebook
        raise OptionsError(f"{self.prog}: {message}")


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(v) for v in text.replace("x", ",").split(",") if v.strip())
    except ValueError:
        raise OptionsError(f"{what} must be comma-separated positive integers, got {text!r}")
    if not vals or any(v <= 0 for v in vals):
        raise OptionsError(f"{what} must be comma-separated positive integers, got {text!r}")
    return vals


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise OptionsError(f"--size values must be numbers, got {text!r}")


def parse_sizes(items: list[str]) -> dict:
    out: dict = {}
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise OptionsError(f"--size takes NAME=VALUE pairs, got {part!r}")
            k, v = part.split("=", 1)
            if not k.strip().isidentifier():
                raise OptionsError(f"--size: {k!r} is not a parameter name")
            out[k.strip()] = _number(v.strip())
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options common to the magic and the CLI's subcommands."""
    p.add_argument("--size", "-s", action="append", default=[], metavar="N=64,alpha=1.5",
                   help="values of size parameters and scalars")
    p.add_argument("--inputs", metavar="FILE.npz", help="arrays by parameter name")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs and emulator orders")
    p.add_argument("--target", default="auto", choices=TARGETS)
    p.add_argument("--tile", metavar="32,32", help="block-tile sizes, outermost first")
    p.add_argument("--block", metavar="32,8", help="threads per block, x,y,z")
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="do not compare with the CPU reference (writes the device result back)")
    p.add_argument("--show", action="append", default=[], metavar="WHAT",
                   help="extra views: " + ", ".join(SHOW))
    p.add_argument("--emu-order", default="shuffle", choices=("shuffle", "reverse", "forward"))
    p.add_argument("--json", action="store_true", help="print one JSON object (CLI)")
    p.add_argument("--quiet", "-q", action="store_true")


def make_parser(prog: str = "%%polycuda") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, add_help=False)
    add_arguments(p)
    return p


def options_from_namespace(ns: argparse.Namespace) -> Options:
    show: list[str] = []
    for s in ns.show:
        for w in s.split(","):
            w = w.strip()
            if w and w not in SHOW:
                raise OptionsError(f"--show: unknown view {w!r} (choose from {', '.join(SHOW)})")
            if w:
                show.append(w)
    block = _ints(ns.block, "--block") if ns.block else None
    if block is not None:
        if len(block) > 3:
            raise OptionsError("--block takes at most three sizes (x,y,z)")
        prod = 1
        for b in block:
            prod *= b
        if prod > 1024:
            raise OptionsError(f"--block {ns.block}: {prod} threads per block, at most 1024")
    return Options(sizes=parse_sizes(ns.size), inputs=ns.inputs, seed=ns.seed,
                   target=ns.target, tile=_ints(ns.tile, "--tile") if ns.tile else None,
                   block=block, check=ns.check, show=tuple(show), json=ns.json,
                   emu_order=ns.emu_order, quiet=ns.quiet)


def parse_options(args: str | list[str]) -> Options:
    """Parse a magic line (string) or an argument list into :class:`Options`."""
    argv = shlex.split(args) if isinstance(args, str) else list(args)
    ns = make_parser().parse_args(argv)
    return options_from_namespace(ns)


__all__ = ["Options", "parse_options", "add_arguments", "options_from_namespace",
           "make_parser", "fields"]
