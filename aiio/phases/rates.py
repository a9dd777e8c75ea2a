"""Rates over the duration (docs/METHOD.md, "Requests and tokens per second"): an operation
begun before the end of the duration runs on to its end, so a client's window runs past the
duration while the last ones finish, a drain in which none is offered. The rates count the
operations done within the duration, on the client's clock from the common start, over the
duration: one set and one window. The KV-cache requests, the vector queries and the vector
inserts count by this one rule.
"""

from __future__ import annotations

import numpy as np


def done_within(done_ns: int, start_ns: int, duration_s: float | None) -> bool:
    """Done at or before the end of the duration (`done_ns` and the common start `start_ns`
    on the client's clock); a run by count (`duration_s` None) has no duration: every one."""
    return duration_s is None or done_ns - start_ns <= duration_s * 1e9


def count_within(done_ns: np.ndarray, start_ns: int, duration_s: float | None) -> int:
    """How many of a client's operations, done at `done_ns`, count (`done_within`, at once)."""
    done = np.asarray(done_ns)
    if duration_s is None:
        return int(done.size)
    return int(np.count_nonzero(done - start_ns <= duration_s * 1e9))


def window(duration_s: float | None, elapsed_s: float) -> float:
    """What a rate divides by: the duration; a run stopped early, its own end (`elapsed_s`:
    the client's window, or the slowest client's); a run by count, its window."""
    return elapsed_s if duration_s is None else min(duration_s, elapsed_s)


def per_s(count: int, window_s: float) -> float:
    return count / window_s if window_s else 0.0
