"""Latency histograms, byte time series, per-client summaries, fairness and scaling (numpy only).

Everything here is mergeable or computed from per-client numbers (DESIGN.md rules 4-6): the
engine records, clients merge, and reports read results; nothing in this module measures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from aiio.units import MiB, mib_per_s

# Histogram layout, as in fio's stat.c (FIO_IO_U_PLAT_BITS = 6, plat_val_to_idx).
BITS = 6
SUBBUCKETS = 1 << BITS  # 64 linear sub-buckets per power of two
MAX_MSB = 43  # highest set bit kept exactly: values up to 2**44 - 1 ns (~4.9 h)
CLAMP_NS = (1 << (MAX_MSB + 1)) - 1
NBUCKETS = (MAX_MSB - BITS + 2) * SUBBUCKETS  # 2496: 128 exact buckets + 37 groups of 64
# Strict upper bound on |reported - true| / true for any value up to CLAMP_NS.
REL_ERROR_BOUND = 1 / (2 * SUBBUCKETS)


def _bucket_layout() -> tuple[np.ndarray, np.ndarray]:
    """Lower edge and width (ns) of every bucket."""
    idx = np.arange(NBUCKETS, dtype=np.int64)
    shift = np.maximum(idx // SUBBUCKETS - 1, 0)
    low = (idx - shift * SUBBUCKETS) << shift
    return low, np.left_shift(1, shift)


_LOW, _WIDTH = _bucket_layout()
# The midpoint of the integers a bucket holds: exact for the width-1 buckets below 128 ns.
_MID = _LOW + (_WIDTH - 1) / 2.0


def bucket_index(ns: int) -> int:
    """Bucket of one value in ns (fio's plat_val_to_idx); values past CLAMP_NS go to the last."""
    v = min(int(ns), CLAMP_NS)
    if v < 2 * SUBBUCKETS:
        return v
    shift = v.bit_length() - 1 - BITS
    return shift * SUBBUCKETS + (v >> shift)


def bucket_indices(values: np.ndarray) -> np.ndarray:
    """Vectorized bucket_index over an int64 array."""
    v = np.minimum(values, CLAMP_NS)
    # The highest set bit is the float64 exponent, exact because every clamped value is below
    # 2**53; reading it from the bits (in place) is twice as fast as np.frexp on the hot path.
    shift = v.astype(np.float64).view(np.int64)
    shift >>= 52
    shift -= 1023 + BITS
    np.maximum(shift, 0, out=shift)  # below 128 ns (and 0, exponent -1023) there is no shift
    idx = v >> shift
    shift <<= BITS
    idx += shift
    return idx


class Histogram:
    """Log-linear latency histogram in ns, mergeable by addition (fio's layout, 6 bits).

    Values below 128 ns are kept exactly; above, each power of two [2^m, 2^(m+1)) is split into
    64 linear buckets of width 2^(m-6). A percentile is reported as its bucket's midpoint, so it
    is within half a bucket width over the lower edge, 2^(m-6) / 2 / 2^m = 1/128 (0.78 %), of the
    true order statistic, and it is further clamped into the exact [min, max]. Values up to
    2^44 - 1 ns (~4.9 h) are covered; larger ones are counted in the last bucket (their max and
    sum stay exact, their percentiles do not). Negative values are refused.
    """

    __slots__ = ("counts", "_count", "_min", "_max", "_sum")

    def __init__(self) -> None:
        self.counts = np.zeros(NBUCKETS, dtype=np.int64)
        self._count = 0
        self._min = 0
        self._max = 0
        self._sum = 0  # a Python int: a long run's total ns can outgrow int64

    def record(self, ns: int) -> None:
        """Add one latency in ns."""
        ns = int(ns)
        if ns < 0:
            raise ValueError(f"latency must be >= 0 ns, got {ns}")
        self.counts[bucket_index(ns)] += 1
        self._note(1, ns, ns, ns)

    def record_many(self, values: Any) -> None:
        """Add a batch of latencies in ns (an int64 array, or an array.array of ints)."""
        v = np.asarray(values, dtype=np.int64).ravel()
        if v.size == 0:
            return
        lo, hi = int(v.min()), int(v.max())
        if lo < 0:
            raise ValueError(f"latency must be >= 0 ns, got {lo}")
        self.counts += np.bincount(bucket_indices(v), minlength=NBUCKETS)
        self._note(int(v.size), lo, hi, int(v.sum(dtype=np.int64)))

    def _note(self, n: int, lo: int, hi: int, total: int) -> None:
        """Fold a batch's count, min, max and sum into the exact statistics."""
        if self._count == 0:
            self._min, self._max = lo, hi
        else:
            self._min, self._max = min(self._min, lo), max(self._max, hi)
        self._count += n
        self._sum += total

    def merge(self, other: Histogram) -> Histogram:
        """Add other's counts into this histogram; returns self."""
        if not isinstance(other, Histogram):
            raise TypeError(f"cannot merge {type(other).__name__} into a Histogram")
        if other._count:
            self.counts += other.counts
            self._note(other._count, other._min, other._max, other._sum)
        return self

    def copy(self) -> Histogram:
        """An independent copy."""
        return Histogram().merge(self)

    def __add__(self, other: Histogram) -> Histogram:
        return self.copy().merge(other)

    def __radd__(self, other: object) -> Histogram:
        # Lets the builtin sum() start from 0.
        if other == 0:
            return self.copy()
        return NotImplemented

    def __iadd__(self, other: Histogram) -> Histogram:
        return self.merge(other)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Histogram):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        p50 = self.percentile(50)
        return f"Histogram(count={self._count}, p50_ns={p50:.0f}, max_ns={self._max})"

    @property
    def count(self) -> int:
        """Number of values recorded."""
        return self._count

    @property
    def min(self) -> int:
        """Smallest value in ns (exact; 0 when empty)."""
        return self._min

    @property
    def max(self) -> int:
        """Largest value in ns (exact; 0 when empty)."""
        return self._max

    @property
    def sum(self) -> int:
        """Sum of all values in ns (exact)."""
        return self._sum

    @property
    def mean(self) -> float:
        """Exact mean in ns; 0.0 when empty."""
        return self._sum / self._count if self._count else 0.0

    def percentiles(self, ps: Iterable[float] = (50, 90, 99, 99.9)) -> dict[str, float]:
        """Several percentiles in ns, keyed 'p50', 'p99.9', ... (see percentile)."""
        ps = list(ps)
        for p in ps:
            if not 0 <= p <= 100:
                raise ValueError(f"percentile must be within 0..100, got {p}")
        if self._count == 0:
            return {f"p{p:g}": 0.0 for p in ps}
        cum = np.cumsum(self.counts)
        return {f"p{p:g}": self._at(p, cum) for p in ps}

    def percentile(self, p: float) -> float:
        """The p-th percentile (0..100) in ns: bucket midpoint; p=0/100 give exact min/max."""
        return self.percentiles((p,))[f"p{p:g}"]

    def _at(self, p: float, cum: np.ndarray) -> float:
        """Percentile p from the cumulative counts (the histogram is not empty)."""
        if p == 0:
            return float(self._min)
        if p == 100:
            return float(self._max)
        # Nearest rank; rounding strips float noise such as 99.9 * 1000 / 100 = 999.0000000001.
        rank = max(1, math.ceil(round(p * self._count / 100, 9)))
        idx = int(np.searchsorted(cum, rank, side="left"))
        return float(min(max(_MID[idx], self._min), self._max))

    def summary(self) -> dict[str, float | None]:
        """count, min, mean, p50, p90, p99, p99.9 and max, in ns; with no value recorded every
        latency is None (a percentile of nothing is no figure, and never 0 ns)."""
        if self._count == 0:
            return {"count": 0, **{k: None for k in ("min_ns", "mean_ns", "p50_ns", "p90_ns",
                                                     "p99_ns", "p999_ns", "max_ns")}}
        pct = self.percentiles((50, 90, 99, 99.9))
        return {
            "count": self._count,
            "min_ns": float(self._min),
            "mean_ns": self.mean,
            "p50_ns": pct["p50"],
            "p90_ns": pct["p90"],
            "p99_ns": pct["p99"],
            "p999_ns": pct["p99.9"],
            "max_ns": float(self._max),
        }

    def nonzero(self) -> list[tuple[float, float, int]]:
        """(low_ns, high_ns, count) for every non-empty bucket, low inclusive, high exclusive."""
        idx = np.flatnonzero(self.counts)
        return [(float(_LOW[i]), float(_LOW[i] + _WIDTH[i]), int(self.counts[i])) for i in idx]

    def to_dict(self) -> dict[str, Any]:
        """Sparse, JSON-safe form: bucket indices as string keys."""
        idx = np.flatnonzero(self.counts)
        return {
            "bits": BITS,
            "buckets": {str(int(i)): int(self.counts[i]) for i in idx},
            "count": self._count,
            "min": self._min,
            "max": self._max,
            "sum": self._sum,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Histogram:
        """Rebuild from to_dict() output (string or int bucket keys); checks it is consistent."""
        if d.get("bits") != BITS:
            raise ValueError(f"histogram has bits={d.get('bits')!r}; only {BITS} is supported")
        h = cls()
        for key, n in d["buckets"].items():
            i = int(key)
            if not 0 <= i < NBUCKETS or int(n) < 0:
                raise ValueError(f"bad histogram bucket {key!r}: {n!r}")
            h.counts[i] = int(n)
        h._count, h._min, h._max, h._sum = (int(d[k]) for k in ("count", "min", "max", "sum"))
        held = int(h.counts.sum())
        if held != h._count:
            raise ValueError(f"histogram buckets hold {held} values but count says {h._count}")
        return h


def room_for(buckets: np.ndarray, used: int, n: int) -> np.ndarray:
    """`buckets` with room for n, its first `used` kept: doubled when it grows, so appends
    stay amortized O(1)."""
    if n <= len(buckets):
        return buckets
    bigger = np.zeros(max(n, 2 * len(buckets)), dtype=buckets.dtype)
    bigger[:used] = buckets[:used]
    return bigger


class Buckets:
    """Time buckets of one width since a start, of which the first `_n` are in use; the
    series built on it keep their figures per bucket in an array that grows (`room_for`)."""

    __slots__ = ("bucket_s", "_n")

    def __init__(self, bucket_s: float) -> None:
        if not bucket_s > 0:
            raise ValueError(f"bucket_s must be > 0, got {bucket_s}")
        self.bucket_s = float(bucket_s)
        self._n = 0  # buckets in use; the array beyond is spare capacity


class ByteSeries(Buckets):
    """Bytes completed per fixed time bucket since a client's start; grows as needed."""

    __slots__ = ("_bytes",)

    def __init__(self, bucket_s: float = 0.1) -> None:
        super().__init__(bucket_s)
        self._bytes = np.zeros(64, dtype=np.int64)

    def _grow(self, n: int) -> None:
        self._bytes = room_for(self._bytes, self._n, n)
        self._n = max(self._n, n)

    def add(self, t_s: float, nbytes: int) -> None:
        """Count nbytes as completed at t_s seconds after the start."""
        if not t_s >= 0:
            raise ValueError(f"time must be >= 0 s, got {t_s}")
        i = int(t_s / self.bucket_s)
        self._grow(i + 1)
        self._bytes[i] += int(nbytes)

    def add_many(self, times_s: np.ndarray, nbytes: np.ndarray) -> None:
        """Vectorized add: completion times in s and bytes, one pair per operation."""
        t = np.asarray(times_s, dtype=np.float64).ravel()
        b = np.asarray(nbytes, dtype=np.int64).ravel()
        if t.shape != b.shape:
            raise ValueError(f"{t.size} times but {b.size} byte counts")
        if t.size == 0:
            return
        if not t.min() >= 0:
            raise ValueError(f"time must be >= 0 s, got {t.min()}")
        idx = (t / self.bucket_s).astype(np.int64)
        n = int(idx.max()) + 1
        self._grow(n)
        np.add.at(self._bytes, idx, b)

    @property
    def total(self) -> int:
        """All bytes recorded."""
        return int(self._bytes[: self._n].sum())

    @property
    def end_s(self) -> float:
        """End of the last bucket in use, s."""
        return self._n * self.bucket_s

    def buckets(self) -> np.ndarray:
        """Bytes per bucket in use (a copy)."""
        return self._bytes[: self._n].copy()

    def _cumulative(self, t_s: Any, end_s: float | None = None) -> np.ndarray:
        """Bytes completed by each time in t_s, linear inside a bucket. With end_s, the
        instant the client made its last call, the last bucket's bytes are spread over the
        part of it the client ran: a client ending 5 ms into a 0.1 s bucket completed all of
        that bucket's bytes in those 5 ms, not a twentieth of them."""
        edges = np.arange(self._n + 1, dtype=np.float64) * self.bucket_s
        if self._n and end_s is not None and edges[-2] < end_s < edges[-1]:
            edges[-1] = end_s
        cum = np.concatenate(([0.0], np.cumsum(self._bytes[: self._n], dtype=np.float64)))
        return np.interp(t_s, edges, cum)

    def bytes_before(self, t_s: float, end_s: float | None = None) -> float:
        """Bytes completed by t_s, interpolated linearly inside its bucket; end_s, when
        known, is the client's end, which bounds its last bucket (see `_cumulative`)."""
        return float(self._cumulative(float(t_s), end_s))

    def per_second(self, end_s: float | None = None) -> list[float]:
        """MiB/s in each second; with end_s the last partial second is divided by its length."""
        if end_s is None:
            # The guard keeps 30 * 0.1 = 3.0000000000000004 from growing a fourth second.
            edges = np.arange(math.ceil(self.end_s - 1e-9) + 1, dtype=np.float64)
        else:
            if end_s < 0:
                raise ValueError(f"end_s must be >= 0, got {end_s}")
            edges = np.arange(math.floor(end_s) + 1, dtype=np.float64)
            if end_s - edges[-1] > 1e-9:
                edges = np.append(edges, end_s)
        moved = np.diff(self._cumulative(edges))
        return (moved / np.diff(edges) / MiB).tolist()

    def merge(self, other: ByteSeries) -> ByteSeries:
        """Add other's bytes bucket by bucket (same bucket width); returns self."""
        if not isinstance(other, ByteSeries):
            raise TypeError(f"cannot merge {type(other).__name__} into a ByteSeries")
        if other.bucket_s != self.bucket_s:
            raise ValueError(f"bucket widths differ: {self.bucket_s} s and {other.bucket_s} s")
        self._grow(other._n)
        self._bytes[: other._n] += other._bytes[: other._n]
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ByteSeries):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form: bucket width and bytes per bucket, trailing empty buckets dropped."""
        used = self._bytes[: self._n]
        last = int(np.flatnonzero(used)[-1]) + 1 if used.any() else 0
        return {"bucket_s": self.bucket_s, "bytes": used[:last].tolist()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ByteSeries:
        """Rebuild from to_dict() output."""
        s = cls(d["bucket_s"])
        data = np.asarray(d["bytes"], dtype=np.int64)
        s._grow(len(data))
        s._bytes[: len(data)] = data
        return s


def spread(values: Sequence[float]) -> dict[str, float]:
    """mean, min, max, population stdev, cv (stdev/mean, 0 when mean is 0) and n."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("spread of no values")
    mean = float(x.mean())
    stdev = float(x.std())
    return {
        "mean": mean,
        "min": float(x.min()),
        "max": float(x.max()),
        "stdev": stdev,
        "cv": stdev / mean if mean != 0 else 0.0,
        "n": int(x.size),
    }


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n * sum x^2): 1 all equal, 1/n one takes all, 0 none."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("fairness of no values")
    if (x < 0).any():
        raise ValueError("fairness needs values >= 0")
    squares = float((x * x).sum())
    # All zero: nobody was served, which is not "perfectly fair".
    return float(x.sum()) ** 2 / (x.size * squares) if squares > 0 else 0.0


