"""KIR variants that index compact device buffers (seed 002 §4: the address mapping).

The printers linearise a global access as ``Σ_a index_a·strides_a`` with the
array's :attr:`kir.ArrayDecl.strides`; a layout's offset goes into the pointer the
kernel receives.  So a packed layout needs no printer change: :func:`layout_program`
replaces the strides of the chosen arrays by kernel ``int`` parameters
(``pm_s_<array>_<dim>``, added to :attr:`kir.Kernel.ints` and to the Program's
size parameters, so the emulator's host code and the host driver pass them), and
the same compiled kernels then serve every layout of every call.

For device-memory tiling (§4.4) :func:`offset_program` adds block offsets: every
``blockIdx.a`` read by a kernel becomes ``blockIdx.a + pm_bo<a>`` (and
``gridDim.a`` the full grid ``pm_gd<a>``), so a launch of a sub-grid runs a tile of
the original launch's blocks.  :func:`launch_program` wraps one kernel as a Program
whose host code is a single launch of grid ``(pm_gx, pm_gy, pm_gz)``, for
running tiles one at a time on the emulator.
"""
from __future__ import annotations

from dataclasses import replace

from .. import kir
from ..expr import Binary, Expr, Var, walk

AXES = kir.AXES
BLOCK_OFFSETS = {a: f"pm_bo{a}" for a in AXES}
GRID_FULL = {a: f"pm_gd{a}" for a in AXES}
GRID_VARS = {a: f"pm_g{a}" for a in AXES}


def stride_var(array: str, dim: int) -> str:
    return f"pm_s_{array}_{dim}"


def stride_vars(program: kir.Program, array: str) -> list[str]:
    return [stride_var(array, d) for d in range(len(program.arrays[array].shape))]


def _add(names: list[str], extra: list[str]) -> list[str]:
    return names + [n for n in extra if n not in names]


def layout_program(program: kir.Program, arrays) -> kir.Program:
    """``program`` with the strides of ``arrays`` (parameter arrays) as kernel ints."""
    arrays = [a for a in program.arrays if a in set(arrays)]
    if not arrays:
        return program
    decls = dict(program.arrays)
    extra: list[str] = []
    for a in arrays:
        names = stride_vars(program, a)
        decls[a] = replace(program.arrays[a], strides=tuple(Var(n) for n in names))
        extra += names
    kernels = {}
    for n, k in program.kernels.items():
        add = [v for a in arrays if a in k.arrays for v in stride_vars(program, a)]
        kernels[n] = replace(k, ints=_add(list(k.ints), add))
    return replace(program, arrays=decls, kernels=kernels,
                   size_params=_add(list(program.size_params), extra))


def offset_program(program: kir.Program) -> kir.Program:
    """``program`` whose kernels run blocks ``blockIdx + pm_bo`` of a grid of
    ``pm_gd`` blocks (ints of every kernel and size parameters of the Program)."""
    ids = {kir.BLOCK_IDS[a]: Binary("+", Var(kir.BLOCK_IDS[a]), Var(BLOCK_OFFSETS[a]))
           for a in AXES}
    ids.update({kir.GRID_DIMS[a]: Var(GRID_FULL[a]) for a in AXES})

    def f(e: Expr):
        if isinstance(e, Var) and e.name in ids:
            return ids[e.name]
        return None
    extra = [BLOCK_OFFSETS[a] for a in AXES] + [GRID_FULL[a] for a in AXES]
    kernels = {n: replace(k, body=kir.map_body(k.body, f), ints=_add(list(k.ints), extra))
               for n, k in program.kernels.items()}
    return replace(program, kernels=kernels, size_params=_add(list(program.size_params), extra))


def launch_program(program: kir.Program, kernel: str) -> kir.Program:
    """One kernel of ``program`` as a Program launching it once on a grid of
    ``(pm_gx, pm_gy, pm_gz)`` blocks; its int parameters (size parameters, host loop
    variables, strides, offsets) are the new Program's size parameters and its
    arrays only those the kernel uses."""
    k = program.kernels[kernel]
    arrays = {a: program.arrays[a] for a in k.arrays}
    size_params = _add(list(k.ints), [p for p in program.size_params
                                      if any(p in _names(d) for d in arrays.values())])
    size_params = _add(size_params, [GRID_VARS[a] for a in AXES])
    scalars = {s: program.scalars[s] for s in k.scalars}
    host = [kir.Launch(kernel, tuple(Var(GRID_VARS[a]) for a in AXES))]
    return kir.Program(f"{program.name}_{kernel}", arrays, size_params, scalars, host,
                       {kernel: k}, program.dtype_of_index)


def _names(decl: kir.ArrayDecl) -> set[str]:
    out = set()
    for e in tuple(decl.shape) + tuple(decl.strides):
        out |= {x.name for x in walk(e) if isinstance(x, Var)}
    return out


__all__ = ["layout_program", "offset_program", "launch_program", "stride_var", "stride_vars",
           "BLOCK_OFFSETS", "GRID_FULL", "GRID_VARS"]
