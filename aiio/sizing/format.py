"""How sizing prints numbers in its formulas and tables: apart from the arithmetic."""

from __future__ import annotations

from aiio.units import GiB


def fmt(value: float) -> str:
    """A number as the tables print it: 3,030 / 912.7 / 0.323 / 8.4e+11."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e9):
        return f"{int(value):,}"
    if value != 0 and (abs(value) >= 1e9 or abs(value) < 1e-3):
        return f"{value:.3g}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:,.1f}"
    return f"{value:.3g}"


def fmt_count(value: float) -> str:
    """A large count as people write it: 70B, 2T, 8.03B, 168."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(value) >= div:
            return f"{value / div:.4g}{suffix}"
    return f"{value:,.0f}"


def gib(nbytes: float | None) -> float | None:
    return nbytes / GiB if nbytes is not None else None
