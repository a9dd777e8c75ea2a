"""Results: the one typed, versioned model of what a run, sweep, fio suite or acceptance run
measured, with its one constructor (`new`), loader (`load`) and writer (`save`).

On disk a result is JSON (docs/RESULTS.md). In memory it is a `Result`: the document as saved,
read-only, plus typed views of its figures: every named I/O section as `IoFigures` (train's
reads, prep's read and write, each checkpoint burst's write and read, one type under a name),
each client's own sections, totals, other byte series and timed parts, AU beside training's
reads, the checkpoints, the metadata operations, the phase's main operation, the warnings, and
a sweep's point results. Readers ask for a section by name instead of knowing where each phase
keeps it; each phase declares where it keeps them (`Phase.io_sections` and its other
declarations), and a result records its own index (`io`) for readers that do not know its
phase. Results of schema aiio.result/1 load through the same path:
their sections are found from the same layout, which /1 and /2 share.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aiio.document import Where, dig
from aiio.errors import AiioError
from aiio.results.bursts import Burst
from aiio.results.inserts import InsertFigures
from aiio.results.kvcache import KvFigures
from aiio.results.layout import SCHEMA_V3, Layout, index_of, layout_of, stage_part
from aiio.results.lenient import count as _int  # exact, past a float's integers
from aiio.results.lenient import number
from aiio.results.vector import VectorFigures, VectorIndex
from aiio.run import owner

SCHEMA = SCHEMA_V3
SCHEMA_V1 = "aiio.result/1"
SCHEMA_V2 = "aiio.result/2"
READABLE = (SCHEMA_V1, SCHEMA_V2, SCHEMA)
STATUSES = ("ok", "failed", "interrupted")


# --- figures -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Window:
    """Bytes over one window of a run: first done (every client running) or last done."""

    seconds: float
    bytes: float  # a first-done window's bytes are read off the byte series, so fractional
    mib_s: float

    @classmethod
    def of(cls, d: Any) -> Window | None:
        if not isinstance(d, Mapping) or number(d.get("mib_s")) is None:
            return None
        return cls(number(d.get("seconds")) or 0.0, number(d.get("bytes")) or 0.0,
                   float(d["mib_s"]))


@dataclass(frozen=True)
class Spread:
    """Mean, min, max, stdev, cv and count of one figure over clients (or repeats)."""

    mean: float
    min: float
    max: float
    stdev: float | None = None
    cv: float | None = None
    n: int | None = None

    @classmethod
    def of(cls, d: Any) -> Spread | None:
        if not isinstance(d, Mapping):
            return None
        mean, low, high = (number(d.get(k)) for k in ("mean", "min", "max"))
        if mean is None or low is None or high is None:
            return None
        return cls(mean, low, high, number(d.get("stdev")), number(d.get("cv")), d.get("n"))


def au_meets_goal(rule: str, mean: float | None, least: float | None, passed: bool | None,
                  goal: float) -> bool:
    """Whether AU met `goal` by the runs' own rule (mean: MLPerf's, every repeat passed;
    min: every client); the one rule of the AU sentence, demand-bound points, --find-max,
    sizing and the charts."""
    if rule == "min" or mean is None:
        return least is not None and least >= goal
    return passed if passed is not None else mean >= goal


@dataclass(frozen=True)
class AuFigures:
    """Accelerator utilization over the clients, recorded beside training's reads: the mean,
    the least busy client's, the goal, and the verdict under its rule (or why there is none)."""

    mean: float | None
    min: float | None
    goal: float | None
    passed: bool | None
    rule: str
    note: str | None                 # why there is no verdict (no compute time, no step)
    below_goal: tuple[Any, ...]      # the clients under the goal
    recorded_rule: str | None = None  # the rule as recorded; None: saved before it was
    recorded_pass: bool = False      # a verdict was recorded, even none (AU not measurable)

    @classmethod
    def of(cls, d: Any) -> AuFigures | None:
        """None unless the figures record AU or why it was not measured."""
        if not isinstance(d, Mapping) or ("au_mean" not in d and "au_note" not in d):
            return None
        passed, rule = d.get("au_pass"), d.get("au_rule")
        return cls(number(d.get("au_mean")), number(d.get("au_min")), number(d.get("au_goal")),
                   passed if isinstance(passed, bool) else None, str(d.get("au_rule", "min")),
                   d.get("au_note"), _items(d.get("clients_below_goal")),
                   None if rule is None else str(rule), "au_pass" in d)

    @property
    def paced_by_compute(self) -> bool:
        """The clients met their goal: the figures measure their compute pacing (the
        accelerators' demand), not the storage."""
        return self.min is not None and self.goal is not None and \
            au_meets_goal(self.rule, self.mean, self.min, self.passed, self.goal)


@dataclass(frozen=True)
class IoFigures:
    """One named stream of I/O: what one client moved, or the aggregate over the clients."""

    name: str
    path: Where                      # where in the document (a client's: from its entry)
    bytes: int | None                # bytes moved (device bytes, O_DIRECT widening included)
    ops: int | None
    elapsed_s: float | None          # a client's time; an aggregate's is its last-done time
    mib_s: float | None
    first_done: Window | None = None  # aggregates only
    last_done: Window | None = None
    per_client_mib_s: Spread | None = None
    jain: float | None = None
    latency: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # ns, per op
    # a client's one summary (ns), of its section's main operation: a client records no other
    main_latency: Mapping[str, float] = field(default_factory=dict)
    histograms: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    series: tuple[float, ...] = ()   # a client's bytes per bucket; an aggregate's MiB/s per s
    bucket_s: float = 1.0            # the series' bucket width
    has_series: bool = False         # a client's: it recorded a byte series, even an empty one
    au: AuFigures | None = None      # training's: the accelerators' utilization beside its reads
    samples_per_s: float | None = None            # training's, beside its reads
    demand_mib_s_per_client: float | None = None  # training's: batch x sample / compute time
    directions: Mapping[str, IoFigures] = field(default_factory=dict)  # fio's: read, write
    iops: float | None = None
    first_done_s: float | None = None  # a checkpoint burst's: until the first / last client
    last_done_s: float | None = None   # had its shards durable (or restored)
    app_bytes: int | None = None       # training's delivered: sample bytes the loaders asked
    device_bytes: int | None = None    # and bytes the device moved for them
    figures: Mapping[str, Any] = field(default_factory=dict)  # the section as recorded

    @classmethod
    def of(cls, name: str, path: Where, d: Mapping[str, Any]) -> IoFigures:
        last = Window.of(d.get("last_done"))
        elapsed = number(d.get("elapsed_s", d.get("seconds")))
        return cls(name=name, path=path, bytes=_int(d.get("bytes")),
                   ops=_int(d.get("ops")) if _int(d.get("ops")) is not None
                   else _int(d.get("ios")),  # fio counts I/Os as ios, ops per direction
                   elapsed_s=elapsed if elapsed is not None else last and last.seconds,
                   mib_s=number(d.get("mib_s")) if "mib_s" in d else last and last.mib_s,
                   first_done=Window.of(d.get("first_done")), last_done=last,
                   per_client_mib_s=Spread.of(d.get("per_client_mib_s")),
                   jain=number(d.get("jain")), latency=_ops(d.get("latency")),
                   main_latency=_summary(d.get("latency")),
                   histograms=_ops(d.get("histograms")),
                   series=_values(d), bucket_s=_bucket(d),
                   has_series=_is_byte_series(d.get("series")), au=AuFigures.of(d),
                   samples_per_s=number(d.get("samples_per_s")),
                   demand_mib_s_per_client=number(d.get("demand_mib_s_per_client")),
                   directions={op: cls.of(op, (*path, "ops", op), v)
                               for op, v in _ops(d.get("ops")).items()},
                   iops=number(d.get("iops")), first_done_s=number(d.get("first_done_s")),
                   last_done_s=number(d.get("last_done_s")), app_bytes=_int(d.get("app_bytes")),
                   device_bytes=_int(d.get("device_bytes")), figures=d)

    def p(self, op: str, quantile: str = "p99") -> float | None:
        """An operation's latency quantile in ns (p50, p90, p99, p999, max, mean)."""
        return number(dig(self.latency, op, f"{quantile}_ns"))

    def main_p(self, quantile: str = "p99") -> float | None:
        """A client's latency quantile in ns, of its section's main operation."""
        return number(self.main_latency.get(f"{quantile}_ns"))

    def byte_series(self) -> tuple[float, ...]:
        """A client's recorded bytes per bucket; ValueError when what it recorded is no list
        (a damaged result), so a reader refuses to draw it rather than draw nothing."""
        got = dig(self.figures, "series", "bytes")
        if not isinstance(got, list):
            raise ValueError(f"the {self.name} byte series is not a list of counts")
        return tuple(got)


