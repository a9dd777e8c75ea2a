"""--verify on a bucket: the keyed block checksums aiio writes into its own objects are checked
as the GET bodies arrive, so an object that comes back with wrong bytes is caught and counted."""

from __future__ import annotations

from aiio.units import MiB
from tests.conftest import call_cli, run_cli, saved_result

LOAD = ("--clients", "2", "--set", f"load.size={6 * MiB}", "--set", "load.files=3",
        "--set", "load.threads=2", "--no-history", "--no-report", "-q")


def test_checkpoint_restore_checks_every_block(s3_server, s3_bucket, results):
    size = 2 * 10 * MiB  # each client's shard: a multipart upload of 8 MiB + 2 MiB
    proc = run_cli("run", "--phase", "checkpoint", "--verify", "--target",
                   f"s3://{s3_bucket}/ck", "--results", str(results), "--no-history",
                   "--no-report", "-q", "--clients", "2", "--set", f"checkpoint.size={size}")
    assert proc.returncode == 0, proc.stderr
    agg = saved_result(results)["aggregate"]
    v = agg["verify"]
    assert v["mismatches"] == 0 and v["blocks_checked"] == size // 4096
    assert v["checksum_s"] > 0 and 0 < v["cost_share"] < 1
    read = agg["checkpoints"][0]["read"]["latency"]
    # each body chunk is checked once, timed apart from the GET it arrived in
    assert read["verify"]["count"] == read["read"]["count"]


def test_load_catches_a_flipped_byte_in_a_weight_object(s3_server, s3_bucket, results):
    target = f"s3://{s3_bucket}/m"
    first = run_cli("run", "--phase", "load", "--target", target, "--results",
                    str(results / "first"), *LOAD)
    assert first.returncode == 0, first.stderr
    client = s3_server.client()
    keys = [o["Key"] for o in client.list_objects_v2(
        Bucket=s3_bucket, Prefix="m/aiio/models/")["Contents"] if o["Key"].endswith(".bin")]
    key = sorted(keys)[1]
    data = bytearray(client.get_object(Bucket=s3_bucket, Key=key)["Body"].read())
    offset = 3 * 4096 + 777
    data[offset] ^= 0x20
    client.put_object(Bucket=s3_bucket, Key=key, Body=bytes(data))

    proc = run_cli("run", "--phase", "load", "--verify", "--target", target, "--results",
                   str(results), *LOAD)
    assert proc.returncode == 1, proc.stderr
    res = saved_result(results)
    assert res["aggregate"]["model"]["reused"]
    v = res["aggregate"]["verify"]
    assert v["mismatches"] == 2  # each of the 2 replicas got the flipped block
    assert {(c["file"], c["offset"]) for c in v["corrupt"]} == {(key, 3 * 4096)}
    assert v["blocks_checked"] == 2 * 6 * MiB // 4096


def test_load_verify_passes_on_intact_objects(s3_server, s3_bucket, results):
    proc = run_cli("run", "--phase", "load", "--verify", "--target", f"s3://{s3_bucket}/m",
                   "--results", str(results), *LOAD)
    assert proc.returncode == 0, proc.stderr
    v = saved_result(results)["aggregate"]["verify"]
    assert v["mismatches"] == 0 and v["blocks_checked"] == 2 * 6 * MiB // 4096


def test_train_on_a_bucket_refuses_verify_as_on_a_mount(s3_server, s3_bucket, results):
    proc = call_cli("run", "--phase", "train", "--verify", "--target", f"s3://{s3_bucket}/t",
                    "--results", str(results), "--no-history", "-q")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "--verify" in proc.stderr
    assert s3_server.client().list_objects_v2(Bucket=s3_bucket).get("KeyCount", 0) == 0


def test_checks_whole_blocks_whatever_size_the_chunks_come_in():
    """A body read may return fewer bytes than asked; a block split between two chunks is
    still checked whole, at its offset in the object."""
    import os

    from aiio.engines import blocks
    from aiio.s3.objectio import BlockAligned

    size, offset, tag = 10 * 4096 + 1000, 3 * 4096, 77
    buf = bytearray(os.urandom(size))
    blocks.stamp(memoryview(buf), size, tag, offset, checksum=True)
    verifier = blocks.Verifier()
    aligned = BlockAligned(lambda view, n, pos: verifier.check(view, n, "k", tag, pos), offset)
    for start in range(0, size, 1000):  # chunks that split blocks
        aligned.feed(bytes(buf[start:start + 1000]))
    aligned.close()
    assert verifier.mismatches == 0 and verifier.blocks == 11
