"""What measured results say to sizing: a train run or sweep's AU and read rate per client
count, a checkpoint run's write rate. Reads results through the result model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiio.errors import ConfigError
from aiio.result import Result, dig, number
from aiio.sizing.formulas import demand_mib_s


@dataclass(frozen=True)
class TrainPoint:
    """One measured client count from a train run or sweep."""

    clients: int
    au_pass: bool
    first_done_mib_s: float


@dataclass(frozen=True)
class MeasuredTrain:
    """What a train result says about the storage: per point, did every client meet AU?"""

    source: str
    kind: str
    workload: str
    accelerator: str
    au_goal: float
    demand_mib_s: float  # per accelerator of the measured type
    points: tuple[TrainPoint, ...]
    warnings: tuple[str, ...] = ()

    @property
    def largest_passing(self) -> int | None:
        passing = [p.clients for p in self.points if p.au_pass]
        return max(passing) if passing else None

    @property
    def peak(self) -> TrainPoint:
        return max(self.points, key=lambda p: p.first_done_mib_s)

    @property
    def saturated(self) -> bool:
        """Some point missed the AU goal, so the storage (or the clients) ran out."""
        return any(not p.au_pass for p in self.points)


@dataclass(frozen=True)
class MeasuredCheckpoint:
    """Aggregate checkpoint write rate from a checkpoint result (None when it is missing)."""

    source: str
    clients: int
    write_mib_s: float | None
    note: str = ""
    warnings: tuple[str, ...] = ()


def _get(doc: Any, dotted: str, where: str) -> Any:
    """A recorded value by its dotted path, or a one-line error naming the missing field."""
    value = dig(doc, *dotted.split("."), default=_MISSING)
    if value is _MISSING:
        raise ConfigError(f"--from {where}: the result has no {dotted}")
    return value


_MISSING = object()


def _number(doc: Any, dotted: str, where: str) -> float:
    value = _get(doc, dotted, where)
    if number(value) is None:
        raise ConfigError(f"--from {where}: {dotted} = {value!r} is not a number")
    return float(value)


def _runs(res: Result, where: str) -> list[tuple[int, Result]]:
    """(client count, run result) for a run, or for each point of a sweep."""
    if res.kind == "run":
        return [(len(_get(res, "clients", where)), res)]
    points = _get(res, "points", where)
    if not isinstance(points, list) or not points:
        raise ConfigError(f"--from {where}: the sweep has no points")
    for p in points:
        _get(p, "result", where)  # a point without its run result is named, not skipped
    return [(int(_number(p, "clients", where)), run)
            for p, run in zip(points, res.points, strict=True)]


def measured_train(res: Result, where: str) -> MeasuredTrain:
    """Summarize a train run or sweep: per point, AU pass and first-done aggregate MiB/s."""
    runs = _runs(res, where)
    first = runs[0][1]
    accel = str(_get(first, "workload.train.accelerator", where))
    compute = _number(first, f"workload.train.compute_time.{accel}", where)
    demand = demand_mib_s(_number(first, "workload.train.batch_size", where),
                          _number(first, "workload.dataset.sample_size", where), compute)
    au_goal = _number(first, "workload.train.au_goal", where)
    points = tuple(TrainPoint(n, _au_pass(run, au_goal, where), _first_done(run, where))
                   for n, run in runs)
    name = str(_get(first, "workload.workload.name", where))
    return MeasuredTrain(source=where, kind=res.kind, workload=name, accelerator=accel,
                         au_goal=au_goal, demand_mib_s=demand, points=points,
                         warnings=result_warnings(run for _, run in runs) + res.notices)


def _first_done(run: Result, where: str) -> float:
    """The run's first-done aggregate read rate: its 'read' section (the headline)."""
    section = run.section("read")
    if section is None or section.first_done is None:
        raise ConfigError(f"--from {where}: the result has no aggregate.first_done.mib_s")
    return section.first_done.mib_s


def result_warnings(runs: Any) -> tuple[str, ...]:
    """The distinct warnings the measuring side attached to these runs, in order."""
    seen: dict[str, None] = {}
    for run in runs:
        for warning in run.warnings:
            if warning.message:
                seen.setdefault(warning.message, None)
    return tuple(seen)


def _au_pass(run: Result, au_goal: float, where: str) -> bool:
    """The run's own verdict, or every client's AU against the goal when it has none."""
    reads = run.section("read")
    verdict = reads.au.passed if reads is not None and reads.au is not None else None
    if verdict is not None:
        return verdict
    clients = _get(run, "clients", where)
    return bool(clients) and all(_number(c, "au", where) >= au_goal for c in clients)


def measured_checkpoint(res: Result, where: str) -> MeasuredCheckpoint:
    """The best aggregate write rate of a checkpoint run or sweep: the checkpoint phase's
    `write_mib_s`, all bytes over the windows until every client's shard was durable."""
    runs = _runs(res, where)
    warnings = result_warnings(run for _, run in runs) + res.notices
    best: MeasuredCheckpoint | None = None
    for n, run in runs:
        rate = run.checkpoint.write_mib_s if run.checkpoint is not None else None
        if rate is not None and rate > 0:
            if best is None or rate > best.write_mib_s:
                best = MeasuredCheckpoint(where, n, rate, warnings=warnings)
    if best is None:
        return MeasuredCheckpoint(where, 0, None, f"{where} has no aggregate.write_mib_s;"
                                  " checkpoint time not computed", warnings)
    return best
