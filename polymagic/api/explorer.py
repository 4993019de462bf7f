"""The exploration widgets (``%%polycuda --explore``, ``fn.explore()``) with the
autotuner plugged in: :class:`polymagic.report.widgets.Explorer` sits below this
layer and receives :func:`polymagic.api.autotune.autotune` as its ``autotuner``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from ..options import Options
from ..compiler import Compiled
from ..runtime.run import RunReport
from .autotune import autotune

if TYPE_CHECKING:
    from ..report.widgets import Explorer


def explore(compiled: Compiled, options: Options, report: RunReport | None = None,
            namespace: Mapping | None = None, **kwargs) -> Explorer:
    """An :class:`~polymagic.report.widgets.Explorer` for a compiled function (what
    ``--explore`` shows), whose *Autotune* button runs :func:`autotune`."""
    from ..report.widgets import explore as explorer   # ipywidgets: only when shown
    return explorer(compiled, options, report, namespace, autotuner=autotune, **kwargs)


__all__ = ["explore"]
