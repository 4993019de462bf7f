"""Tile choice (seed 000 §4.3): the tile sizes that minimise the data-movement cost
C = N·(P·S + V·L/P) under the shared-memory limit M_up, for ``--tile auto`` and the
explorer.

:mod:`.model` is the cost model (per kernel and buffer, affine in the tile sizes),
:mod:`.sampling` fits it to the real mapper and memory planner (through the
mapping's observer, :mod:`polymagic.mapping.observer`), :mod:`.search` minimises
it.  The driver runs it between the schedule and the mapping
(:func:`polymagic.compiler.lowering.search_tiles`).
"""