def _values(d: Mapping[str, Any]) -> tuple[float, ...]:
    """A client's byte series ({bucket_s, bytes}) or an aggregate's MiB/s per second."""
    series = d.get("series")
    got = series.get("bytes") if isinstance(series, Mapping) else d.get("series_mib_s")
    return tuple(got) if isinstance(got, list) else ()


def _is_byte_series(value: Any) -> bool:
    return isinstance(value, Mapping) and "bucket_s" in value and "bytes" in value


def _bucket(d: Mapping[str, Any]) -> float:
    return number(dig(d, "series", "bucket_s")) or 1.0


def _items(value: Any) -> tuple[Any, ...]:
    """A recorded list's items; () for anything else (a damaged or missing list)."""
    return tuple(value) if isinstance(value, list) else ()


def _ops(value: Any) -> Mapping[str, Any]:
    return {k: v for k, v in value.items() if isinstance(v, Mapping)} \
        if isinstance(value, Mapping) else {}


def _summary(value: Any) -> Mapping[str, float]:
    """A flat latency summary ({count, p50_ns, ...}); {} for a per-operation one."""
    if not isinstance(value, Mapping) or any(isinstance(v, Mapping) for v in value.values()):
        return {}
    return {k: v for k, v in value.items() if number(v) is not None}


@dataclass(frozen=True)
class CorruptBlock:
    """One block --verify found corrupt: the file, the offset and what was wrong."""

    file: str
    offset: int
    problem: str


@dataclass(frozen=True)
class VerifyFigures:
    """What --verify checked: blocks, corrupt blocks (the first few named) and its cost."""

    blocks_checked: int | None
    mismatches: int
    checksum_s: float | None
    cost_share: float | None       # None: saved before the cost was recorded
    corrupt: tuple[CorruptBlock, ...]

    @classmethod
    def of(cls, d: Any) -> VerifyFigures | None:
        """None when the run did not verify (nothing, or an empty record)."""
        if not isinstance(d, Mapping) or not d:
            return None
        corrupt = tuple(CorruptBlock(str(c.get("file")), _int(c.get("offset")) or 0,
                                     str(c.get("problem")))
                        for c in _items(d.get("corrupt")) if isinstance(c, Mapping))
        return cls(_int(d.get("blocks_checked")), _int(d.get("mismatches")) or 0,
                   number(d.get("checksum_s")), number(d.get("cost_share")), corrupt)


@dataclass(frozen=True)
class RunSummary:
    """The figures a run's aggregate records beside its I/O sections: samples, the demand
    per client, shards, a random mix's shape and rates, the accelerators' AU and --verify's
    checks, which loop timed a random mix's reads. Each is None when the phase does not
    record it."""

    bytes: int | None
    samples: int | None
    samples_per_s: float | None
    consumed_bytes: int | None
    compute_s_per_batch: float | None
    demand_mib_s_per_client: float | None
    demand_note: str | None          # why there is no demand (no compute time)
    shards: int | None
    iops: float | None
    read_mib_s: float | None
    write_mib_s: float | None
    per_client_iops: Spread | None
    block_size: int | None
    read_share: float | None
    file_size: int | None
    au: AuFigures | None
    verify: VerifyFigures | None
    figures: Mapping[str, Any]       # the aggregate as recorded

    @property
    def read_loop(self) -> str | None:
        """Which loop timed a random mix's reads ("compiled (numba 0.68.1)", "python (...)",
        "io_uring (depth 16)"); None when the run did not record it."""
        loop = self.figures.get("read_loop")
        return loop if isinstance(loop, str) else None

    @classmethod
    def of(cls, d: Any) -> RunSummary:
        d = d if isinstance(d, Mapping) else {}
        note = d.get("demand_note")
        return cls(_int(d.get("bytes")), _int(d.get("samples")), number(d.get("samples_per_s")),
                   _int(d.get("consumed_bytes")), number(d.get("compute_s_per_batch")),
                   number(d.get("demand_mib_s_per_client")),
                   None if note is None else str(note), _int(d.get("shards")),
                   number(d.get("iops")), number(d.get("read_mib_s")),
                   number(d.get("write_mib_s")), Spread.of(d.get("per_client_iops")),
                   _int(d.get("block_size")), number(d.get("read_share")),
                   _int(d.get("file_size")), AuFigures.of(d), VerifyFigures.of(d.get("verify")),
                   d)

    @property
    def top(self) -> IoFigures:
        """The aggregate's own top level read as one I/O section (windows, spread, latency):
        the phase's one stream when it keeps it flat (train, load), else mostly empty."""
        return IoFigures.of("aggregate", ("aggregate",), self.figures)


@dataclass(frozen=True)
class ModelWeights:
    """The model weights a load run read: their size (and the scale of the model's they stand
    for), how many files, where the size came from, and the replicas' stagger."""

    total_bytes: int | None
    base_bytes: int | None
    scale: float | None
    files: int | None
    source: str
    stagger_s: float | None


