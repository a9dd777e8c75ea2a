"""`aiio clean` also ends the multipart uploads a killed run left unfinished below aiio's
prefix: their parts hold the bucket's space but list as no object."""

from __future__ import annotations

from aiio.s3.target import S3Target
from aiio.units import MiB
from tests.conftest import call_cli, flat


def _unfinished(client, bucket: str) -> set[str]:
    got = client.list_multipart_uploads(Bucket=bucket)
    return {u["Key"] for u in got.get("Uploads", [])}


def _start_upload(client, bucket: str, key: str) -> None:
    """What a checkpoint run killed between two UploadParts leaves behind."""
    upload = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    client.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=1,
                       Body=b"\0" * (5 * MiB))


def test_clean_aborts_aiios_unfinished_uploads_only(s3_server, s3_bucket):
    c = s3_server.client()
    S3Target(f"s3://{s3_bucket}/data").claim()
    ours = "data/aiio/checkpoints/run/ckpt-0/client00000-part000.bin"
    theirs = {"data/other/big.bin", "data/aiiox/big.bin"}
    for key in {ours, *theirs}:
        _start_upload(c, s3_bucket, key)
    proc = call_cli("clean", "--target", f"s3://{s3_bucket}/data")
    assert proc.returncode == 0, proc.stderr
    assert _unfinished(c, s3_bucket) == theirs
    assert "1 unfinished upload" in flat(proc.stdout), proc.stdout
