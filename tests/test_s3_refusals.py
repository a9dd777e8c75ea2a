"""What stays refused on a bucket, each with its reason in one line, exit 2, nothing written:
random reads and writes inside objects (randrw), and the native reader (a file reader)."""

from __future__ import annotations

import pytest

from tests.conftest import TINY_ARGS, call_cli, saved_result
from tests.test_s3_target import keys, one_line_exit_2


@pytest.mark.parametrize("spelling", [("--phase", "randrw"),
                                      ("--phase", "prep", "--set", "prep.mode=randrw")])
def test_randrw_is_refused_with_its_reason(s3_server, s3_bucket, results, spelling):
    proc = call_cli("run", *spelling, "--target", f"s3://{s3_bucket}/rr", "--results",
                   str(results), "--no-history", "-q")
    one_line_exit_2(proc, "in place", "aiio fio --target s3://")
    assert keys(s3_server, s3_bucket) == set()
    assert not any(results.glob("*/result.json"))


def test_native_reader_is_refused_with_its_reason(s3_server, s3_bucket, results):
    proc = call_cli("run", "--phase", "train", "--reader", "native", "--target",
                   f"s3://{s3_bucket}/nr", "--results", str(results), "--no-history", "-q",
                   *TINY_ARGS)
    one_line_exit_2(proc, "--reader native", "GET")
    assert keys(s3_server, s3_bucket) == set()


# An object larger than S3's 10,000 parts of --part-size: each phase refuses it before its
# first write (the marker included), so the refusal leaves no result and nothing in the bucket,
# as on a mount. The result saved "running" at the start stayed, saved "failed".
TOO_MANY_PARTS = ("--set", "s3.part_size=5MiB", "--clients", "1")


@pytest.mark.parametrize("phase, sets, what", [
    ("checkpoint", ("--set", "checkpoint.size=200GiB"), "a checkpoint shard"),
    ("load", ("--set", "load.size=200GiB"), "a weight object"),
    ("train", ("--set", "dataset.sample_size=200GiB", "--set", "dataset.sample_size_stdev=0",
               "--set", "dataset.num_files=1", "--batch-size", "1"), "a dataset file"),
])
def test_a_refusal_before_any_write_leaves_no_result(s3_server, s3_bucket, results, phase,
                                                     sets, what):
    proc = call_cli("run", "--phase", phase, "--target", f"s3://{s3_bucket}/tm", "--results",
                    str(results), "--no-history", "-q", "--no-report", *sets, *TOO_MANY_PARTS)
    one_line_exit_2(proc, what, "parts")
    assert "partial result" not in proc.stderr
    assert not any(results.glob("*/result.json"))
    assert keys(s3_server, s3_bucket) == set()


def test_a_missing_bucket_leaves_no_result(s3_server, s3_bucket, results):
    proc = call_cli("run", "--target", "s3://aiio-no-such-bucket/x", "--results", str(results),
                    "--no-history", "-q", "--no-report", *TINY_ARGS)
    one_line_exit_2(proc, "does not exist")
    assert not any(results.glob("*/result.json"))


def test_a_refusal_after_a_write_keeps_its_result(s3_server, s3_bucket, results):
    # the lifecycle uploads its dataset before its train stage refuses the checkpoints: that
    # run wrote, so its result stays, as on a mount
    proc = call_cli("run", "--phase", "all", "--target", f"s3://{s3_bucket}/lw", "--results",
                    str(results), "--no-history", "-q", "--no-report", *TINY_ARGS[:-2],
                    "--set", "checkpoint.size=200GiB", *TOO_MANY_PARTS)
    assert proc.returncode == 2, proc.stderr
    assert "partial result saved in" in proc.stderr
    assert saved_result(results)["status"] == "failed"


def test_a_dataset_whose_index_cannot_be_held_is_refused_as_on_a_mount(s3_server, s3_bucket):
    """A billion samples of varying size: a mount refuses them in one line before writing;
    the bucket went on to upload them, its memory growing by gigabytes a minute."""
    proc = call_cli("datagen", "--target", f"s3://{s3_bucket}/big", "--set",
                    "dataset.num_files=1000000000")
    one_line_exit_2(proc, "per-sample index too large")
    assert keys(s3_server, s3_bucket) == set()