@dataclass(frozen=True)
class LoadFigures:
    """A model load over its replicas: the weights, how many replicas, when the first and
    the last were ready, and per replica its rate and its time to load (spreads)."""

    weights: ModelWeights
    replicas: int | None
    first_ready_s: float | None
    last_ready_s: float | None
    per_replica_mib_s: Spread | None
    load_s: Spread | None
    verify: VerifyFigures | None

    @classmethod
    def of(cls, d: Any) -> LoadFigures | None:
        if not isinstance(d, Mapping):
            return None
        m = d.get("model") if isinstance(d.get("model"), Mapping) else {}
        weights = ModelWeights(_int(m.get("total_bytes")), _int(m.get("base_bytes")),
                               number(m.get("scale")), _int(m.get("files")),
                               str(m.get("source", "")), number(m.get("stagger_s")))
        return cls(weights, _int(d.get("replicas")), number(d.get("first_ready_s")),
                   number(d.get("last_ready_s")), Spread.of(d.get("per_replica_mib_s")),
                   Spread.of(d.get("load_s")), VerifyFigures.of(d.get("verify")))


@dataclass(frozen=True)
class MetadataOp:
    """One type of metadata operation (list, stat, open, create, unlink): how many, how many
    per second, and its latency summary (ns)."""

    count: int | None
    ops_s: float | None
    latency: Mapping[str, float]

    def p(self, quantile: str = "p99") -> float | None:
        return number(self.latency.get(f"{quantile}_ns"))


@dataclass(frozen=True)
class Metadata:
    """The metadata operations of a run or of one client: all of them, and per type."""

    total: int | None
    ops_s: float | None
    ops: Mapping[str, MetadataOp]

    @classmethod
    def of(cls, d: Any) -> Metadata | None:
        if not isinstance(d, Mapping):
            return None
        ops = {op: MetadataOp(_int(m.get("count")), number(m.get("ops_s")),
                              _summary(m.get("latency")))
               for op, m in _ops(d.get("ops")).items()}
        return cls(_int(d.get("total")), number(d.get("ops_s")), ops)


@dataclass(frozen=True)
class CheckpointPlan:
    """What a run's checkpoints set out to write: each checkpoint's size (and the scale of
    the model's it stands for), where the size came from, the shape, how many and kept."""

    total_bytes: int | None
    base_bytes: int | None
    scale: float | None
    source: str
    clients: int | None
    files_per_client: int | None
    count: int | None
    keep: int | None

    @classmethod
    def of(cls, d: Any) -> CheckpointPlan | None:
        if not isinstance(d, Mapping):
            return None
        return cls(_int(d.get("total_bytes")), _int(d.get("base_bytes")), number(d.get("scale")),
                   str(d.get("source", "")), _int(d.get("clients")),
                   _int(d.get("files_per_client")), _int(d.get("count")), _int(d.get("keep")))


@dataclass(frozen=True)
class CheckpointFigures:
    """A run's checkpoints over every client (a checkpoint run's, or those during training):
    the plan, how many completed, the write and restore rates, the times to persist and to
    restore and the accelerators' stall per checkpoint (each a spread over checkpoints)."""

    plan: CheckpointPlan | None
    completed: int
    stall_model: str
    write_mib_s: float | None
    persist_first_done_s: Spread | None
    persist_last_done_s: Spread | None
    stall_s: Spread | None
    read_mib_s: float | None         # None: nothing was restored
    restore_first_done_s: Spread | None
    restore_last_done_s: Spread | None
    restore_gap_s_max: float | None
    au_without_checkpoints_mean: float | None  # training's: its AU had none been taken
    bursts: tuple[Burst, ...]                  # each checkpoint's own figures
    verify: VerifyFigures | None
    figures: Mapping[str, Any]

    @classmethod
    def of(cls, d: Any) -> CheckpointFigures | None:
        if not isinstance(d, Mapping):
            return None
        return cls(CheckpointPlan.of(d.get("plan")), _int(d.get("completed")) or 0,
                   str(d.get("stall_model", "synchronous")), number(d.get("write_mib_s")),
                   Spread.of(d.get("persist_first_done_s")),
                   Spread.of(d.get("persist_last_done_s")), Spread.of(d.get("stall_s")),
                   number(d.get("read_mib_s")), Spread.of(d.get("restore_first_done_s")),
                   Spread.of(d.get("restore_last_done_s")), number(d.get("restore_gap_s_max")),
                   number(d.get("au_without_checkpoints_mean")),
                   tuple(Burst.from_dict(b) for b in _items(d.get("checkpoints"))
                         if isinstance(b, Mapping)),
                   VerifyFigures.of(d.get("verify")), d)


@dataclass(frozen=True)
class SweepRow:
    """One client count of a sweep's table, means over its repeats: the judged aggregate and
    its range, both windows, E(N) and C(N), the per-client spread and fairness, latency, the
    phase's own figures, the client machine's CPU and, for accelerators, AU."""

    clients: int
    repeats: int
    aggregate_mib_s: float | None      # the figure the verdict judges
    aggregate_spread: Spread | None    # over the repeats
    first_done_mib_s: float | None     # saved before it was kept apart: the judged figure
    last_done_mib_s: float | None
    efficiency: float | None
    consistency: float | None
    per_client_mib_s: Spread | None
    jain: float | None
    latency: Mapping[str, Mapping[str, Any]]
    extras: Mapping[str, Spread]       # the phase's own figures (Phase.sweep_extras)
    cpu_percent: float | None
    au: AuFigures | None
    demand_mib_s: float | None = None       # what one accelerator reads at full speed
    compute_s_per_step: float | None = None  # measured emulated compute, and as asked
    compute_s_nominal: float | None = None
    warnings: tuple[str, ...] = ()          # the codes its runs warned of

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> SweepRow:
        extras = d.get("figures") if isinstance(d.get("figures"), Mapping) else {}
        return cls(_int(d.get("clients")) or 0, _int(d.get("repeats")) or 1,
                   number(d.get("aggregate_mib_s")), Spread.of(d.get("aggregate_spread")),
                   number(d.get("first_done_mib_s", d.get("aggregate_mib_s"))),
                   number(d.get("last_done_mib_s")), number(d.get("efficiency")),
                   number(d.get("consistency")), Spread.of(d.get("per_client_mib_s")),
                   number(d.get("jain")), _ops(d.get("latency")),
                   {k: got for k, v in extras.items() if (got := Spread.of(v)) is not None},
                   number(d.get("cpu_percent")), AuFigures.of(d),
                   number(d.get("demand_mib_s")), number(d.get("compute_s_per_step")),
                   number(d.get("compute_s_nominal")),
                   tuple(str(w) for w in _items(d.get("warnings"))))


@dataclass(frozen=True)
class ResultWarning:
    """Why a number may not be the storage's: a code, its message, the rank it came from."""

    code: str
    message: str
    rank: int | None = None

    @classmethod
    def of(cls, item: Any) -> ResultWarning:
        if isinstance(item, Mapping):
            return cls(str(item.get("code", "")), str(item.get("message", "")), item.get("rank"))
        return cls("", str(item))


@dataclass(frozen=True)
class TimedPart:
    """A timed part of a client's run, in seconds since the common start: a checkpoint burst,
    its write or restore, or the client itself when it started late (a staggered replica)."""

    path: Where                      # from the client's entry; () for the client itself
    start_s: float
    end_s: float


