"""Timed object I/O: PUT (multipart above a part size), GET (whole or ranged), DELETE.

Every request is timed through the engine's one seam, `OpLog.timed`. GET: "ttfb" from sending
the request to the response headers, "get" for the whole request, and the body's bytes as
"read" per transfer-size chunk as they arrive (so the byte series shows when bytes came, not
when the request ended). PUT: each PUT or UploadPart request is a "write" carrying its
bytes, and "put" spans an object from its first request to the one that makes it durable.
Bytes are what was sent or delivered, never a nominal length. An operation (`ops`) is a
request, as fio's http engine and warp count them: "get", "write", "create_multipart",
"complete_multipart", "delete"; the parts and spans ("ttfb", "read", "put", --verify's
"verify" and "checksum") are timed with ops=0.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from aiio.cache_methods import METHOD_NONE
from aiio.engines.blocks import BLOCK
from aiio.engines.seam import OpLog, Writer
from aiio.engines.timing import Window
from aiio.errors import ConfigError
from aiio.options import Access
from aiio.s3.connect import RequestCounts, make_client
from aiio.units import MiB, format_size
from aiio.workload import MAX_PARTS


class Sent(NamedTuple):
    """An object uploaded: the bytes its requests sent, and when the request that made it
    durable (its PUT or CompleteMultipartUpload) returned (`now_ns`)."""

    nbytes: int
    durable_ns: int


def check_parts(largest: int, part_size: int, what: str) -> None:
    """Refuse, before anything is written, an object that needs more parts than S3 allows."""
    parts = math.ceil(largest / part_size)
    if parts > MAX_PARTS:
        need = math.ceil(largest / MAX_PARTS / MiB)
        raise ConfigError(f"{what} of {format_size(largest)} in parts of "
                          f"{format_size(part_size)} takes {parts:,} parts, and S3 allows "
                          f"{MAX_PARTS:,} parts an object: use --part-size {need}MiB or more")


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

    def __deepcopy__(self, memo: dict) -> ObjectIO:
        return self  # a connection is shared, not copied (dataclasses.asdict copies fields)

    def __getstate__(self) -> dict[str, Any]:
        # Sent to another host's rank under MPI: what to connect to, never a connection.
        return {"access": self.access, "bucket": self.bucket, "streams": self.streams,
                "sizes": self.sizes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    @property
    def client(self) -> Any:
        # Loader threads ask at once; one client (and one set of counts) per process.
        with self._lock:
            if self._client is None or self._pid != os.getpid():
                client = make_client(self.access, self.streams)
                # botocore loads its models and endpoint rules on the first call; one cheap
                # request here keeps that out of the measured window (and out of the counts).
                client.list_objects_v2(Bucket=self.bucket, MaxKeys=1)
                self.counts = RequestCounts()
                self.counts.attach(client)
                self._client, self._pid = client, os.getpid()
        return self._client

    def reader(self, method: str, transfer_size: int, log: OpLog,
               counter: Any = None) -> ObjectReader:
        """A reader with the file Reader's call shape, for the train phase's loader."""
        return ObjectReader(self, transfer_size, log, counter)

    def get(self, key: str, offset: int, length: int | None, chunk: int, log: OpLog,
            counter: Any = None, stop: Any = None, check: Any = None,
            keep: bytearray | None = None) -> int:
        """GET key (a Range when it is not the whole object); returns body bytes. `check`
        (--verify) gets the whole blocks of each chunk, with their offset in the object, as
        (view, bytes, offset); timed as "verify" and left out of the GET's time, as a mount's
        check is out of its read's. `keep`: the body's bytes are added to it."""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        whole = offset == 0 and (length is None or length >= self.sizes.get(key, length + 1))
        if not whole:
            kwargs["Range"] = f"bytes={offset}-{offset + length - 1}"
        aligned = BlockAligned(check, offset) if check is not None else None
        with log.timed("get") as request:
            with log.timed("ttfb", ops=0):
                body = self.client.get_object(**kwargs)["Body"]
            try:
                done = self._body(body, chunk, log, counter, stop, aligned, request, keep)
            finally:
                body.close()
            # the object's last, short block; not when a stop cut the body short
            if aligned is not None and aligned.held and not (stop and stop.is_set()):
                with log.timed("verify", ops=0) as checked:
                    aligned.close()
                request.exclude(checked.spent_ns)
            return done

    @staticmethod
    def _body(body: Any, chunk: int, log: OpLog, counter: Any, stop: Any,
              check: BlockAligned | None, request: Any, keep: bytearray | None = None) -> int:
        """A GET's body, `chunk` bytes at a time, each chunk a timed "read" with its bytes."""
        done = 0
        while True:
            with log.timed("read", ops=0) as op:
                data = body.read(chunk)
                op.nbytes = len(data)
                if not data:
                    op.cancel()  # the end of the body: no transfer, no operation
            if not data:
                return done
            if keep is not None:
                keep += data
            if check is not None:
                with log.timed("verify", ops=0) as checked:
                    check.feed(data)
                request.exclude(checked.spent_ns)
            done += len(data)
            if counter:
                counter(len(data))
            if stop is not None and stop.is_set():
                return done

    def put_file(self, key: str, path: str, log: OpLog, part_size: int) -> int:
        """Upload a local file: one PUT, or a multipart upload above part_size. Returns
        bytes sent."""
        size = os.path.getsize(path)
        check_parts(size, part_size, key)
        with open(path, "rb") as fh:
            if size <= part_size:
                return self.put_bytes(key, fh.read(), log).nbytes
            return self.multipart(key, iter(lambda: fh.read(part_size), b""), log).nbytes

    def put_bytes(self, key: str, data: bytes, log: OpLog) -> Sent:
        """One PUT: "write" carries its bytes, "put" is the object's time to durable."""
        with log.timed("put", ops=0) as put, log.timed("write", len(data)):
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
        return Sent(len(data), put.end_ns)

    def multipart(self, key: str, parts: Iterator[bytes], log: OpLog,
                  made_ns: Callable[[], int] = lambda: 0) -> Sent:
        """A multipart upload; durable when CompleteMultipartUpload returns. Each UploadPart
        is a "write" with its bytes; "put" spans create to complete, less `made_ns()`'s
        growth: the time spent making the parts (and checksumming them, --verify), which is
        not the service's.
        Aborted on any error."""
        c = self.client
        before = made_ns()
        with log.timed("put", ops=0) as put:
            with log.timed("create_multipart"):
                upload = c.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"]
            done: list[dict] = []
            nbytes = 0
            try:
                for data in parts:
                    with log.timed("write", len(data)):
                        got = c.upload_part(Bucket=self.bucket, Key=key, UploadId=upload,
                                            PartNumber=len(done) + 1, Body=data)
                    done.append({"PartNumber": len(done) + 1, "ETag": got["ETag"]})
                    nbytes += len(data)
                with log.timed("complete_multipart") as complete:
                    c.complete_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload,
                                                MultipartUpload={"Parts": done})
                put.exclude(made_ns() - before)
            except BaseException:
                c.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload)
                raise
        return Sent(nbytes, complete.end_ns)

    def delete(self, key: str, log: OpLog) -> None:
        with log.timed("delete"):
            self.client.delete_object(Bucket=self.bucket, Key=key)


