"""What stays refused on a bucket, each with its reason in one line, exit 2, nothing written:
random reads and writes inside objects (randrw), and the native reader (a file reader)."""

from __future__ import annotations

import pytest

from tests.conftest import TINY_ARGS, call_cli
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
