"""The one I/O contract under every phase: what an engine does and what it can do.

Modelled on fio's `ioengine_ops` (one table of calls per engine, chosen by name) and on
elbencho's one Worker interface (a phase is written once against it). A phase asks its engine
(`RunContext.engine` in the parent, `ClientContext.engine` in a client) for readers, writers
and metadata calls; it never builds a file reader or calls the operating system itself. Every
call an engine makes is timed at the one seam, the calling thread's `OpLog` (aiio.engines.seam), so
a figure computed above the engines (bytes, ops, latency, durable bytes, first start -> last
durable) means the same on every engine.

Names are what the phase uses: a path below the target for a file engine, a key for an object
engine. A handle is what `Reader.open`/`Writer.create`/`open_rw` return (a descriptor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from aiio.engines.seam import OpLog

DURABLE_FSYNC = "fsync returned"
DURABLE_REQUEST = "the completing request returned"
DURABLE_NEVER = "nothing is written (no I/O)"


@dataclass(frozen=True)
class Capabilities:
    """What the phases and figures may ask of an engine before they use it."""

    cache_defeat: bool        # reads can get past a client page cache (O_DIRECT, fadvise)
    queue_depth: int          # the most reads one thread keeps in flight (1: one at a time)
    ranged_reads: bool        # `read_file(name, offset, length)` reads only that range
    partial_overwrite: bool   # a block inside an existing file can be rewritten (randrw)
    durable: str              # what makes written bytes durable (DURABLE_*)
    device_confirms: bool     # a local block device's counters can confirm the bytes moved
    folders: bool = True      # names live in real folders (mkdir, a folder's fsync)
    client_cache: bool = True  # a page cache on the client can serve reads (one host's)
    # A large file a phase reads in parallel is read as ranges of this many bytes, one call
    # each, spread over its threads, as parallel downloaders read objects (0: whole files,
    # one thread each).
    range_size: int = 0
    # A whole-file write is sent as parts of the workload's `s3.part_size`, one request each,
    # and the engine's `check_parts(size, part_size, what)` refuses a size the service's part
    # limits cannot take (before anything is written).
    multipart: bool = False
    # Names are local paths a format library can open (train's native reader), and reads
    # land in a buffer the phase hands the reader; an object's GET body arrives in the
    # engine's own.
    local_files: bool = True
    # The operation that is one read request in a reader's log: a read call on files, a GET
    # on a bucket (whose body chunks are parts of it); read IOPS count these.
    read_op: str = "read"
    # A format's own library may open and read the files itself (`--reader native`): true
    # only where its plain reads are this engine's calls (psync); an engine that slows,
    # counts or redirects posix's calls must leave it false, or the library reads past it.
    library_reads: bool = False


@runtime_checkable
class Engine(Protocol):
    """One storage backend. An engine object is configuration only: it crosses a fork and
    MPI's pickling, and makes whatever a process needs (a boto3 client) in that process."""

    name: str            # the registry's name; the result's "engine"
    method: str          # how reads avoid a cache (aiio.cache_methods), as results record it
    caps: Capabilities

    def reader(self, transfer_size: int, log: OpLog, counter: Any = None, *,
               largest: int = 0, buffer: Any = None, depth: int = 0) -> Any:
        """A reader with `read_file(name, offset, length)` (whole when length is None),
        `open`, `read_range`, `read_at(handle, offset, length)` (the bytes one read returned,
        which a search parses), `close_file`, `read_block(s)`, `stop`, `check`, `fast`,
        `close`. `depth` 1 or more asks for a reader of random blocks that keeps that many in
        flight (randrw's); 0, a reader of files and ranges."""

    def writer(self, transfer_size: int, log: OpLog, counter: Any = None, *, seed: int = 0,
               checksum: bool = False, count_at_fsync: bool = False) -> Any:
        """A writer with `write_file(name, size, tag)` (written and durable; `synced_ns` the
        instant it became durable), `write_content(name, parts)` (a file of given bytes, each
        part at most a transfer, durable), streamed `create`/`write_range`/`fsync`/
        `close_file`, `close`."""

    def with_streams(self, streams: int) -> Engine:
        """The engine for a client that runs `streams` concurrent streams (a bucket sizes its
        connection pool to them, so no stream waits for a connection); files: itself."""

    def client_figures(self, out: dict[str, Any], window_s: float) -> dict[str, Any]:
        """What a client's entry adds for this engine once its I/O figures are in `out` (a
        bucket: its requests, requests/s over its own `window_s`, the SDK's retries); files:
        nothing."""

    def aggregate(self, clients: list[dict]) -> dict[str, Any]:
        """What the aggregate adds over the clients' `client_figures`; files: nothing."""

    def warnings(self, agg: dict[str, Any], stored_bytes: int) -> list[dict[str, str]]:
        """This engine's reasons why a run's figures may not be the storage's, from its
        aggregate and the bytes it keeps stored (read more than once: a server cache)."""

    def setup(self) -> Engine:
        """The engine that writes what a run keeps or reads back (weights, randrw files):
        this one, unless it writes nothing (null)."""

    def open_rw(self, name: str) -> int:
        """Open an existing file to read and rewrite blocks of it in place, the page cache
        defeated as the method says (partial_overwrite engines only)."""

    def fsync(self, log: OpLog, handle: Any, name: str, persisted: int = 0) -> int:
        """Make a file durable, timed as "fsync" carrying `persisted` bytes; the instant it
        returned."""

    def fsync_dir(self, log: OpLog, name: str) -> int:
        """Make a folder's new names durable; the instant it returned."""

    def stat(self, log: OpLog, name: str) -> int:
        """A file's size in bytes, timed as "stat"."""

    def listdir(self, log: OpLog, name: str) -> list[str]:
        """The names in a folder (below a prefix), timed as "list"."""

    def unlink(self, log: OpLog, name: str) -> None:
        """Delete a file; a missing one raises FileNotFoundError and is not counted."""

    def makedirs(self, log: OpLog, name: str) -> None:
        """Make a folder and its parents when missing, timed as "mkdir"."""

    def drop_cached(self, log: OpLog, name: str) -> None:
        """Drop a file's cached pages before a library reads it."""

    def close(self) -> None:
        """Let go of what this process made (connections)."""
