"""Where the S3 service may serve reads from its own cache, the result says so: a checkpoint
restore GETs back the objects the same run PUT moments before."""

from __future__ import annotations

from aiio.units import MiB
from tests.conftest import run_cli, saved_result

CHECKPOINT = ("run", "--phase", "checkpoint", "--no-history", "--no-report", "-q",
              "--clients", "1", "--set", f"checkpoint.size={4 * MiB}")


def _codes(res: dict) -> set[str]:
    return {w["code"] for w in res["warnings"]}


def test_a_restore_of_objects_just_written_is_named(s3_bucket, results):
    proc = run_cli(*CHECKPOINT, "--target", f"s3://{s3_bucket}/ck", "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    assert res["aggregate"]["read_bytes"] == 4 * MiB
    assert "object_read_after_write" in _codes(res), res["warnings"]


def test_no_restore_no_warning(s3_bucket, results):
    proc = run_cli(*CHECKPOINT, "--set", "checkpoint.restore=false", "--target",
                   f"s3://{s3_bucket}/ck", "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    assert res["aggregate"]["read_bytes"] == 0
    assert "object_read_after_write" not in _codes(res)
