"""An engine from outside the package whose writer misstates when a file became durable
(`--engine external:tests.misdated_engine`, the lie named by AIIO_TEST_DURABLE_AT when it is
made): "never", the instant left unset as by a writer that does not set `synced_ns`; "late",
an instant after the write burst ended. Its writes and fsyncs are the sleepy engine's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .sleepy_engine import SleepyEngine, SleepyWriter

DATED = {"never": 0, "late": 2**62}


class MisdatedWriter(SleepyWriter):
    durable_at = 0

    def fsync(self, fd: int, path: str, persisted: int = 0) -> None:
        super().fsync(fd, path, persisted)
        self.synced_ns = self.durable_at


@dataclass
class MisdatedEngine(SleepyEngine):
    name: str = "misdated"
    durable_at: int = 0

    def writer(self, transfer_size: int, log: Any, counter: Any = None, *, seed: int = 0,
               checksum: bool = False, count_at_fsync: bool = False) -> MisdatedWriter:
        wr = MisdatedWriter(self.method, transfer_size, log, counter, seed, checksum,
                            count_at_fsync)
        wr.durable_at = self.durable_at
        return wr


def make(target: Any, method: str) -> MisdatedEngine:
    return MisdatedEngine(method, durable_at=DATED[os.environ["AIIO_TEST_DURABLE_AT"]])
