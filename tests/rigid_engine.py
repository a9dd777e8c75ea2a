"""An engine from outside the package that cannot rewrite part of a file, as a bucket cannot
(`--engine external:tests.rigid_engine`): the sleepy engine, saying so in its capabilities."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from aiio.engines.base import Capabilities

from .sleepy_engine import CAPS, SleepyEngine


@dataclass
class RigidEngine(SleepyEngine):
    name: str = "rigid"
    caps: Capabilities = field(default=replace(CAPS, partial_overwrite=False))


def make(target: Any, method: str) -> RigidEngine:
    return RigidEngine(method)
