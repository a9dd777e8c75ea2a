"""An engine from outside the package (`--engine external:tests.merge_failing_engine`): psync
whose writes of a vector merge's new index (a name with ".merge") fail with EIO after its
first call, as a device failing part way through the merge would; every other write goes
through."""

from __future__ import annotations

import errno
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from aiio.engines.base import Capabilities
from aiio.engines.posix import CAPS as PSYNC
from aiio.engines.posix import PosixEngine
from aiio.engines.seam import Writer


class MergeFailingWriter(Writer):
    def write_content(self, path: str, parts: Iterable[bytes]) -> int:
        if ".merge" not in path:
            return super().write_content(path, parts)
        return super().write_content(path, self._failing(parts))

    def _failing(self, parts: Iterable[bytes]) -> Iterator[bytes]:
        first = True
        for data in parts:
            if not first:
                self.pwritev = _fail  # the calls after the first fail, as the device did
            first = False
            yield data


def _fail(fd: int, bufs: list, offset: int) -> int:
    raise OSError(errno.EIO, "Input/output error")


@dataclass
class MergeFailingEngine(PosixEngine):
    name: str = "mergefailing"
    # a format library's writes would not fail: it may not write past the engine
    caps: Capabilities = field(default=replace(PSYNC, library_reads=False))

    def writer(self, transfer_size: int, log: Any, counter: Any = None, *, seed: int = 0,
               checksum: bool = False, count_at_fsync: bool = False) -> MergeFailingWriter:
        return MergeFailingWriter(self.method, transfer_size, log, counter, seed, checksum,
                                  count_at_fsync)


def make(target: Any, method: str) -> MergeFailingEngine:
    return MergeFailingEngine(method)
