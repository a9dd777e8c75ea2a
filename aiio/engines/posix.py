"""psync: one blocking system call per read or write (pread/pwrite), as fio's psync engine.

Reads avoid the page cache by the run's method (O_DIRECT, or dropping a file's cached pages
before it is read); runs of random reads go through the compiled read loop (aiio.engines.compiled)
where it is there. Durable means fsync returned. Reads at a queue depth above 1 are the
io_uring engine's (aiio.engines.io_uring): psync keeps one call in flight.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from aiio.cache_methods import METHOD_DIRECT, METHOD_NONE
from aiio.engines import seam as io
from aiio.engines.base import DURABLE_FSYNC, Capabilities
from aiio.engines.seam import OpLog, Reader, Writer

RING_DEPTH = 4096  # the deepest ring the kernel sets up for one thread (IORING_MAX_ENTRIES/8)

# The queue depth is the io_uring engine's, to which reads at a depth above 1 go.
CAPS = Capabilities(cache_defeat=True, queue_depth=RING_DEPTH, ranged_reads=True,
                    partial_overwrite=True, durable=DURABLE_FSYNC, device_confirms=True,
                    library_reads=True)


@dataclass
class PosixEngine:
    """Files below a directory, through the engine's Reader and Writer."""

    method: str = METHOD_NONE
    name: str = "posix"
    caps: Capabilities = field(default=CAPS)

    def reader(self, transfer_size: int, log: OpLog, counter: Any = None, *,
               largest: int = 0, buffer: Any = None, depth: int = 0) -> Any:
        if depth > 1:
            return ring_reader(depth, transfer_size, log, counter)
        return Reader(self.method, transfer_size, log, counter, largest, buffer)

    def writer(self, transfer_size: int, log: OpLog, counter: Any = None, *, seed: int = 0,
               checksum: bool = False, count_at_fsync: bool = False) -> Any:
        return Writer(self.method, transfer_size, log, counter, seed, checksum, count_at_fsync)

    def with_streams(self, streams: int) -> PosixEngine:
        return self

    def client_figures(self, out: dict[str, Any], window_s: float) -> dict[str, Any]:
        return {}

    def aggregate(self, clients: list[dict]) -> dict[str, Any]:
        return {}

    def warnings(self, agg: dict[str, Any], stored_bytes: int) -> list[dict[str, str]]:
        return []  # the page cache's warnings are the phases' and the target's

    def setup(self) -> PosixEngine:
        return self

    def open_rw(self, name: str) -> int:
        fd = os.open(name, os.O_RDWR | (io.O_DIRECT if self.method == METHOD_DIRECT else 0))
        if self.method != METHOD_DIRECT:  # what an earlier writer left cached goes
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return fd

    def fsync(self, log: OpLog, handle: Any, name: str, persisted: int = 0) -> int:
        return io.fsync(log, handle, name, persisted)

    def fsync_dir(self, log: OpLog, name: str) -> int:
        return io.fsync_dir(log, name)

    def stat(self, log: OpLog, name: str) -> int:
        return io.stat(log, name).st_size

    def listdir(self, log: OpLog, name: str) -> list[str]:
        return io.listdir(log, name)

    def unlink(self, log: OpLog, name: str) -> None:
        io.unlink(log, name)

    def makedirs(self, log: OpLog, name: str) -> None:
        io.makedirs(log, name)

    def drop_cached(self, log: OpLog, name: str) -> None:
        io.drop_cached(log, name)

    def close(self) -> None:
        pass


def ring_reader(depth: int, block_size: int, log: OpLog, counter: Any = None) -> Any:
    """A reader of blocks `depth` in flight through one io_uring (DepthReader; at depth 1
    the random mix's OneInFlight); refused in one line where this machine has no io_uring or
    no compiled loop (aiio.engines.depth.require)."""
    from aiio.engines import depth as ring  # numba's import is paid only by runs at depth
    if depth == 1:
        return ring.OneInFlight(block_size, log, counter)
    return ring.DepthReader(depth, block_size, log, counter)


def make(target: Any, method: str) -> PosixEngine:
    """The engine of a directory target, reading by `method` (the null method is the null
    engine's: aiio.engines.choose picks it)."""
    return PosixEngine(method)
