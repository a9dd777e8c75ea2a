"""Acceptance: a spec of figures and limits checked against runs and sweeps; JUnit, history."""
