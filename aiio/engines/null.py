"""null: every read and write system call left out (aiio.cache_methods.METHOD_NULL), the
rest of aiio's bookkeeping kept, so aiio's own cost per operation can be measured. Nothing it
reports is the storage's; nothing it "writes" is durable. Files a run keeps or reads back
(weights, randrw files) are written for real, by `setup()`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiio.cache_methods import METHOD_NONE, METHOD_NULL
from aiio.engines.base import DURABLE_NEVER, Capabilities
from aiio.engines.posix import PosixEngine

CAPS = Capabilities(cache_defeat=False, queue_depth=1, ranged_reads=True,
                    partial_overwrite=True, durable=DURABLE_NEVER, device_confirms=False)


@dataclass
class NullEngine(PosixEngine):
    method: str = METHOD_NULL
    name: str = "null"
    caps: Capabilities = field(default=CAPS)

    def setup(self) -> PosixEngine:
        return PosixEngine(METHOD_NONE)


def make(target: Any, method: str) -> NullEngine:
    return NullEngine()
