"""Checkpoint shards as objects, shared by the checkpoint phase and checkpoints during training
on a bucket: each shard file of the mount's plan is one object, PUT whole or as a multipart
upload in parts of `s3.part_size`, durable when the PUT or CompleteMultipartUpload returns
(there is no fsync, and no folder to make durable). Retention DELETEs older shards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from aiio.engine import OpLog
from aiio.phases.base import RunContext
from aiio.phases.shards import CheckpointPlan, burst_figures
from aiio.phases.threads import run_parallel
from aiio.s3.objectio import ObjectIO, ObjectWriter, check_parts
from aiio.timing import Window


@dataclass
class S3CheckpointPlan(CheckpointPlan):
    io: ObjectIO | None = None
    part_size: int = 0
    delete_op: ClassVar[str] = "delete"

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.pop("io", None)  # the connection, not a figure
        return out

    def make_writers(self, ctx: Any) -> list[ObjectWriter]:
        """One writer per thread, each with its own seeded payload (made before the start)."""
        return [ObjectWriter(self.io, self.part_size, OpLog(0), ctx.add_bytes,
                             seed=(self.seed * 1_000_003 + ctx.index) * 64 + i,
                             checksum=self.checksum)
                for i in range(min(self.threads, self.files_per_client))]

    def write_burst(self, k: int, client: int, writers: list, burst_ns: int,
                    run_ns: int) -> dict[str, Any]:
        """PUT every object of this client's shard of checkpoint k; the burst ends when the
        last one is durable."""
        burst = Window(burst_ns)
        items = list(enumerate(self.sizes(client)))

        def work(wr: ObjectWriter, item: tuple[int, int]) -> None:
            f, size = item
            wr.write_object(self.path(k, client, f), size, self.tag(k, client, f))

        logs = run_parallel(items, writers, work, burst_ns)
        return burst_figures(logs, burst_ns, burst.close(), run_ns, "write", len(items))

    def retire(self, k: int, client: int, log: OpLog) -> int:
        """DELETE this client's objects of checkpoint k (retention); each is timed."""
        for f in range(self.files_per_client):
            self.io.delete(self.path(k, client, f), log)
        return self.files_per_client


def object_plan(rc: RunContext, base: CheckpointPlan) -> S3CheckpointPlan:
    """The mount's plan as objects: S3's part limits checked, the prefix claimed."""
    tgt, part_size = rc.target, rc.workload.s3.part_size
    largest = max((max(base.sizes(c), default=0) for c in range(rc.clients)), default=0)
    check_parts(largest, part_size, "a checkpoint shard")
    tgt.claim()
    fields = {k: v for k, v in vars(base).items() if not k.startswith("_")}
    return S3CheckpointPlan(**fields, io=ObjectIO(tgt.access, tgt.loc.bucket, base.threads),
                            part_size=part_size)


def remove(rc: RunContext, plan: CheckpointPlan) -> None:
    """Checkpoints are scratch data: every object of the run's goes, whatever its status."""
    keys = [o["Key"] for o in rc.target.objects() if o["Key"].startswith(plan.folder + "/")]
    rc.target.delete(keys)
