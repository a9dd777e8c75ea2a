"""Prep against the blkio-throttled loop device (root only): its reads and writes each come
out at the throttle that binds. Load and train reads, and checkpoint writes and restores, on
a mount and on a bucket, are in test_s3_known_storage.py."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import pytest

from .conftest import REPO
from .storage import can_build_storage, small_tmpfs, throttled_disk

REASON = can_build_storage()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]
MiB = 2**20
# 96 MiB: at 24 MiB/s that is 4 s, so the burst a blkio throttle lets through at the start
# (about a slice's worth) stays well inside the 10 % (40 MiB read 13 % fast once)
DATA = ("--set", "dataset.num_files=96", "--set", "dataset.sample_size=1MiB",
        "--set", "dataset.sample_size_stdev=0", "--set", "dataset.files_per_dir=100")


def _run(disk, tmp, phase: str, *args: str) -> dict:
    cmd = disk.command(sys.executable, "-m", "aiio", "run", "--phase", phase, "--target",
                       str(disk.mount), "--results", str(tmp / "r"), "--json", "--quiet",
                       "--no-history", "--no-report", "--clients", "2", *args)
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@contextlib.contextmanager
def _disk(tmp, read_bps: int, write_bps: int):
    # the image lives in RAM, so the throttles are the loop device's only limits
    with small_tmpfs(tmp, 300) as ram, \
            throttled_disk(ram, read_bps, size_mib=280, write_bps=write_bps) as disk:
        yield disk


@pytest.mark.parametrize(("read_mib", "write_mib", "bound"),
                         [(40, 24, "write"), (24, 60, "read")])
def test_prep_is_held_by_the_tighter_throttle(tmp_path, read_mib, write_mib, bound):
    # prep turns every byte read into a byte written, so both run at the tighter limit
    with _disk(tmp_path, read_mib * MiB, write_mib * MiB) as disk:
        gen = subprocess.run([sys.executable, "-m", "aiio", "datagen", "--target",
                              str(disk.mount), *DATA], cwd=REPO, capture_output=True, text=True)
        assert gen.returncode == 0, gen.stderr
        res = _run(disk, tmp_path, "prep", *DATA)
    limit = min(read_mib, write_mib)
    for direction in ("read", "write"):
        got = res["aggregate"][direction]["first_done"]["mib_s"]
        assert got == pytest.approx(limit, rel=0.10), (bound, direction, got)