@dataclass(frozen=True)
class ClientFigures:
    """One client's own figures: who it was, its totals, its named I/O sections, the streams
    its per-client figures show (`totals`), its other byte series and its timed parts."""

    client: int | None
    host: str
    rank: int
    pid: int | None
    elapsed_s: float | None
    cpu_s: float | None
    bytes: int | None
    io: Mapping[str, IoFigures]
    figures: Mapping[str, Any]       # the client's entry as recorded
    totals: Mapping[str, IoFigures] = field(default_factory=dict)  # Phase.client_totals
    series: Mapping[str, IoFigures] = field(default_factory=dict)  # Phase.other_series
    events: tuple[TimedPart, ...] = ()
    metadata: Metadata | None = None                                # Phase.metadata_at

    def _number(self, key: str) -> float | None:
        return number(self.figures.get(key))

    @property
    def mib_s(self) -> float | None:
        """The client's own MiB/s, where its phase keeps its figures flat (train, load)."""
        return self._number("mib_s")

    @property
    def ops(self) -> int | None:
        return _int(self.figures.get("ops"))

    @property
    def ran_steps(self) -> bool:
        """The client emulated an accelerator's steps: it records its AU, even none."""
        return "au" in self.figures

    @property
    def other_scalars(self) -> dict[str, Any]:
        """The numbers the client recorded that no typed figure here holds, in its order."""
        return {k: v for k, v in self.figures.items() if k not in _CLIENT_TYPED
                and isinstance(v, int | float) and not isinstance(v, bool)}

    @property
    def au(self) -> float | None:
        """A training client's accelerator utilization over its measured steps."""
        return self._number("au")

    @property
    def wait_s(self) -> float | None:
        """How long a training client's accelerator waited for data (measured steps)."""
        return self._number("wait_s")

    @property
    def compute_s(self) -> float | None:
        """A training client's emulated compute time over its measured steps."""
        return self._number("compute_s")

    @property
    def measured_steps(self) -> int | None:
        return _int(self.figures.get("measured_steps"))

    @property
    def samples_per_s(self) -> float | None:
        return self._number("samples_per_s")

    @property
    def consumed_bytes(self) -> int | None:
        """A training client's sample bytes its accelerator consumed."""
        return _int(self.figures.get("consumed_bytes"))

    @property
    def consumed_mib_s(self) -> float | None:
        return self._number("consumed_mib_s")

    @property
    def start_s(self) -> float | None:
        """When the client started, since the common start (a staggered replica's)."""
        return self._number("start_s")

    @property
    def load_s(self) -> float | None:
        """A replica's time to load the model: from its start until it had every byte."""
        return self._number("load_s")

    @property
    def step_log_stride(self) -> int | None:
        """Which steps the step log kept: those whose index is a multiple of it; 1 for a
        result written before logs thinned, None for a value that is no whole count."""
        got = self.figures.get("step_log_stride", 1)
        value = number(got)
        if isinstance(got, bool) or value is None or value < 1 or value != int(value):
            return None
        return int(value)

    @property
    def step_log(self) -> tuple[Step, ...]:
        """A training client's steps as recorded: epoch, step, start, wait, compute, batch."""
        got = self.figures.get("step_log")
        return tuple(Step(*row[:6]) for row in got if isinstance(row, list) and len(row) >= 6) \
            if isinstance(got, list) else ()


# what a client's typed figures hold (ClientFigures), left out of its other_scalars
_CLIENT_TYPED = frozenset({"client", "host", "pid", "mib_s", "bytes", "ops", "elapsed_s", "au",
                           "wait_s", "compute_s", "samples_per_s", "cpu_s"})


@dataclass(frozen=True)
class Step:
    """One training step of one client: its epoch and number, when it started (since the
    common start), how long it waited for its batch and computed, and the batch's samples."""

    epoch: int
    step: int
    start_s: float
    wait_s: float
    compute_s: float
    samples: int


@dataclass(frozen=True)
class HostFigures:
    """One host of a run (an MPI rank): its share of the clients, how it ended, its clients'
    aggregate (the phase's over them, histograms left out) and its CPU use."""

    rank: Any                        # as recorded: the table shows what the rank said
    host: Any
    status: Any
    clients: Any
    client_numbers: Any
    error: Any
    io: IoFigures                    # its clients' aggregate: bytes and both windows
    au_min: float | None
    cpu_percent_mean: float | None
    # the run's sections within the host's aggregate, where they are parts of it (a phase
    # that reads and writes keeps a window each, none of the host's own)
    streams: Mapping[str, IoFigures] = field(default_factory=dict)

    @classmethod
    def of(cls, d: Mapping[str, Any], paths: Mapping[str, Where] | None = None) -> HostFigures:
        """`paths`: the run's aggregate sections, each from inside the aggregate."""
        agg = d.get("aggregate") if isinstance(d.get("aggregate"), Mapping) else {}
        parts = {name: (path, dig(agg, *path)) for name, path in (paths or {}).items() if path}
        streams = {name: IoFigures.of(name, path, part) for name, (path, part) in parts.items()
                   if isinstance(part, Mapping)}
        return cls(d.get("rank", "?"), d.get("host", "?"), d.get("status"), d.get("clients"),
                   d.get("client_numbers"), d.get("error"), IoFigures.of("host", (), agg),
                   number(agg.get("au_min")), number(dig(d, "monitor", "cpu_percent_mean")),
                   streams)

    def rates(self) -> tuple[tuple[str, Window | None, Window | None], ...]:
        """(stream, first done, last done): the host's own windows, named ""; a host that
        has none, each of its streams'."""
        if self.io.first_done is not None or self.io.last_done is not None or not self.streams:
            return (("", self.io.first_done, self.io.last_done),)
        return tuple((name, s.first_done, s.last_done) for name, s in self.streams.items())


@dataclass(frozen=True)
class RunWorkload:
    """The workload a run recorded, read-only, as sizing reads it back: each value as
    recorded (None when it is missing), so a reader can name what is wrong with it."""

    name: Any
    accelerator: Any
    compute_time: Any                # per accelerator: seconds per batch
    batch_size: Any
    sample_size: Any
    au_goal: Any

    @classmethod
    def of(cls, d: Any) -> RunWorkload:
        return cls(dig(d, "workload", "name"), dig(d, "train", "accelerator"),
                   dig(d, "train", "compute_time"), dig(d, "train", "batch_size"),
                   dig(d, "dataset", "sample_size"), dig(d, "train", "au_goal"))

    def compute_s(self) -> Any:
        """The compute time per batch of the run's accelerator, as recorded."""
        return dig(self.compute_time, str(self.accelerator))


# --- where the I/O sections are: each result's layout (aiio.results.layout) ---------------

def io_paths(doc: Mapping[str, Any]) -> dict[str, Where]:
    """Name -> path of every aggregate I/O section of a result, by its kind and layout."""
    if doc.get("kind") == "fio":
        return {name: ("tests", name, "aggregate") for name in dig(doc, "tests", default={})}
    if not _is_run(doc):
        return {}
    return layout_of(doc).aggregate_sections(doc)


