"""botocore's default checksums stay out of the timed requests: no CRC32 of a PUT, UploadPart or
GET body and no SHA-256 of the payload for the signature, checked on the wire between aiio
and a real SeaweedFS. (fio's http engine computes no CRC; the time a checksum takes is the
client's CPU, not the storage's.)"""

from __future__ import annotations

import re

from aiio.units import MiB
from tests.conftest import run_cli, saved_result
from tests.slowdown import SlowDownProxy

# What botocore sends when it checksums a body: the checksum or its algorithm in a header or
# a trailer (aws-chunked), Content-MD5, or asks the server for one to validate a GET against.
CHECKSUM_HEADERS = re.compile(rb"\r\n(x-amz-checksum-[a-z0-9]+|x-amz-sdk-checksum-algorithm|"
                              rb"x-amz-trailer|content-md5|content-encoding: *aws-chunked)",
                              re.IGNORECASE)
PAYLOAD_HASH = re.compile(rb"\r\nx-amz-content-sha256: *([^\r]*)", re.IGNORECASE)
REQUEST = re.compile(rb"(GET|PUT|POST|DELETE|HEAD) (/\S*) HTTP/1\.1(\r\n.*?)\r\n\r\n", re.DOTALL)


def requests(sent: bytes) -> list[tuple[bytes, bytes, bytes]]:
    """(method, path, headers) of every request the clients sent. DeleteObjects (cleanup,
    never timed) is left out: S3 requires a checksum of its body, so botocore sends one."""
    return [m.groups() for m in REQUEST.finditer(sent) if not m.group(2).endswith(b"?delete")]


def test_no_checksum_is_sent_or_computed_in_timed_requests(s3_server, s3_bucket, results):
    """A checkpoint (multipart uploads: CreateMultipartUpload, UploadPart, Complete) and its
    restore (GETs), sent through a proxy that keeps every byte the clients sent."""
    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    proxy = SlowDownProxy(port, throttle=0, match=b"")
    size = 2 * (8 * MiB + 4096)  # each client: a part of 8 MiB and a short one
    try:
        proc = run_cli("run", "--phase", "checkpoint", "--target", f"s3://{s3_bucket}/cs",
                       "--endpoint", proxy.endpoint, "--results", str(results),
                       "--no-history", "--no-report", "-q", "--clients", "2",
                       "--set", f"checkpoint.size={size}")
        sent = proxy.sent()
    finally:
        proxy.close()
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    assert res["aggregate"]["write_bytes"] == size and res["aggregate"]["read_bytes"] == size
    sent_requests = requests(sent)
    parts = [p for m, p, _ in sent_requests if m == b"PUT" and b"partNumber=" in p]
    gets = [p for m, p, _ in sent_requests if m == b"GET" and b"/checkpoints/" in p]
    assert len(parts) == 4 and len(gets) == 2  # two UploadParts a client; its restore GET
    for method, path, head in sent_requests:
        assert not CHECKSUM_HEADERS.findall(head), (method, path, head)
        # signed without hashing its payload
        assert PAYLOAD_HASH.findall(head) == [b"UNSIGNED-PAYLOAD"], (method, path, head)
