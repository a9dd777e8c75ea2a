"""Reading a recorded figure leniently: a value missing or of the wrong type reads as None (or
empty), never an exception, so a damaged or older result still opens. Below the phases and
the result model: the figure classes the phases build read their own sections back with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def number(value: Any) -> float | None:
    """A recorded finite number as a float; None for anything else (booleans, NaN included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        got = float(value)
    except OverflowError:  # an integer past a float's range: JSON sets integers no bound
        return None
    return got if math.isfinite(got) else None


def count(value: Any) -> int | None:
    """A recorded count as an integer (so it prints as recorded); None for anything else.
    An integer stays itself: through a float it would lose its digits past 2**53."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    got = number(value)
    return None if got is None else int(got)


def text(value: Any) -> str:
    return "" if value is None else str(value)


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def items(value: Any) -> tuple[Any, ...]:
    """A JSON list, or the tuple a run's own result holds before it is saved as JSON."""
    return tuple(value) if isinstance(value, (list, tuple)) else ()


def as_json(value: Any) -> Any:
    """Fields as a result's JSON holds them: a figure class as its `to_dict`, tuples as lists,
    at any depth; so a run's own result, before it is saved, reads as its JSON will."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    return value
