"""Checkpoints during training (`--checkpoint-every N`): the accelerator loop of each client
stops after every N-th step or epoch and writes and fsyncs its shard (deleting checkpoints
older than `keep`), while its loader threads keep reading ahead. The result shows what that
costs: the accelerator's stall, the aggregate read bandwidth during each checkpoint against the
rest of the run (the dip), and the AU during each checkpoint against the rest (the AU lost).

One stall model per run (`checkpoint.stall_model`): "synchronous" (MLPerf Storage's, the
default) makes every client wait, at a barrier, until every client's shard is durable;
"per_client" lets each resume once its own shard is. The stall each client really spent is
what its AU and the stall figures both count.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from aiio import honesty, stats
from aiio.engines.seam import OpLog
from aiio.engines.timing import Window
from aiio.errors import ConfigError
from aiio.options import RunOptions
from aiio.phases import rundata, shards
from aiio.phases.base import RunContext
from aiio.phases.shards import CheckpointPlan
from aiio.phases.train_steps import BusySeries
from aiio.results.bursts import ClientRound, ClientTrainingRound
from aiio.run.clients import SYNC_LEAD_NS
from aiio.stats import ByteSeries
from aiio.units import format_size, mib_per_s
from aiio.workload import Workload


def validate(w: Workload, options: RunOptions) -> None:
    """The checkpoint size must be known when checkpoints are asked for; nothing to verify."""
    if w.checkpoint.every > 0:
        shards.checkpoint_bytes(w)
    if options.verify:
        raise ConfigError("--verify checks data aiio reads back; training reads the dataset and "
                          "does not restore its checkpoints: use the checkpoint, load or all "
                          "phase")


def on_files(rc: RunContext, p: CheckpointPlan, copies: int) -> CheckpointPlan:
    """Checkpoints to the mount: refuse when `copies` do not fit, then make the folder."""
    shards.require_space(rc, p, copies)
    return p


def plan(rc: RunContext, samples: int,
         store: Callable[[RunContext, CheckpointPlan, int], CheckpointPlan] = on_files,
         ) -> CheckpointPlan | None:
    """The plan for checkpoints during training, made ready by `store` (the mount's: space
    checked); None when not asked for."""
    w = rc.workload
    if w.checkpoint.every <= 0:
        return None
    p = shards.make_plan(rc, rundata.new_run_tag(), restore=False, count=0)
    if w.train.duration <= 0:  # epoch-bound: every client takes the same number, known now
        p.count = due_checkpoints(p, w.train.epochs, samples, rc.clients, w.train.batch_size)
    p = store(rc, p, min(p.count or p.keep + 1, p.keep + 1))
    rc.note(f"checkpoint every {p.every} {p.every_unit[:-1] if p.every == 1 else p.every_unit}"
            f": {format_size(p.total_bytes)} each")
    return p


def checkpointer(ctx: Any, args: Any) -> TrainCheckpointer | None:
    """The client's checkpointer, made before the start (buffers allocated off the clock)."""
    p = args.checkpoint
    if p is None:
        return None
    w = args.workload
    return TrainCheckpointer(p, ctx, steps_per_epoch(args.dataset.num_samples, ctx.count,
                                                     ctx.index, w.train.batch_size),
                             args.duration_s if args.epochs is None else None)


def due_checkpoints(p: CheckpointPlan, epochs: int, samples: int, clients: int,
                    batch_size: int) -> int:
    """Checkpoints every client reaches in an epoch-bound run: with `steps` as the unit, the
    client with the fewest steps decides (a synchronous checkpoint needs every client)."""
    if p.every_unit == "epochs":
        return epochs // p.every
    return min(epochs * steps_per_epoch(samples, clients, c, batch_size)
               for c in range(clients)) // p.every


def warnings(rc: RunContext, p: CheckpointPlan | None, out: dict[str, Any]) -> list[dict]:
    if p is None:
        return []
    return honesty.write_warnings(rc.info, out["monitor"], out["aggregate"].get("write_bytes", 0))


def remove(rc: RunContext, p: CheckpointPlan) -> None:
    rundata.remove_run_folder(rc, p.folder)


