"""The whole lifecycle on a real SeaweedFS bucket in one run: prep (LIST, HEAD, GET, PUT and
DELETE), training with checkpoints PUT as shard objects, then model loading by ranged GETs,
each stage from one common start; --verify checks the weights as they arrive."""

from __future__ import annotations

from tests.conftest import TINY_ARGS, run_cli, saved_result


def test_all_stages_run_against_the_bucket(s3_server, s3_bucket, results):
    proc = run_cli("run", "--phase", "all", "--target", f"s3://{s3_bucket}/lc", "--results",
                   str(results), "--no-history", "--no-report", *TINY_ARGS, "--set",
                   "dataset.format=raw", "--set", "checkpoint.size=4MiB", "--set",
                   "load.size=2MiB", "--set", "load.files=1", "--set", "prep.shard_size=256KiB",
                   "--verify")
    assert proc.returncode == 0, proc.stderr
    for title in ("prep:", "train:", "checkpoints during training", "load:"):
        assert title in proc.stdout
    res = saved_result(results)
    assert res["phase"] == "all" and res["status"] == "ok" and res["method"] == "s3"
    agg = res["aggregate"]
    assert [s["phase"] for s in agg["stages"]] == ["prep", "train", "load"]
    assert agg["prep"]["samples"] == 24 and agg["prep"]["metadata"]["ops"]["list"]["count"] > 0
    assert agg["train"]["checkpoint"]["completed"] == 2 and agg["train"]["requests"] == 48
    assert agg["load"]["complete"] and agg["load"]["requests"] == 2  # one 2 MiB range per replica
    assert agg["verify"]["mismatches"] == 0 and agg["verify"]["blocks_checked"] > 0
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="lc/aiio/")
    kept = {o["Key"].split("/")[2] for o in left.get("Contents", [])}
    assert kept <= {".aiio-owned", "datasets", "models"}  # checkpoints and prep output gone
