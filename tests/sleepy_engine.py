"""An engine from outside the package (`--engine external:tests.sleepy_engine`): psync whose
every read and write call takes at least SLEEP_S, so the figures of any phase run on it have
a known floor. Written as a third party would write one, with no aiio file edited: psync's
engine with its reads and writes slowed, through the timed Reader and Writer every engine
on files uses."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from aiio.engines.base import Capabilities
from aiio.engines.posix import CAPS as PSYNC
from aiio.engines.posix import PosixEngine
from aiio.engines.seam import OpLog, Reader, Writer

SLEEP_S = 0.002  # every pread and pwrite takes this long at least
# its reader keeps one call in flight, never a ring; a format library's reads would not sleep
CAPS = replace(PSYNC, queue_depth=1, library_reads=False)


def _slow(call: Any) -> Any:
    def slowed(fd: int, bufs: list, offset: int) -> int:
        time.sleep(SLEEP_S)
        return call(fd, bufs, offset)
    return slowed


class SleepyReader(Reader):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.preadv = _slow(self.preadv)
        self.loop = None  # never the compiled loop: its calls would not sleep


class SleepyWriter(Writer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pwritev = _slow(self.pwritev)


@dataclass
class SleepyEngine(PosixEngine):
    """psync's metadata calls, open and fsync; its own slowed reads and writes."""

    name: str = "sleepy"
    caps: Capabilities = field(default=CAPS)

    def reader(self, transfer_size: int, log: OpLog, counter: Any = None, *,
               largest: int = 0, buffer: Any = None, depth: int = 1) -> SleepyReader:
        return SleepyReader(self.method, transfer_size, log, counter, largest, buffer)

    def writer(self, transfer_size: int, log: OpLog, counter: Any = None, *, seed: int = 0,
               checksum: bool = False, count_at_fsync: bool = False) -> SleepyWriter:
        return SleepyWriter(self.method, transfer_size, log, counter, seed, checksum,
                            count_at_fsync)


def make(target: Any, method: str) -> SleepyEngine:
    return SleepyEngine(method)
