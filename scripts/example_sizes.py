"""The ``--size`` argument for one example on the GPU: the benchmark suite's medium sizes
when the example is in the suite, else 128 for each of its own ``int`` parameters.

    python3 scripts/example_sizes.py examples/gemm.c     # N=...,alpha=...
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def sizes(path: str) -> str:
    from suite import SUITE
    name = pathlib.Path(path).stem
    kernel = {k.name: k for k in SUITE}.get(name)
    if kernel:
        return ",".join(f"{a}={b}" for a, b in kernel.sizes("medium").items())
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", pathlib.Path(path).read_text(), flags=re.S)
    head = text.split("{", 1)[0]
    return ",".join(f"{n}=128" for n in re.findall(r"\bint\s+([A-Za-z_]\w*)\s*[,)]", head))


if __name__ == "__main__":
    print(sizes(sys.argv[1]))
