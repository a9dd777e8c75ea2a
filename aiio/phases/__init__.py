"""One module per phase, each exposing a `PHASE` that implements `base.Phase`; the registry
below is the one list of them. Adding a phase is one module and one line here."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiio.errors import ConfigError
from aiio.results.layout import Layout, stage_part

if TYPE_CHECKING:
    from aiio.document import Where
    from aiio.phases.base import Phase

# `--phase NAME` -> the module holding its PHASE, in the order the CLI lists them.
REGISTRY = {
    "train": "aiio.phases.train",
    "prep": "aiio.phases.prep",
    "randrw": "aiio.phases.randrw",
    "checkpoint": "aiio.phases.checkpoint",
    "load": "aiio.phases.load",
    "kvcache": "aiio.phases.kvcache",
    "vector": "aiio.phases.vector",
    "all": "aiio.phases.lifecycle",  # the whole lifecycle in one run
}
PHASES = tuple(REGISTRY)  # the built-in phases; code reads REGISTRY, which tests may extend


def get_phase(name: str) -> Phase:
    """The phase object for a name; unknown names are a one-line error. The same phase runs
    on every engine (a bucket's included)."""
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


def phase_paths(phase: Phase, part: Any, client: bool, base: Where = ()) -> dict[str, Where]:
    """Name -> path (after `base`) of each I/O section the phase declares in `part`: its
    aggregate, or one client's entry when `client`."""
    if not isinstance(part, Mapping) or not part:
        return {}
    return {name: (*base, *path) for name, path in phase.io_sections(part, client).items()}


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


def result_layout(res: Mapping[str, Any]) -> Layout:
    """The layout of a run result as its phase declares it, for the result to record
    (aiio.results.result.save): every section, each client's, and the declared parts."""
    return declared_layout(layout_of(res), res)


def declared_layout(phase: Phase, res: Mapping[str, Any]) -> Layout:
    """A phase's declarations (`Phase.io_sections` and the rest) as a result's `Layout`; a
    stage's are its stage phase's, as that phase lays out the stage's part of `res`."""
    stages = {name: declared_layout(phase_of(stage_part(res, name)), stage_part(res, name))
              for name in phase.stages}
    return Layout(name=phase.name, main_op=phase.main_op, judged_on=phase.judged_on,
                  headline_stage=phase.headline_stage, stages=tuple(phase.stages),
                  checkpoint_at=_declared_at(phase, stages, "checkpoint_at"),
                  load_at=_declared_at(phase, stages, "load_at"),
                  metadata_at=phase.metadata_at, other_series=tuple(phase.other_series),
                  finder=phase.io_sections, totals_finder=phase.client_totals,
                  stage_layouts=stages, workload_sections=_sections_read(phase, res))


def _sections_read(phase: Phase, res: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The workload sections the phase read in the run of `res` (None: it does not say)."""
    w = res.get("workload")
    return phase.sections_read(w) if isinstance(w, Mapping) else phase.workload_sections


def _declared_at(phase: Phase, stages: Mapping[str, Layout], member: str) -> Where | None:
    """The phase's own path, else the first stage's that has one, behind the stage's name."""
    own = getattr(phase, member)
    if own is not None:
        return own
    return next(((name, *at) for name, stage in stages.items()
                 if (at := getattr(stage, member)) is not None), None)
