"""Checkpoints to a real SeaweedFS bucket: shard objects PUT (multipart above the part size),
durable when the completing request returns, restored by GETs, and removed afterwards."""

from __future__ import annotations

from aiio.units import MiB
from tests.conftest import run_cli, saved_result


def test_checkpoint_puts_shards_and_restores_them(s3_server, s3_bucket, results):
    size = 2 * 12 * MiB + 4096  # two clients: parts of 8 MiB, then a short last part
    proc = run_cli("run", "--phase", "checkpoint", "--target", f"s3://{s3_bucket}/ck",
                   "--results", str(results), "--no-history", "--no-report", "-q",
                   "--clients", "2", "--set", f"checkpoint.size={size}",
                   "--checkpoints", "2")
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    agg = res["aggregate"]
    assert agg["write_bytes"] == 2 * size and agg["read_bytes"] == 2 * size
    assert agg["completed"] == 2
    first = agg["checkpoints"][0]["write"]
    # Each client's 12 MiB shard: create, two UploadParts, complete; one "put" per object.
    assert first["latency"]["put"]["count"] == 2
    assert first["latency"]["write"]["count"] == 4
    assert first["latency"]["complete_multipart"]["count"] == 2
    assert agg["checkpoints"][0]["read"]["latency"]["ttfb"]["count"] == 2
    assert agg["s3"]["retries"] == 0
    assert [c["retention"]["files_deleted"] for c in res["clients"]] == [1, 1]
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="ck/aiio/checkpoints/")
    assert left.get("KeyCount", 0) == 0
