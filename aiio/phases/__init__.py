"""One module per lifecycle phase. Each exposes a `PHASE` object (see `base.Phase`)."""

from __future__ import annotations

import importlib

from aiio.errors import ConfigError

PHASES = ("train", "prep", "checkpoint", "load", "all")
MODULES = {"all": "lifecycle"}  # the phase named "all" runs the whole lifecycle
OBJECT_PREFIX = "s3:"


def get_phase(name: str):
    """The phase object for a name; unknown names are a one-line error. "s3:NAME" is the
    phase against an s3:// target."""
    if name.startswith(OBJECT_PREFIX):
        from aiio.s3.backend import get_phase as object_phase
        return object_phase(name[len(OBJECT_PREFIX):])
    if name not in PHASES:
        raise ConfigError(f"unknown phase {name!r}; choose one of: {', '.join(PHASES)}")
    return importlib.import_module(f"aiio.phases.{MODULES.get(name, name)}").PHASE
