"""The compiler driver: the stages in order, source to printed code (issue 17)."""
