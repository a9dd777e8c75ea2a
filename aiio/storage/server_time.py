"""When each server of a volume was busy, and when clients shared one while another idled.

A client notes every read (or write) it does on a file whose server is known: the bytes, and
the span of time it took, merged with the client's earlier spans on that server (`ServerTally`).
After the run the spans of every client are put together (`server_times`): a server was busy
while any client had a span on it; clients collided while one server had two or more of them
and another server had none.

A client that keeps too many spans merges them over a wider gap (`MAX_SPANS`): the time it
merged over is counted as `blurred_s`. A client that hops between servers faster than that
gap seems busy on all of them at once, so where the clients' blur is a material share of the
window, the time collided is not known (None), never a figure blur brought down to 0.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Two spans of one client on one server this close are one: the moment between two reads of
# one client (opening the next file) is not time the server had nothing of it to do.
GAP_S = 0.002
# Spans a client keeps over all servers; past it the gap doubles and they are merged again,
# so a long run's result stays small (its resolution recorded as `gap_s`).
MAX_SPANS = 1_000
DIGITS = 4  # seconds kept to 0.1 ms in the result
# Merging one client's spans over a wider gap moves the time collided by at most the time it
# added to them: past this share of the window, the time collided is not known.
BLUR = 0.05


class ServerTally:
    """One client's bytes and spans of time per server, fed by its I/O threads."""

    def __init__(self, client: int, of_file: Sequence[int], servers: int) -> None:
        self.client, self.of_file = client, of_file
        self.bytes = [0] * servers
        self.spans: list[list[list[float]]] = [[] for _ in range(servers)]
        self.gap_s = GAP_S
        self.start_ns = 0  # the run's common start: spans count from it
        self.blurred_s = 0.0  # time the wider gaps added to the spans: none of the reads'
        self._count = 0
        self._lock = threading.Lock()

    def add(self, file: int, nbytes: int, began_ns: int, ended_ns: int) -> None:
        """One I/O of `nbytes` on file `file`, from `began_ns` to `ended_ns`."""
        server = self.of_file[file]
        span = [(began_ns - self.start_ns) / 1e9, (ended_ns - self.start_ns) / 1e9]
        with self._lock:
            self.bytes[server] += nbytes
            spans = self.spans[server]
            spans.append(span)
            merged, hole = _merge_tail(spans, self.gap_s)
            self._count += 1 - merged
            if hole > GAP_S:  # a hole only the wider gap fills: blur
                self.blurred_s += hole
            if self._count > MAX_SPANS:
                self._coarsen()

    def _coarsen(self) -> None:
        while self._count > MAX_SPANS // 2:
            self.gap_s *= 2
            before = sum(_length(s) for s in self.spans)
            self.spans = [_union(s, self.gap_s) for s in self.spans]
            self.blurred_s += sum(_length(s) for s in self.spans) - before
            self._count = sum(len(s) for s in self.spans)

    def to_dict(self) -> dict[str, Any]:
        return {"client": self.client, "bytes": list(self.bytes), "gap_s": self.gap_s,
                "blurred_s": round(self.blurred_s, DIGITS),
                "spans": [[[round(a, DIGITS), round(b, DIGITS)] for a, b in s]
                          for s in self.spans]}


def _merge_tail(spans: list[list[float]], gap: float) -> tuple[int, float]:
    """Merge the last span into those before it that it touches (a span may end after a later
    one began: threads finish out of order); how many merged, and the widest hole between
    them it filled."""
    merged, hole = 0, 0.0
    while len(spans) > 1 and spans[-1][0] <= spans[-2][1] + gap and \
            spans[-2][0] <= spans[-1][1] + gap:
        last = spans.pop()
        hole = max(hole, last[0] - spans[-1][1], spans[-1][0] - last[1])
        spans[-1] = [min(last[0], spans[-1][0]), max(last[1], spans[-1][1])]
        merged += 1
    return merged, hole


def _union(spans: Sequence[Sequence[float]], gap: float = 0.0) -> list[list[float]]:
    """The spans merged where they overlap (or lie within `gap`), in time order."""
    out: list[list[float]] = []
    for a, b in sorted((float(a), float(b)) for a, b in spans):
        if out and a <= out[-1][1] + gap:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _length(spans: Sequence[Sequence[float]]) -> float:
    """The time the spans cover."""
    return sum(b - a for a, b in _union(spans))


@dataclass(frozen=True)
class ServerTimes:
    """Over every client: each server's time busy, the time clients collided (None: not
    known, the clients' spans blurred too much), the window, the coarsest gap, the blur."""

    busy_s: tuple[float, ...]
    collided_s: float | None
    window_s: float
    gap_s: float
    blurred_s: float = 0.0


def server_times(loads: Sequence[Mapping[str, Any]], servers: int) -> ServerTimes:
    """Busy and collided time from the clients' tallies (`ServerTally.to_dict`)."""
    events: list[tuple[float, int, int]] = []
    per_server: list[list[list[float]]] = [[] for _ in range(servers)]
    for load in loads:
        for s, spans in enumerate(load["spans"]):
            for a, b in _union(spans):
                events += [(a, 1, s), (b, -1, s)]
                per_server[s].append([a, b])
    busy = tuple(_length(spans) for spans in per_server)
    window = max((t for t, _, _ in events), default=0.0)
    gap = max((float(load.get("gap_s", GAP_S)) for load in loads), default=GAP_S)
    blurred = sum(float(load.get("blurred_s", 0.0)) for load in loads)
    # one client, or one server, never collides: its blur hides nothing
    alone = len(loads) < 2 or servers < 2
    collided = _collided(events, servers) if alone or blurred < BLUR * window else None
    return ServerTimes(busy, collided, window, gap, blurred)


def _collided(events: list[tuple[float, int, int]], servers: int) -> float:
    """Time during which a server had two or more clients while another had none."""
    count = [0] * servers
    idle, shared, total, last = servers, 0, 0.0, 0.0
    for t, step, s in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts
        if shared and idle:
            total += t - last
        last = t
        before = count[s]
        count[s] += step
        idle += (count[s] == 0) - (before == 0)
        shared += (count[s] >= 2) - (before >= 2)
    return total
