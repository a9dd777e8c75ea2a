"""The bench's stream rows on storage of known speed (tools/bench.py, `stream-throttled`):
both tools' reads go through the device's throttle, and the rows say its rate and each
tool's share of it. Root only: a loop device behind a cgroup-v1 blkio throttle."""

from __future__ import annotations

import shutil

import pytest

from tools import bench

from .storage import can_build_storage, throttled_disk

REASON = can_build_storage() or (None if shutil.which("fio") else "fio is not installed")
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")
MiB = 2**20
assert throttled_disk  # the suite runs modules on throttled devices in their own pass


def test_both_tools_read_through_the_throttle_and_the_rows_give_its_rate():
    rate = 40 * MiB
    rows = bench.throttled_stream_rows(rate, 16 * MiB, repeats=3)
    assert [r.name for r in rows] == [
        f"seq read 1 MiB O_DIRECT, {n} client(s), loop device throttled to 40 MiB/s"
        for n in (1, 2)]
    for row in rows:
        assert row.judged and "throttle 40 MiB/s" in row.note, row
        assert "share of it: aiio" in row.note and "; fio " in row.note, row.note
        assert "at least 100.0% of each run's bytes" in row.note, row.note
        # a process outside the cgroup reads the tmpfs-backed device at hundreds of MiB/s;
        # inside, a run of 16 MiB read up to 1.2 times the rate (the throttle lets the
        # first few MiB through unpaced)
        for side in ("aiio", "fio", "fio again"):
            assert max(row.runs[side]) <= 2 * rate / MiB, (side, row.runs)
