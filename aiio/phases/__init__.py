"""One module per phase, each exposing a `PHASE` that implements `base.Phase`; the registry
below is the one list of them. Adding a phase is one module and one line here."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiio.errors import ConfigError

if TYPE_CHECKING:
    from aiio.phases.base import Phase

# `--phase NAME` -> the module holding its PHASE, in the order the CLI lists them.
REGISTRY = {
    "train": "aiio.phases.train",
    "prep": "aiio.phases.prep",
    "randrw": "aiio.phases.randrw",
    "checkpoint": "aiio.phases.checkpoint",
    "load": "aiio.phases.load",
    "all": "aiio.phases.lifecycle",  # the whole lifecycle in one run
}
PHASES = tuple(REGISTRY)  # the built-in phases; code reads REGISTRY, which tests may extend
OBJECT_PREFIX = "s3:"


def get_phase(name: str) -> Phase:
    """The phase object for a name; unknown names are a one-line error. "s3:NAME" is the
    phase against an s3:// target."""
    if name.startswith(OBJECT_PREFIX):
        from aiio.s3.backend import get_phase as object_phase
        return object_phase(name[len(OBJECT_PREFIX):])
    if name not in REGISTRY:
        raise ConfigError(f"unknown phase {name!r}; choose one of: {', '.join(REGISTRY)}")
    return importlib.import_module(REGISTRY[name]).PHASE


def layout_of(res: Mapping[str, Any]) -> Phase:
    """The phase that laid out a run result's figures (`phase_of`); a phase this aiio does not
    know reads with the contract's defaults."""
    if declared(res):
        return phase_of(res)
    from aiio.phases.base import UndeclaredPhase
    return UndeclaredPhase()


def declared(res: Mapping[str, Any]) -> bool:
    """Whether this aiio knows the phase of a result (else it reads the result's own index)."""
    return res.get("phase") in REGISTRY


def with_stages(phase: Phase) -> list[Phase]:
    """The phase and every phase it runs as a stage of its own, depth first."""
    return [phase, *(p for stage in phase.stages for p in with_stages(get_phase(stage)))]


def phase_of(res: Mapping[str, Any], name: str | None = None) -> Phase:
    """The phase whose figures a saved result holds (`name`: a lifecycle stage's): a prep
    result of the randrw mode is the randrw phase's."""
    return get_phase(name or res.get("phase", "")).result_variant(res)