def kind_of(doc: Mapping[str, Any]) -> Any:
    """The document's kind as recorded; one without a kind is a run's figures (built by hand,
    or by an older writer: they name only their phase)."""
    return doc.get("kind", "run")


def _is_run(doc: Mapping[str, Any]) -> bool:
    """A run result, or figures of one built without a kind."""
    return kind_of(doc) == "run"


def declared_part(doc: Mapping[str, Any], member: str) -> Mapping[str, Any] | None:
    """The part of a run's aggregate at the path its layout names in `member`
    (`checkpoint_at`, `load_at`); None when it names none or the part is missing."""
    at = getattr(layout_of(doc), member)
    part = None if at is None else dig(doc, "aggregate", *at)
    return part if isinstance(part, Mapping) else None


# --- the result ----------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Result(Mapping[str, Any]):
    """A saved result: the document (read-only, as a mapping) and its typed figures."""

    doc: Mapping[str, Any]
    io: Mapping[str, IoFigures]
    clients: tuple[ClientFigures, ...]
    warnings: tuple[ResultWarning, ...]
    points: tuple[Result, ...]       # a sweep's run results, in the order they ran
    path: Path | None = None
    notices: tuple[str, ...] = ()    # fields of the wrong type, read as missing (`checked`)

    def __getitem__(self, key: str) -> Any:
        return self.doc[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.doc)

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def kind(self) -> str:
        return str(kind_of(self.doc))

    @property
    def phase(self) -> str:
        return str(self.doc.get("phase") or "")

    @property
    def status(self) -> str:
        return str(self.doc.get("status", ""))

    @property
    def id(self) -> str:
        return str(self.doc.get("id", ""))

    @property
    def method(self) -> str:
        """How the run defeated the page cache (or that it moved no byte: the null method)."""
        return str(self.doc.get("method") or "")

    @property
    def ranks(self) -> int:
        """How many MPI ranks (hosts) the run spanned; 1 without MPI."""
        return _int(self.doc.get("ranks")) or 1

    @property
    def clients_requested(self) -> int:
        """How many clients the run asked for (`clients_requested`, the module function)."""
        return clients_requested(self.doc)

    @property
    def shared_processes(self) -> tuple[int, int] | None:
        """(processes, the most clients one held) where clients ran as threads of shared
        processes (`run.client_processes`); None where each had a process of its own."""
        held: dict[tuple[str, int], int] = {}
        for c in self.clients:
            if c.pid is not None:
                held[c.host, c.pid] = held.get((c.host, c.pid), 0) + 1
        most = max(held.values(), default=1)
        return (len(held), most) if most > 1 else None

    @property
    def main_op(self) -> str:
        """The operation the phase's latency figure is taken from: as the result records it,
        else (saved before it was recorded) its phase's, 'read' for a phase not known here."""
        return main_op(self.doc)

    @property
    def checkpoint(self) -> CheckpointFigures | None:
        """The run's checkpoints, where its phase (or a stage of it) declares them."""
        return CheckpointFigures.of(declared_part(self.doc, "checkpoint_at"))

    @property
    def kvcache(self) -> KvFigures | None:
        """The KV-cache figures the run recorded beside its sections; None for another
        phase's run."""
        return KvFigures.from_dict(self.summary.figures.get("kvcache"))

    @property
    def vector(self) -> VectorFigures | None:
        """A vector search's query figures; None for another phase's run."""
        return VectorFigures.from_dict(self.summary.figures.get("vector"))

    @property
    def vector_index(self) -> VectorIndex:
        """The index a vector search searched (every figure None when none was recorded)."""
        return VectorIndex.from_dict(self.summary.figures.get("index"))

    @property
    def inserts(self) -> InsertFigures | None:
        """A vector search's insert stream; None where the run had none."""
        return InsertFigures.from_dict(self.summary.figures.get("inserts"))

    @property
    def metadata(self) -> Metadata | None:
        """The run's metadata operations over every client (Phase.metadata_at)."""
        return _metadata(layout_of(self.doc), dig(self.doc, "aggregate", default={}))

    @property
    def summary(self) -> RunSummary:
        """The figures the run's aggregate records beside its I/O sections."""
        return RunSummary.of(self.doc.get("aggregate"))

    @property
    def has_aggregate(self) -> bool:
        """The run computed its aggregate (one that ended early may not have)."""
        got = self.doc.get("aggregate")
        return isinstance(got, Mapping) and bool(got)

    @property
    def model_load(self) -> LoadFigures | None:
        """The model load over its replicas, where its phase (or a stage) declares it."""
        return LoadFigures.of(declared_part(self.doc, "load_at"))

    @property
    def hosts(self) -> tuple[HostFigures, ...]:
        """Each host (MPI rank) of the run, in rank order as recorded."""
        got = self.doc.get("hosts")
        paths = {name: io.path[1:] for name, io in self.io.items()
                 if io.path[:1] == ("aggregate",)}
        return tuple(HostFigures.of(x, paths) for x in got if isinstance(x, Mapping)) \
            if isinstance(got, list) else ()

    @property
    def workload(self) -> RunWorkload:
        return RunWorkload.of(self.doc.get("workload"))

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages of a lifecycle run that recorded an aggregate of their own, in order."""
        return tuple(name for name in layout_of(self.doc).stages
                     if isinstance(dig(self.doc, "aggregate", name), Mapping))

    @property
    def table(self) -> tuple[SweepRow, ...]:
        """A sweep's table, one row per client count (empty before it was judged)."""
        got = self.doc.get("table")
        return tuple(SweepRow.of(r) for r in got if isinstance(r, Mapping)) \
            if isinstance(got, list) else ()

    def stage(self, name: str) -> Result:
        """One stage of a lifecycle run, laid out as a result of that stage's phase."""
        return model(stage_doc(self.doc, name))

    def section(self, name: str) -> IoFigures | None:
        return self.io.get(name)

    def sections(self, prefix: str) -> list[IoFigures]:
        """Sections whose name starts with prefix, in order ('checkpoint.' : every burst)."""
        return [s for name, s in self.io.items() if name.startswith(prefix)]

    def first(self, prefix: str = "") -> IoFigures | None:
        """The first section named with prefix: the phase's main stream, the one it declares
        first (reads for train and load; 'train.': the lifecycle's train stage's)."""
        return next(iter(self.sections(prefix)), None)


