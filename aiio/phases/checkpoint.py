"""Checkpointing: every client writes its shard of the model and optimizer state at once and
fsyncs it; a checkpoint is done only when every client's shards are durable. Then the restore:
every shard read back with the page cache defeated, right after the write (MLPerf Storage reads
back within 30 s). `--checkpoints K` repeats; checkpoints older than `keep` are deleted as a
retention policy would, and the run's own checkpoints are removed when it ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiio import honesty
from aiio.clients import ClientContext
from aiio.engine import OpLog
from aiio.options import RunOptions
from aiio.phases import rundata, shards
from aiio.phases.base import (
    OBJECT_CLIENT_BASE,
    ClientMemory,
    Phase,
    RunContext,
    burst_sections,
    client_identity,
    object_writer_bytes,
)
from aiio.phases.shards import CheckpointPlan
from aiio.result import Where
from aiio.timing import Window, cpu_seconds
from aiio.units import MiB, format_size, mib_per_s
from aiio.workload import Workload


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """Write (and restore) K checkpoints; every burst starts at one instant for all clients."""
    plan: CheckpointPlan = ctx.args
    writers = shards.make_writers(plan, ctx)
    readers = shards.make_readers(plan, ctx) if plan.restore else []
    retention = OpLog(0)
    rounds: list[dict[str, Any]] = []
    try:
        run = Window(ctx.ready_and_wait())
        cpu0 = cpu_seconds()
        for k in range(plan.count):
            if not _one_round(ctx, plan, k, writers, readers, run.start_ns, rounds):
                break
            if k >= plan.keep:
                shards.retire(plan, k - plan.keep, ctx.index, retention)
        run.close()
    finally:
        for io in writers + readers:
            io.close()
    return client_result(ctx.index, run.start_ns, run.end_ns, cpu0, rounds,
                         retention, "unlink")


def client_result(index: int, run_ns: int, end_ns: int, cpu0: float, rounds: list[dict],
                  retention: OpLog, delete_op: str) -> dict[str, Any]:
    """One client's checkpoint figures: every round, totals, and the retention deletes."""
    out = client_identity(index)
    out.update(elapsed_s=(end_ns - run_ns) / 1e9, cpu_s=cpu_seconds() - cpu0,
               checkpoints=rounds)
    out["write"] = _totals([r["write"] for r in rounds])
    out["read"] = _totals([r["read"] for r in rounds if "read" in r])
    out["bytes"] = out["write"]["bytes"] + out["read"]["bytes"]
    out["retention"] = shards.retention_figures(retention, delete_op)
    return out


def _one_round(ctx: ClientContext, plan: CheckpointPlan, k: int, writers: list, readers: list,
               run_ns: int, rounds: list[dict[str, Any]],
               bursts: tuple = (shards.write_burst, shards.read_burst)) -> bool:
    """Checkpoint k: write burst, then (after every client is durable) the restore burst.
    `bursts`: the (write, read) burst functions (object storage passes its own)."""
    write_burst, read_burst = bursts
    burst_ns = run_ns if k == 0 else ctx.sync()
    if burst_ns is None:
        return False
    entry = {"n": k, "write": write_burst(plan, k, ctx.index, writers, burst_ns, run_ns)}
    rounds.append(entry)
    if ctx.stop.is_set():
        return False
    if plan.restore:
        read_ns = ctx.sync()  # every client's shards are durable: the checkpoint is done
        if read_ns is None:
            return False
        entry["read"] = read_burst(plan, k, ctx.index, readers, read_ns, run_ns)
    ctx.add_units(1)
    return not ctx.stop.is_set()


def _totals(entries: list[dict[str, Any]]) -> dict[str, Any]:
    nbytes = sum(e["bytes"] for e in entries)
    seconds = sum(e["elapsed_s"] for e in entries)
    return {"bytes": nbytes, "seconds": seconds, "mib_s": mib_per_s(nbytes, seconds),
            "bursts": len(entries)}


# A client's memory besides its writers and readers (docs/PERFORMANCE.md, "Memory per client";
# demo runs at 4, 64 and 256 clients, Dec 2 2026, under load): 6.01 MiB at 256 clients (5.82
# at 4, 5.90 at 64) less its 2 MiB of buffers, rounded up to 0.5 MiB.
MEMORY_BASE = 4.5 * MiB


