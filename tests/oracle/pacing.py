"""The two limits of the rate-limited filesystem: a rate per open stream and a global cap.

Each limit is a clock of the earliest time its next byte may finish. A request of n bytes
moves its stream's clock by n / stream rate and the shared clock by n / cap, each from no
earlier than now minus a small slack, and completes when both have passed. So one stream alone
gets the stream rate, N streams get min(N x stream rate, cap). The slack (a token bucket's
depth) absorbs the time a client takes between requests; without it every request would pay
that gap on top of its own time and a busy stream would fall short of its rate. Over any
interval T a limit passes at most rate x (T + SLACK) bytes.
"""

from __future__ import annotations

import threading
import time

SLACK = 0.02  # seconds of idle time a limit may bank as credit


class Pacer:
    """One limit: `rate` bytes/s (0 means no limit)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.free_at = time.monotonic()  # a new stream starts with no credit
        self.lock = threading.Lock()

    def reserve(self, nbytes: int, now: float) -> float:
        """Book `nbytes`; returns the monotonic time at which they may complete."""
        if self.rate <= 0:
            return now
        with self.lock:
            self.free_at = max(now - SLACK, self.free_at) + nbytes / self.rate
            return self.free_at


class Limits:
    """The per-stream rate and the global cap for one direction (reads or writes), and a
    burst: the first `burst_bytes` pass the cap untouched, as a cloud volume's burst credits
    or a drive's SLC or write-back cache let the first second through fast."""

    def __init__(self, stream_bps: float, cap_bps: float, burst_bytes: float = 0) -> None:
        self.stream_bps = stream_bps
        self.cap = Pacer(cap_bps)
        self.burst_left = burst_bytes
        self.burst_lock = threading.Lock()

    def _in_burst(self, nbytes: int) -> bool:
        """Take nbytes from the burst when it still holds them."""
        with self.burst_lock:
            if self.burst_left < nbytes:
                return False
            self.burst_left -= nbytes
            return True

    def new_stream(self) -> Pacer:
        return Pacer(self.stream_bps)

    def wait(self, stream: Pacer, nbytes: int) -> None:
        """Block until `nbytes` on `stream` are allowed by both limits."""
        now = time.monotonic()
        capped = now if self._in_burst(nbytes) else self.cap.reserve(nbytes, now)
        done = max(stream.reserve(nbytes, now), capped)
        delay = done - time.monotonic()
        if delay > 0:
            time.sleep(delay)
