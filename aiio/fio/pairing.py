"""Which fio hero test a run is set against, with which of its figures, at which concurrency.

Like for like: fio's figure is all bytes over the slowest job (last done), so the phase side is
its last-done figure too; fio jobs x iodepth must equal clients x streams per client; and the
pattern is the phase's: sequential 1 MiB reads for training and model loading, sequential
writes for checkpoints, sequential reads plus writes for data preparation in shards mode, the
4 KiB random mix for randrw. Reads results only.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiio.cache_methods import METHOD_NULL
from aiio.phases import REGISTRY, get_phase, layout_of, phase_of
from aiio.phases.load import reader_count
from aiio.result import IoFigures, Result, clients_requested, model, stage_doc

if TYPE_CHECKING:
    from aiio.phases.base import Phase

WINDOW = "last done"
PATTERN = {"seq_read": "sequential read", "seq_write": "sequential write",
           "rand_mix": "random 70/30 read/write mix"}


@dataclass(frozen=True)
class Side:
    """One direction of a run set against one fio test."""

    direction: str
    test: str
    phase_mib_s: float | None


def streams_per_client(res: dict[str, Any]) -> int:
    """Concurrent I/O streams in one client (loader or writer threads, times the requests
    each keeps in flight at prep.iodepth; a load replica's readers, one per file at most);
    1 when unknown."""
    phase = layout_of(res)
    if phase.headline_stage is not None:  # a lifecycle run is paired by its headline stage
        phase = get_phase(phase.headline_stage)
    section, key = phase.streams_key or ("", "")
    spec = (res.get("workload") or {}).get(section, {})
    value = spec.get(key)
    streams = int(value) if isinstance(value, int) and value > 0 else 1
    files = spec.get("files") if section == "load" else None
    if isinstance(files, int) and files > 0:  # a replica's readers take whole files
        streams = reader_count(streams, files)
    depth = spec.get("iodepth") if section == "prep" else None
    return streams * depth if isinstance(depth, int) and depth > 1 else streams


# The fio test of each main operation: what a result of a phase this aiio does not know is
# set against, by the main operation it records (`io.main_op`).
MAIN_OP_TEST = {"read": "seq_read", "write": "seq_write"}


def sides(res: Mapping[str, Any]) -> list[Side]:
    """The run's figures, each with the fio test it is set against; [] when none matches.
    The phase names how (`Phase.hero_pairing`, a function of this module); a phase of stages
    is its headline stage's; a phase not known here, its recorded main operation's. A run of
    the null method moved no byte: its figures are aiio's own cost, set against none."""
    if res.get("method") == METHOD_NULL:
        return []
    run = res if isinstance(res, Result) else model(res)
    if res.get("phase") not in REGISTRY:
        test = MAIN_OP_TEST.get(run.main_op)
        return [Side(run.main_op, test, _last_done(run.first()))] if test else []
    phase = phase_of(res)  # prep in randrw mode: randrw
    if phase.headline_stage is not None:
        return sides(stage_doc(res, phase.headline_stage))
    if phase.hero_test is None:
        return []
    return globals()[phase.hero_pairing](phase, run)


def main_op_side(phase: Phase, run: Result) -> list[Side]:
    """A phase with the common aggregate: its main operation's last done."""
    return [Side(run.main_op, phase.hero_test, _last_done(run.first()))]


def direction_sides(phase: Phase, run: Result) -> list[Side]:
    """Reads and writes apart, each against the sequential test of its direction (prep)."""
    return [Side("read", "seq_read", _last_done(run.section("read"))),
            Side("write", "seq_write", _last_done(run.section("write")))]


def mix_side(phase: Phase, run: Result) -> list[Side]:
    """Reads plus writes against the random mix (randrw)."""
    parts = [p for p in (run.summary.read_mib_s, run.summary.write_mib_s) if p is not None]
    return [Side("read+write", phase.hero_test, sum(parts) if parts else None)]


def persist_side(phase: Phase, run: Result) -> list[Side]:
    """The write rate over the time to persist (bytes over the windows until every client's
    shard was durable) against sequential writes (checkpoint); none before a write finished."""
    ck = run.checkpoint
    written = any(s.name.endswith(".write") for s in run.sections("checkpoint."))
    return [Side("write", phase.hero_test, ck.write_mib_s if ck and written else None)]


def phases_beside(test: str) -> list[str]:
    """The phases whose runs `sides` sets beside fio test `test`: those naming it as their
    hero test, and prep beside seq_write too (its writes)."""
    names = [n for n in REGISTRY if get_phase(n).hero_test == test]
    if test == "seq_write" and "prep" in REGISTRY:
        names.append("prep")
    return names


def _last_done(section: IoFigures | None) -> float | None:
    return section.last_done.mib_s if section and section.last_done else None


def fio_command(target: str, res: dict[str, Any], tests: list[str]) -> str:
    """The `aiio fio` command that makes a hero at this run's concurrency."""
    clients, streams = clients_requested(res), streams_per_client(res)
    if target.startswith("s3://"):
        # fio's http engine sends one request at a time per job: the streams are jobs
        return f"aiio fio --target {shlex.quote(target)} --clients {clients * streams}"
    return (f"aiio fio --target {target} --clients {clients} --iodepth "
            f"{streams} --tests {','.join(tests)}")
