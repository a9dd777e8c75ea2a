"""The side-by-side tool's reading of MLPerf's KV-cache results (tools/kvcmp.py): its figures
by its definitions (bytes over the nominal duration, summed over ranks; P95 the maximum of
the ranks' P95s) and the pooled P95 of the same requests beside. The benchmark itself is not
installable here, so the summaries are written as it writes them."""

from __future__ import annotations

import pytest

from tools.kvcmp import MiB, aiio_figures, mlperf_figures


def _rank(latencies_s: list[float], read_mib: int, tokens: int) -> dict:
    return {"duration_s": 10, "wall_s": 12.5, "total_requests": len(latencies_s),
            "total_tokens": tokens, "avg_throughput_tokens_per_sec": tokens / 10,
            "storage_latencies_s": latencies_s,
            "cache_stats": {"total_read_bytes": read_mib * MiB, "total_write_bytes": MiB}}


def test_mlperfs_p95_is_the_slowest_ranks_not_a_percentile_of_the_requests():
    # rank 0: 19 requests of 10 ms and one of 1 s; rank 1: 80 requests of 10 ms. Pooled,
    # 1 of 100 requests is slow, so the 95th percentile is 10 ms; rank 0's own P95 lies
    # between its 19th and 20th requests (numpy's linear rule: 10 + 0.05 x 990 = 59.5 ms).
    ranks = [_rank([0.01] * 19 + [1.0], 100, 50), _rank([0.01] * 80, 300, 150)]
    figs = mlperf_figures(ranks)
    assert figs["storage_p95_max_of_ranks_ms"] == pytest.approx(59.5)
    assert figs["storage_p95_pooled_ms"] == pytest.approx(10.0)


def test_mlperfs_bandwidth_divides_summed_bytes_by_the_nominal_duration():
    figs = mlperf_figures([_rank([0.01], 100, 50), _rank([0.01], 300, 150)])
    assert figs["read_mib_s"] == pytest.approx(40.0)  # 400 MiB / 10 s, not / 12.5 s of wall
    assert figs["tokens_s"] == pytest.approx(20.0)
    assert figs["read_mib_per_request"] == pytest.approx(200.0)
    assert figs["generated_tokens_per_request"] == pytest.approx(100.0)


def _aiio(requests: int, done: int, generated: int, window_s: float) -> dict:
    """An aiio KV-cache result's aggregate as the side-by-side reads it."""
    storage = {"max_client_p95_ms": 20.0, "pooled": {"p95_ms": 10.0}}
    kv = {"storage_time": storage, "requests": requests, "requests_in_duration": done,
          "requests_per_s": done / window_s, "rate_window_s": window_s,
          "tokens_per_s": 7.0, "generated_tokens": generated,
          "read_bytes_per_request": 2 * MiB, "write_bytes_per_request": MiB,
          "verdict": {"word": "steady"}}
    return {"aggregate": {"read": {"first_done": {"mib_s": 40.0}},
                          "write": {"first_done": {"mib_s": 8.0}}, "kvcache": kv}}


def test_aiios_rates_count_the_requests_done_within_the_duration():
    # 12 requests served, of 64 generated tokens each; 10 done within the 120 s, 2 in flight
    # at its end: the rates count the 10 over the 120 s
    figs = aiio_figures(_aiio(12, 10, 12 * 64, 120.0))
    assert figs["requests"] == 12 and figs["requests_in_duration"] == 10
    assert figs["requests_per_s"] == pytest.approx(10 / 120)
    assert figs["generated_tokens_s"] == pytest.approx(10 * 64 / 120)
    assert figs["read_mib_per_request"] == 2.0
