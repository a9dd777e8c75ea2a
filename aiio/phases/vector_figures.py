"""The vector phase's figures: one client's queries, and the run's, built as the one class
every reader reads back (aiio.results.vector.VectorFigures) (docs/METHOD.md, "Vector
search"). Query latency is a mergeable Histogram; the rest are counts and sums that add up
over clients. Steady or overloaded is judged as the KV-cache phase judges its requests
(aiio.phases.steadiness), from each query's latency by the tenth of the run it arrived in."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aiio.phases import rates
from aiio.phases.steadiness import SliceLog, verdict
from aiio.results.vector import Quantiles, VectorFigures
from aiio.stats import Histogram


@dataclass(frozen=True)
class Queries:
    """What one client's (or the run's) queries did, as sums that add up over clients."""

    queries: int = 0
    hops: int = 0
    reads: int = 0
    read_bytes: int = 0
    vector_bytes: int = 0  # the full vectors the queries returned (top_k each at most) x D x size
    waiting_sum: int = 0  # queries waiting at each arrival (open loop), summed
    waiting_max: int = 0
    unanswered: int = 0  # open loop: arrived before the run stopped, never begun
    # done within the duration after the common start, on the client's clock: what queries/s
    # counts (a run by count, which has no duration: every query)
    in_duration: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Queries:
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls)})

    def per_query(self, total: int) -> float | None:
        """`total` per query answered; None when none was (no figure, not 0)."""
        return total / self.queries if self.queries else None


def waiting(arrivals: np.ndarray, starts: np.ndarray) -> tuple[int, int]:
    """Queries arrived but not yet begun at each arrival (open loop): sum and max (arrivals
    from the window's start, in ns; a query never begun has the largest start)."""
    if not len(arrivals):
        return 0, 0
    order = np.argsort(arrivals)
    a, s = arrivals[order], np.sort(starts)
    # arrived at or before each arrival, less those begun before it
    backlog = np.arange(1, len(a) + 1) - np.searchsorted(s, a, side="left")
    backlog = np.maximum(backlog - 1, 0)  # not counting the query arriving
    return int(backlog.sum()), int(backlog.max())


def slice_log(duration_s: float, records: np.ndarray, left_s: np.ndarray,
              end_s: float) -> SliceLog:
    """One client's queries by the tenth of the run they arrived in: `records` rows of
    (arrival, begun, done) in seconds from the window's start; `left_s`, the arrivals no
    stream began before `end_s`."""
    log = SliceLog(duration_s)
    for arrival, begun, done in records.tolist():
        log.served(arrival, begun, int((done - arrival) * 1e9))
    log.unserved(left_s, end_s)
    return log


def summarize(sums: list[Queries], hists: list[Histogram], logs: list[SliceLog],
              elapsed: list[float], read_ops: int, read_ns: int,
              offered_per_s: float, duration_s: float | None) -> VectorFigures:
    """The run's figures from each client's sums, query histogram, slices and window;
    `duration_s`: the run's duration (None: a run by count)."""
    total = Queries(**{f.name: (max if f.name == "waiting_max" else sum)(
        getattr(q, f.name) for q in sums) for f in dataclasses.fields(Queries)})
    pooled = Histogram()
    for h in hists:
        pooled.merge(h)
    last = max(elapsed, default=0.0)
    pooled_slices = SliceLog(logs[0].duration_s)
    for log in logs:
        pooled_slices.merge_slices(log)
    window = rates.window(duration_s, last)
    return VectorFigures(
        queries=total.queries,
        queries_per_s=rates.per_s(total.in_duration, window),
        queries_in_duration=None if duration_s is None else total.in_duration,
        rate_window_s=window,
        per_client_queries_per_s=tuple(rates.per_s(q.in_duration, rates.window(duration_s, e))
                                       for q, e in zip(sums, elapsed, strict=True)),
        latency_ms=Quantiles.of(pooled),
        per_client_p99_ms=tuple(Quantiles.of(h).p99 for h in hists),
        hops_per_query=total.per_query(total.hops), reads_per_query=total.per_query(total.reads),
        bytes_per_query=total.per_query(total.read_bytes),
        vector_bytes_per_query=total.per_query(total.vector_bytes),
        read_amplification=total.read_bytes / total.vector_bytes
        if total.vector_bytes else None,  # no vector returned: no ratio
        storage_iops=read_ops / last if last else 0.0,
        reads_in_flight=read_ns / 1e9 / last if last else 0.0,
        offered_per_s=offered_per_s,
        waiting_mean=total.waiting_sum / max(1, total.queries + total.unanswered),
        waiting_max=total.waiting_max, unanswered=total.unanswered,
        verdict=verdict(pooled_slices.slices, pooled_slices.waiting_s, total.unanswered,
                        total.queries, len(logs), pooled_slices.duration_s,
                        queued=bool(offered_per_s), noun="query", nouns="queries"))


def slices_of(d: Mapping[str, Any]) -> SliceLog:
    """A client's slices, back from its dict."""
    log = SliceLog(d["duration_s"])
    log.load_slices(d)
    return log
