"""Training against a real SeaweedFS bucket: objects uploaded once, every sample fetched by a
GET, and the same figures (first/last done, AU) plus requests, TTFB, retries and throttling."""

from __future__ import annotations

from tests.conftest import TINY_ARGS, run_cli, saved_result


def result_of(results) -> dict:
    return saved_result(results)


def object_keys(server, bucket: str, prefix: str = "") -> dict[str, int]:
    pages = server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                      Prefix=prefix)
    return {o["Key"]: o["Size"] for p in pages for o in p.get("Contents", [])}


def test_train_reads_every_object_by_get(s3_server, s3_bucket, results):
    proc = run_cli("run", "--phase", "train", "--target", f"s3://{s3_bucket}/ml",
                   "--results", str(results), "--no-history", "--no-report", "-q", *TINY_ARGS,
                   "--set", "dataset.format=raw")
    assert proc.returncode == 0, proc.stderr
    res = result_of(results)
    stored = object_keys(s3_server, s3_bucket, "ml/aiio/datasets/")
    data = {k: v for k, v in stored.items() if "/d0" in k}
    assert len(data) == 24 and all(k.startswith("ml/aiio/datasets/demo/") for k in stored)
    assert all(k.endswith(".bin") for k in data)
    agg = res["aggregate"]
    # Two epochs of whole-object GETs: every stored byte twice, one request per object read.
    assert agg["bytes"] == 2 * sum(data.values())
    assert agg["requests"] == 2 * 24
    assert agg["ops"] == agg["requests"]  # an op is a request: not its ttfb, nor body chunks
    assert agg["latency"]["ttfb"]["count"] == 48
    assert agg["latency"]["ttfb"]["max_ns"] <= agg["latency"]["get"]["max_ns"]
    assert agg["first_done"]["mib_s"] > 0 and agg["last_done"]["mib_s"] > 0
    assert 0 < agg["au_mean"] <= 1
    for c in res["clients"]:
        assert c["requests"] == c["ops"] == 24 and c["requests_per_s"] > 0
        assert c["s3"]["calls"] == 24 and c["s3"]["retries"] == 0
    assert res["target"]["fstype"] == "s3" and res["method"] == "s3"
    assert "object_reread" in [w["code"] for w in res["warnings"]]


def test_train_on_shards_uses_ranged_gets(s3_server, s3_bucket, results):
    """Many samples per object: each batch reads its byte range of the shard."""
    proc = run_cli("run", "--phase", "train", "--target", f"s3://{s3_bucket}",
                   "--results", str(results), "--no-history", "--no-report", "-q",
                   "--set", "dataset.format=raw", "--set", "dataset.num_files=2",
                   "--set", "dataset.samples_per_file=16", "--set", "dataset.sample_size=4KiB",
                   "--set", "dataset.sample_size_stdev=0", "--epochs", "1",
                   "--set", "train.shuffle=file", "--batch-size", "4", "--clients", "2")
    assert proc.returncode == 0, proc.stderr
    agg = result_of(results)["aggregate"]
    assert agg["bytes"] == 2 * 16 * 4096
    assert agg["requests"] == 8  # 32 samples in batches of 4, each batch inside one shard
    assert "object_reread" not in [w["code"] for w in result_of(results)["warnings"]]


def test_throttling_answers_are_counted_per_client(s3_server, s3_bucket, results):
    """Two 503 SlowDown answers to data GETs: botocore retries them, and the result says so."""
    from tests.slowdown import SlowDownProxy

    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    proxy = SlowDownProxy(port, throttle=2, match=b"GET /" + s3_bucket.encode() + b"/t/aiio/"
                          b"datasets/demo/d0")
    try:
        proc = run_cli("run", "--phase", "train", "--target", f"s3://{s3_bucket}/t",
                       "--endpoint", proxy.endpoint, "--results", str(results),
                       "--no-history", "--no-report", "-q", *TINY_ARGS)
    finally:
        proxy.close()
    assert proc.returncode == 0, proc.stderr
    assert proxy.answered == 2
    res = result_of(results)
    s3 = res["aggregate"]["s3"]
    assert s3["throttled"] == 2 and s3["retries"] == 2
    assert sum(s3["throttled_per_client"]) == 2
    assert s3["attempts"] == s3["calls"] + 2
    assert "s3_retries" in [w["code"] for w in res["warnings"]]


def test_datagen_puts_the_dataset_once(s3_server, s3_bucket):
    args = ("datagen", "--target", f"s3://{s3_bucket}/dg", "--set", "dataset.num_files=6",
            "--set", "dataset.sample_size=64KiB", "--set", "dataset.format=raw")
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert "6 objects" in first.stdout and "MiB/s" in first.stdout, first.stdout
    stored = object_keys(s3_server, s3_bucket, "dg/aiio/datasets/demo/")
    assert len([k for k in stored if k.endswith(".bin")]) == 6
    assert "dg/aiio/datasets/demo/manifest.json" in stored
    again = run_cli(*args)
    assert again.returncode == 0 and "already present" in again.stdout, again.stdout
