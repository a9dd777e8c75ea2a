"""Vector search's figures (docs/METHOD.md, "Vector search"), one class per part: the queries
over every client (`VectorFigures`) and the index they searched (`VectorIndex`), each built
by the phase (aiio.phases.vector_figures.summarize, aiio.phases.vector), serialised once
(`to_dict`) and read back by every reader (`from_dict`, leniently: a result saved before a
figure was recorded reads it as None). `Quantiles` is a latency's p50 to p99.9 as these parts
record it (the insert stream's too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiio.results.lenient import as_json, count, items, mapping, number, text
from aiio.results.steadiness import Verdict
from aiio.stats import Histogram

PERCENTILES = (50, 95, 99, 99.9)  # MLPerf's vector database reports p99; p95 and p99.9 beside


@dataclass(frozen=True)
class Quantiles:
    """p50, p95, p99 and p99.9 of one latency, in ms (None: nothing was recorded)."""

    p50: float | None
    p95: float | None
    p99: float | None
    p999: float | None

    @classmethod
    def of(cls, h: Histogram) -> Quantiles:
        if not h.count:
            return cls(None, None, None, None)
        return cls(*(h.percentile(p) / 1e6 for p in PERCENTILES))

    @classmethod
    def from_dict(cls, d: Any) -> Quantiles:
        d = mapping(d)
        return cls(*(number(d.get(f.name)) for f in dataclasses.fields(cls)))

    @property
    def ms(self) -> Mapping[str, float | None]:
        """The quantiles by name, in ms (as recorded)."""
        return dataclasses.asdict(self)

    def to_dict(self) -> dict[str, float | None]:
        return dict(self.ms)


@dataclass(frozen=True)
class VectorIndex:
    """The index searched: its vectors, layout and search settings, and where it came from
    (a result saved before those were recorded: None)."""

    vectors: int | None
    dimensions: int | None
    element_size: int | None
    max_degree: int | None
    sector_size: int | None
    node_len: int | None
    read_size: int | None
    graph: str
    file_size: int | None
    beam_width: int | None
    search_list: int | None
    top_k: int | None
    path: str | None = None
    kept: bool | None = None      # kept for later runs
    reused: bool | None = None    # laid out by an earlier run or `aiio datagen`
    reader: str | None = None     # raw (aiio's reads) or native (diskannpy)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> VectorIndex:
        """The index as recorded; every figure None when it is no object."""
        d = mapping(d)
        flags = {k: d[k] if isinstance(d.get(k), bool) else None for k in ("kept", "reused")}
        words = {k: None if d.get(k) is None else text(d.get(k)) for k in ("path", "reader")}
        sizes = {k: count(d.get(k)) for k in (
            "vectors", "dimensions", "element_size", "max_degree", "sector_size", "node_len",
            "read_size", "file_size", "beam_width", "search_list", "top_k")}
        return cls(graph=text(d.get("graph")), **sizes, **flags, **words)


@dataclass(frozen=True)
class VectorFigures:
    """The run's queries beside MLPerf's vector database columns: their rate, latency, the
    reads each took, and under an open loop the queue at arrival and the verdict."""

    queries: int | None            # every query answered, those after the duration too
    queries_per_s: float | None    # MLPerf's throughput (QPS): `queries_in_duration` over it
    # None for a run by count (no duration): its rate is every query over rate_window_s; and
    # both None in a result from before, whose rate divided every query by the slowest
    # client's window
    queries_in_duration: int | None
    rate_window_s: float | None   # the duration (a run stopped early or by count: its end)
    per_client_queries_per_s: tuple[float | None, ...]
    latency_ms: Quantiles          # pooled over every client's queries
    per_client_p99_ms: tuple[float | None, ...]
    hops_per_query: float | None
    reads_per_query: float | None
    bytes_per_query: float | None
    vector_bytes_per_query: float | None
    read_amplification: float | None  # bytes read per byte of vector returned
    storage_iops: float | None     # MLPerf's "storage IOPs": read requests per second
    reads_in_flight: float | None  # mean reads in flight over the run (Little's law)
    offered_per_s: float | None    # open loop: queries offered a second, all clients (0: closed)
    waiting_mean: float | None     # over every query that arrived, begun or not
    waiting_max: int | None
    unanswered: int | None         # open loop: arrived, never begun before the run stopped
    verdict: Verdict | None        # steady, overloaded or not judged; None: saved before it was
    requests_per_query: float | None = None  # on a bucket: GET requests (else not recorded)
    flagged_overloaded: bool = False  # a result saved before its verdict: its own flag

    @property
    def overloaded(self) -> bool:
        return self.verdict.overloaded if self.verdict else self.flagged_overloaded

    def to_dict(self) -> dict[str, Any]:
        # the old flag is never written; requests per query on a bucket only
        skip = {"flagged_overloaded"} | ({"requests_per_query"}
                                         if self.requests_per_query is None else set())
        return {f.name: as_json(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name not in skip}

    @classmethod
    def from_dict(cls, d: Any) -> VectorFigures | None:
        """None when the part is no object (a run of another phase)."""
        if not isinstance(d, Mapping):
            return None
        verdict = d.get("verdict")
        nums = {k: number(d.get(k)) for k in (
            "queries_per_s", "rate_window_s", "hops_per_query", "reads_per_query",
            "bytes_per_query", "vector_bytes_per_query", "read_amplification", "storage_iops",
            "reads_in_flight", "offered_per_s", "waiting_mean", "requests_per_query")}
        counts = {k: count(d.get(k)) for k in (
            "queries", "queries_in_duration", "waiting_max", "unanswered")}
        return cls(per_client_queries_per_s=tuple(
                       number(x) for x in items(d.get("per_client_queries_per_s"))),
                   latency_ms=Quantiles.from_dict(d.get("latency_ms")),
                   per_client_p99_ms=tuple(number(x) for x in items(d.get("per_client_p99_ms"))),
                   verdict=Verdict.from_dict(verdict) if isinstance(verdict, Mapping) else None,
                   flagged_overloaded=bool(d.get("overloaded")), **nums, **counts)
