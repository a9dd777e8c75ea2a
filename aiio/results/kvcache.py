"""The KV-cache phase's figures over every client (docs/METHOD.md, "KV cache"), one class per
part: built by the phase (aiio.phases.kvcache_figures.aggregate), serialised once
(`KvFigures.to_dict`) and read back by every reader (`KvFigures.from_dict`, leniently: a
result saved before a figure was recorded reads it as None).

Latencies are the project's log-linear histograms, pooled over users, clients and hosts by
addition: the pooled percentiles are percentiles of every request. MLPerf Storage's KV-cache
"P95" is the largest of its ranks' P95s; it is kept beside, as `max_client_p95_ms`, and named
as what it is.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiio.results.lenient import count, items, mapping, number, text
from aiio.results.steadiness import Verdict
from aiio.stats import Histogram

QUANTILES = ("p50", "p95", "p99", "p999")
HIT_TIERS = ("gpu", "host", "storage")  # what a reader shows, in this order


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


@dataclass(frozen=True)
class Percentiles:
    """Pooled percentiles of one latency, in ms (None: nothing was recorded)."""

    count: int | None
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    max_ms: float | None

    @classmethod
    def of(cls, h: Histogram) -> Percentiles:
        if not h.count:
            return cls(0, None, None, None, None, None)
        p = h.percentiles((50, 95, 99, 99.9))
        return cls(h.count, _ms(p["p50"]), _ms(p["p95"]), _ms(p["p99"]), _ms(p["p99.9"]),
                   _ms(h.max))

    @classmethod
    def from_dict(cls, d: Any) -> Percentiles:
        d = mapping(d)
        return cls(count(d.get("count")), *(number(d.get(f"{q}_ms")) for q in QUANTILES),
                   number(d.get("max_ms")))

    @property
    def ms(self) -> Mapping[str, float | None]:
        """p50, p95, p99, p999 by name, in ms."""
        return {q: getattr(self, f"{q}_ms") for q in QUANTILES}

    def ns(self, quantile: str) -> float | None:
        """A quantile in ns (the unit every latency is shown from)."""
        got = self.ms.get(quantile)
        return None if got is None else got * 1e6


@dataclass(frozen=True)
class LatencyFigures:
    """One latency over every client: pooled percentiles and each client's P95; MLPerf's
    figure is the largest of those P95s, which is no percentile of the requests."""

    pooled: Percentiles
    per_client: tuple[Percentiles, ...]          # in the clients' order
    per_client_p95_ms: tuple[float | None, ...]
    max_client_p95_ms: float | None
    histogram: Mapping[str, Any]

    @classmethod
    def of(cls, per_client: list[Histogram]) -> LatencyFigures:
        pooled = Histogram()
        for h in per_client:
            pooled.merge(h)
        each = tuple(Percentiles.of(h) for h in per_client)
        p95s = tuple(p.p95_ms for p in each)
        known = [p for p in p95s if p is not None]
        return cls(Percentiles.of(pooled), each, p95s, max(known) if known else None,
                   pooled.to_dict())

    @classmethod
    def from_dict(cls, d: Any) -> LatencyFigures:
        d = mapping(d)
        return cls(Percentiles.from_dict(d.get("pooled")),
                   tuple(Percentiles.from_dict(p) for p in items(d.get("per_client"))),
                   tuple(number(p) for p in items(d.get("per_client_p95_ms"))),
                   number(d.get("max_client_p95_ms")), mapping(d.get("histogram")))


@dataclass(frozen=True)
class Goal:
    """A request class's latency goal: the share of requests within it, and whether the
    pooled P95 is (MLPerf's rule, on the pooled P95 rather than the largest client's)."""

    name: str
    goal_ms: float
    share_within: float | None
    met: bool

    @classmethod
    def from_dict(cls, d: Any) -> Goal:
        d = mapping(d)
        return cls(text(d.get("name")), number(d.get("goal_ms")) or 0.0,
                   number(d.get("share_within")), bool(d.get("met")))


LATENCIES = ("storage_time", "latency", "queue_wait", "block_read", "block_write")


@dataclass(frozen=True)
class KvFigures:
    """The KV-cache figures of a run over every client. `requests` counts every request
    served, those still in flight at the duration too (every latency figure holds them); the
    rates count those done by then, over the duration (`rate_window_s`; both None in a result
    saved before, whose rates divided every request by the last client's window)."""

    model: str
    bytes_per_token: int | None
    block_bytes: int | None
    load: str
    users_per_client: int | None
    requests: int | None
    requests_per_s: float | None
    requests_in_duration: int | None
    rate_window_s: float | None
    context_tokens: int | None
    generated_tokens: int | None
    tokens_per_s: float | None
    read_bytes_per_request: float | None
    write_bytes_per_request: float | None
    hits: Mapping[str, int | None]
    hit_rate: Mapping[str, float | None]      # gpu, host, storage
    storage_time: LatencyFigures
    latency: LatencyFigures
    queue_wait: LatencyFigures
    block_read: LatencyFigures
    block_write: LatencyFigures
    goals: tuple[Goal, ...]
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        """As saved: the run's in-memory result reads as its JSON will (lists, not tuples)."""
        out = json.loads(json.dumps({f.name: getattr(self, f.name) for f in
                                     dataclasses.fields(self) if f.name != "verdict"},
                                    default=dataclasses.asdict))
        return {**out, "verdict": self.verdict.to_dict()}

    @classmethod
    def from_dict(cls, d: Any) -> KvFigures | None:
        """None when the part is no object (a run of another phase)."""
        if not isinstance(d, Mapping):
            return None
        nums = {k: number(d.get(k)) for k in (
            "requests_per_s", "rate_window_s", "tokens_per_s", "read_bytes_per_request",
            "write_bytes_per_request")}
        counts = {k: count(d.get(k)) for k in (
            "bytes_per_token", "block_bytes", "users_per_client", "requests",
            "requests_in_duration", "context_tokens", "generated_tokens")}
        hit_rate = {**dict.fromkeys(HIT_TIERS),
                    **{str(k): number(v) for k, v in mapping(d.get("hit_rate")).items()}}
        return cls(model=text(d.get("model")), load=text(d.get("load")),
                   hits={str(k): count(v) for k, v in mapping(d.get("hits")).items()},
                   hit_rate=hit_rate,
                   **{k: LatencyFigures.from_dict(d.get(k)) for k in LATENCIES},
                   goals=tuple(Goal.from_dict(g) for g in items(d.get("goals"))),
                   verdict=Verdict.from_dict(d.get("verdict")), **nums, **counts)
