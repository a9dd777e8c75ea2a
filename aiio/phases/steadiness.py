"""Steady or overloaded (docs/METHOD.md, "Steady or overloaded"): a phase whose clients serve
requests or queries records each one's latency by the tenth of the run it arrived in and the
time it waited for a free stream (`SliceLog`); `verdict` judges from those, pooled over every
client, whether the load was one the storage kept up with. The KV-cache and vector phases
judge their runs by the same rule, naming their own unit (request, query); the verdict is
the one class every reader reads back (aiio.results.steadiness).
"""

from __future__ import annotations

import numpy as np

from aiio.results.steadiness import Verdict, word_for
from aiio.stats import Histogram

SLICES = 10  # the run is judged steady or overloaded over this many equal slices
# A run is overloaded when its latency rose through the run: the p50 of each third (the first
# slice left out as warm-up) above the one before, the last RISE times the first and higher by
# more than RISE_FLOOR_S; or when its queue grew: at the end more wait than QUEUE_FLOOR per
# client and QUEUE_SHARE of those served.
RISE, RISE_FLOOR_S = 2.0, 0.010
MIN_THIRD = 8  # arrivals a third needs before its p50 is compared (fewer: no trend judged)
QUEUE_FLOOR, QUEUE_SHARE = 1, 0.10


class SliceLog:
    """Latency by the slice of the run each arrival fell in, and the seconds spent waiting in
    the queue within each slice (its mean depth times its length)."""

    def __init__(self, duration_s: float) -> None:
        self.duration_s = duration_s
        self.slices = [Histogram() for _ in range(SLICES)]
        self.waiting_s = [0.0] * SLICES

    def slice_of(self, t_s: float) -> int:
        return min(SLICES - 1, max(0, int(t_s / self.duration_s * SLICES)))

    def wait(self, arrival_s: float, start_s: float) -> None:
        """Time one waited in the queue, spread over the slices it spans. A wait past the
        duration is no slice's: each slice's mean depth is over its own length, and a run whose
        in-flight work ends late would pile that wait on the last tenth."""
        width = self.duration_s / SLICES
        for i in range(self.slice_of(arrival_s), self.slice_of(start_s) + 1):
            lo, hi = max(arrival_s, i * width), min(start_s, (i + 1) * width)
            if hi > lo:
                self.waiting_s[i] += hi - lo

    def served(self, arrival_s: float, start_s: float, latency_ns: int) -> None:
        """One answered: arrived, begun (after its wait), done `latency_ns` after arriving."""
        self.slices[self.slice_of(arrival_s)].record(latency_ns)
        self.wait(arrival_s, start_s)

    def unserved(self, arrivals_s: np.ndarray, end_s: float) -> int:
        """Those still waiting when the run ended (their arrivals): each one's wait so far
        counts in the queue, and in its slice's latency as a lower bound. At once, not one by
        one: an open loop far past the storage leaves hundreds of thousands. Returns how many."""
        at = np.asarray(arrivals_s, dtype=float)
        end = np.maximum(at, end_s)
        width = self.duration_s / SLICES
        for i in range(SLICES):  # as wait(): within each slice, none past the duration
            lo, hi = np.maximum(at, i * width), np.minimum(end, (i + 1) * width)
            self.waiting_s[i] += float(np.clip(hi - lo, 0, None).sum())
        which = np.clip((at / self.duration_s * SLICES).astype(int), 0, SLICES - 1)
        waited = ((end - at) * 1e9).astype(np.int64)
        for i in range(SLICES):
            self.slices[i].record_many(waited[which == i])
        return int(at.size)

    def merge_slices(self, other: SliceLog) -> None:
        for mine, theirs in zip(self.slices, other.slices, strict=True):
            mine.merge(theirs)
        self.waiting_s = [a + b for a, b in zip(self.waiting_s, other.waiting_s, strict=True)]

    def slices_dict(self) -> dict:
        return {"slices": [h.to_dict() for h in self.slices], "waiting_s": self.waiting_s,
                "duration_s": self.duration_s}

    def load_slices(self, d: dict) -> None:
        self.slices = [Histogram.from_dict(h) for h in d["slices"]]
        self.waiting_s = list(d["waiting_s"])


def rule(noun: str = "request", nouns: str = "requests") -> str:
    """The rule in words, for a load of `nouns`."""
    return (f"overloaded when {noun} latency (p50, by arrival) rose through the run: each third "
            f"(the first tenth left out) above the one before, the last {RISE:g}x the first "
            f"and {RISE_FLOOR_S * 1e3:g} ms higher (each third of {MIN_THIRD} {nouns} or "
            f"more); or when more {nouns} wait at the end than {QUEUE_FLOOR} per client and "
            f"{QUEUE_SHARE:.0%} of those served; not judged when neither holds, a third has "
            f"fewer than {MIN_THIRD} {nouns} and (a queue's load) a third none")


def verdict(slices: list[Histogram], waiting_s: list[float], waiting_at_end: int,
            served: int, clients: int, duration_s: float, queued: bool = True,
            noun: str = "request", nouns: str = "requests") -> Verdict:
    """Judge stationarity from the pooled slices; `queued`: the load has a queue (open loop,
    trace), which a closed loop has not."""
    p50 = tuple(h.percentile(50) / 1e6 if h.count else None for h in slices)
    width = duration_s / SLICES
    depth = tuple(w / width / clients for w in waiting_s)
    thirds = [_pooled(slices[1:4]), _pooled(slices[4:7]), _pooled(slices[7:])]
    evidence = []
    trend = all(h.count >= MIN_THIRD for h in thirds)
    if trend:
        a, m, b = (h.percentile(50) / 1e9 for h in thirds)
        if a < m < b and b > RISE * a and b - a > RISE_FLOOR_S:
            evidence.append(f"{noun} latency p50 rose through the run: {a * 1e3:.1f}, "
                            f"{m * 1e3:.1f}, {b * 1e3:.1f} ms by third")
    if waiting_at_end > max(QUEUE_FLOOR * clients, QUEUE_SHARE * served):
        evidence.append(f"{waiting_at_end} {nouns} still waited at the end "
                        f"({served} served); the queue held {depth[0]:.1f} per client in the "
                        f"first tenth, {depth[-1]:.1f} in the last")
    overloaded = bool(evidence)
    # a queue judges a run that arrivals came all through: one that stayed empty is steady
    judged = overloaded or trend or queued and all(h.count for h in thirds)
    if not judged:
        # one longer than the run, or a slow trickle: no p50 by third to compare
        evidence.append(f"too few {nouns}: " + ", ".join(
            str(h.count) for h in thirds) + f" arrived by third (each needs {MIN_THIRD})")
    return Verdict(overloaded, judged, rule(noun, nouns), tuple(evidence), p50, depth,
                   waiting_at_end, width, word_for(overloaded, judged))


def _pooled(hists: list[Histogram]) -> Histogram:
    out = Histogram()
    for h in hists:
        out.merge(h)
    return out
