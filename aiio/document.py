"""A recorded document (a result, a workload as recorded): a path into one and the one getter.

Below every layer that writes or reads a result: phases declare where their figures sit
(`Where`) and the result model reads them, so neither has to import the other for these.
"""

from __future__ import annotations

from typing import Any

Where = tuple[str | int, ...]  # keys and list positions leading to a part of a document


def dig(data: Any, *path: str | int, default: Any = None) -> Any:
    """data[path[0]][path[1]]...; default when a step is missing, of the wrong type or None."""
    for key in path:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return default
    return default if data is None else data
