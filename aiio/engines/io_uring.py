"""io_uring: random block reads kept `depth` in flight from one thread through one ring
(aiio.engines.depth and its compiled loop, aiio.engines.ringloop), as fio's io_uring engine
with `iodepth`, at depth 1 too (one request, submitted and reaped by one io_uring_enter).
Writes, metadata and the reads of files and ranges (train, load, a checkpoint's restore,
prep) are psync's: the ring's loop reads whole blocks at listed offsets into its own slots,
and those reads need what only psync's Reader does (an O_DIRECT read widened to the block
around an unaligned tail, a format library's buffer). Durable means fsync returned."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiio.engines.base import DURABLE_FSYNC, Capabilities
from aiio.engines.posix import RING_DEPTH, PosixEngine, ring_reader
from aiio.engines.seam import OpLog
from aiio.errors import ConfigError

CAPS = Capabilities(cache_defeat=True, queue_depth=RING_DEPTH, ranged_reads=True,
                    partial_overwrite=True, durable=DURABLE_FSYNC, device_confirms=True,
                    library_reads=True)


@dataclass
class IoUringEngine(PosixEngine):
    name: str = "io_uring"
    caps: Capabilities = field(default=CAPS)

    def reader(self, transfer_size: int, log: OpLog, counter: Any = None, *,
               largest: int = 0, buffer: Any = None, depth: int = 0) -> Any:
        if depth >= 1:  # random blocks at a queue depth: through the ring at every depth
            return ring_reader(depth, transfer_size, log, counter)
        return super().reader(transfer_size, log, counter, largest=largest, buffer=buffer)


def make(target: Any, method: str) -> IoUringEngine:
    """Refused in one line where this machine has no ring to read through: an io_uring
    engine whose reads were psync's would be named in the result for calls it never made."""
    from aiio.engines import depth  # numba's import is paid only by runs on this engine
    if why := depth.unavailable(1, "use --engine posix"):
        raise ConfigError(f"engine io_uring: {why}")
    return IoUringEngine(method)
