"""Tests for aiio.stats: histogram accuracy and merging, byte series, fairness and aggregates."""

from __future__ import annotations

import array
import json

import numpy as np
import pytest

from aiio import stats
from aiio.stats import (
    NBUCKETS,
    REL_ERROR_BOUND,
    ByteSeries,
    Histogram,
    bucket_index,
    bucket_indices,
    first_done,
    jain,
    last_done,
    spread,
)
from aiio.units import MiB

PS = (1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99)


def _hist(values) -> Histogram:
    h = Histogram()
    h.record_many(np.asarray(values, dtype=np.int64))
    return h


# --- Histogram layout -------------------------------------------------------------------------


def test_layout_matches_fio_plat_val_to_idx():
    # fio: below 2^(bits+1) the value is its index; then (msb - bits) * 64 + (v >> (msb - bits)).
    assert [bucket_index(v) for v in (0, 1, 63, 64, 127)] == [0, 1, 63, 64, 127]
    assert bucket_index(128) == bucket_index(129) == 128  # width 2 from 128 ns
    assert bucket_index(130) == 129
    assert bucket_index(255) == 191
    assert bucket_index(256) == 192
    assert bucket_index(2**44 - 1) == NBUCKETS - 1
    assert stats.CLAMP_NS >= 2**44 - 1


def test_bucket_edges_tile_the_range():
    # Each bucket's lower edge maps to it, its last value too, and the next value to the next one.
    low, width = stats._LOW, stats._WIDTH
    assert low[0] == 0
    np.testing.assert_array_equal(low[1:], low[:-1] + width[:-1])
    np.testing.assert_array_equal(bucket_indices(low), np.arange(NBUCKETS))
    np.testing.assert_array_equal(bucket_indices(low + width - 1), np.arange(NBUCKETS))
    assert low[-1] + width[-1] == 2**44
    # Half a bucket width over the lower edge never exceeds the stated bound.
    assert np.max((width - 1) / 2 / np.maximum(low, 1)) < REL_ERROR_BOUND == 1 / 128


def test_small_values_are_exact():
    h = _hist(np.arange(64))
    assert h.nonzero() == [(float(v), float(v + 1), 1) for v in range(64)]
    # Nearest rank: the 50th percentile of 0..63 is the 32nd value, 31.
    assert h.percentile(50) == 31.0
    assert h.percentile(100) == 63.0
    assert h.percentile(0) == 0.0
    for v in range(128):
        one = Histogram()
        one.record(v)
        assert one.percentile(50) == float(v)


# --- Histogram percentiles ----------------------------------------------------------------------


def _check_against_numpy(values: np.ndarray) -> None:
    h = _hist(values)
    got = h.percentiles(PS)
    # inverted_cdf is the nearest-rank order statistic, the value whose bucket the histogram
    # reports, so the error bound applies to it exactly.
    want = np.percentile(values, PS, method="inverted_cdf")
    for p, w in zip(PS, want, strict=True):
        assert abs(got[f"p{p:g}"] - w) / w < REL_ERROR_BOUND, (p, got[f"p{p:g}"], w)


def test_percentiles_uniform_within_bound():
    _check_against_numpy(np.arange(1, 10**6 + 1, dtype=np.int64))


def test_percentiles_lognormal_within_bound():
    rng = np.random.default_rng(7)
    # Median ~160 us with a long tail up to seconds: storage latencies look like this.
    _check_against_numpy(rng.lognormal(mean=12.0, sigma=1.5, size=200_000).astype(np.int64) + 1)


def test_percentile_bound_on_every_single_value():
    # A histogram holding one value reports it within the bound (and, clamped, exactly).
    rng = np.random.default_rng(3)
    values = np.unique(rng.integers(1, 2**44, size=5000))
    mids = stats._MID[bucket_indices(values)]
    assert np.all(np.abs(mids - values) / values < REL_ERROR_BOUND)
    assert np.max(np.abs(mids - values) / values) > 1 / 200  # the bound is tight, not slack


def test_exact_min_max_mean_and_extremes():
    h = _hist([1000, 2000, 3000, 10_000_000])
    assert (h.count, h.min, h.max, h.sum) == (4, 1000, 10_000_000, 10_006_000)
    assert h.mean == 2_501_500.0
    assert h.percentile(0) == 1000.0
    assert h.percentile(100) == 10_000_000.0
    # Nearest rank 2 of 4 is 2000; in [1024, 2048) buckets are 2^(10-6) = 16 ns wide, so it
    # falls in [2000, 2016), whose integers 2000..2015 have midpoint 2007.5.
    assert h.percentile(50) == 2007.5


