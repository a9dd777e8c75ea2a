"""The bench's per-operation CPU cost of the kvcache phase (tools/kvcache_cost.py): the CPU
seconds of every client over the blocks they read and wrote. No speed is asserted."""

from __future__ import annotations

import math

from tools import kvcache_cost


def _result(cpu_s: list[float], blocks: list[tuple[int, int]]) -> dict:
    return {"clients": [{"cpu_s": c, "kvcache": {"blocks_read": r, "blocks_written": w,
                                                  "requests": max(1, (r + w) // 10)}}
                        for c, (r, w) in zip(cpu_s, blocks, strict=True)]}


def test_cpu_per_block_is_every_clients_cpu_over_every_block():
    res = _result([1.0, 3.0], [(30_000, 10_000), (50_000, 10_000)])
    assert kvcache_cost.cpu_per_block_us(res) == 4.0 / 100_000 * 1e6


def test_a_run_that_moved_no_block_has_no_figure_and_does_not_meet_its_row():
    res = _result([1.0], [(0, 0)])
    assert math.isnan(kvcache_cost.cpu_per_block_us(res))
    assert not kvcache_cost.cost_row("null", res).met


def test_a_short_null_run_gives_a_cost_per_block(tmp_path):
    """A real run of the phase with the null method (no read or write system call): its
    clients' CPU over its blocks is a figure, and the row says how many blocks it rests on."""
    row = kvcache_cost.cost_rows(tmp_path, duration="2s", methods=("null",))[0]
    assert row.met and row.aiio > 0 and row.unit == "us"
    assert "blocks" in row.note
