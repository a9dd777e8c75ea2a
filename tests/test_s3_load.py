"""Model loading from a real SeaweedFS bucket: weight objects PUT once, then every replica
fetches all of them as ranged GETs at the same moment."""

from __future__ import annotations

from aiio.units import MiB
from tests.conftest import run_cli, saved_result


def test_replicas_fetch_every_weight_range(s3_server, s3_bucket, results):
    size = 20 * MiB  # two objects of 10 MiB: ranges of 8 MiB and 2 MiB each
    args = ("run", "--phase", "load", "--target", f"s3://{s3_bucket}/m", "--no-history",
            "--no-report", "-q", "--clients", "2", "--set", f"load.size={size}",
            "--set", "load.files=2", "--set", "load.threads=2")
    proc = run_cli(*args, "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    agg = res["aggregate"]
    assert agg["bytes"] == 2 * size and agg["complete"]
    assert agg["requests"] == 2 * 4 and agg["latency"]["ttfb"]["count"] == 8
    assert "object_reread" in [w["code"] for w in res["warnings"]]
    stored = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="m/aiio/models/")
    sizes = sorted(o["Size"] for o in stored["Contents"] if o["Key"].endswith(".bin"))
    assert sizes == [10 * MiB, 10 * MiB]
    again = run_cli(*args, "--results", str(results / "again"))
    assert again.returncode == 0, again.stderr
    second = saved_result(results / "again")
    assert not agg["model"]["reused"] and second["aggregate"]["model"]["reused"]