class TrainCheckpointer:
    """Decides when a client checkpoints, writes the shard, and keeps its records."""

    def __init__(self, plan: CheckpointPlan, ctx: Any, steps_per_epoch: int,
                 duration_s: float | None = None) -> None:
        self.plan, self.ctx, self.index = plan, ctx, ctx.index
        self.steps_per_epoch = steps_per_epoch
        self.duration_s = duration_s  # duration-bound runs: the common deadline
        self.synchronous = plan.stall_model == "synchronous"
        self.writers = plan.make_writers(ctx)
        self.retention = OpLog(0)
        self.rounds: list[ClientTrainingRound] = []
        self.steps = 0
        self.run_ns = 0
        # On the hosts' common timeline (ClientContext.stage_at_ns): this run's start, and the
        # last barrier's release. Each host's own clock put a release that reached one host
        # late on the other side of the deadline there: its clients and the others' then
        # disagreed on whether a barrier was still to meet, and one side waited forever.
        self.run_at_ns = 0
        self.released_at_ns: int | None = None

    def start(self, run_ns: int) -> None:
        """The run started at `run_ns` (this host's clock); note it on the common timeline."""
        self.run_ns = run_ns
        self.run_at_ns = self.ctx.stage_at_ns

    def after_step(self, epoch: int, step: int) -> bool:
        """Called after every computed step; checkpoints when one is due. True when the
        accelerator loop must end: its barrier opened at or after the deadline."""
        self.steps += 1
        every = self.plan.every
        if self.plan.every_unit == "steps":
            due = self.steps % every == 0
        else:
            due = step == self.steps_per_epoch - 1 and (epoch + 1) % every == 0
        # epoch-bound runs stop at the count every client reaches (count 0: duration-bound)
        if due and (self.duration_s or len(self.rounds) < self.plan.count):
            self.checkpoint()
            return self._past_deadline()
        return False

    def _past_deadline(self) -> bool:
        """The last barrier opened at or after a duration-bound run's deadline, as every host
        sees it (their clocks would not agree at a release that straddles it)."""
        if not (self.synchronous and self.duration_s) or self.released_at_ns is None:
            return False
        # the accelerator's deadline (train._accelerate), placed on the common timeline
        return self.released_at_ns >= Window(self.run_at_ns).deadline(self.duration_s).at_ns

    def checkpoint(self) -> None:
        """Write and fsync this client's shard now; the accelerator waits (the stall): for its
        own shard, or (synchronous) until every client's shard is durable."""
        k = len(self.rounds)
        stall = Window()  # the accelerator stops now
        t0 = stall.start_ns
        fig = self.plan.write_burst(k, self.index, self.writers, t0, self.run_ns,
                                    self.ctx.engine)
        t1 = opened = t2 = stall.lap()  # its own shard durable
        if self.synchronous:
            released_ns = self._meet()
            t2 = stall.lap()  # the barrier released it
            # The barrier opened (every shard durable) a fixed lead before its common release
            # instant; that lead is the emulator's way to start clients together, not a stall.
            opened = t2 if released_ns is None else min(t2, max(t1, released_ns - SYNC_LEAD_NS))
        if k >= self.plan.keep:
            self.plan.retire(k - self.plan.keep, self.index, self.retention, self.ctx.engine)
        t3 = stall.close()
        self.rounds.append(ClientTrainingRound(
            ClientRound(k, fig), stall_s=(opened - t0 + t3 - t2) / 1e9,
            own_shard_s=(t1 - t0) / 1e9, wait_for_others_s=(opened - t1) / 1e9,
            release_lead_s=(t2 - opened) / 1e9, retire_s=(t3 - t2) / 1e9,
            start_s=(t0 - self.run_ns) / 1e9, end_s=(t3 - self.run_ns) / 1e9))

    def _meet(self) -> int | None:
        """Wait at the barrier; its release on this host's clock (None: the run stops)."""
        released_ns = self.ctx.sync()
        self.released_at_ns = None if released_ns is None else self.ctx.stage_at_ns
        return released_ns

    def finish(self) -> None:
        """The accelerator loop ended. In a duration-bound synchronous run, a client may be
        waiting at the barrier of a checkpoint this one will never reach: arrive at barriers
        until one opens at or after the deadline (then every client has left its loop and no
        checkpoint is pending). Every client sees the same barriers on the same timeline, so
        each arrives as often as the others; one arrival is enough unless the hosts started
        further apart than a barrier's lead."""
        if not (self.synchronous and self.duration_s):
            return
        while not self._past_deadline():
            if self._meet() is None:
                return  # the run is stopping: no barrier opens again

    def figures(self, out: dict[str, Any]) -> dict[str, Any]:
        """This client's checkpoint records, and its AU with the stalls counted."""
        for wr in self.writers:
            wr.close()
        stall = sum(r.stall_s for r in self.rounds)
        wall = out["compute_s"] + out["wait_s"]
        return {"checkpoints": [r.to_dict() for r in self.rounds], "checkpoint_stall_s": stall,
                "stall_model": self.plan.stall_model,
                "retention": retention_figures(self),
                "au_without_checkpoints": out["au"],
                "au": out["compute_s"] / (wall + stall)
                if out["au"] is not None and wall + stall > 0 else None}


def steps_per_epoch(samples: int, clients: int, index: int, batch_size: int) -> int:
    lo, hi = index * samples // clients, (index + 1) * samples // clients
    return math.ceil((hi - lo) / batch_size)