def writer_memory(w: Workload, object_store: bool, restore: bool) -> tuple[int, int]:
    """The buffers and threads of a client's checkpoint: one writer per thread that has a
    file (an object writer holds its part twice), and as many readers for a restore."""
    c = w.checkpoint
    n = min(c.threads, c.files_per_client)
    write = object_writer_bytes(w.s3.part_size) if object_store else c.transfer_size
    return n * (write + restore * c.transfer_size), n


class CheckpointPhase(Phase):
    name = "checkpoint"
    cli_options = ("scale", "checkpoints")
    main_op = "write"
    hero_test = "seq_write"
    fio_job = "checkpoint_job"
    console = "checkpoint_tables"
    streams_key = ("checkpoint", "threads")
    judged_on = "persist"
    sweep_extras = (("persist_s", "persist s", "s"),)
    hero_pairing = "persist_side"
    checkpoint_at = ()

    def io_sections(self, part: Mapping[str, Any], client: bool) -> dict[str, Where]:
        return burst_sections(part, ("write", "read"))

    def client_memory(self, w: Workload, clients: int, lifecycle: bool = False) -> ClientMemory:
        buffers, threads = writer_memory(w, self.object_store, w.checkpoint.restore)
        return ClientMemory(OBJECT_CLIENT_BASE if self.object_store else MEMORY_BASE, buffers,
                            threads)

    def client_totals(self, entry: Mapping[str, Any]) -> dict[str, Where]:
        """Each client's writes and restores over every checkpoint."""
        return {"write": ("write",), "read": ("read",)}

    def validate(self, w: Workload, options: RunOptions) -> None:
        """Impossible sizes fail before anything is written."""
        shards.checkpoint_bytes(w)

    def prepare(self, rc: RunContext) -> CheckpointPlan:
        plan = shards.make_plan(rc, rundata.new_run_tag(), every=0)
        shards.require_space(rc, plan, min(plan.count, plan.keep + 1))
        scale = f" (scale {plan.scale:g} of {format_size(plan.base_bytes)})" \
            if plan.scale != 1 else ""
        rc.note(f"checkpoint: {format_size(plan.total_bytes)}{scale} in "
                f"{rc.clients * plan.files_per_client} files, {plan.count} time(s)")
        ranks = rc.workload.model.ranks
        if ranks and ranks != rc.clients:
            rc.note(f"note: MLPerf Storage writes this checkpoint with {ranks} ranks; with "
                    f"{rc.clients} clients each shard is {ranks / rc.clients:.3g}x as large")
        return plan

    def total_units(self, plan: CheckpointPlan, clients: int) -> int:
        return plan.count * clients

    client = staticmethod(run_client)

    def summarize(self, rc: RunContext, plan: CheckpointPlan,
                  clients: list[dict]) -> dict[str, Any]:
        agg = shards.checkpoints_aggregate(plan, clients)
        agg["mlperf_ranks"] = rc.workload.model.ranks
        agg["bytes"] = agg.get("write_bytes", 0) + agg.get("read_bytes", 0)
        agg.setdefault("read_bytes", 0)
        agg.setdefault("write_bytes", 0)
        if plan.checksum:
            entries = [e for c in clients for r in c["checkpoints"] for e in r.values()
                       if isinstance(e, dict)]
            agg["verify"] = rundata.verify_summary(entries)
        return agg

    def warnings(self, rc: RunContext, plan: CheckpointPlan,
                 out: dict[str, Any]) -> list[dict[str, str]]:
        agg = out["aggregate"]
        found = honesty.write_warnings(rc.info, out["monitor"], agg.get("write_bytes", 0))
        gap = agg.get("restore_gap_s_max")
        if gap is not None:
            found += honesty.restore_warnings(gap, plan.restore_within)
        return found

    def cleanup(self, rc: RunContext, plan: CheckpointPlan | None, status: str) -> None:
        """Checkpoints are scratch data: the run's folder goes, whatever the status."""
        if plan is not None:
            rundata.remove_run_folder(rc, plan.folder)


PHASE = CheckpointPhase()
