"""An engine from outside the package whose writes or reads fail (`--engine
external:tests.failing_engine`; AIIO_TEST_FAILING names which when it is made: "write", the
default, or "read"): the sleepy engine with every such call raising EIO, as a failing
device's would."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from typing import Any

from .sleepy_engine import SleepyEngine, SleepyReader, SleepyWriter


def _fail(fd: int, bufs: list, offset: int) -> int:
    raise OSError(errno.EIO, "Input/output error")


@dataclass
class FailingEngine(SleepyEngine):
    name: str = "failing"
    failing: str = "write"

    def writer(self, *args: Any, **kwargs: Any) -> SleepyWriter:
        wr = super().writer(*args, **kwargs)
        if self.failing == "write":
            wr.pwritev = _fail  # an engine's own write call, in Python, failing
        return wr

    def reader(self, *args: Any, **kwargs: Any) -> SleepyReader:
        rd = super().reader(*args, **kwargs)
        if self.failing == "read":
            rd.preadv = _fail
        return rd


def make(target: Any, method: str) -> FailingEngine:
    return FailingEngine(method, failing=os.environ.get("AIIO_TEST_FAILING", "write"))