def summarize(plan: CheckpointPlan, clients: list[dict]) -> dict[str, Any]:
    """Per checkpoint: write figures, the window it took, and the read dip and AU lost in it."""
    trained = shards.completed(shards.every_round(clients, ClientTrainingRound.from_dict))
    sent = [[r.round for r in c] for c in trained]
    per = shards.checkpoint_bursts(plan, sent)
    rounds = len(per)
    if not rounds:
        return shards.checkpoints_aggregate(plan, sent, per)
    windows = [(min(c[k].start_s for c in trained), max(c[k].end_s for c in trained))
               for k in range(rounds)]
    end = max(c["elapsed_s"] for c in clients)
    reads = _read_impact(clients, windows, min(end, loaders_done(clients)))
    aus = _au_impact(clients, windows, end)
    for k, one in enumerate(per):
        stalls = [c[k].stall_s for c in trained]
        per[k] = replace(one, window_s=windows[k][1] - windows[k][0], start_s=windows[k][0],
                         stall_s=stats.spread(stalls), accelerator_s_lost=sum(stalls),
                         **reads[k], **aus[k])
    agg = shards.checkpoints_aggregate(plan, sent, per)
    dips = [p.read_dip for p in per if p.read_dip is not None]
    agg.update(read_dip_mean=sum(dips) / len(dips) if dips else None,
               au_lost_mean=None if per[0].au_lost is None
               else sum(p.au_lost or 0.0 for p in per) / rounds,
               # the stalls the clients really spent, as their AU counts them
               stall_s=stats.spread([c[k].stall_s for c in trained for k in range(rounds)]),
               stall_s_total=sum(c["checkpoint_stall_s"] for c in clients),
               au_without_checkpoints_mean=_mean_au(clients))
    return agg


def _mean_au(clients: list[dict]) -> float | None:
    """Mean AU without checkpoints over the clients that could measure it."""
    aus = [c["au_without_checkpoints"] for c in clients if c["au_without_checkpoints"] is not None]
    return sum(aus) / len(aus) if aus else None


def loaders_done(clients: list[dict]) -> float:
    """When the last client's loaders had read the whole dataset, s since the start (an
    epoch-bound run); infinity while some had more to read."""
    done = [c.get("loaders_done_s") for c in clients]
    return math.inf if any(d is None for d in done) else max(done)


def _outside(windows: list[tuple[float, float]], end: float) -> float:
    return max(end - sum(max(0.0, min(e, end) - s) for s, e in windows), 0.0)


def _read_impact(clients: list[dict], windows: list[tuple[float, float]],
                 reading_end: float) -> list[dict[str, float | None]]:
    """Aggregate read MiB/s inside each checkpoint window and outside all of them while the
    loaders had something to read (until `reading_end`). A checkpoint that starts once every
    loader has read the whole dataset has no read rate to dip: its dip is None (it showed
    100 % and lifted the mean), and the time after the reads ended is no part of the rest."""
    total = ByteSeries()
    for c in clients:
        total.merge(ByteSeries.from_dict(c["series"]))
    inside = [total.bytes_before(e) - total.bytes_before(s) for s, e in windows]
    base = mib_per_s(total.total - sum(inside), _outside(windows, reading_end))
    out: list[dict[str, float | None]] = []
    for (s, e), nbytes in zip(windows, inside, strict=True):
        during = mib_per_s(nbytes, e - s)
        dip = None if s >= reading_end else 1 - during / base if base > 0 else 0.0
        out.append({"read_mib_s_during": during, "read_mib_s_baseline": base,
                    "read_dip": dip})
    return out


def _au_impact(clients: list[dict], windows: list[tuple[float, float]],
               end: float) -> list[dict[str, float]]:
    """Share of the clients' time spent computing inside each window and outside all."""
    n = len(clients)
    inside = [0.0] * len(windows)
    total = 0.0
    for c in clients:  # every step's compute, from the client's bounded busy series
        busy = BusySeries.from_dict(c["busy"])
        total += busy.total
        for i, (s, e) in enumerate(windows):
            inside[i] += busy.seconds_between(s, e)
    if total == 0:  # compute time 0: no accelerator ever computed, AU is not meaningful
        return [{"au_during": None, "au_baseline": None, "au_lost": None} for _ in windows]
    outside = _outside(windows, end)
    base = (total - sum(inside)) / (n * outside) if outside > 0 else 0.0
    out = []
    for (s, e), busy in zip(windows, inside, strict=True):
        during = busy / (n * (e - s)) if e > s else 0.0
        out.append({"au_during": during, "au_baseline": base, "au_lost": base - during})
    return out


def retention_figures(ck: TrainCheckpointer) -> dict[str, Any]:
    return shards.retention_figures(ck.retention)
