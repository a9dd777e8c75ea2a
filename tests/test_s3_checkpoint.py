"""Checkpoints to a real SeaweedFS bucket: shard objects PUT (multipart above the part size),
durable when the completing request returns, restored by GETs, and removed afterwards."""

from __future__ import annotations

from typing import Any

from aiio.engines.s3 import S3Engine
from aiio.engines.seam import OpLog
from aiio.options import Access
from aiio.units import MiB
from tests.conftest import run_cli, saved_result


def test_checkpoint_puts_shards_and_restores_them(s3_server, s3_bucket, results):
    size = 2 * 12 * MiB + 4096  # two clients: parts of 8 MiB, then a short last part
    proc = run_cli("run", "--phase", "checkpoint", "--target", f"s3://{s3_bucket}/ck",
                   "--results", str(results), "--no-history", "--no-report", "-q",
                   "--clients", "2", "--set", f"checkpoint.size={size}",
                   "--checkpoints", "2")
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    agg = res["aggregate"]
    assert agg["write_bytes"] == 2 * size and agg["read_bytes"] == 2 * size
    assert agg["completed"] == 2
    first = agg["checkpoints"][0]["write"]
    # Each client's 12 MiB shard: create, two UploadParts, complete; one "put" per object.
    assert first["latency"]["put"]["count"] == 2
    assert first["latency"]["write"]["count"] == 4
    assert first["latency"]["complete_multipart"]["count"] == 2
    assert agg["checkpoints"][0]["read"]["latency"]["ttfb"]["count"] == 2
    # ops are requests: create, two UploadParts and complete a client; one GET a restore
    assert first["ops"] == 2 * 4 and agg["checkpoints"][0]["read"]["ops"] == 2
    assert agg["s3"]["retries"] == 0
    assert [c["retention"]["files_deleted"] for c in res["clients"]] == [1, 1]
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="ck/aiio/checkpoints/")
    assert left.get("KeyCount", 0) == 0


def test_first_done_counts_an_upload_once_it_completed(s3_server, s3_bucket, results):
    """A part's bytes are durable when CompleteMultipartUpload returns, not when its UploadPart
    does: first done counts whole shards, those that were durable when the first client was
    done. Counting UploadPart bytes as they went gave 24 MiB of an upload that had not
    completed."""
    shard = 32 * MiB  # each client: a multipart upload of four 8 MiB parts
    proc = run_cli("run", "--phase", "checkpoint", "--target", f"s3://{s3_bucket}/fd",
                   "--results", str(results), "--no-history", "--no-report", "-q",
                   "--clients", "2", "--set", f"checkpoint.size={2 * shard}",
                   "--checkpoints", "2", "--set", "checkpoint.restore=false")
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    for one in res["aggregate"]["checkpoints"]:
        write = one["write"]
        first = write["first_done"]
        assert first["bytes"] in (shard, 2 * shard), first
        assert first["seconds"] == write["first_done_s"]
        assert write["last_done"]["bytes"] == 2 * shard
        assert write["last_done"]["seconds"] == write["last_done_s"]


class _Instants(OpLog):
    """An OpLog that also keeps each timed request, to read when it returned."""

    def __init__(self) -> None:
        super().__init__(0)
        self.requests: list[tuple[str, Any]] = []

    def timed(self, op: str, nbytes: int = 0, ops: int = 1) -> Any:
        t = super().timed(op, nbytes, ops)
        self.requests.append((op, t))
        return t


def test_the_engine_writer_is_durable_when_the_completing_request_returned(s3_server, s3_bucket):
    """The s3 engine's whole-object write names as its durable instant the return of
    CompleteMultipartUpload (or of the one PUT), as a file's is its fsync's return: not a
    reading taken after the writer's own bookkeeping."""
    eng = S3Engine(Access(), s3_bucket)
    for size, completing in ((3 * 5 * MiB, "complete_multipart"), (MiB, "put")):
        log = _Instants()
        wr = eng.writer(5 * MiB, log)
        wr.write_file(f"durable/{size}", size, tag=1)
        done = [t.end_ns for op, t in log.requests if op == completing]
        assert len(done) == 1 and wr.synced_ns == done[0], (completing, wr.synced_ns, done)
        wr.close()
