"""Data preparation against a real SeaweedFS bucket: list, head, get, put and delete each
counted with its own latency histogram, and the staged shard objects removed afterwards."""

from __future__ import annotations

from tests.conftest import TINY_ARGS, run_cli, saved_result


def test_prep_times_every_object_operation(s3_server, s3_bucket, results):
    proc = run_cli("run", "--phase", "prep", "--target", f"s3://{s3_bucket}/pp",
                   "--results", str(results), "--no-history", "--no-report", "-q", *TINY_ARGS,
                   "--set", "prep.shard_size=128KiB", "--set", "prep.output_ratio=1.0",
                   "--set", "prep.passes=1")
    assert proc.returncode == 0, proc.stderr
    agg = saved_result(results)["aggregate"]
    ops = agg["metadata"]["ops"]
    assert set(ops) == {"list", "head", "get", "put", "delete"}
    assert ops["head"]["count"] == ops["get"]["count"] == 24  # one pass over 24 objects
    assert ops["list"]["count"] == 3                          # 24 files, 10 to a "folder"
    assert ops["put"]["count"] == ops["delete"]["count"] == agg["shards"] > 0
    assert agg["write_bytes"] == agg["read_bytes"]           # output ratio 1
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="pp/aiio/prep/")
    assert left.get("KeyCount", 0) == 0
