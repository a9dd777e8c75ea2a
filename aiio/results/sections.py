"""The figures of one stream of I/O, typed where they are made: one client's (`ClientIo`) and
the aggregate over the clients (`AggregateIo`). Each has one `to_dict`, the only place their
keys are spelled (docs/RESULTS.md, "I/O sections"), and `from_dict` to read them back.

Below the phases, which build them (phases/base.py: `client_io`, `aggregate_io`), and the
result model, which reads what they wrote (result.IoFigures).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiio import stats
from aiio.stats import ByteSeries, Histogram
from aiio.units import mib_per_s


@dataclass(frozen=True)
class ClientIo:
    """One client's stream: bytes, calls, its time from the common start to its end, its
    MiB/s, the latency summary of its main operation, a histogram per operation and its bytes
    over time."""

    bytes: int
    ops: int
    elapsed_s: float
    mib_s: float
    latency: Mapping[str, Any]               # ns: count, p50_ns, p99_ns, max_ns...
    histograms: Mapping[str, Histogram]      # per operation
    series: ByteSeries

    @classmethod
    def of(cls, hist: Mapping[str, Histogram], series: ByteSeries, ops: int, nbytes: int,
           elapsed_s: float, main_op: str | None = None) -> ClientIo:
        """The stream of merged operation logs; its latency is `main_op`'s (by default
        reads when there are any, else the first operation logged)."""
        if main_op is None:
            main_op = "read" if "read" in hist else next(iter(hist), "read")
        return cls(nbytes, ops, elapsed_s, mib_per_s(nbytes, elapsed_s),
                   hist.get(main_op, Histogram()).summary(), dict(hist), series)

    def to_dict(self, prefix: str = "") -> dict[str, Any]:
        return {
            f"{prefix}bytes": self.bytes, f"{prefix}ops": self.ops,
            f"{prefix}elapsed_s": self.elapsed_s, f"{prefix}mib_s": self.mib_s,
            f"{prefix}latency": dict(self.latency),
            f"{prefix}histograms": {op: h.to_dict() for op, h in self.histograms.items()},
            f"{prefix}series": self.series.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], prefix: str = "") -> ClientIo:
        """A client's stream as `to_dict` wrote it (under `prefix`) in its entry."""
        return cls(d[f"{prefix}bytes"], d[f"{prefix}ops"], d[f"{prefix}elapsed_s"],
                   d[f"{prefix}mib_s"], d.get(f"{prefix}latency") or {},
                   {op: Histogram.from_dict(h) for op, h in d[f"{prefix}histograms"].items()},
                   ByteSeries.from_dict(d[f"{prefix}series"]))


@dataclass(frozen=True)
class AggregateIo:
    """One stream over every client: first done, last done, the per-client spread and
    fairness, a merged histogram per operation, MiB/s per second, bytes and calls."""

    first_done: Mapping[str, float]   # {seconds, bytes, mib_s}
    last_done: Mapping[str, float]
    per_client_mib_s: Mapping[str, float]
    jain: float
    histograms: Mapping[str, Histogram]
    series_mib_s: Sequence[float]
    bytes: int
    ops: int

    @classmethod
    def over(cls, clients: Sequence[ClientIo]) -> AggregateIo:
        ends = [c.elapsed_s for c in clients]
        per_client = [c.mib_s for c in clients]
        hist: dict[str, Histogram] = {}
        for c in clients:
            for op, h in c.histograms.items():
                hist.setdefault(op, Histogram()).merge(h)
        total = ByteSeries()
        for c in clients:
            total.merge(c.series)
        # A client that made no call of this kind (more clients than files or samples) ends at
        # once: the window until the first client finished would close with it, near 0 s.
        busy = [c for c in clients if c.ops] or clients
        return cls(stats.first_done([c.series for c in busy], [c.elapsed_s for c in busy]),
                   stats.last_done([c.series for c in clients], ends),
                   stats.spread(per_client), stats.jain(per_client) if any(per_client) else 0.0,
                   hist, total.per_second(max(ends) if ends else None),
                   sum(c.bytes for c in clients), sum(c.ops for c in clients))

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_done": dict(self.first_done), "last_done": dict(self.last_done),
            "per_client_mib_s": dict(self.per_client_mib_s), "jain": self.jain,
            "latency": {op: h.summary() for op, h in self.histograms.items()},
            "histograms": {op: h.to_dict() for op, h in self.histograms.items()},
            "series_mib_s": list(self.series_mib_s), "bytes": self.bytes, "ops": self.ops,
        }
