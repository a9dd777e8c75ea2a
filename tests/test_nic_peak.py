"""NIC "peak use" is the busiest short interval of the run, not the run's mean."""

from __future__ import annotations

import pytest

from aiio.run.sysinfo import PEAK_WINDOW_S, PeakRate

MB = 1_000_000


def _feed(peak: PeakRate, points: list[tuple[float, int]]) -> PeakRate:
    for t, total in points:
        peak.add(t, total)
    return peak


def test_a_one_second_burst_after_a_quiet_start_is_the_peak():
    # 9 s of start-up at 1 MB/s, then 1 s at 100 MB/s, sampled every 0.2 s as the run ticks
    points, total = [], 0
    for i in range(1, 51):
        t = i / 5  # exact in binary: window edges fall on samples
        total += (1 if t <= 9.0 else 100) * MB // 5
        points.append((t, total))
    peak = _feed(PeakRate(0.0, 0), points)
    assert PEAK_WINDOW_S == 1.0
    assert peak.peak_bytes_s == pytest.approx(100 * MB, rel=0.02)
    assert total / 10.0 < 0.15 * peak.peak_bytes_s  # the mean would have hidden it


def test_intervals_shorter_than_the_window_are_joined():
    # ticks every 0.1 s: one 0.1 s spike of 50 MB must not read as 500 MB/s
    peak = _feed(PeakRate(0.0, 0), [(i / 10, 0) for i in range(1, 11)]
                 + [(1.1, 50 * MB)] + [((11 + i) / 10, 50 * MB) for i in range(1, 11)])
    assert peak.peak_bytes_s == pytest.approx(50 * MB, rel=0.15)


def test_a_run_shorter_than_the_window_uses_its_whole_length():
    peak = PeakRate(0.0, 0)
    assert peak.finish(0.5, 10 * MB) == pytest.approx(20 * MB)
