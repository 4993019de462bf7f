"""``__constant__`` memory for read-only arrays the same for every thread (seed 004
§4.2): the Coulombic-potential kernel's atoms array (4 floats per atom, indexed by the
sequential loop over atoms) is read from a ``__constant__`` symbol on the GPU, the
emulator reads it as a read-only global and matches the CPU, NVRTC compiles it, and
the GPU runtime copies the array to the symbol (checked against a stand-in CuPy)."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from polymagic import kir
from polymagic.codegen.nvrtc import compile_cuda
from polymagic.errors import DeviceError
from polymagic.memory.constant import CONSTANT_LIMIT
from polymagic.options import Options
from polymagic.compiler import compile_source
from polymagic.runtime import gpu
from polymagic.runtime import run as rt
from polymagic.runtime.run import run

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
COULOMB = (EXAMPLES / "coulomb.c").read_text()
SIZES = {"NY": 19, "NX": 37, "NA": 21}


def _compile(sizes=SIZES, **kw):
    opts = Options(sizes=dict(sizes), target="emulator", **kw)
    return compile_source(COULOMB, opts), opts


@pytest.mark.parametrize("shared", ["auto", "none"])
def test_coulomb_atoms_in_constant_memory(shared):
    c, opts = _compile(shared=shared)
    assert c.program.constants == {
        "atoms": kir.ConstantDecl("pm_const_atoms", "float", CONSTANT_LIMIT // 4, "atoms")}
    assert "__constant__ float pm_const_atoms[16384];" in c.cuda
    kernel = c.cuda[c.cuda.index("__global__"):]
    assert "pm_const_atoms[" in kernel and " atoms[" not in kernel
    assert any(n.startswith("kernel0: atoms: __constant__ pm_const_atoms") and
               f"{21 * 4 * 4} B" in n for n in c.note_lines)
    # no shared buffer of atoms: constant memory replaces it
    assert not any(d.name.startswith("sh0_atoms") for k in c.program.kernels.values()
                   for d in k.shared)
    r = run(c, opts)
    assert r.ok, r.message
    assert b".entry kernel0" in compile_cuda(c.cuda, "sm_90")


def test_no_sizes_no_constant_memory():
    c = compile_source(COULOMB, Options())
    assert not c.program.constants and "__constant__" not in c.cuda
    assert any("size is unknown at compile time: give --size" in n for n in c.note_lines)


def test_too_large_for_64kb():
    c, _ = _compile({"NY": 4, "NX": 4, "NA": 5000})         # 80000 B of atoms
    assert not c.program.constants
    assert any("80000 B would bring the constant arrays to 80000 B > 65536 B" in n
               for n in c.note_lines)


def test_thread_varying_read_only_arrays_stay_global():
    c = compile_source((EXAMPLES / "gemm.c").read_text(), Options(sizes={"N": 20}))
    assert not c.program.constants
    assert "kernel0: A: not in constant memory (threads read different elements)" in c.note_lines


# ---- the GPU runtime copies the array to the symbol (stand-in CuPy) -----------------

class _Symbol:
    def __init__(self):
        self.data = b""

    def copy_from_host(self, ptr, nbytes):
        import ctypes
        self.data = ctypes.string_at(ptr, nbytes)


def test_gpu_runtime_uploads_constants(monkeypatch):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from test_runtime import fake_cupy
    launches: list = []
    cp = fake_cupy(lambda grid, block, args: None, launches)
    symbols: dict[str, _Symbol] = {}

    class RawModule(cp.RawModule):
        def get_global(self, name):
            assert f"__constant__ float {name}[" in self.code
            return symbols.setdefault(name, _Symbol())
    cp.RawModule = RawModule
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(gpu, "_AVAILABLE", None)
    monkeypatch.setattr(gpu, "_RAW_MODULES", {})
    monkeypatch.setattr(rt, "_MODULES", {})
    c, _ = _compile()
    m = gpu.GpuModule(c)
    rng = np.random.default_rng(0)
    atoms = rng.random((21, 4), dtype=np.float32)
    energy = np.zeros((19, 37), np.float32)
    ints = {"NY": 19, "NX": 37, "NA": 21}
    m.run({"atoms": atoms, "energy": energy}, ints, {"spacing": 0.5, "z": 1.0})
    assert symbols["pm_const_atoms"].data == atoms.tobytes() and len(launches) == 1
    # a Fortran-ordered view reaches the symbol row-major
    m.run({"atoms": np.asfortranarray(atoms), "energy": energy}, ints,
          {"spacing": 0.5, "z": 1.0})
    assert symbols["pm_const_atoms"].data == atoms.tobytes()
    big = np.zeros((CONSTANT_LIMIT // 16 + 1, 4), np.float32)
    with pytest.raises(DeviceError, match="do not fit the __constant__ symbol"):
        m.run({"atoms": big, "energy": energy}, {**ints, "NA": big.shape[0]},
              {"spacing": 0.5, "z": 1.0})
