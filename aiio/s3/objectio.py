"""Timed object I/O: PUT (multipart above a part size) and GET (whole or ranged).

Every request is timed on the monotonic clock: "ttfb" from sending the request to the
response headers, "get"/"put" for the whole request; body bytes are logged as "read" per
transfer-size chunk as they arrive, so the byte series shows when bytes came, not when the
request ended. Bytes are what the body delivered, never the nominal length.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from aiio.engine import OpLog
from aiio.s3.connect import Access, RequestCounts, make_client
from aiio.units import MiB

PART_SIZE = 8 * MiB       # multipart above this; S3 needs parts of at least 5 MiB but the last
MIN_PART_SIZE = 5 * MiB


class ObjectIO:
    """One client process's connection to the bucket: a pool sized to its streams, created
    lazily in the process that uses it (a boto3 client must not cross a fork)."""

    def __init__(self, access: Access, bucket: str, streams: int,
                 sizes: dict[str, int] | None = None) -> None:
        self.access, self.bucket, self.streams = access, bucket, streams
        self.sizes = sizes or {}  # key -> object size, to tell a whole-object GET
        self.counts = RequestCounts()
        self._client: Any = None
        self._pid = 0
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        # Loader threads ask at once; one client (and one set of counts) per process.
        with self._lock:
            if self._client is None or self._pid != os.getpid():
                self.counts = RequestCounts()
                self._client = make_client(self.access, self.streams, counts=self.counts)
                self._pid = os.getpid()
        return self._client

    def reader(self, method: str, transfer_size: int, log: OpLog,
               counter: Any = None) -> ObjectReader:
        """A reader with the file Reader's call shape, for the train phase's loader."""
        return ObjectReader(self, transfer_size, log, counter)

    def get(self, key: str, offset: int, length: int | None, chunk: int, log: OpLog,
            counter: Any = None, stop: Any = None) -> int:
        """GET key (a Range when it is not the whole object); returns body bytes."""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        whole = offset == 0 and (length is None or length >= self.sizes.get(key, length + 1))
        if not whole:
            kwargs["Range"] = f"bytes={offset}-{offset + length - 1}"
        t0 = time.monotonic_ns()
        body = self.client.get_object(**kwargs)["Body"]
        log.add("ttfb", t0, time.monotonic_ns(), 0)
        done = 0
        try:
            while True:
                c0 = time.monotonic_ns()
                data = body.read(chunk)
                if not data:
                    break
                log.add("read", c0, time.monotonic_ns(), len(data))
                done += len(data)
                if counter:
                    counter(len(data))
                if stop is not None and stop.is_set():
                    break
        finally:
            body.close()
        log.add("get", t0, time.monotonic_ns(), 0)
        return done

    def put_file(self, key: str, path: str, log: OpLog, part_size: int = PART_SIZE) -> int:
        """Upload a local file: one PUT, or a multipart upload above part_size. Durable when
        the PUT (or CompleteMultipartUpload) returns. Returns bytes sent."""
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            if size <= part_size:
                data = fh.read()
                t0 = time.monotonic_ns()
                self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
                log.add("put", t0, time.monotonic_ns(), len(data))
                return len(data)
            return self._multipart(key, fh, log, max(part_size, MIN_PART_SIZE))

    def _multipart(self, key: str, fh: Any, log: OpLog, part_size: int) -> int:
        c = self.client
        t0 = time.monotonic_ns()
        upload = c.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"]
        log.add("create_multipart", t0, time.monotonic_ns(), 0)
        parts, done = [], 0
        try:
            while data := fh.read(part_size):
                p0 = time.monotonic_ns()
                got = c.upload_part(Bucket=self.bucket, Key=key, UploadId=upload,
                                    PartNumber=len(parts) + 1, Body=data)
                log.add("put_part", p0, time.monotonic_ns(), len(data))
                parts.append({"PartNumber": len(parts) + 1, "ETag": got["ETag"]})
                done += len(data)
            c0 = time.monotonic_ns()
            c.complete_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload,
                                        MultipartUpload={"Parts": parts})
            log.add("complete_multipart", c0, time.monotonic_ns(), 0)
        except BaseException:
            c.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload)
            raise
        log.add("put", t0, time.monotonic_ns(), 0)
        return done


class ObjectReader:
    """The train loader's reader for objects: `read_file(key, offset, length)` is one GET."""

    def __init__(self, io: ObjectIO, transfer_size: int, log: OpLog, counter: Any) -> None:
        self.io, self.chunk, self.log, self.counter = io, transfer_size, log, counter
        self.stop: Any = None
        self.check: Any = None  # --verify is refused for objects

    def read_file(self, key: str, offset: int = 0, length: int | None = None) -> int:
        return self.io.get(key, offset, length, self.chunk, self.log, self.counter, self.stop)

    def close(self) -> None:
        pass
