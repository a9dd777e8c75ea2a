"""The whole lifecycle in one run and one result: prep, then training with checkpoints, then
model loading. Every client process runs the three stages in turn (one process per emulated
accelerator, as in a real job); each stage starts at one instant common to all clients.

Checkpoints during training are on: every `checkpoint.every` epochs or steps, or every epoch
when the workload does not say. `--verify` covers what aiio reads back of its own data: the
model weights (and the prep files in randrw mode).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiio.document import Where
from aiio.errors import RunFailed
from aiio.options import RunOptions
from aiio.phases import get_phase, load, phase_paths, prep, train
from aiio.phases.base import ClientMemory, Phase, RunContext, client_identity
from aiio.run.clients import ClientContext
from aiio.workload import Workload

STAGES = ("prep", "train", "load")
_PHASES = {"prep": prep.PHASE, "train": train.PHASE, "load": load.PHASE}


@dataclass
class AllArgs:
    prep: Any
    train: Any
    load: Any
    method: str
    phases: dict[str, str] = field(default_factory=dict)  # stage -> the phase that runs it

    def phase(self, stage: str) -> Phase:
        return get_phase(self.phases[stage])

    @property
    def dataset(self) -> Any:
        return self.train.dataset


class Stage:
    """A client context for one stage: its own arguments; a later stage starts at `sync`."""

    def __init__(self, ctx: ClientContext, name: str, args: Any, first: bool) -> None:
        self._ctx, self.name, self.args, self._first = ctx, name, args, first
        self.index, self.count = ctx.index, ctx.count
        self.engine = ctx.engine  # every stage reads and writes through the run's engine
        self.shares_process = ctx.shares_process  # one process a client: the lifecycle's

    def ready_and_wait(self) -> int:
        start = self._ctx.ready_and_wait() if self._first else self._ctx.sync()
        return self._started(start)

    def ready(self) -> int:
        """The stage's start instant, without waiting for it (ClientContext.ready)."""
        return self._started(self._ctx.ready() if self._first else self._ctx.sync(wait=False))

    def _started(self, start: int | None) -> int:
        if start is None:
            raise RunFailed(f"the run stopped before the {self.name} stage")
        return start

    def sync(self) -> int | None:
        return self._ctx.sync()

    @property
    def stage_at_ns(self) -> int:
        return self._ctx.stage_at_ns

    def add_bytes(self, n: int) -> None:
        self._ctx.add_bytes(n)

    def add_units(self, n: int = 1) -> None:
        self._ctx.add_units(n)

    @property
    def stop(self) -> Any:
        return self._ctx.stop

    def wait_for_stop(self) -> None:
        self._ctx.wait_for_stop()


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """prep, then train with checkpoints, then load, in this one process."""
    a: AllArgs = ctx.args
    out = client_identity(ctx.index)
    for i, name in enumerate(STAGES):
        out[name] = a.phase(name).client(Stage(ctx, name, getattr(a, name), i == 0))
    out["elapsed_s"] = sum(out[name]["elapsed_s"] for name in STAGES)
    out["cpu_s"] = sum(out[name]["cpu_s"] for name in STAGES)
    out["bytes"] = sum(out[name]["bytes"] for name in STAGES)
    return out


def stage_phases(w: Workload, phases: dict[str, Phase] = _PHASES) -> dict[str, Phase]:
    """The phase that runs each stage of this workload (prep in randrw mode: randrw)."""
    return {name: phases[name].variant(w) for name in STAGES}


def lifecycle_workload(w: Workload) -> Workload:
    """The workload with checkpoints during training on (every epoch unless it says)."""
    if w.checkpoint.every > 0:
        return w
    return dataclasses.replace(w, checkpoint=dataclasses.replace(w.checkpoint, every=1,
                                                                 every_unit="epochs"))