def _check_ends(series: Sequence[ByteSeries], end_s: Sequence[float]) -> None:
    """Refuse mismatched or negative inputs to the aggregates."""
    if len(series) != len(end_s):
        raise ValueError(f"{len(series)} series but {len(end_s)} end times")
    if any(e < 0 for e in end_s):
        raise ValueError("end times must be >= 0 s")


def first_done(series: Sequence[ByteSeries], end_s: Sequence[float]) -> dict[str, float]:
    """Aggregate over the window in which every client ran: until the first one finished."""
    _check_ends(series, end_s)
    if not series:
        return {"seconds": 0.0, "bytes": 0.0, "mib_s": 0.0}
    t1 = float(min(end_s))
    # A client already done by t1 counts its total: interpolating its last bucket would shave
    # off bytes it really completed before its end. One still running reads its series up to
    # t1, its last bucket bounded by its own end: clients ending in one bucket (any run
    # under a second or so) were counted a fraction of the bytes they had completed.
    nbytes = sum(
        float(s.total) if e <= t1 else s.bytes_before(t1, end_s=e)
        for s, e in zip(series, end_s, strict=True)
    )
    return {"seconds": t1, "bytes": nbytes, "mib_s": mib_per_s(nbytes, t1)}


def last_done(series: Sequence[ByteSeries], end_s: Sequence[float]) -> dict[str, float]:
    """Aggregate over the whole run: all bytes over the time until the last client finished."""
    _check_ends(series, end_s)
    if not series:
        return {"seconds": 0.0, "bytes": 0.0, "mib_s": 0.0}
    t = float(max(end_s))
    nbytes = float(sum(s.total for s in series))
    return {"seconds": t, "bytes": nbytes, "mib_s": mib_per_s(nbytes, t)}
