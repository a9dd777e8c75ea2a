"""Checkpoints during training on a real SeaweedFS bucket: each client's accelerator loop stops
to PUT its shard objects (multipart above the part size), with the same stall, read-dip and
AU figures as on a mount; older checkpoints are DELETEd and the run's objects go at the end."""

from __future__ import annotations

from aiio.units import MiB
from tests.conftest import TINY_ARGS, run_cli, saved_result


def test_train_writes_checkpoints_to_the_bucket(s3_server, s3_bucket, results):
    size = 2 * 10 * MiB  # each client's shard: a multipart upload of 8 MiB + 2 MiB
    proc = run_cli("run", "--phase", "train", "--target", f"s3://{s3_bucket}/tc",
                   "--results", str(results), "--no-history", "--no-report", "-q",
                   *TINY_ARGS, "--set", "dataset.format=raw", "--set",
                   f"checkpoint.size={size}", "--checkpoint-every", "1")
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    ck = res["aggregate"]["checkpoint"]
    assert ck["completed"] == 2  # 2 epochs, one checkpoint after each
    for c in res["clients"]:
        assert len(c["checkpoints"]) == 2 and c["checkpoint_stall_s"] > 0
        assert c["au"] < c["au_without_checkpoints"]
        assert c["retention"]["files_deleted"] == 1  # keep 1: the first one goes
    for p in ck["checkpoints"]:
        assert p["write"]["bytes"] == size
        lat = p["write"]["latency"]
        assert lat["put"]["count"] == 2 and lat["complete_multipart"]["count"] == 2
        assert lat["write"]["count"] == 4  # two UploadParts per shard
        assert {"read_dip", "au_lost", "read_mib_s_during", "au_during"} <= set(p)
    assert res["aggregate"]["write_bytes"] == 2 * size
    assert res["aggregate"]["s3"]["retries"] == 0
    assert res["aggregate"]["s3"]["checkpoint_part_size"] == 8 * MiB
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="tc/aiio/checkpoints/")
    assert left.get("KeyCount", 0) == 0
