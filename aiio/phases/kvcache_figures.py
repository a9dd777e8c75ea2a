"""The KV-cache phase's own figures (docs/METHOD.md, "KV cache"): what each user records of
its requests (`RequestLog`, merged over a client's users and sent as a dict), and the
aggregate over every client (`aggregate`), built as the one class every reader reads back
(aiio.results.kvcache.KvFigures, serialised once by `to_dict`).

Latencies are the project's log-linear histograms, so they pool over users, clients and hosts
by addition: the pooled percentiles are percentiles of every request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aiio.phases import rates
from aiio.phases.kvcache_tiers import TIERS
from aiio.phases.steadiness import SliceLog, verdict
from aiio.results.kvcache import Goal, KvFigures, LatencyFigures
from aiio.stats import Histogram

HISTS = ("storage", "latency", "queue", "block_read", "block_write")


class RequestLog(SliceLog):
    """One user's (or, merged, one client's) requests, and their latency by slice of arrival
    (`SliceLog`), which judges the run steady or overloaded."""

    def __init__(self, start_ns: int, duration_s: float, goals: Mapping[str, float]) -> None:
        super().__init__(duration_s)
        self.start_ns = start_ns
        self.goals = dict(goals)
        self.hist = {name: Histogram() for name in HISTS}
        self.hits = dict.fromkeys(TIERS, 0)
        self.within = dict.fromkeys(self.goals, 0)
        self.counts = {"requests": 0, "context_tokens": 0, "generated_tokens": 0,
                       "read_bytes": 0, "write_bytes": 0, "blocks_read": 0,
                       "blocks_written": 0, "waiting_at_end": 0,
                       # served by the duration: what the rates count (aggregate)
                       "requests_in_duration": 0, "tokens_in_duration": 0}

    def request(self, arrival_ns: int, start_ns: int, storage_ns: int, context: int,
                generation: int, done_ns: int) -> None:
        """One served request: queued from arrival to start, then `storage_ns` in storage,
        done at `done_ns`."""
        if rates.done_within(done_ns, self.start_ns, self.duration_s):
            self.counts["requests_in_duration"] += 1
            self.counts["tokens_in_duration"] += context + generation
        queue_ns = start_ns - arrival_ns
        latency = queue_ns + storage_ns
        for name, ns in (("storage", storage_ns), ("latency", latency), ("queue", queue_ns)):
            self.hist[name].record(ns)
        self.served(self._s(arrival_ns), self._s(start_ns), latency)
        for name, goal in self.goals.items():
            self.within[name] += latency <= goal * 1e9
        c = self.counts
        c["requests"] += 1
        c["context_tokens"] += context
        c["generated_tokens"] += generation

    def unserved(self, arrivals_s: np.ndarray, end_s: float) -> int:
        """Requests still waiting when the run ended; none is a served request."""
        n = super().unserved(arrivals_s, end_s)
        self.counts["waiting_at_end"] += n
        return n

    def _s(self, ns: int) -> float:
        return (ns - self.start_ns) / 1e9

    def merge(self, other: RequestLog) -> RequestLog:
        for name in HISTS:
            self.hist[name].merge(other.hist[name])
        self.merge_slices(other)
        for own, more in ((self.hits, other.hits), (self.within, other.within),
                          (self.counts, other.counts)):
            for k, v in more.items():
                own[k] += v
        return self

    def to_dict(self) -> dict[str, Any]:
        return {"histograms": {k: h.to_dict() for k, h in self.hist.items()},
                **self.slices_dict(), "hits": self.hits, "within": self.within,
                **self.counts}


def client_logs(clients: list[dict]) -> list[RequestLog]:
    """Each client's merged request log, back from its dict."""
    return [from_dict(c["kvcache"]) for c in clients]


def from_dict(d: Mapping[str, Any]) -> RequestLog:
    log = RequestLog(0, d["duration_s"], dict.fromkeys(d["within"], 0.0))
    log.hist = {k: Histogram.from_dict(v) for k, v in d["histograms"].items()}
    log.load_slices(d)
    log.hits, log.within = dict(d["hits"]), dict(d["within"])
    log.counts = {k: d[k] for k in log.counts}
    return log


@dataclass(frozen=True)
class RunShape:
    """What the figures need to know of the run besides its clients' logs."""

    model: str
    bytes_per_token: int
    block_bytes: int
    load: str
    users: int
    goals: Mapping[str, float]
    duration_s: float
    elapsed_s: float  # the last client's window


def aggregate(shape: RunShape, logs: list[RequestLog]) -> KvFigures:
    total = RequestLog(0, logs[0].duration_s, shape.goals)
    for log in logs:
        total.merge(log)
    c, served = total.counts, total.counts["requests"]
    seen = sum(total.hits.values())
    lat = {name: LatencyFigures.of([log.hist[name] for log in logs]) for name in HISTS}
    goals = tuple(Goal(name, goal * 1e3, total.within[name] / served if served else 0.0,
                       lat["latency"].pooled.p95_ms is not None
                       and lat["latency"].pooled.p95_ms <= goal * 1e3)
                  for name, goal in shape.goals.items())
    # requests still in flight at the duration's end were offered by the run, but the time
    # they took after it is a drain with no load offered (aiio.phases.rates)
    window = rates.window(shape.duration_s, shape.elapsed_s)
    done = c["requests_in_duration"]
    return KvFigures(
        shape.model, shape.bytes_per_token, shape.block_bytes, shape.load, shape.users, served,
        rates.per_s(done, window), done, window,
        c["context_tokens"], c["generated_tokens"],
        rates.per_s(c["tokens_in_duration"], window),
        c["read_bytes"] / served if served else 0.0,
        c["write_bytes"] / served if served else 0.0,
        dict(total.hits), {k: v / seen if seen else 0.0 for k, v in total.hits.items()},
        lat["storage"], lat["latency"], lat["queue"], lat["block_read"], lat["block_write"],
        goals, verdict(total.slices, total.waiting_s, c["waiting_at_end"], served, len(logs),
                       total.duration_s, shape.load != "closed"))
