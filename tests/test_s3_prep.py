"""Data preparation against a real SeaweedFS bucket: list, head, get, put and delete each
counted with its own latency histogram, and the staged shard objects removed afterwards."""

from __future__ import annotations

import pytest

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
    # an op is a request: a GET, not its ttfb or body chunks; a PUT, not its "put" span
    assert agg["read"]["ops"] == 24 and agg["write"]["ops"] == agg["shards"]
    assert agg["read"]["iops"] == pytest.approx(ops["get"]["ops_s"])  # GETs per second
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="pp/aiio/prep/")
    assert left.get("KeyCount", 0) == 0


def test_a_folder_of_more_keys_than_one_list_returns_is_listed_whole(s3_server, s3_bucket):
    """A LIST request returns at most 1,000 keys: a "folder" of prep.files_per_dir above that
    was listed by one request, its names cut at 1,000 and its list ops one where a lister
    makes one per page. Each page is a request, timed and counted as one "list"."""
    from concurrent.futures import ThreadPoolExecutor

    from aiio.engines.s3 import S3Engine
    from aiio.engines.seam import OpLog, merge_logs
    from aiio.options import Access

    client = s3_server.client()
    names = [f"f{i:05d}" for i in range(1001)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: client.put_object(Bucket=s3_bucket, Key=f"d/{n}", Body=b""),
                      names))
    eng = S3Engine(Access(endpoint=s3_server.endpoint), s3_bucket)
    log = OpLog(0)
    assert sorted(eng.listdir(log, "d")) == names
    hist, _, ops, _ = merge_logs([log])
    assert hist["list"].count == ops == 2