def test_percentiles_never_leave_min_max():
    h = _hist([1_000_001] * 10)
    # The bucket midpoint is above the only value; clamping reports the value itself.
    assert h.percentiles() == {"p50": 1_000_001.0, "p90": 1_000_001.0, "p99": 1_000_001.0,
                               "p99.9": 1_000_001.0}


def test_empty_histogram():
    h = Histogram()
    assert h.percentile(50) == 0.0
    assert h.percentile(100) == 0.0
    assert h.mean == 0.0
    assert h.nonzero() == []
    # a latency of no call is no figure: None, which every reader shows as absent, never 0 ns
    assert h.summary() == {"count": 0, "min_ns": None, "mean_ns": None, "p50_ns": None,
                           "p90_ns": None, "p99_ns": None, "p999_ns": None, "max_ns": None}


def test_summary_keys_and_order():
    h = _hist(np.arange(1, 1001))
    s = h.summary()
    assert list(s) == ["count", "min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns",
                       "max_ns"]
    assert s["count"] == 1000 and s["min_ns"] == 1.0 and s["max_ns"] == 1000.0
    assert s["mean_ns"] == 500.5
    assert s["min_ns"] <= s["p50_ns"] <= s["p90_ns"] <= s["p99_ns"] <= s["p999_ns"] <= s["max_ns"]
    assert abs(s["p999_ns"] - 999) / 999 < REL_ERROR_BOUND


def test_huge_values_clamp_into_last_bucket():
    h = _hist([2**45, 2**50])
    h.record(2**62)
    assert h.nonzero() == [(float(2**44 - 2**37), float(2**44), 3)]
    assert h.max == 2**62 and h.min == 2**45
    assert h.sum == 2**45 + 2**50 + 2**62
    assert h.percentile(100) == float(2**62)


def test_bad_input_is_refused():
    h = Histogram()
    with pytest.raises(ValueError):
        h.record(-1)
    with pytest.raises(ValueError):
        h.record_many(np.array([5, -3], dtype=np.int64))
    assert h.count == 0  # a refused batch leaves no trace
    h.record(10)
    for p in (-0.1, 100.1):
        with pytest.raises(ValueError):
            h.percentile(p)
    with pytest.raises(TypeError):
        h.merge(ByteSeries())


# --- Histogram batching, merging and serialization ----------------------------------------------


def test_record_many_equals_record_loop():
    rng = np.random.default_rng(11)
    values = np.concatenate([
        rng.integers(0, 200, 500),
        rng.lognormal(14, 2, 2000).astype(np.int64),
        np.array([0, 63, 64, 127, 128, 2**44 - 1, 2**44, 2**55]),
    ])
    one = Histogram()
    for v in values:
        one.record(int(v))
    batch = Histogram()
    batch.record_many(values[:1000])
    batch.record_many(array.array("q", values[1000:].tolist()))  # what clients hand over
    batch.record_many(np.array([], dtype=np.int64))
    assert batch == one
    np.testing.assert_array_equal(batch.counts, one.counts)


def test_merge_equals_one_histogram():
    rng = np.random.default_rng(5)
    parts = [rng.lognormal(11 + i, 1, 3000).astype(np.int64) for i in range(4)]
    whole = _hist(np.concatenate(parts))
    hists = [_hist(p) for p in parts]

    merged = Histogram()
    for h in hists:
        merged.merge(h)
    assert merged == whole
    assert merged.percentiles(PS) == whole.percentiles(PS)

    before = hists[0].to_dict()
    assert hists[0] + hists[1] + hists[2] + hists[3] == whole
    assert sum(hists) == whole
    assert hists[0].to_dict() == before  # + leaves its operands alone
    assert Histogram().merge(Histogram()) == Histogram()
    assert (Histogram() + hists[1]).min == hists[1].min  # an empty side doesn't reset min


def test_dict_round_trip_through_json():
    rng = np.random.default_rng(9)
    h = _hist(rng.lognormal(12, 2, 10_000).astype(np.int64))
    h.record(2**50)
    d = h.to_dict()
    assert d["bits"] == 6 and d["count"] == 10_001
    text = json.dumps(d)
    back = Histogram.from_dict(json.loads(text))
    assert back == h
    assert back.to_dict() == d
    assert back.summary() == h.summary()
    # Int keys (a dict built in memory) are accepted as well.
    ints = dict(d, buckets={int(k): v for k, v in d["buckets"].items()})
    assert Histogram.from_dict(ints) == h
    assert Histogram.from_dict(Histogram().to_dict()) == Histogram()


def test_from_dict_refuses_inconsistent_data():
    d = _hist([10, 20, 30]).to_dict()
    with pytest.raises(ValueError, match="bits"):
        Histogram.from_dict(dict(d, bits=5))
    with pytest.raises(ValueError, match="count"):
        Histogram.from_dict(dict(d, count=4))
    with pytest.raises(ValueError, match="bucket"):
        Histogram.from_dict(dict(d, buckets={str(NBUCKETS): 3}))


