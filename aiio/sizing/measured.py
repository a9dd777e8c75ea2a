"""What measured results say to sizing: a train run or sweep's AU and read rate per client
count, a checkpoint run's write rate. Reads results through the result model."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aiio.errors import ConfigError
from aiio.results.result import Result, number
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
    au_rule: str = "min"  # the runs' pass rule: "mean" (MLPerf's) or "min" (every client)

    @property
    def met(self) -> str:
        """Who met the goal at a passing count, in the words of the runs' rule."""
        return "the mean AU met" if self.au_rule == "mean" else "every client met"

    @property
    def largest_passing(self) -> int | None:
        """The largest count at the AU goal, by the rule the sweep's AU sentence and
        --find-max judge by: a count holds when every repeat of it passed, and the answer is
        the largest count up to which every measured count held (a pass above a failure is
        noise or luck, not capacity)."""
        held = None
        for n in sorted({p.clients for p in self.points}):
            if not all(p.au_pass for p in self.points if p.clients == n):
                break
            held = n
        return held

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


def _need(value: Any, name: str, where: str) -> Any:
    """A value the run recorded, or a one-line error naming the missing field."""
    if value is None:
        raise ConfigError(f"--from {where}: the result has no {name}")
    return value


def _num(value: Any, name: str, where: str) -> float:
    """A recorded number, or a one-line error naming the field that is missing or no number."""
    if number(_need(value, name, where)) is None:
        raise ConfigError(f"--from {where}: {name} = {value!r} is not a number")
    return float(value)


def _runs(res: Result, where: str) -> list[tuple[int, Result]]:
    """(client count, run result) for a run, or for each point of a sweep."""
    if res.kind == "run":
        _need(res.get("clients"), "clients", where)
        return [(len(res.clients), res)]
    points = _need(res.get("points"), "points", where)
    if not isinstance(points, list) or not points:
        raise ConfigError(f"--from {where}: the sweep has no points")
    for p in points:  # a point without its run result is named, not skipped
        _need(p.get("result") if isinstance(p, dict) else None, "result", where)
    return [(int(_num(p.get("clients"), "clients", where)), run)
            for p, run in zip(points, res.points, strict=True)]


def measured_train(res: Result, where: str) -> MeasuredTrain:
    """Summarize a train run or sweep: per point, AU pass and first-done aggregate MiB/s."""
    runs = _runs(res, where)
    w = runs[0][1].workload
    accel = str(_need(w.accelerator, "workload.train.accelerator", where))
    compute = _num(w.compute_s(), f"workload.train.compute_time.{accel}", where)
    if compute <= 0:  # a run never records one: a hand-damaged result
        raise ConfigError(f"--from {where}: workload.train.compute_time.{accel} = {compute!r} "
                          "is not a positive time")
    demand = demand_mib_s(_num(w.batch_size, "workload.train.batch_size", where),
                          _num(w.sample_size, "workload.dataset.sample_size", where), compute)
    if not math.isfinite(demand):
        raise ConfigError(f"--from {where}: the recorded workload's demand per accelerator "
                          "(batch size x sample size / compute time) is no finite rate")
    au_goal = _num(w.au_goal, "workload.train.au_goal", where)
    points = tuple(TrainPoint(n, _au_pass(run, au_goal, where), _first_done(run, where))
                   for n, run in runs)
    name = str(_need(w.name, "workload.workload.name", where))
    return MeasuredTrain(source=where, kind=res.kind, workload=name, accelerator=accel,
                         au_goal=au_goal, demand_mib_s=demand, points=points,
                         warnings=result_warnings(run for _, run in runs) + res.notices,
                         au_rule=_au_rule(run for _, run in runs))


def _au_rule(runs: Any) -> str:
    """The pass rule the runs' verdicts applied; "min" (every client against the goal, as
    `_au_pass` judges a run without a verdict) when none recorded one."""
    for run in runs:
        reads = run.section("read")
        if reads is not None and reads.au is not None and reads.au.rule:
            return str(reads.au.rule)
    return "min"


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
    _need(run.get("clients"), "clients", where)
    return bool(run.clients) and all(_num(c.au, "au", where) >= au_goal for c in run.clients)


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
