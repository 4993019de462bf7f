"""What users hold: the top layer, above the report, the runtime and the compiler.

Layers import one way: ``api`` -> ``report`` -> ``runtime`` -> code generation and
kernel IR -> compiler stages.  Nothing below imports this package.

:mod:`.commands`
    one function through the magic or the command line: the front end to use,
    compile, run (specialised to the arrays' layout), autotune;
:mod:`.function`
    :class:`~.function.PolyFunction`, the callable the magic binds after a run;
:mod:`.python`
    ``@polymagic.gpu`` (:class:`~.python.GpuFunction`) and the plain-Python
    fallback of ``%%polycuda --python`` cells (seed 002 §2.3);
:mod:`.autotune`
    ``--autotune``: compile, run and compare candidate tile and block sizes;
:mod:`.explorer`
    the exploration widgets with the autotuner plugged in.
"""
