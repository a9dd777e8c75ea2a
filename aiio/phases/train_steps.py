"""One client's accelerator steps, kept as running sums: totals stay exact at any run length
while memory stays bounded (the step log for timelines is capped and never summed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aiio.stats import Buckets, ByteSeries, room_for


class BusySeries(Buckets):
    """Seconds of emulated compute per time bucket since the common start; a step that spans
    bucket edges is split exactly across them. Same bucket width as the byte series."""

    __slots__ = ("_sec",)

    def __init__(self, bucket_s: float = 0.1) -> None:
        super().__init__(bucket_s)
        self._sec = np.zeros(64, dtype=np.float64)

    def _grow(self, n: int) -> None:
        self._sec = room_for(self._sec, self._n, n)
        self._n = max(self._n, n)

    def add(self, t0_s: float, t1_s: float) -> None:
        """Count [t0_s, t1_s) as busy."""
        if t1_s <= t0_s:
            return
        b = self.bucket_s
        first, last = int(t0_s / b), int(t1_s / b)
        self._grow(last + 1)
        for i in range(first, last + 1):
            self._sec[i] += max(0.0, min(t1_s, (i + 1) * b) - max(t0_s, i * b))

    @property
    def total(self) -> float:
        return float(self._sec[: self._n].sum())

    def seconds_between(self, s: float, e: float) -> float:
        """Busy seconds in [s, e): exact at bucket edges, linear inside a bucket."""
        edges = np.arange(self._n + 1, dtype=np.float64) * self.bucket_s
        cum = np.concatenate(([0.0], np.cumsum(self._sec[: self._n])))
        lo, hi = np.interp([s, e], edges, cum)
        return float(max(hi - lo, 0.0))

    def to_dict(self) -> dict[str, Any]:
        return {"bucket_s": self.bucket_s, "seconds": self._sec[: self._n].tolist()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BusySeries:
        s = cls(d["bucket_s"])
        data = np.asarray(d["seconds"], dtype=np.float64)
        s._grow(len(data))
        s._sec[: len(data)] = data
        return s


class StepTotals:
    """Running sums of one client's steps. Warm-up is the first step the client consumes in
    each epoch, whichever batch that is (DLIO's metric_exclude_start_steps = 1)."""

    def __init__(self, bucket_s: float, log_cap: int, in_flight: int,
                 computes: bool = True) -> None:
        self.steps = self.measured = self.samples = self.consumed_bytes = 0
        self.compute_s = self.wait_s = 0.0   # over measured steps
        self.warmup_wait_s = 0.0
        self.compute_all_s = 0.0             # every step's, warm-up included
        self.epochs = 0
        self.busy = BusySeries(bucket_s)        # every step's compute, warm-up included
        self.consumed = ByteSeries(bucket_s)    # sample bytes, from each batch's read to its take
        # The end of the accelerator's last step (its checkpoint included), s since the start,
        # and what its loader threads held partly read then (device bytes): its consumed
        # window and what that window cannot count (see `close_step`).
        self.consumed_end_s = 0.0
        self.partly_read_bytes = 0
        self.queued_bytes = 0
        self.log: list[list] = []
        self.log_cap = max(2, log_cap)
        self.log_stride = 1  # the log holds the steps whose index is a multiple of it
        # With compute time 0 the loop's own overhead is no compute: the busy series stays empty.
        self.computes = computes
        # Batches are read ahead at most `in_flight` deep, so an epoch older than that many
        # epochs behind the newest can no longer show up: forget it (memory stays bounded).
        self._keep = in_flight + 1
        self._seen: set[int] = set()

    def _first_in_epoch(self, epoch: int) -> bool:
        if epoch in self._seen:
            return False
        self._seen.add(epoch)
        self.epochs += 1
        if len(self._seen) > self._keep:
            self._seen.discard(min(self._seen))
        return True

    def record(self, epoch: int, step: int, t0: float, t1: float, t2: float, samples: int,
               nbytes: int, read_s: float | None = None) -> None:
        """One step: waited t0..t1 for its batch, computed t1..t2 (seconds since the start);
        its loader began reading the batch at `read_s` (None: when the wait began)."""
        self.steps += 1
        self.samples += samples
        self.consumed_bytes += nbytes
        self._spread(min(t0 if read_s is None else max(read_s, 0.0), t1), t1, nbytes)
        self.compute_all_s += t2 - t1
        if self.computes:
            self.busy.add(t1, t2)
        if self._first_in_epoch(epoch):
            self.warmup_wait_s += t1 - t0
        else:
            self.measured += 1
            self.compute_s += t2 - t1
            self.wait_s += t1 - t0
        if (self.steps - 1) % self.log_stride:
            return
        if len(self.log) >= self.log_cap:
            # Full: keep every other record and log every other step from now on, so the log
            # stays an even sample of the whole run (a chart of waits over time then spans the
            # run, not its first part) in at most log_cap records. Only when a record would
            # not fit: thinning on reaching the cap left a client half its share.
            del self.log[1::2]
            self.log_stride *= 2
            if (self.steps - 1) % self.log_stride:
                return
        self.log.append([epoch, step, round(t0, 6), round(t1 - t0, 6), round(t2 - t1, 6),
                         samples])

    def _spread(self, start: float, end: float, nbytes: int) -> None:
        """Count a batch's bytes evenly over start..end: from the moment its loader began reading
        it to the moment the accelerator took it. Taken at one instant, a batch of tens of
        MiB made consumed bytes a staircase: a window cut between two steps (another
        client's first-done end) missed up to a batch per client, and with several loader
        threads a batch is read over more than one step. At every step's end the series
        holds exactly the bytes of the batches taken so far, and it never holds a byte of a
        batch no accelerator took."""
        b = self.consumed.bucket_s
        first, last = int(start / b), int(end / b)
        if last == first or nbytes == 0:
            self.consumed.add(start, nbytes)
            return
        edges = [start, *(i * b for i in range(first + 1, last + 1)), end]
        given = 0
        for i, edge in enumerate(edges[1:], start=first):
            # cumulative rounding: the pieces add up to nbytes exactly
            upto = round(nbytes * (edge - start) / (end - start))
            self.consumed.add((i + 0.5) * b, upto - given)
            given = upto

    def close_step(self, end_s: float, partly_read: int, queued: int = 0) -> None:
        """The accelerator finished a step (and any checkpoint after it) at `end_s`; its
        loaders held `partly_read` device bytes of batches not yet whole and `queued` sample
        bytes of whole batches not yet taken. The client's
        consumed window ends at its last such instant: a wait the deadline cut short took no
        batch, and counting it made a run of large batches read as low as 0 MiB/s."""
        self.consumed_end_s = end_s
        self.partly_read_bytes = partly_read
        self.queued_bytes = queued

    def au(self, compute_asked_s: float, batch_size: int) -> tuple[float | None, str | None]:
        """AU over measured steps, or None and why it cannot be given."""
        if compute_asked_s <= 0:
            return None, ("compute time is 0 s per batch: AU is not meaningful (the emulated "
                          "accelerator never computes, so it only waits for data)")
        if self.measured == 0:
            return None, (f"not measurable: each of this client's {self.steps} step(s) was the "
                          "first of its epoch (warm-up, excluded); it needs at least "
                          f"{batch_size + 1} samples per epoch for a measured step")
        wall = self.compute_s + self.wait_s
        return (self.compute_s / wall if wall > 0 else None), None

    def figures(self, compute_asked_s: float, batch_size: int) -> dict[str, Any]:
        au, note = self.au(compute_asked_s, batch_size)
        out = {
            "steps": self.steps, "measured_steps": self.measured, "samples": self.samples,
            "epochs": self.epochs, "compute_s": self.compute_s, "wait_s": self.wait_s,
            "warmup_wait_s": self.warmup_wait_s, "compute_all_s": self.compute_all_s, "au": au,
            "consumed_bytes": self.consumed_bytes, "consumed_series": self.consumed.to_dict(),
            "consumed_elapsed_s": self.consumed_end_s,
            "partly_read_bytes": self.partly_read_bytes, "queued_bytes": self.queued_bytes,
            "busy": self.busy.to_dict(), "step_log": self.log,
            "step_log_stride": self.log_stride,
        }
        if note:
            out["au_note"] = note
        return out
