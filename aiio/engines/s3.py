"""s3: objects in a bucket through boto3 (aiio.s3.objectio), as fio's http engine in s3 mode.

A name is an object key. A whole-file write is one PUT, or a multipart upload above the part
size, and is durable when the request that completes it returns (the PUT, or
CompleteMultipartUpload): never when a part was sent. A read is a GET, ranged when it asks for
part of an object. There are no folders (mkdir does nothing), no client page cache to defeat,
and no partial overwrite: an object is rewritten whole or not at all. Credentials, endpoint,
the marker object and the request and retry counts are the bucket's (aiio.s3.target,
aiio.s3.connect); the connection is made lazily in the process that uses it, since a boto3
client must not cross a fork.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from aiio.cache_methods import METHOD_S3
from aiio.engines.base import DURABLE_REQUEST, Capabilities
from aiio.engines.seam import OpLog
from aiio.errors import ConfigError
from aiio.options import Access
from aiio.s3.objectio import ObjectIO, ObjectWriter, check_parts
from aiio.stats import Histogram
from aiio.units import MiB

_IO_LOCK = threading.Lock()  # one connection per engine, whichever thread asks first


def _new_lock() -> None:
    global _IO_LOCK
    _IO_LOCK = threading.Lock()  # a fork copies a lock another thread may hold


os.register_at_fork(after_in_child=_new_lock)

RANGE_SIZE = 8 * MiB  # bytes per ranged GET where a phase reads objects in parallel

CAPS = Capabilities(cache_defeat=False, queue_depth=1, ranged_reads=True,
                    partial_overwrite=False, durable=DURABLE_REQUEST, device_confirms=False,
                    folders=False, client_cache=False, range_size=RANGE_SIZE,
                    multipart=True, local_files=False, read_op="get")

STREAMS = 10  # connections in a client's pool unless the phase says how many streams it runs

# Why a phase that rewrites blocks in place stays refused: docs/OBJECT.md, "What a bucket
# does not run".
NO_PARTIAL_OVERWRITE = (
    "an S3 object cannot be rewritten in place (each block written would be a PUT of the "
    "whole object)")
RANDRW_REFUSED = (f"randrw rewrites 4 KiB blocks of its files in place, and {NO_PARTIAL_OVERWRITE}"
                  "; on a bucket prep runs in shards mode, and `aiio fio --target "
                  "s3://...` measures whole-object PUTs and GETs")


@dataclass
class Streamed:
    """An object being streamed: the bytes its ranges add up to, and their block tag."""

    size: int = 0
    tag: int = 0


class ObjectFileWriter(ObjectWriter):
    """The object writer with the file writer's whole-file call: `write_file(key, size, tag)`
    sends the object; `synced_ns` is the instant its PUT or CompleteMultipartUpload returned
    (write_object's own reading, never one taken after it)."""

    @property
    def transfer_size(self) -> int:
        return self.part_size

    def write_file(self, key: str, size: int, tag: int, sync: bool = True) -> int:
        return self.write_object(key, size, tag)

    # A streamed object (prep's shard): its ranges are only noted, and the object is sent
    # whole, with one PUT (or a multipart upload), when it is made durable: an object cannot
    # be appended to.
    def create(self, key: str) -> Streamed:
        return Streamed()

    def write_range(self, handle: Streamed, key: str, offset: int, length: int,
                    tag: int) -> int:
        handle.size, handle.tag = max(handle.size, offset + length), tag
        return length

    def fsync(self, handle: Streamed, key: str, persisted: int = 0) -> None:
        self.write_object(key, handle.size, handle.tag)

    def close_file(self, handle: Streamed) -> None:
        pass  # nothing is open between requests

    def write_content(self, key: str, parts: Iterable[bytes]) -> int:
        """An object of the given bytes: one PUT, or a multipart upload of the parts (each
        but the last at least S3's smallest part); durable when the last request returned."""
        parts = iter(parts)
        first = next(parts, b"")
        second = next(parts, None)
        if second is None:
            sent = self.io.put_bytes(key, first, self.log)
        else:
            sent = self.io.multipart(key, itertools.chain((first, second), parts), self.log)
        self.synced_ns = sent.durable_ns
        if self.counter:
            self.counter(sent.nbytes)
        return sent.nbytes


def request_figures(out: dict[str, Any], io: ObjectIO,
                    window_s: float | None = None) -> dict[str, Any]:
    """Per client: GET requests, requests/s (over `window_s`, else its elapsed time), and
    what the SDK did behind them. An entry that keeps its I/O per burst, not in one section
    (a checkpoint client's), gets only the SDK's counts: its requests are its bursts' ops."""
    if "histograms" not in out:
        return {"s3": io.counts.to_dict()}
    hist = out["histograms"].get("get")
    requests = Histogram.from_dict(hist).summary()["count"] if hist else 0
    elapsed = out["elapsed_s"] if window_s is None else window_s
    return {"requests": requests, "requests_per_s": requests / elapsed if elapsed else 0.0,
            "s3": io.counts.to_dict()}


def s3_aggregate(clients: list[dict]) -> dict[str, Any]:
    """Requests (where the clients counted them: see request_figures) and the SDK's retries
    and throttling answers, summed over the clients."""
    sums = {k: sum(c.get("s3", {}).get(k, 0) for c in clients)
            for k in ("calls", "attempts", "retries", "throttled")}
    out: dict[str, Any] = {}
    if any("requests" in c for c in clients):
        elapsed = max((c["elapsed_s"] for c in clients), default=0.0)
        requests = sum(c.get("requests", 0) for c in clients)
        out.update(requests=requests, requests_per_s=requests / elapsed if elapsed else 0.0)
    out["s3"] = {**sums, "retries_per_client": [c.get("s3", {}).get("retries", 0)
                                                for c in clients],
                 "throttled_per_client": [c.get("s3", {}).get("throttled", 0)
                                          for c in clients]}
    return out


def request_warnings(agg: dict[str, Any]) -> list[dict[str, str]]:
    s3 = agg.get("s3", {})
    if not s3.get("retries") and not s3.get("throttled"):
        return []
    return [{"code": "s3_retries", "message": (
        f"the S3 client retried {s3['retries']} request(s) and got {s3['throttled']} "
        "throttling answer(s) (503 SlowDown or similar): the service pushed back, and the "
        "time spent retrying is inside the figures")}]


def reread_warning(read_bytes: int, stored_bytes: int) -> list[dict[str, str]]:
    """An object read twice in one run may come from the server's own cache."""
    if read_bytes <= stored_bytes:
        return []
    return [{"code": "object_reread", "message": (
        f"objects were read again within this run ({read_bytes / max(stored_bytes, 1):.1f}x "
        "the stored bytes): the S3 service may have served the repeats from its own cache")}]


@dataclass
class S3Engine:
    access: Access
    bucket: str
    streams: int = STREAMS
    # key -> size of objects the run reads whole (its dataset's): a read of all of one is a
    # GET without a Range, as a loader fetches a whole sample file
    sizes: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    method: str = METHOD_S3
    name: str = "s3"
    caps: Capabilities = field(default=CAPS)
    # randrw's refusal, with what to run on a bucket instead (aiio.phases.randrw)
    overwrite_refusal: str = RANDRW_REFUSED
    _io: ObjectIO | None = field(default=None, repr=False, compare=False)

    @property
    def io(self) -> ObjectIO:
        """This process's connection (ObjectIO makes its boto3 client per process)."""
        # A client's loader threads ask at once: made twice, a thread's requests would be
        # counted on a connection the client's figures never read.
        with _IO_LOCK:
            if self._io is None:
                self._io = ObjectIO(self.access, self.bucket, self.streams, self.sizes)
        return self._io

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_io": None}  # what to connect to, never a connection

    def reader(self, transfer_size: int, log: OpLog, counter: Any = None, *,
               largest: int = 0, buffer: Any = None, depth: int = 1) -> Any:
        return self.io.reader(self.method, transfer_size, log, counter)

    def writer(self, transfer_size: int, log: OpLog, counter: Any = None, *, seed: int = 0,
               checksum: bool = False, count_at_fsync: bool = False) -> Any:
        return ObjectFileWriter(self.io, transfer_size, log, counter, seed, checksum)

    def check_parts(self, size: int, part_size: int, what: str) -> None:
        """Refuse an object of `size` bytes that S3's part limits cannot take in parts of
        `part_size` (multipart engines only: Capabilities.multipart)."""
        check_parts(size, part_size, what)

    def with_streams(self, streams: int) -> S3Engine:
        return replace(self, streams=max(1, streams), _io=None)

    def client_figures(self, out: dict[str, Any], window_s: float) -> dict[str, Any]:
        return request_figures(out, self.io, window_s)

    def aggregate(self, clients: list[dict]) -> dict[str, Any]:
        return s3_aggregate(clients)

    def warnings(self, agg: dict[str, Any], stored_bytes: int) -> list[dict[str, str]]:
        return request_warnings(agg) + reread_warning(agg.get("bytes", 0), stored_bytes)

    def setup(self) -> S3Engine:
        return self

    def open_rw(self, name: str) -> int:
        raise ConfigError(NO_PARTIAL_OVERWRITE)

    def fsync(self, log: OpLog, handle: Any, name: str, persisted: int = 0) -> int:
        from aiio.engines.seam import now_ns
        return now_ns()  # durable when its request returned: nothing more to wait for

    def fsync_dir(self, log: OpLog, name: str) -> int:
        from aiio.engines.seam import now_ns
        return now_ns()

    def stat(self, log: OpLog, name: str) -> int:
        with log.timed("head"):  # named by its request, as the bucket's figures name them
            got = self.io.client.head_object(Bucket=self.bucket, Key=name)
        return int(got["ContentLength"])

    def listdir(self, log: OpLog, name: str) -> list[str]:
        """Every key below the prefix, a page (at most 1,000 keys) per LIST request, each
        timed as one "list": an operation is a request, as a lister makes them."""
        prefix = name.rstrip("/") + "/"
        pages: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix, "Delimiter": "/"}
        names: list[str] = []
        while True:
            with log.timed("list"):
                got = self.io.client.list_objects_v2(**pages)
            names += [o["Key"][len(prefix):] for o in got.get("Contents", [])]
            if not got.get("IsTruncated"):
                return names
            pages["ContinuationToken"] = got["NextContinuationToken"]

    def unlink(self, log: OpLog, name: str) -> None:
        self.io.delete(name, log)

    def makedirs(self, log: OpLog, name: str) -> None:
        pass  # a key needs no folder

    def drop_cached(self, log: OpLog, name: str) -> None:
        pass  # no client page cache before a bucket

    def close(self) -> None:
        pass


def make(target: Any, method: str) -> S3Engine:
    """The engine of an s3:// target (aiio.s3.target.S3Target)."""
    return S3Engine(target.access, target.loc.bucket)
