"""Which fio hero test a run is set against, with which of its figures, at which concurrency.

Like for like: fio's figure is all bytes over the slowest job (last done), so the phase side is
its last-done figure too, of the bytes the storage delivered (training's loaders, not what its
accelerators consumed); fio leaves out its first seconds (its ramp), so the phase side leaves
out the same first seconds of its own, or is paired only with a fio result that had no ramp;
fio jobs x iodepth must equal clients x streams per client; and the pattern is the phase's:
sequential 1 MiB reads for training and model loading, sequential writes for checkpoints,
sequential reads plus writes for data preparation in shards mode, the 4 KiB random mix for
randrw. Reads results only.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiio.cache_methods import METHOD_NULL
from aiio.phases import REGISTRY, get_phase, layout_of, phase_of
from aiio.phases.load import reader_count
from aiio.results.result import IoFigures, Result, clients_requested, model, stage_doc
from aiio.units import MiB

if TYPE_CHECKING:
    from aiio.phases.base import Phase

WINDOW = "last done"
# What a run must have left after fio's ramp to leave the same ramp out: a second, so that the
# seconds before the ramp's end are whole seconds of its per-second series.
MIN_AFTER_RAMP_S = 1.0
# The ramp of a fio result that does not record one: `aiio fio --ramp-time`'s default.
DEFAULT_RAMP_S = 1.0
PATTERN = {"seq_read": "sequential read", "seq_write": "sequential write",
           "rand_mix": "random 70/30 read/write mix"}


@dataclass(frozen=True)
class Side:
    """One direction of a run set against one fio test."""

    direction: str
    test: str
    phase_mib_s: float | None  # last done: from the common start until the last client ended
    # the aggregate sections whose sum phase_mib_s is; () when it is no such sum (a
    # checkpoint's rate over its bursts) and no first seconds can be left out of it
    streams: tuple[IoFigures, ...] = ()

    def after_ramp(self, ramp_s: float) -> float | None:
        """The side's MiB/s with its first ramp_s seconds left out, as fio leaves out its
        ramp: phase_mib_s when ramp_s is 0; None when this run cannot (`why_not`)."""
        if ramp_s <= 0:
            return self.phase_mib_s
        if not self.streams:
            return None
        parts = [_after_ramp(s, ramp_s) for s in self.streams]
        return None if None in parts else sum(p for p in parts if p is not None)

    def leaves_out(self, ramp_s: float) -> bool:
        """The run can be set against a fio result that left out its first ramp_s seconds."""
        return ramp_s <= 0 or (self.phase_mib_s is not None and
                               self.after_ramp(ramp_s) is not None)

    def why_not(self, ramp_s: float) -> str:
        """Why the run cannot leave out a ramp of ramp_s (when `leaves_out` is False)."""
        if not self.streams:
            return "its rate is over its bursts, with no first second of a run to leave out"
        ran = max((s.last_done.seconds for s in self.streams if s.last_done), default=0.0)
        return (f"it ran {ran:.1f} s, less than {MIN_AFTER_RAMP_S:g} s after the first "
                f"{ramp_s:g} s")


def _after_ramp(section: IoFigures, ramp_s: float) -> float | None:
    """An aggregate section's MiB/s over the window fio measures after its ramp, on the run's
    clock: the bytes completed after ramp_s seconds from the common start, over the time from
    then to the last done. The bytes before ramp_s come from the section's per-second series
    (linear inside a second, every second before the ramp's end a whole one); None without a
    series, or with less than MIN_AFTER_RAMP_S after the ramp."""
    done, per_s = section.last_done, section.series
    if done is None or done.seconds - ramp_s < MIN_AFTER_RAMP_S or len(per_s) <= ramp_s:
        return None
    whole = int(ramp_s)
    before = sum(per_s[:whole]) + (ramp_s - whole) * per_s[whole]  # MiB: MiB/s x 1 s each
    return (done.bytes / MiB - before) / (done.seconds - ramp_s)


def ramp_of(fio_res: Mapping[str, Any]) -> float:
    """The seconds a fio result left out at the start of each test (its ramp_time)."""
    got = (fio_res.get("options") or {}).get("ramp_s", DEFAULT_RAMP_S)
    return float(got) if isinstance(got, int | float) and got > 0 else 0.0


def streams_per_client(res: dict[str, Any]) -> int:
    """Concurrent I/O streams in one client (loader or writer threads, times the requests
    each keeps in flight at prep.iodepth; a load replica's readers and a checkpoint client's
    writers, one per file at most); 1 when unknown. The streams a run's clients recorded
    having run come first: a load replica on a bucket shares its ranges over all its threads,
    where two files would cap a mount's readers at two."""
    ran = [c.get("streams") for c in res.get("clients") or () if isinstance(c, Mapping)]
    if ran and all(isinstance(n, int) and n > 0 for n in ran):
        return max(ran)
    phase = layout_of(res)
    if phase.headline_stage is not None:  # a lifecycle run is paired by its headline stage
        phase = get_phase(phase.headline_stage)
    section, key = phase.streams_key or ("", "")
    spec = (res.get("workload") or {}).get(section, {})
    value = spec.get(key)
    streams = int(value) if isinstance(value, int) and value > 0 else 1
    files = spec.get(phase.streams_files_key) if phase.streams_files_key else None
    if isinstance(files, int) and files > 0:  # each thread takes whole files
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
        return [_side(run.main_op, test, storage_section(run))] if test else []
    phase = phase_of(res)  # prep in randrw mode: randrw
    if phase.headline_stage is not None:
        return sides(stage_doc(res, phase.headline_stage))
    if phase.hero_test is None:
        return []
    return globals()[phase.hero_pairing](phase, run)


def delivered_section(run: Result) -> IoFigures | None:
    """Training's `delivered`, its loaders' reads (read-ahead included), kept apart from its
    headline of what the accelerators consumed; None for a phase with no such split."""
    return run.section("delivered")


def storage_section(run: Result) -> IoFigures | None:
    """The bytes the storage delivered, the only bytes fio counts: `delivered_section`, else
    the phase's first section."""
    return delivered_section(run) or run.first()


def _side(direction: str, test: str, section: IoFigures | None) -> Side:
    return Side(direction, test, _last_done(section), (section,) if section else ())


def main_op_side(phase: Phase, run: Result) -> list[Side]:
    """A phase with the common aggregate: its main operation's delivered bytes, last done."""
    return [_side(run.main_op, phase.hero_test, storage_section(run))]


def direction_sides(phase: Phase, run: Result) -> list[Side]:
    """Reads and writes apart, each against the sequential test of its direction (prep)."""
    return [_side("read", "seq_read", run.section("read")),
            _side("write", "seq_write", run.section("write"))]


def mix_side(phase: Phase, run: Result) -> list[Side]:
    """Reads plus writes against the random mix (randrw)."""
    parts = [p for p in (run.summary.read_mib_s, run.summary.write_mib_s) if p is not None]
    both = tuple(s for s in (run.section("read"), run.section("write")) if s is not None)
    return [Side("read+write", phase.hero_test, sum(parts) if parts else None, both)]


def persist_side(phase: Phase, run: Result) -> list[Side]:
    """The write rate over the time to persist (bytes over the windows until every client's
    shard was durable) against sequential writes (checkpoint); none before a write finished."""
    ck = run.checkpoint
    written = any(s.name.endswith(".write") for s in run.sections("checkpoint."))
    return [Side("write", phase.hero_test, ck.write_mib_s if ck and written else None)]


def live_test(res: Mapping[str, Any]) -> str | None:
    """The fio test the live view may hold a run's running rate against: its one side's
    test, when the live counter (every byte the clients' calls moved) counts that side's
    bytes only. None for prep's reads plus writes (two tests), a lifecycle's stages, a
    checkpoint with its restore reads, and training with checkpoint writes beside its reads.
    """
    if res.get("phase") not in REGISTRY or layout_of(res).stages:
        return None
    ckpt = (res.get("workload") or {}).get("checkpoint") or {}
    phase = phase_of(res)
    if phase.hero_test is None or phase.hero_pairing == "direction_sides":
        return None
    if phase.hero_pairing == "persist_side" and ckpt.get("restore", True):
        return None  # the restore's reads count too
    if phase.checkpoint_at is not None and ckpt.get("every", 0) > 0:
        return None  # checkpoint writes count beside training's reads
    return phase.hero_test


def phases_beside(test: str) -> list[str]:
    """The phases whose runs `sides` sets beside fio test `test`: those naming it as their
    hero test, and prep beside seq_write too (its writes)."""
    names = [n for n in REGISTRY if get_phase(n).hero_test == test]
    if test == "seq_write" and "prep" in REGISTRY:
        names.append("prep")
    return names


def _last_done(section: IoFigures | None) -> float | None:
    return section.last_done.mib_s if section and section.last_done else None


def fio_command(target: str, res: dict[str, Any], tests: list[str],
                no_ramp: bool = False) -> str:
    """The `aiio fio` command that makes a hero at this run's concurrency (no_ramp: with
    nothing left out at the start, for a run that cannot leave out fio's ramp)."""
    clients, streams = clients_requested(res), streams_per_client(res)
    if target.startswith("s3://"):
        # fio's http engine sends one request at a time per job, with no ramp: the streams
        # are jobs
        return f"aiio fio --target {shlex.quote(target)} --clients {clients * streams}"
    return (f"aiio fio --target {target} --clients {clients} --iodepth "
            f"{streams}{' --ramp-time 0' if no_ramp else ''} --tests {','.join(tests)}")
