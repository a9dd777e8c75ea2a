"""Numbers checked against storage whose limits are known: a loop-mounted ext4 image behind a
cgroup-v1 blkio read throttle (root only; skipped with the reason elsewhere). Train's and
load's bandwidth on it, as a mount and as a bucket, are in test_s3_known_storage.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import REPO
from .storage import can_build_storage, small_tmpfs, throttled_disk

REASON = can_build_storage()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")
MiB = 2**20


def _aiio(disk, *args: str, throttled: bool = True) -> dict:
    argv = [sys.executable, "-m", "aiio", *args]
    cmd = disk.command(*argv) if throttled else argv
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout) if "--json" in args else {}


DATA = ("--set", "dataset.num_files=40", "--set", "dataset.sample_size=1MiB",
        "--set", "dataset.sample_size_stdev=0", "--set", "dataset.files_per_dir=100")


def test_au_on_io_bound_storage(tmp_path):
    # One loader thread, one batch of prefetch: each step needs 2 MiB at 10 MiB/s = 0.2 s of
    # I/O against 0.02 s of compute, so the accelerator is busy 0.02 / 0.2 = 10 % of the time.
    data = ("--set", "dataset.num_files=24", *DATA[2:])
    with small_tmpfs(tmp_path, 112) as ram, throttled_disk(ram, 10 * MiB, size_mib=96) as disk:
        target = str(disk.mount)
        _aiio(disk, "datagen", "--target", target, *data, throttled=False)
        res = _aiio(disk, "run", "--target", target, "--results", str(tmp_path / "r"),
                    "--json", "--quiet", "--no-report", *data, "--clients", "1", "--epochs", "1",
                    "--batch-size", "2", "--read-threads", "1", "--set", "train.prefetch=1",
                    "--set", "train.compute_time.h100=0.02")
    client = res["clients"][0]
    # compute is what the accelerator really slept, so a loaded machine moves AU a little
    assert client["au"] == pytest.approx(client["compute_s"] / (client["compute_s"] +
                                                                client["wait_s"]))
    assert client["au"] == pytest.approx(0.10, abs=0.03)
    assert res["aggregate"]["au_pass"] is False


def test_dataset_larger_than_free_space_is_refused_before_writing(tmp_path):
    from .storage import small_tmpfs
    with small_tmpfs(tmp_path, 16) as mount:
        proc = subprocess.run(
            [sys.executable, "-m", "aiio", "datagen", "--target", str(mount),
             "--set", "dataset.num_files=8", "--set", "dataset.sample_size=4MiB"],
            cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert "needs" in proc.stderr and "free" in proc.stderr
        # the error is one line (after the note saying what was about to happen)
        assert proc.stderr.strip().splitlines()[-1].startswith("aiio: dataset demo")
        assert "Traceback" not in proc.stderr
        # nothing was written: the target is as it was found, not even aiio's folder and marker
        assert list(mount.iterdir()) == []
