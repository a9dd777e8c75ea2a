"""Where a block device can confirm the bytes, a quarter of them served from the page cache
must not pass silently (root only: a throttled loop device, tests/storage.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import REPO
from .storage import can_build_storage, small_tmpfs, throttled_disk

REASON = can_build_storage()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]
MiB = 2**20
DATA = ("--set", "dataset.num_files=40", "--set", "dataset.sample_size=1MiB",
        "--set", "dataset.sample_size_stdev=0", "--set", "dataset.files_per_dir=100")


def _aiio(cmd: list[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_quarter_from_cache_is_flagged(tmp_path):
    with small_tmpfs(tmp_path, 112) as ram, throttled_disk(ram, 80 * MiB, size_mib=96) as disk:
        target = str(disk.mount)
        _aiio([sys.executable, "-m", "aiio", "datagen", "--target", target, *DATA])
        files = sorted(p for p in disk.mount.joinpath("aiio").rglob("*.npz")
                       if p.stat().st_size >= MiB)  # the samples, not the manifest
        assert len(files) == 40
        subprocess.run(["sh", "-c", "echo 3 > /proc/sys/vm/drop_caches"], check=True)
        for path in files[:10]:  # warm a quarter of the dataset into the page cache
            path.read_bytes()
        proc = _aiio(disk.command(
            sys.executable, "-m", "aiio", "run", "--target", target, "--results",
            str(tmp_path / "r"), "--json", "--quiet", "--no-history", "--no-report", *DATA,
            "--clients", "2", "--epochs", "1", "--batch-size", "2", "--cache", "none",
            "--set", "train.compute_time.h100=0.001"))
    res = json.loads(proc.stdout)
    agg = res["aggregate"]
    ratio = res["monitor"]["device"]["read_bytes"] / agg.get("read_bytes", agg["bytes"])
    assert 0.6 < ratio < 0.85, ratio  # the device saw about three quarters of the bytes
    assert "device_saw_fewer_bytes" in {w["code"] for w in res["warnings"]}, res["warnings"]
