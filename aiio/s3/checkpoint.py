"""Checkpointing to a bucket: every client PUTs its shard objects at once (multipart above
the part size); a shard is durable when its PUT or CompleteMultipartUpload returns, and the
checkpoint when every client's shards are. The restore GETs them back whole (with --verify,
checking every block as it arrives: the mount's restore, reading objects)."""

from __future__ import annotations

from typing import Any

from aiio.clients import ClientContext
from aiio.engine import OpLog
from aiio.phases import rundata, shards
from aiio.phases.base import RunContext
from aiio.phases.checkpoint import CheckpointPhase, _one_round, client_result
from aiio.s3.shards import S3CheckpointPlan, object_plan, remove
from aiio.s3.train import request_warnings, s3_aggregate
from aiio.timing import Window, cpu_seconds
from aiio.units import format_size


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """Write (and restore) K checkpoints; every burst starts at one instant for all clients."""
    plan: S3CheckpointPlan = ctx.args
    writers = plan.make_writers(ctx)
    readers = [plan.io.reader(plan.method, plan.transfer_size, OpLog(0), ctx.add_bytes)
               for _ in writers]
    retention, rounds = OpLog(0), []
    run = Window(ctx.ready_and_wait())
    run_ns = run.start_ns
    cpu0 = cpu_seconds()
    try:
        for k in range(plan.count):
            if not _one_round(ctx, plan, k, writers, readers, run_ns, rounds,
                              (S3CheckpointPlan.write_burst, shards.read_burst)):
                break
            if k >= plan.keep:
                plan.retire(k - plan.keep, ctx.index, retention)
    finally:
        for wr in writers:
            wr.close()
    out = client_result(ctx.index, run_ns, run.close(), cpu0, rounds, retention, plan.delete_op)
    out["s3"] = plan.io.counts.to_dict()
    return out


def restore_warning(agg: dict[str, Any]) -> list[dict[str, str]]:
    """A mount's restore defeats the page cache; a bucket's cannot defeat the server's."""
    if not agg.get("read_bytes"):
        return []
    gap = agg.get("restore_gap_s_max")
    when = f", at most {gap:.2f} s after the last write" if gap is not None else ""
    return [{"code": "object_read_after_write", "message": (
        f"the restore read back objects this run had just written{when}: the S3 service "
        "may have served them from its own cache, which a restore after a failure would "
        "not find warm")}]


class S3CheckpointPhase(CheckpointPhase):
    object_store = True
    client = staticmethod(run_client)

    def prepare(self, rc: RunContext) -> S3CheckpointPlan:
        plan = object_plan(rc, shards.make_plan(rc, rundata.new_run_tag(), every=0))
        rc.note(f"checkpoint: {format_size(plan.total_bytes)} in "
                f"{rc.clients * plan.files_per_client} objects, {plan.count} time(s)")
        return plan

    def summarize(self, rc: RunContext, plan: S3CheckpointPlan, clients: list[dict]) -> dict:
        agg = super().summarize(rc, plan, clients)
        agg["s3"] = {**s3_aggregate(clients)["s3"], "part_size": plan.part_size}
        return agg

    def warnings(self, rc: RunContext, plan: S3CheckpointPlan, out: dict) -> list[dict]:
        return request_warnings(out["aggregate"]) + restore_warning(out["aggregate"])

    def cleanup(self, rc: RunContext, plan: S3CheckpointPlan | None, status: str) -> None:
        """Checkpoints are scratch data: the run's objects go, whatever the status."""
        if plan is not None:
            remove(rc, plan)


PHASE = S3CheckpointPhase()
