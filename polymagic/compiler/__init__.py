"""The compiler driver and what it runs above the stages: the lowering ladder
(:mod:`.lowering`: tile search, mapping and lowering within isl's budgets, with
their fallbacks) and the driver that calls the stages in order."""