class AllPhase(Phase):
    """No hero test or fio job of its own: each stage has its own (fio/hero.py, fio/emit.py)."""

    name = "all"
    cli_options = ("scale", "checkpoint_every", "stagger")
    main_op = "read"  # of its train stage, where its figures are read (figures.views)
    console = "all_tables"
    # The stages' phases (on a bucket the same ones: see client_memory)
    stage_table: dict[str, Phase] = _PHASES
    stages = STAGES
    headline_stage = "train"
    # its stages' (prep's covers randrw's), training with its checkpoints (lifecycle_workload)
    workload_sections = tuple(dict.fromkeys(
        (*prep.PHASE.workload_sections, *train.PHASE.sections_read({"checkpoint": {"every": 1}}),
         *load.PHASE.workload_sections)))

    def io_sections(self, part: Mapping[str, Any], client: bool) -> dict[str, Where]:
        """Each stage's sections as that stage's phase lays them out, named 'stage.name'."""
        return {f"{stage}.{name}": (stage, *path) for stage in STAGES
                for name, path in phase_paths(self.stage_table[stage], part.get(stage),
                                              client).items()}

    def client_memory(self, w: Workload, clients: int, lifecycle: bool = False) -> ClientMemory:
        """The largest of its stages' (one client process runs them in turn), training with
        its checkpoints."""
        stages = list(stage_phases(w, self.stage_table).values())
        if self.object_store:  # each stage's clients hold an S3 client, as the run's do
            stages = [p.on_objects() for p in stages]
        return max((p.client_memory(w, clients, lifecycle=True) for p in stages),
                   key=lambda m: m.bytes if m else 0)

    def validate(self, w: Workload, options: RunOptions) -> None:
        quiet = dataclasses.replace(options, verify=False)
        lw = lifecycle_workload(w)
        stages = stage_phases(lw, self.stage_table)
        # --verify reads back aiio's own data: randrw's files, never the raw samples of shards
        stages["prep"].validate(lw, options if stages["prep"].name == "randrw" else quiet)
        stages["train"].validate(lw, quiet)
        stages["load"].validate(lw, options)

    def prepare(self, rc: RunContext) -> AllArgs:
        lw = lifecycle_workload(rc.workload)
        sub = dataclasses.replace(rc, workload=lw)
        train_rc = dataclasses.replace(sub, options=dataclasses.replace(rc.options,
                                                                        verify=False))
        stages = stage_phases(lw, self.stage_table)
        args = AllArgs(None, None, None, rc.method,
                       {name: phase.name for name, phase in stages.items()})
        try:
            args.prep = stages["prep"].prepare(sub)
            args.train = stages["train"].prepare(train_rc)
            args.load = stages["load"].prepare(sub)
        except BaseException:
            self.cleanup(rc, args, "failed")  # the runner never sees these args
            raise
        return args

    def before_fork(self, args: AllArgs) -> None:
        """Each stage's, with its arguments: one client process runs them all."""
        for name in STAGES:
            args.phase(name).before_fork(getattr(args, name))

    def total_units(self, args: AllArgs, clients: int) -> None:
        return None  # stages count different things; the bar shows bytes and time

    client = staticmethod(run_client)

    def summarize(self, rc: RunContext, args: AllArgs, clients: list[dict]) -> dict[str, Any]:
        agg: dict[str, Any] = {}
        for name in STAGES:
            agg[name] = args.phase(name).summarize(rc, getattr(args, name),
                                                   [c[name] for c in clients])
        agg["train"].setdefault("read_bytes", agg["train"]["bytes"])
        if "not_measured" in agg["train"]:  # its headline stage's
            agg["not_measured"] = agg["train"]["not_measured"]
        agg["read_bytes"] = sum(agg[n].get("read_bytes", 0) for n in STAGES)
        agg["write_bytes"] = sum(agg[n].get("write_bytes", 0) for n in STAGES)
        agg["bytes"] = agg["read_bytes"] + agg["write_bytes"]
        agg["stages"] = [{"phase": n, "last_done_s": max(c[n]["elapsed_s"] for c in clients)}
                         for n in STAGES]
        found = [agg[n]["verify"] for n in STAGES if "verify" in agg[n]]
        if found:
            agg["verify"] = _merge_verify(found)
        return agg

    def warnings(self, rc: RunContext, args: AllArgs, out: dict[str, Any]) -> list[dict]:
        found: list[dict] = []
        for name in STAGES:
            sub = dict(out, aggregate=out["aggregate"][name],
                       clients=[c[name] for c in out["clients"]])
            for w in args.phase(name).warnings(rc, getattr(args, name), sub):
                if w not in found:
                    found.append(w)
        return found

    def cleanup(self, rc: RunContext, args: AllArgs | None, status: str) -> None:
        if args is None:
            return
        for name in STAGES:
            if getattr(args, name) is not None:
                args.phase(name).cleanup(rc, getattr(args, name), status)


def _merge_verify(parts: list[dict[str, Any]]) -> dict[str, Any]:
    out = {"enabled": True, "blocks_checked": 0, "mismatches": 0, "corrupt": [],
           "check_s": 0.0, "checksum_s": 0.0}
    for p in parts:
        for key in ("blocks_checked", "mismatches", "check_s", "checksum_s"):
            out[key] += p.get(key, 0)
        out["corrupt"] = (out["corrupt"] + p.get("corrupt", []))[:100]
    out["by_stage"] = parts
    return out


PHASE = AllPhase()