# --- ByteSeries ----------------------------------------------------------------------------------


def test_byte_series_interpolates_inside_a_bucket():
    s = ByteSeries(bucket_s=0.5)
    s.add(0.2, 100)  # bucket [0, 0.5)
    s.add(0.7, 200)  # bucket [0.5, 1.0)
    s.add(0.9, 200)
    assert s.total == 500
    assert s.bytes_before(0.0) == 0.0
    assert s.bytes_before(0.25) == 50.0  # half of bucket 0
    assert s.bytes_before(0.5) == 100.0
    assert s.bytes_before(0.625) == 200.0  # 100 + 1/4 of 400
    assert s.bytes_before(1.0) == 500.0
    assert s.bytes_before(99.0) == 500.0
    assert s.bytes_before(-1.0) == 0.0


def test_byte_series_per_second():
    s = ByteSeries(bucket_s=0.5)
    s.add(0.1, 1 * MiB)
    s.add(0.6, 3 * MiB)  # second 0: 4 MiB
    s.add(1.2, 2 * MiB)  # second 1: 2 MiB
    s.add(2.1, 1 * MiB)  # bucket [2.0, 2.5)
    assert s.per_second() == [4.0, 2.0, 1.0]
    # Ending at 2.25 s: half of bucket [2.0, 2.5) is 0.5 MiB, over 0.25 s that is 2 MiB/s.
    assert s.per_second(end_s=2.25) == pytest.approx([4.0, 2.0, 2.0])
    assert s.per_second(end_s=2.0) == [4.0, 2.0]
    assert s.per_second(end_s=0.0) == []
    assert ByteSeries().per_second() == []


def test_byte_series_default_bucket_and_float_edges():
    s = ByteSeries()
    assert s.bucket_s == 0.1
    for k in range(30):  # 3 s of 1 MiB per 0.1 s: 30 * 0.1 must not make a fourth second
        s.add(0.1 * k + 0.05, MiB)
    assert s.per_second() == pytest.approx([10.0, 10.0, 10.0])


def test_byte_series_grows_and_add_many_matches_add():
    rng = np.random.default_rng(1)
    times = rng.uniform(0, 300, 5000)  # 3000 buckets: far past the first allocation
    sizes = rng.integers(1, 4 * MiB, 5000)
    one = ByteSeries()
    for t, b in zip(times, sizes, strict=True):
        one.add(float(t), int(b))
    batch = ByteSeries()
    batch.add_many(times[:2000], sizes[:2000])
    batch.add_many(times[2000:], sizes[2000:])
    batch.add_many(np.array([]), np.array([], dtype=np.int64))
    assert batch == one
    assert batch.total == int(sizes.sum())
    assert batch.bytes_before(300.0) == float(sizes.sum())


def test_byte_series_merge_and_round_trip():
    a, b = ByteSeries(), ByteSeries()
    a.add(0.05, 10)
    b.add(0.05, 5)
    b.add(1.25, 7)
    a.merge(b)
    assert a.total == 22
    assert a.to_dict() == {"bucket_s": 0.1, "bytes": [15] + [0] * 11 + [7]}
    assert ByteSeries.from_dict(json.loads(json.dumps(a.to_dict()))) == a
    assert ByteSeries.from_dict(ByteSeries().to_dict()).total == 0


def test_byte_series_bad_input():
    with pytest.raises(ValueError):
        ByteSeries(bucket_s=0)
    s = ByteSeries()
    with pytest.raises(ValueError):
        s.add(-0.1, 5)
    with pytest.raises(ValueError):
        s.add_many(np.array([0.1, -0.1]), np.array([1, 1]))
    with pytest.raises(ValueError):
        s.add_many(np.array([0.1, 0.2]), np.array([1]))
    with pytest.raises(ValueError):
        s.merge(ByteSeries(bucket_s=0.2))
    with pytest.raises(ValueError):
        s.per_second(end_s=-1)


# --- Fair aggregates -----------------------------------------------------------------------------


def _steady(mib_per_bucket: float, nbuckets: int) -> ByteSeries:
    s = ByteSeries(bucket_s=0.1)
    for k in range(nbuckets):
        s.add(0.1 * k + 0.05, int(mib_per_bucket * MiB))
    return s


def test_first_and_last_done_two_clients():
    # Client A: 10 MiB per 0.1 s for 2 s = 200 MiB, ends at 2.0 s.
    # Client B:  5 MiB per 0.1 s for 4 s = 200 MiB, ends at 4.0 s.
    a, b = _steady(10, 20), _steady(5, 40)
    first = first_done([a, b], [2.0, 4.0])
    # Until 2.0 s: A 200 MiB + B 20 buckets * 5 MiB = 100 MiB -> 300 MiB in 2 s = 150 MiB/s.
    assert first["seconds"] == 2.0
    assert first["bytes"] == pytest.approx(300 * MiB)
    assert first["mib_s"] == pytest.approx(150.0)
    last = last_done([a, b], [2.0, 4.0])
    # 400 MiB in 4 s = 100 MiB/s.
    assert last == {"seconds": 4.0, "bytes": 400.0 * MiB, "mib_s": 100.0}


