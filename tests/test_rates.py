"""The one rule the KV-cache requests, the vector queries and the vector inserts count their
rates by (docs/METHOD.md, "Requests and tokens per second"): the operations done within the
duration, on the client's clock from the common start, over the duration."""

from __future__ import annotations

import numpy as np
import pytest

from aiio.phases import rates

START = 5_000_000_000  # the common start on a client's clock, ns


def test_an_operation_done_at_the_durations_end_counts_and_one_after_it_does_not() -> None:
    assert rates.done_within(START + 2_000_000_000, START, 2.0)
    assert not rates.done_within(START + 2_000_000_001, START, 2.0)
    assert rates.done_within(START + 10**12, START, None)  # a run by count: every one


def test_a_clients_operations_count_at_once_by_the_same_rule() -> None:
    done = np.array([START + 1, START + 2_000_000_000, START + 2_000_000_001, START + 3 * 10**9])
    assert rates.count_within(done, START, 2.0) == 2
    assert rates.count_within(done, START, None) == 4
    assert rates.count_within(np.zeros(0, np.int64), START, 2.0) == 0
    assert rates.count_within(done, START, 2.0) == sum(
        rates.done_within(int(t), START, 2.0) for t in done)


@pytest.mark.parametrize("duration, elapsed, window", [
    (2.0, 2.7, 2.0),    # the drain after the duration is no part of it
    (2.0, 1.2, 1.2),    # stopped early: its own end
    (None, 3.5, 3.5),   # by count: its own window
])
def test_the_rate_window_is_the_duration_or_the_runs_own_end(
        duration: float | None, elapsed: float, window: float) -> None:
    assert rates.window(duration, elapsed) == window


def test_a_rate_is_the_count_over_the_window_and_nothing_over_none() -> None:
    assert rates.per_s(30, 2.0) == 15.0
    assert rates.per_s(0, 2.0) == 0.0
    assert rates.per_s(7, 0.0) == 0.0
