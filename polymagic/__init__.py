"""polymagic: affine C loop nests -> verified CUDA, from a Jupyter cell.

``%load_ext polymagic`` registers the ``%%polycuda`` cell magic.
"""
from __future__ import annotations

__version__ = "0.1.0"


def load_ipython_extension(ipython):
    from .magic import PolyMagics
    ipython.register_magics(PolyMagics)
