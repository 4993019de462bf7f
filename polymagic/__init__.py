"""polymagic: affine C loop nests -> verified CUDA, from a Jupyter cell.

``%load_ext polymagic`` registers the ``%%polycuda`` cell magic and the ``%polycuda``
line magic (help, version, notebook defaults).
"""
from __future__ import annotations

from .version import __version__


def load_ipython_extension(ipython):
    from .magic import register
    register(ipython)


def gpu(fn=None, **kw):
    """``@polymagic.gpu``: compile a Python loop nest for the GPU at its first call
    (see :func:`polymagic.api.python.gpu`)."""
    from .api.python import gpu as _gpu
    return _gpu(fn, **kw)


def prange(*args):
    """Parallel-loop annotation (seed 002 §2.2): ``range`` to the interpreter."""
    return range(*args)


__all__ = ["__version__", "load_ipython_extension", "gpu", "prange"]
