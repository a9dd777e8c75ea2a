"""Reading the time series and histograms stored in a result, for the charts (no measuring)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from aiio.stats import ByteSeries
from aiio.units import MiB

FINE_UNTIL_S = 20.0  # shorter runs are drawn per series bucket (0.1 s), longer ones per second


def is_series(value: Any) -> bool:
    return isinstance(value, Mapping) and "bucket_s" in value and "bytes" in value


def step_for(end_s: float, bucket_s: float) -> float:
    return bucket_s if end_s <= FINE_UNTIL_S else 1.0


def rates(series: ByteSeries, end_s: float, step: float) -> tuple[list[float], list[float]]:
    """(interval edges in s, MiB/s over each interval), up to end_s; one more edge than rates."""
    if end_s <= 0:
        return [], []
    if step == 1.0:
        # The same edges per_second uses: whole seconds, then the partial last one.
        edges = np.arange(np.floor(end_s) + 1, dtype=float)
        if end_s - edges[-1] > 1e-9:
            edges = np.append(edges, end_s)
        values = series.per_second(end_s)
    else:
        n = int(np.ceil(end_s / step - 1e-9))
        edges = np.minimum(np.arange(n + 1) * step, end_s)
        moved = np.diff([series.bytes_before(t) for t in edges])
        values = (moved / np.diff(edges) / MiB).tolist()
    return _fold_stub(edges.tolist(), list(values), step)


def _fold_stub(edges: list[float], values: list[float],
               step: float) -> tuple[list[float], list[float]]:
    """Merge a last interval shorter than half a step into the one before: a rate over a few
    milliseconds says little and draws a spike."""
    if len(values) < 2 or edges[-1] - edges[-2] >= step / 2:
        return edges, values
    w1, w2 = edges[-2] - edges[-3], edges[-1] - edges[-2]
    merged = (values[-2] * w1 + values[-1] * w2) / (w1 + w2)
    return edges[:-2] + [edges[-1]], values[:-2] + [merged]


def octave_bins(buckets: Sequence[tuple[float, float, int]],
                per_octave: int = 8) -> list[tuple[float, float, int]]:
    """Histogram buckets regrouped into bins of 1/per_octave of a power of two, by each bucket's
    midpoint: fewer, wider bars that read well on a log axis (counts are kept, only summed)."""
    bins: dict[int, int] = {}
    for low, high, count in buckets:
        mid = max((low + high) / 2, 1.0)
        k = int(np.floor(np.log2(mid) * per_octave))
        bins[k] = bins.get(k, 0) + count
    return [(2 ** (k / per_octave), 2 ** ((k + 1) / per_octave), n)
            for k, n in sorted(bins.items())]
