"""Checkpoints during training on a real SeaweedFS bucket: each client's accelerator loop stops
to PUT its shard objects (multipart above the part size), with the same stall, read-dip and
AU figures as on a mount; older checkpoints are DELETEd and the run's objects go at the end."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize("where", ["mount", "bucket"])
def test_a_later_burst_counts_over_the_real_window(where, request, results):
    """Clients whose checkpoints start at different instants (as drift does): the write
    figures run from the first client's start to the last shard durable, on the run's one
    clock. Three samples over two clients at batch 1: client 1 takes one step more, so its
    burst starts one compute time (1 s) after client 0's; over each client's own burst clock
    a bucket reported ten times the real rate. One loader thread: batches come in order, so
    the epoch's last step is the one computed last."""
    if where == "bucket":
        server = request.getfixturevalue("s3_server")
        target = f"s3://{request.getfixturevalue('s3_bucket')}/dr"
    else:
        server, target = None, request.getfixturevalue("tmp_path") / "mount"
        target.mkdir()
    shard = 8 * MiB
    proc = run_cli("run", "--phase", "train", "--target", str(target), "--results", str(results),
                   "--no-history", "--no-report", "-q", "--clients", "2", "--epochs", "1",
                   "--batch-size", "1", "--read-threads", "1", "--set", "dataset.num_files=3",
                   "--set", "dataset.sample_size=64KiB", "--set", "dataset.format=raw",
                   "--set", "train.compute_time.h100=1", "--set", f"checkpoint.size={2 * shard}",
                   "--checkpoint-every", "1", env=server.env() if server else None)
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    starts = [c["checkpoints"][0]["write"]["start_s"] for c in res["clients"]]
    assert max(starts) - min(starts) > 0.5  # the drift is real
    write = res["aggregate"]["checkpoint"]["checkpoints"][0]["write"]
    window = write["end_s"] - write["start_s"]
    assert write["last_done"]["bytes"] == 2 * shard
    assert write["last_done"]["seconds"] == pytest.approx(window)
    assert write["last_done"]["mib_s"] == pytest.approx(2 * shard / MiB / window)
