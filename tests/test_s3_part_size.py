"""The multipart part size is a validated setting (`s3.part_size`, `--part-size`): S3's limits
are refused in one line before anything is written, and datagen and checkpoints upload in
parts of exactly that size, which the result reports."""

from __future__ import annotations

import json

import pytest

from aiio.units import MiB
from tests.conftest import call_cli, flat, run_cli
from tests.test_s3_target import keys, one_line_exit_2


def _checkpoint(bucket: str, results, *args: str, cli=run_cli):
    """A checkpoint run on the bucket; `cli=call_cli` for one refused before it writes."""
    return cli("run", "--phase", "checkpoint", "--target", f"s3://{bucket}/ps",
               "--results", str(results), "--no-history", "--no-report", "-q", *args)


# 5 MiB + 1,000 B: parts that start mid-block put every later part's block headers at the
# wrong offsets, and --verify read 3,584 good blocks of a 24 MiB checkpoint as corrupt
@pytest.mark.parametrize("value,words", [("4MiB", ["5 MiB"]), ("6GiB", ["5 GiB"]),
                                         ("lots", ["part_size"]), ("5243880", ["4 KiB"])])
def test_a_part_size_outside_s3s_limits_is_one_line(s3_server, s3_bucket, results, value,
                                                    words):
    proc = _checkpoint(s3_bucket, results, "--clients", "1", "--set", f"s3.part_size={value}",
                       cli=call_cli)
    one_line_exit_2(proc, *words)
    assert keys(s3_server, s3_bucket) == set()


def test_more_than_10000_parts_is_refused_before_writing(s3_server, s3_bucket, results):
    # one 60 GiB shard in 5 MiB parts would take 12,288 parts
    proc = _checkpoint(s3_bucket, results, "--clients", "1", "--set", "checkpoint.size=60GiB",
                       "--part-size", "5MiB", cli=call_cli)
    one_line_exit_2(proc, "10,000 parts", "--part-size")
    assert keys(s3_server, s3_bucket) == set()


def test_part_size_is_refused_for_a_directory(target):
    one_line_exit_2(call_cli("run", "--target", str(target), "--part-size", "16MiB"),
                    "--part-size is for s3:// targets")


def test_checkpoint_uploads_in_parts_of_the_set_size(s3_server, s3_bucket, results):
    size = 2 * 12 * MiB  # two clients, one 12 MiB shard each: parts of 5, 5 and 2 MiB
    proc = _checkpoint(s3_bucket, results, "--clients", "2", "--set", f"checkpoint.size={size}",
                       "--part-size", "5MiB")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(next(results.glob("*/result.json")).read_text())
    write = res["aggregate"]["checkpoints"][0]["write"]
    assert write["latency"]["write"]["count"] == 2 * 3
    assert write["latency"]["complete_multipart"]["count"] == 2
    assert res["aggregate"]["s3"]["part_size"] == 5 * MiB
    assert res["workload"]["s3"]["part_size"] == 5 * MiB


def test_datagen_uploads_in_parts_of_the_set_size(s3_server, s3_bucket):
    proc = run_cli("datagen", "--target", f"s3://{s3_bucket}/dg", "--set",
                   "dataset.num_files=2", "--set", "dataset.sample_size=11MiB", "--set",
                   "dataset.format=raw", "--set", "s3.part_size=5MiB")
    assert proc.returncode == 0, proc.stderr
    assert "parts of 5.00 MiB" in flat(proc.stdout), proc.stdout
    c = s3_server.client()
    data = [k for k in keys(s3_server, s3_bucket) if k.endswith(".bin")]
    assert len(data) == 2
    for key in data:
        # the service counts an object's parts; 11 MiB in 5 MiB parts is three
        head = c.head_object(Bucket=s3_bucket, Key=key, PartNumber=1)
        assert head["PartsCount"] == 3 and head["ContentLength"] == 5 * MiB
    base = "dg/aiio/datasets/demo/manifest.json"
    manifest = json.loads(c.get_object(Bucket=s3_bucket, Key=base)["Body"].read())
    assert manifest["part_size"] == 5 * MiB