def test_first_done_counts_the_fastest_clients_whole_total():
    # A ends at 1.95 s, inside its last bucket [1.9, 2.0): it still counts all its 200 MiB.
    # B by 1.95 s: 19 buckets * 5 MiB + half of the 20th (2.5 MiB) = 97.5 MiB.
    # (200 + 97.5) MiB / 1.95 s = 152.56... MiB/s.
    a, b = _steady(10, 20), _steady(5, 40)
    first = first_done([a, b], [1.95, 4.0])
    assert first["bytes"] == pytest.approx(297.5 * MiB)
    assert first["mib_s"] == pytest.approx(297.5 / 1.95)


def test_first_done_reads_a_running_clients_last_bucket_up_to_its_end():
    # Two loads of 16 MiB inside the first 0.1 s bucket: A done at 4.5 ms, B at 5 ms. B's
    # 16 MiB were completed between the start and its end, not over the whole bucket: by
    # 4.5 ms it had 16 x 4.5 / 5 = 14.4 MiB (the bucket over 0.1 s would say 0.72 MiB).
    a, b = ByteSeries(), ByteSeries()
    a.add(0.004, 16 * MiB)
    b.add(0.0049, 16 * MiB)
    first = first_done([a, b], [0.0045, 0.005])
    assert first["bytes"] == pytest.approx(30.4 * MiB)
    assert first["mib_s"] == pytest.approx(30.4 / 0.0045)


def test_first_done_when_clients_end_inside_one_later_bucket():
    # A ends at 1.92 s, B at 1.94 s, both inside the bucket [1.9, 2.0). B's last bucket holds
    # 2 MiB completed between 1.9 and 1.94 s: by 1.92 s, half of it. With no end known, a
    # bucket is still read over its whole width.
    a, b = _steady(10, 19), _steady(5, 19)
    a.add(1.91, 2 * MiB)
    b.add(1.93, 2 * MiB)
    first = first_done([a, b], [1.92, 1.94])
    assert first["bytes"] == pytest.approx((192 + 95 + 1) * MiB)
    assert b.bytes_before(1.92) == pytest.approx(95.4 * MiB)
    assert b.bytes_before(1.92, end_s=1.94) == pytest.approx(96 * MiB)
    # an end past its last bucket, or before that bucket began, changes nothing
    assert b.bytes_before(1.92, end_s=3.0) == b.bytes_before(1.92)
    assert b.bytes_before(1.92, end_s=1.85) == b.bytes_before(1.92)


def test_aggregates_without_time_or_clients():
    assert first_done([], []) == {"seconds": 0.0, "bytes": 0.0, "mib_s": 0.0}
    assert last_done([], []) == {"seconds": 0.0, "bytes": 0.0, "mib_s": 0.0}
    zero = first_done([ByteSeries(), _steady(1, 3)], [0.0, 0.3])
    assert zero == {"seconds": 0.0, "bytes": 0.0, "mib_s": 0.0}
    assert last_done([ByteSeries()], [0.0])["mib_s"] == 0.0
    with pytest.raises(ValueError):
        first_done([ByteSeries()], [1.0, 2.0])
    with pytest.raises(ValueError):
        last_done([ByteSeries()], [-1.0])


# --- Per-client summaries --------------------------------------------------------------------


def test_spread_hand_computed():
    # mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; 32/8 = 4 -> population stdev 2.
    s = spread([2, 4, 4, 4, 5, 5, 7, 9])
    assert s == {"mean": 5.0, "min": 2.0, "max": 9.0, "stdev": 2.0, "cv": 0.4, "n": 8}
    assert spread([0, 0])["cv"] == 0.0
    assert spread([3.0]) == {"mean": 3.0, "min": 3.0, "max": 3.0, "stdev": 0.0, "cv": 0.0, "n": 1}
    with pytest.raises(ValueError):
        spread([])


def test_jain_hand_computed():
    assert jain([7, 7, 7, 7]) == 1.0
    assert jain([1, 0, 0, 0]) == 0.25  # one client gets everything: 1/n
    assert jain([1, 2, 3]) == pytest.approx(36 / 42)  # 6^2 / (3 * (1 + 4 + 9))
    assert jain([0, 0, 0]) == 0.0
    with pytest.raises(ValueError):
        jain([])
    with pytest.raises(ValueError):
        jain([1, -1])
