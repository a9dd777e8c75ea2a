"""The bench's stream rows on storage of known speed (tools/bench.py, `stream-throttled`):
both tools' reads go through the device's throttle, and the rows say its rate and each
tool's share of it. Root only: a loop device behind a cgroup-v1 blkio throttle."""

from __future__ import annotations

import shutil
import time

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


def _read_twice(files: list[str], loops: int = 1) -> float:
    """A tool that reads each file twice through the page cache: the first pass comes from
    the device, through its throttle; the second from memory. It counts both passes."""
    start, total = time.monotonic(), 0
    for _ in range(2 * loops):
        for name in files:
            with open(name, "rb") as fh:
                while chunk := fh.read(MiB):
                    total += len(chunk)
    return total / MiB / (time.monotonic() - start)


def test_a_tool_whose_reads_bypass_the_throttle_does_not_meet_the_row(monkeypatch):
    # every byte asked went through the throttle, and then as many again came from memory:
    # the tool read at about twice the throttle's rate, twice fio, and the row (at least
    # 0.95 of fio) was met. On a device of known rate a figure beyond it is no storage's
    monkeypatch.setattr(bench, "aiio_seq_read", _read_twice)
    rows = bench.throttled_stream_rows(40 * MiB, 16 * MiB, repeats=3)
    for row in rows:
        assert row.judged and not row.met, row
        assert "faster than the throttle" in row.note, row.note


def test_a_stop_with_a_process_still_on_the_device_tears_everything_down():
    # a Ctrl-C reaches the bench and its fio jobs at once: the device was taken down while a
    # job still ran on it, its umount failed unsaid, and the tmpfs under it then could not
    # be removed: an OSError in place of the stop, a mounted loop device, a cgroup and a
    # tmpfs left behind
    import subprocess

    from tools.storage import _blkio_cgroup

    home = _blkio_cgroup()
    with pytest.raises(KeyboardInterrupt):
        with bench.tmpfs_dir(300 * MiB) as base, \
                throttled_disk(base, 40 * MiB, size_mib=128) as disk, disk.joined():
            cgroup, device, mount = disk.cgroup, disk.device, disk.mount
            subprocess.Popen(["sleep", "60"], cwd=mount)  # a job that has not ended yet
            raise KeyboardInterrupt
    assert _blkio_cgroup() == home
    assert not cgroup.exists()
    mounts = open("/proc/mounts").read()
    assert str(mount) not in mounts and str(base) not in mounts and not base.exists()
    assert device not in subprocess.run(["losetup", "-a"], capture_output=True,
                                        text=True).stdout
