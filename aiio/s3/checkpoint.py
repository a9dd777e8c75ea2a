"""Checkpointing to a bucket: every client PUTs its shard objects at once (multipart above
the part size); a shard is durable when its PUT or CompleteMultipartUpload returns, and the
checkpoint when every client's shards are. The restore GETs them back whole (with --verify,
checking every block as it arrives: the mount's restore, reading objects)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiio.clients import ClientContext
from aiio.engine import OpLog, now_ns
from aiio.phases import rundata
from aiio.phases import shards as ckptio
from aiio.phases.base import RunContext, cpu_seconds
from aiio.phases.checkpoint import CheckpointPhase, _one_round, client_result
from aiio.phases.shards import CheckpointPlan
from aiio.phases.threads import run_parallel
from aiio.s3.objectio import ObjectIO, ObjectWriter, check_parts
from aiio.s3.train import request_warnings, s3_aggregate
from aiio.units import format_size


@dataclass
class S3CheckpointPlan(CheckpointPlan):
    io: ObjectIO | None = None
    part_size: int = 0

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.pop("io", None)  # the connection, not a figure
        return out


def write_burst(plan: S3CheckpointPlan, k: int, client: int, writers: list[ObjectWriter],
                burst_ns: int, run_ns: int) -> dict[str, Any]:
    items = list(enumerate(plan.sizes(client)))

    def work(wr: ObjectWriter, item: tuple[int, int]) -> None:
        f, size = item
        wr.write_object(plan.path(k, client, f), size, plan.tag(k, client, f))

    logs = run_parallel(items, writers, work, burst_ns)
    return ckptio.burst_figures(logs, burst_ns, now_ns(), run_ns, "write",
                                len(items))


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """Write (and restore) K checkpoints; every burst starts at one instant for all clients."""
    plan: S3CheckpointPlan = ctx.args
    n = min(plan.threads, plan.files_per_client)
    writers = [ObjectWriter(plan.io, plan.part_size, OpLog(0), ctx.add_bytes,
                            seed=(plan.seed * 1_000_003 + ctx.index) * 64 + i,
                            checksum=plan.checksum)
               for i in range(n)]
    readers = [plan.io.reader(plan.method, plan.transfer_size, OpLog(0), ctx.add_bytes)
               for _ in range(n)]
    retention, rounds = OpLog(0), []
    run_ns = ctx.ready_and_wait()
    cpu0 = cpu_seconds()
    try:
        for k in range(plan.count):
            if not _one_round(ctx, plan, k, writers, readers, run_ns, rounds,
                              (write_burst, ckptio.read_burst)):
                break
            if k >= plan.keep:
                for f in range(plan.files_per_client):
                    plan.io.delete(plan.path(k - plan.keep, ctx.index, f), retention)
    finally:
        for wr in writers:
            wr.close()
    out = client_result(ctx.index, run_ns, now_ns(), cpu0, rounds, retention,
                        "delete")
    out["s3"] = plan.io.counts.to_dict()
    return out


class S3CheckpointPhase(CheckpointPhase):
    client = staticmethod(run_client)

    def prepare(self, rc: RunContext) -> S3CheckpointPlan:
        tgt, part_size = rc.target, rc.workload.s3.part_size
        base = ckptio.make_plan(rc, rundata.new_run_tag(), every=0)
        largest = max((max(base.sizes(c), default=0) for c in range(rc.clients)), default=0)
        check_parts(largest, part_size, "a checkpoint shard")
        tgt.claim()
        fields = {k: v for k, v in vars(base).items() if not k.startswith("_")}
        plan = S3CheckpointPlan(**fields, io=ObjectIO(tgt.access, tgt.loc.bucket,
                                                      base.threads),
                                part_size=part_size)
        rc.note(f"checkpoint: {format_size(plan.total_bytes)} in "
                f"{rc.clients * plan.files_per_client} objects, {plan.count} time(s)")
        return plan

    def summarize(self, rc: RunContext, plan: S3CheckpointPlan, clients: list[dict]) -> dict:
        agg = super().summarize(rc, plan, clients)
        agg["s3"] = {**s3_aggregate(clients)["s3"], "part_size": plan.part_size}
        return agg

    def warnings(self, rc: RunContext, plan: S3CheckpointPlan, out: dict) -> list[dict]:
        return request_warnings(out["aggregate"])

    def cleanup(self, rc: RunContext, plan: S3CheckpointPlan | None, status: str) -> None:
        """Checkpoints are scratch data: the run's objects go, whatever the status."""
        if plan is None:
            return
        keys = [o["Key"] for o in rc.target.objects() if o["Key"].startswith(plan.folder + "/")]
        rc.target.delete(keys)


PHASE = S3CheckpointPhase()