class BlockAligned:
    """Hands a --verify check whole 4 KiB blocks at their offsets in the object, whatever
    sizes a body's reads return (a short read must not split a block between two checks)."""

    def __init__(self, check: Any, offset: int) -> None:
        self.check, self.pos, self.held = check, offset, b""

    def feed(self, data: bytes) -> None:
        buf = self.held + data if self.held else data
        n = len(buf) - len(buf) % BLOCK
        if n:
            self.check(memoryview(buf)[:n], n, self.pos)
        self.pos += n
        self.held = buf[n:]

    def close(self) -> None:
        """Check what is held: the object's (or range's) last block, shorter than 4 KiB."""
        if self.held:
            self.check(memoryview(self.held), len(self.held), self.pos)
            self.pos += len(self.held)
            self.held = b""


class ObjectWriter:
    """Writes objects of unique, incompressible payload: the file Writer's seeded buffer with
    its 4 KiB block headers stamped per part (so no two blocks are equal), sent as one PUT or
    as the parts of a multipart upload. With `checksum` (--verify) each block carries its
    crc32c; that work is timed as "checksum", before the request that sends the part."""

    def __init__(self, io: ObjectIO, part_size: int, log: OpLog, counter: Any = None,
                 seed: int = 0, checksum: bool = False) -> None:
        self.io, self.part_size = io, part_size
        io.client  # noqa: B018 - made now, before the start instant: setup is not measured
        self.payload = Writer(METHOD_NONE, self.part_size, log, seed=seed, checksum=checksum)
        self.log, self.counter, self.checksum = log, counter, checksum
        self.made_ns = 0  # time spent making parts (stamping, copying, --verify's crc32c)
        self.stop: Any = None
        # When the last object became durable (its PUT or CompleteMultipartUpload returned);
        # named as the file Writer's instant its fsync returned.
        self.synced_ns = 0

    def write_object(self, key: str, size: int, tag: int) -> int:
        """PUT (or multipart-upload) `size` bytes; returns bytes sent."""
        self.payload.log = self.log
        check_parts(size, self.part_size, key)
        if size <= self.part_size:
            sent = self.io.put_bytes(key, self._part(0, size, tag), self.log)
        else:
            parts = (self._part(pos, min(self.part_size, size - pos), tag)
                     for pos in range(0, size, self.part_size))
            # the parts are made as they are sent (an object may not fit in memory): their
            # making is left out of "put", as a single PUT's is made before "put" starts
            sent = self.io.multipart(key, parts, self.log, lambda: self.made_ns)
        self.synced_ns = sent.durable_ns
        return sent.nbytes

    def _part(self, pos: int, n: int, tag: int) -> bytes:
        making = Window()
        if self.checksum:
            with self.log.timed("checksum", ops=0):
                self.payload.stamper.stamp(n, tag, pos)
        else:
            self.payload.stamper.stamp(n, tag, pos)
        data = bytes(self.payload.view[:n])
        making.close()
        self.made_ns += making.elapsed_ns
        if self.counter:
            self.counter(n)
        return data

    def close(self) -> None:
        self.payload.close()


class ObjectReader:
    """The train loader's reader for objects: `read_file(key, offset, length)` is one GET."""

    def __init__(self, io: ObjectIO, transfer_size: int, log: OpLog, counter: Any) -> None:
        self.io, self.chunk, self.log, self.counter = io, transfer_size, log, counter
        io.client  # noqa: B018 - made now, before the start instant: setup is not measured
        self.stop: Any = None
        # --verify: called with (chunk, bytes, object offset) after each chunk of a body
        self.check: Any = None

    def read_file(self, key: str, offset: int = 0, length: int | None = None) -> int:
        return self.io.get(key, offset, length, self.chunk, self.log, self.counter, self.stop,
                           self.check)

    def open(self, key: str) -> str:
        """Nothing to open: each read is a GET naming its object."""
        return key

    def close_file(self, key: str) -> None:
        pass  # nothing is open between requests

    def read_at(self, key: str, offset: int, length: int) -> memoryview:
        """One ranged GET of [offset, offset+length); the bytes it returned."""
        keep = bytearray()
        self.io.get(key, offset, length, max(self.chunk, length), self.log, self.counter,
                    self.stop, self.check, keep)
        return memoryview(keep)

    def close(self) -> None:
        pass
