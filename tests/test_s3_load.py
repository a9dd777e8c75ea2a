"""Model loading from a real SeaweedFS bucket: weight objects PUT once, then every replica
fetches all of them as ranged GETs at the same moment."""

from __future__ import annotations

from aiio.fio import pairing
from aiio.units import MiB
from tests.conftest import run_cli, saved_result


def test_replicas_fetch_every_weight_range(s3_server, s3_bucket, results):
    size = 20 * MiB  # two objects of 10 MiB: ranges of 8 MiB and 2 MiB each
    args = ("run", "--phase", "load", "--target", f"s3://{s3_bucket}/m", "--no-history",
            "--no-report", "-q", "--clients", "2", "--set", f"load.size={size}",
            "--set", "load.files=2", "--set", "load.threads=4")
    proc = run_cli(*args, "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    agg = res["aggregate"]
    assert agg["bytes"] == 2 * size and agg["complete"]
    assert agg["requests"] == 2 * 4 and agg["latency"]["ttfb"]["count"] == 8
    assert agg["ops"] == agg["requests"]  # an op is a GET, whatever its body's chunks
    assert "object_reread" in [w["code"] for w in res["warnings"]]
    # four threads share the four ranges: four GETs in flight per replica, though two files
    # would cap a mount's readers at two; fio is asked for that concurrency (it read "--clients
    # 4", half the requests the replicas had in flight)
    assert [c["streams"] for c in res["clients"]] == [4, 4]
    assert pairing.streams_per_client(res) == 4
    assert res["hero"]["text"].endswith("--clients 8"), res["hero"]["text"]
    stored = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="m/aiio/models/")
    sizes = sorted(o["Size"] for o in stored["Contents"] if o["Key"].endswith(".bin"))
    assert sizes == [10 * MiB, 10 * MiB]
    loud = [a for a in args if a != "-q"]  # the notes are said without --quiet
    again = run_cli(*loud, "--results", str(results / "again"))
    assert again.returncode == 0, again.stderr
    second = saved_result(results / "again")
    # the weights' place as a URL names the prefix once (it read s3://B/m/m/aiio/models/...)
    said = again.stdout + again.stderr
    assert f"reusing model weights in s3://{s3_bucket}/m/aiio/models/" in said, said
    assert not agg["model"]["reused"] and second["aggregate"]["model"]["reused"]