def stage_doc(doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A lifecycle run's stage as a run of that stage's phase: its aggregate, each client's
    entry of it, and its own fio hero pairing."""
    out = stage_part(doc, name)
    out.pop("hero", None)
    index = dig(doc, "io", "stages", name) if doc.get("schema") == SCHEMA_V3 else None
    out.pop("io", None)
    if isinstance(index, Mapping):
        out["io"] = index
    hero = dig(doc, "hero", "stages", name)
    if hero is not None:
        out["hero"] = hero
    return out


def main_op(doc: Mapping[str, Any]) -> str:
    """A result's (a run's or a sweep's) main operation, as `Result.main_op`."""
    return str(dig(doc, "io", "main_op") or layout_of(doc).main_op)


def clients_requested(doc: Mapping[str, Any]) -> int:
    """How many clients a run asked for, as `Result.clients_requested`: the count recorded
    (`recorded_clients`), else the clients it reports, else one (a run asks for one at least:
    "c0" or `--clients 0` would be wrong)."""
    clients = doc.get("clients")
    reported = sum(isinstance(c, Mapping) for c in clients) if isinstance(clients, list) else 0
    return recorded_clients(doc) or reported or 1


def recorded_clients(doc: Mapping[str, Any]) -> int | None:
    """The client count a run recorded asking for: `clients_requested`, else the resolved
    workload's `run.clients` (the same ask); a count below 1 (or of another type) reads as
    not recorded, since a run asks for one at least."""
    for got in (_int(doc.get("clients_requested")), _int(dig(doc, "workload", "run", "clients"))):
        if got is not None and got >= 1:
            return got
    return None


def model(doc: Mapping[str, Any], path: Path | None = None) -> Result:
    """The typed result of a document (either schema)."""
    layout = layout_of(doc)
    # only a run lists its clients (a table over users names their count)
    clients: tuple[ClientFigures, ...] = ()
    if _is_run(doc):
        entries = [c for c in dig(doc, "clients", default=[]) if isinstance(c, Mapping)]
        clients = tuple(_client(layout, n, c) for n, c in enumerate(entries))
    points = tuple(model(p["result"]) for p in dig(doc, "points", default=[])
                   if isinstance(dig(p, "result"), Mapping))
    return Result(doc=doc, io=_sections(doc, io_paths(doc)), clients=clients,
                  warnings=tuple(ResultWarning.of(w) for w in dig(doc, "warnings", default=[])),
                  points=points, path=path)


def _sections(doc: Mapping[str, Any], paths: Mapping[str, Where]) -> dict[str, IoFigures]:
    return {name: IoFigures.of(name, path, dig(doc, *path)) for name, path in paths.items()
            if isinstance(dig(doc, *path), Mapping)}


def _client(layout: Layout, n: int, c: Mapping[str, Any]) -> ClientFigures:
    """The `n`th client's figures, its sections where the result's layout puts them."""
    paths = layout.client_sections(n, c)
    return ClientFigures(client=c.get("client"), host=str(c.get("host", "")),
                         rank=int(c.get("rank") or 0), pid=c.get("pid"),
                         elapsed_s=number(c.get("elapsed_s")), cpu_s=number(c.get("cpu_s")),
                         bytes=_int(c.get("bytes")), io=_sections(c, paths), figures=c,
                         totals=_sections(c, layout.client_totals(n, c)),
                         series=_other_series(layout, c), events=_events(c, paths.values()),
                         metadata=_metadata(layout, c))


def _metadata(layout: Layout, part: Mapping[str, Any]) -> Metadata | None:
    """The metadata figures where the layout keeps them in `part` (its aggregate, an entry)."""
    return None if layout.metadata_at is None else Metadata.of(dig(part, *layout.metadata_at))


def _other_series(layout: Layout, c: Mapping[str, Any]) -> dict[str, IoFigures]:
    """The byte series a client keeps beside its I/O sections, each seen as a section of its
    own: its figures are those of the entry under the series' key prefix."""
    out = {}
    for name, prefix in layout.other_series:
        own = {k[len(prefix):]: v for k, v in c.items() if k.startswith(prefix)}
        if _is_byte_series(own.get("series")):
            out[name] = IoFigures.of(name, (), own)
    return out


def _events(c: Mapping[str, Any], sections: Iterable[Where]) -> tuple[TimedPart, ...]:
    """The client's timed parts: itself when it has a start of its own (ending at its
    elapsed_s), then each I/O section with a start and an end, each after the entries around
    it that have theirs (a checkpoint burst, stall included, before its write)."""
    out: list[TimedPart] = []
    start, end = _finite(c.get("start_s")), _finite(c.get("elapsed_s"))
    if start is not None and end is not None and end >= start:
        out.append(TimedPart((), start, end))
    for path in sections:
        for n in range(1, len(path) + 1):
            part, where = dig(c, *path[:n]), path[:n]
            if not isinstance(part, Mapping) or any(e.path == where for e in out):
                continue
            start, end = _finite(part.get("start_s")), _finite(part.get("end_s"))
            if start is not None and end is not None and end >= start:
                out.append(TimedPart(where, start, end))
    return tuple(out)


def _finite(value: Any) -> float | None:
    got = number(value)
    return got if got is not None and math.isfinite(got) else None


# --- the one constructor, loader and writer ------------------------------------------------

def new_id(kind: str, *parts: Any) -> str:
    """A sortable, readable id: 20261130-041501-train-demo-c2."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    tail = "-".join(re.sub(r"[^A-Za-z0-9_.]+", "_", str(p)) for p in parts if p != "")
    return f"{stamp}-{kind}-{tail}" if tail else f"{stamp}-{kind}"


def new(kind: str, run_id: str, started: str, **fields: Any) -> dict[str, Any]:
    """The skeleton every result starts as, filled in while it runs: its schema, kind, id and
    status first, then the kind's own fields. status is 'running' until it is saved done."""
    return {"schema": SCHEMA, "kind": kind, **({"phase": fields.pop("phase")}
                                               if "phase" in fields else {}),
            "id": run_id, "status": "running", "error": None, "started": started,
            "finished": None, "writer": owner.mark(), **fields}


def fio_test(description: str, rw: str, block_size: int | None, jobfile: str,
             clients: list[dict[str, Any]], aggregate: dict[str, Any],
             disk_util: list[Any]) -> dict[str, Any]:
    """One test of a fio suite's result: what it ran, each job's figures and their aggregate
    (an I/O section: `Result.section(test)`), and the devices' use."""
    return {"description": description, "rw": rw, "block_size": block_size, "jobfile": jobfile,
            "clients": clients, "aggregate": aggregate, "disk_util": disk_util}


def fio_figures(name: str, test: Mapping[str, Any]) -> IoFigures:
    """A fio test's aggregate (`fio_test`) read as the I/O section it is in the result."""
    return IoFigures.of(name, ("tests", name, "aggregate"), test["aggregate"])


def add_fio_test(doc: dict[str, Any], name: str, test: dict[str, Any]) -> None:
    """Record a finished test in a fio suite's result, its MiB/s and IOPS among the suite's
    headline figures."""
    doc["tests"][name] = test
    doc["aggregate"][name] = {k: test["aggregate"][k] for k in ("mib_s", "iops")}


def unique_folder(base: Path, run_id: str) -> Path:
    """reports/<run-id>/, with a suffix when two runs start in the same second. The folder
    is made, not looked for first: another process may make it between a look and a mkdir,
    and mkdir is the one test the file system answers for both."""
    base.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        folder = base / (run_id if n == 1 else f"{run_id}-{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            n += 1


def discard(folder: Path) -> None:
    """Remove a run's folder (`unique_folder`) and the result `save` wrote in it: a run refused
    before it ran anything. Anything else found in it is left, and the folder with it."""
    for name in ("result.json", ".result.json.tmp"):
        (folder / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


def save(result: Result | dict[str, Any], folder: Path, layout: Layout | None = None) -> Path:
    """Write folder/result.json atomically (a crash never leaves half a file), as schema /3
    with the index of its layout (`layout`: the phase's, as its writer knows it; else the
    one the document is read with)."""
    doc = dict(result.doc) if isinstance(result, Result) else result
    if isinstance(doc, dict):  # a run being built: what it prints is what it saved
        record_layout(doc, layout)
        doc["schema"] = SCHEMA
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "result.json"
    tmp = folder / ".result.json.tmp"
    tmp.write_text(json.dumps(doc, indent=1, default=_json_default) + "\n")
    os.replace(tmp, path)
    return path


def record_layout(doc: dict[str, Any], layout: Layout | None = None) -> None:
    """Record in the document where its figures are now (`io`): `save` does, and a writer
    that adds figures to a document it already saved does again before anything reads it
    (the runner, once it summarized), so no reader finds an index older than the figures."""
    doc["io"] = _index(doc, layout or layout_of(doc))


def _index(doc: Mapping[str, Any], layout: Layout) -> dict[str, Any]:
    """Where a run's figures are (`layout.index_of`), for readers that know nothing of its
    phase; a fio suite's sections (one per test) and a sweep's main operation."""
    if _is_run(doc):
        return index_of(layout, doc)
    main = {"main_op": main_op(doc)} if doc.get("phase") else {}
    sections = {} if layout.workload_sections is None \
        else {"workload_sections": list(layout.workload_sections)}
    phase = {"judged_on": layout.judged_on, **sections} if doc.get("phase") else {}
    return {"aggregate": {k: list(v) for k, v in io_paths(doc).items()}, "client": {},
            **main, **phase}


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


def load(path: str | os.PathLike) -> Result:
    """The result in result.json or the folder holding it, of either schema."""
    p = Path(path)
    if p.is_dir():
        p = p / "result.json"
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise AiioError(f"no result at {path} (expected a result.json or its folder)") from None
    except (OSError, ValueError) as exc:
        raise AiioError(f"cannot read result {p}: {exc}") from None
    except RecursionError:  # the parser's own limit, met by a hand-made or corrupted file
        raise AiioError(f"cannot read result {p}: nested deeper than JSON is read") from None
    if not isinstance(data, dict) or data.get("schema") not in READABLE:
        raise AiioError(f"{p} is not an aiio result (schema {' or '.join(READABLE)})")
    doc, notices = checked(data, p)
    return replace(model(settled(doc), p), notices=notices)


def settled(doc: dict[str, Any]) -> dict[str, Any]:
    """The document, read as "interrupted" when it says "running" but the process writing it
    is gone (killed outright, so it could not save its end); the file is left as it is."""
    if doc.get("status") != "running":
        return doc
    why = owner.gone(doc.get("writer"))
    if why is None:
        return doc
    return {**doc, "status": "interrupted",
            "error": f"process gone: {why} without saving an end to this result"}


# --- the fields the commands read off the document: typed and checked once, at load ---------

NUM = "number"  # a finite number, not a boolean
# A client count: a JSON integer of at least 1 (a run asks for one client at least; 2.5, 2.0
# or -2 clients were never asked for, and an integer past a float's range is no count either)
COUNT = "count"
Shape = Any  # a type, a tuple of them, NUM, COUNT, {key: Shape} (an object; "*": any other
#              key's) or [Shape] (a list, each item of that shape)

_WORKLOAD: Shape = {"workload": {"name": str}, "source": str, "given": list,
                    "run": {"clients": COUNT},
                    **dict.fromkeys(("dataset", "train", "model", "prep", "checkpoint",
                                     "load", "kvcache"), dict)}
_CLIENT: Shape = {"client": NUM, "host": str, "rank": NUM, "pid": NUM, "elapsed_s": NUM,
                  "cpu_s": NUM, "bytes": NUM, "start_s": NUM}
_COMMON: Shape = {"id": str, "phase": (str, type(None)), "status": str,
                  "error": (str, type(None)), "started": str, "finished": (str, type(None)),
                  "saved_at": NUM, "method": str, "warnings": list, "environment": dict,
                  "monitor": dict, "workload": _WORKLOAD, "options": dict,
                  "aggregate": dict}
_OPTIONAL_PATH: Shape = (list, type(None))
# A run's layout as it records it (aiio.results.layout.index_of); /2 recorded the first three
_INDEX: Shape = {"main_op": str, "aggregate": dict, "client": dict, "clients": [dict],
                 "stages": dict, "phase": str, "judged_on": str,
                 "headline_stage": (str, type(None)), "checkpoint_at": _OPTIONAL_PATH,
                 "load_at": _OPTIONAL_PATH, "metadata_at": _OPTIONAL_PATH,
                 "other_series": list, "workload_sections": _OPTIONAL_PATH}
_RUN: Shape = {**_COMMON, "target": {"path": str}, "clients_requested": COUNT,
               "clients": [_CLIENT], "hosts": [dict], "io": _INDEX,
               "hero": {"fio_result_id": str, "text": str, "stages": dict}}
_FIO_FIGURES: Shape = {"mib_s": NUM, "iops": NUM, "per_client_mib_s": dict, "latency": dict}
_POINT: Shape = {"result": _RUN, "clients": COUNT, "folder": str}
_SWEEP: Shape = {**_COMMON, "target": {"path": str}, "sweep": {"clients": [COUNT]},
                 "points": [_POINT], "table": [{"clients": COUNT}]}
SHAPES: dict[str, Shape] = {
    "run": _RUN,
    "sweep": _SWEEP,
    "fio": {**_COMMON, "target": {"path": str}, "fio_version": str,
            "options": {"iodepth": NUM}, "aggregate": {"*": _FIO_FIGURES},
            "tests": {"*": {"aggregate": _FIO_FIGURES, "clients": list, "description": str,
                            "block_size": NUM}}},
    "accept": {**_COMMON, "checks": [dict]},
}


def checked(doc: dict[str, Any], path: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The document with every field the commands read of its declared type (`SHAPES`), and a
    notice for each that was not, read as missing; a run's client counts are believed only
    where they can be its ask (`_believed_counts`). A kind that is no string is no result
    aiio can read: the result is damaged (one line naming the file and the field).

    A damaged field reads as missing rather than refusing the whole result, so the figures
    that are intact stay readable and the notice says what was left out."""
    kind = kind_of(doc)
    if not isinstance(kind, str):
        raise AiioError(f"{path} is damaged: its kind is {_what(kind)}, not a string")
    notices: list[str] = []
    got = _conform(doc, SHAPES.get(kind, _COMMON), (), notices)
    return got, tuple(f"{path}: {n}; read as missing" for n in notices)


def _believed_counts(doc: dict[str, Any], raw: Mapping[str, Any], where: Where,
                     notices: list[str]) -> dict[str, Any]:
    """A run's document (`raw` as recorded) without the client counts it cannot have asked
    for. The runner records its ask twice, as `clients_requested` and as the resolved
    workload's `run.clients`, and one entry in `clients` per client it started, every one
    when the run ended ok (a client that fails fails the run). So a count below the entries
    recorded reads as missing, and so does one above them in a run that ended ok; when the
    two counts still disagree, which one was edited cannot be told: both read as missing, and
    the count read is the clients the run reports (`clients_requested`). A count not
    contradicted is believed: nothing the run recorded says otherwise."""
    counts = {"clients_requested": doc.get("clients_requested"),
              "workload.run.clients": dig(doc, "workload", "run", "clients")}
    # entries, damaged or not: a damaged entry is no client fewer
    reported = len(raw["clients"]) if isinstance(raw.get("clients"), list) else 0
    every = doc.get("status") == "ok" and reported > 0  # no entry at all: the list is damaged
    named = {key: _dotted((*where, *key.split("."))) for key in counts}
    drop = []
    for key, count in counts.items():
        if count is not None and (count < reported or every and count > reported):
            drop.append(key)
            notices.append(f"{named[key]} is {count}, "
                           f"{'fewer' if count < reported else 'more'} than the {reported} "
                           f"clients the run reports{' (it ended ok)' if every else ''}")
    asked, planned = counts.values()
    if not drop and None not in (asked, planned) and asked != planned:
        notices.append(f"{named['clients_requested']} is {asked} and "
                       f"{named['workload.run.clients']} is {planned}, two records of one ask "
                       "that disagree")
        drop = list(counts)
    return _without_counts(doc, drop)


def _without_counts(doc: dict[str, Any], drop: list[str]) -> dict[str, Any]:
    """The document less the client counts named in `drop` (the original is left as it was)."""
    out = {k: v for k, v in doc.items() if k not in drop}
    if "workload.run.clients" in drop:
        run = {k: v for k, v in doc["workload"]["run"].items() if k != "clients"}
        out["workload"] = {**doc["workload"], "run": run}
    return out


def _point_count(point: dict[str, Any], raw: Mapping[str, Any], where: Where,
                 notices: list[str]) -> dict[str, Any]:
    """A sweep's point without its `clients` when its run contradicts it: the point's count
    is a third record of the run's ask, and the run's is the one its clients vouch for
    (`_believed_counts`). A point so left without a count is read at its run's."""
    n, run = point.get("clients"), point.get("result")
    asked = _vouched_count(run) if isinstance(run, Mapping) else None
    if n is None or asked is None or n == asked:
        return point
    notices.append(f"{_dotted((*where, 'clients'))} is {n}, not the {asked} clients its run "
                   "asked for")
    return {k: v for k, v in point.items() if k != "clients"}


def _vouched_count(run: Mapping[str, Any]) -> int | None:
    """A run's ask, as far as it records one: its recorded count (already checked against its
    clients), else, in a run that ended ok, the clients it reports (every one it asked for)."""
    reported = len(run["clients"]) if isinstance(run.get("clients"), list) else 0
    return recorded_clients(run) or (reported if run.get("status") == "ok" and reported
                                     else None)


def _table_counts(sweep: dict[str, Any], raw: Mapping[str, Any], where: Where,
                  notices: list[str]) -> dict[str, Any]:
    """A sweep without its table when a row is of a count none of its points has: the table
    is made from the points, one row per count, so such a row was edited, and the rows are
    read from the points instead."""
    pts = sweep.get("points") or []
    # a point's count, else (left out as contradicted) its run's; a point with neither: none
    counts = {p["clients"] if "clients" in p else clients_requested(p["result"])
              for p in pts if "clients" in p or isinstance(p.get("result"), Mapping)}
    odd = [(i, r["clients"]) for i, r in enumerate(sweep.get("table") or [])
           if "clients" in r and r["clients"] not in counts]
    if not pts or not odd:
        return sweep
    i, n = odd[0]
    notices.append(f"{_dotted((*where, 'table'))} is of counts no point has "
                   f"({_dotted((*where, 'table', i, 'clients'))} is {n})")
    return {k: v for k, v in sweep.items() if k != "table"}


def _conform(value: Any, shape: Shape, where: Where, notices: list[str]) -> Any:
    """`value` of `shape`, the parts of another type left out (each named in `notices`);
    _WRONG when `value` itself is of another type. Unchanged parts are not copied."""
    if isinstance(shape, Mapping):
        got = _conform_object(value, shape, where, notices)
        # the client counts of a run, a sweep's point and its table are checked together too
        check = _COUNT_CHECKS.get(id(shape))
        return got if check is None or got is _WRONG else check(got, value, where, notices)
    if isinstance(shape, list):
        return _conform_list(value, shape[0], where, notices)
    if _is(value, shape):
        return value
    # a count's other numbers are named as written: "-2", "2.5" say more than "a number"
    said = json.dumps(value) if shape == COUNT and number(value) is not None else _what(value)
    notices.append(f"{_dotted(where)} is {said}, not {_expected(shape)}")
    return _WRONG


def _conform_object(value: Any, shape: Mapping[str, Shape], where: Where,
                    notices: list[str]) -> Any:
    if not isinstance(value, Mapping):
        notices.append(f"{_dotted(where)} is {_what(value)}, not an object")
        return _WRONG
    out = dict(value)
    for key, item in value.items():
        inner = shape.get(key, shape.get("*"))
        if inner is None:
            continue
        got = _conform(item, inner, (*where, key), notices)
        if got is _WRONG:
            del out[key]
        else:
            out[key] = got
    return out


def _conform_list(value: Any, shape: Shape, where: Where, notices: list[str]) -> Any:
    if not isinstance(value, list):
        notices.append(f"{_dotted(where)} is {_what(value)}, not a list")
        return _WRONG
    got = [_conform(item, shape, (*where, n), notices) for n, item in enumerate(value)]
    return [item for item in got if item is not _WRONG]


_WRONG = object()  # a part of another type than its shape's: left out
# The checks of a part's client counts against each other, by the shape they follow
_COUNT_CHECKS = {id(_RUN): _believed_counts, id(_POINT): _point_count,
                 id(_SWEEP): _table_counts}


def _is(value: Any, shape: Any) -> bool:
    if shape == NUM:
        return number(value) is not None
    if shape == COUNT:
        return number(value) is not None and isinstance(value, int) and value >= 1
    types = shape if isinstance(shape, tuple) else (shape,)
    return any(number(value) is not None if t == NUM else
               isinstance(value, t) and not (t is not bool and isinstance(value, bool))
               for t in types)


def _what(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number" if number(value) is not None else "not a finite number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), "of no JSON type")


def _expected(shape: Any) -> str:
    types = shape if isinstance(shape, tuple) else (shape,)
    names = {str: "a string", dict: "an object", list: "a list", bool: "a boolean",
             NUM: "a number", COUNT: "a whole number of at least 1", type(None): "null"}
    return " or ".join(names[t] for t in types)


def _dotted(where: Where) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in where).lstrip(".")
