"""Checkpointing: every client writes its shard of the model and optimizer state at once and
fsyncs it; a checkpoint is done only when every client's shards are durable. Then the restore:
every shard read back with the page cache defeated, right after the write (MLPerf Storage reads
back within 30 s). `--checkpoints K` repeats; checkpoints older than `keep` are deleted as a
retention policy would, and the run's own checkpoints are removed when it ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aiio import honesty
from aiio.document import Where
from aiio.engines.seam import OpLog, align_up
from aiio.engines.timing import Window, cpu_seconds
from aiio.errors import ConfigError
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
from aiio.results.bursts import ClientBurst, ClientRound
from aiio.run.clients import ClientContext
from aiio.storage.placement import Placed, placement
from aiio.units import MiB, format_size, mib_per_s
from aiio.workload import Workload


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """Write (and restore) K checkpoints; every burst starts at one instant for all clients."""
    plan: CheckpointPlan = ctx.args
    # a bucket sizes its connection pool to the threads, so no PUT waits for a connection
    ctx.engine = ctx.engine.with_streams(plan.threads)
    writers = shards.make_writers(plan, ctx)
    readers = shards.make_readers(plan, ctx) if plan.restore else []
    retention = OpLog(0)
    rounds: list[ClientRound] = []
    try:
        run = Window(ctx.ready_and_wait())
        cpu0 = cpu_seconds()
        if plan.restore_after == "all_writes":
            _writes_then_reads(ctx, plan, writers, readers, run.start_ns, rounds)
        else:
            for k in range(plan.count):
                if not _one_round(ctx, plan, k, writers, readers, run.start_ns, rounds):
                    break
                if k >= plan.keep:
                    shards.retire(plan, k - plan.keep, ctx.index, retention, ctx.engine)
        run.close()
    finally:
        for io in writers + readers:
            io.close()
    out = client_result(ctx.index, run.start_ns, run.end_ns, cpu0, rounds, retention)
    out.update(ctx.engine.client_figures(out, out["elapsed_s"]))  # a bucket's SDK counts
    return out


def client_result(index: int, run_ns: int, end_ns: int, cpu0: float, rounds: list[ClientRound],
                  retention: OpLog) -> dict[str, Any]:
    """One client's checkpoint figures: every round, totals, and the retention deletes."""
    out = client_identity(index)
    out.update(elapsed_s=(end_ns - run_ns) / 1e9, cpu_s=cpu_seconds() - cpu0,
               checkpoints=[r.to_dict() for r in rounds])
    out["write"] = _totals([r.write for r in rounds])
    out["read"] = _totals([r.read for r in rounds if r.read is not None])
    out["bytes"] = out["write"]["bytes"] + out["read"]["bytes"]
    out["retention"] = shards.retention_figures(retention)
    return out


def _one_round(ctx: ClientContext, plan: CheckpointPlan, k: int, writers: list, readers: list,
               run_ns: int, rounds: list[ClientRound]) -> bool:
    """Checkpoint k: write burst, then (after every client is durable) the restore burst."""
    # sync() says None once the run must stop; the first burst asks too: a stop while the
    # clients got ready released them at once, and each wrote its first transfer after it
    burst_ns = (None if ctx.stop.is_set() else run_ns) if k == 0 else ctx.sync()
    if burst_ns is None:
        return False
    rounds.append(ClientRound(k, shards.write_burst(plan, k, ctx.index, writers, burst_ns,
                                                    run_ns, ctx.engine)))
    if ctx.stop.is_set():
        return False
    if plan.restore:
        read_ns = ctx.sync()  # every client's shards are durable: the checkpoint is done
        if read_ns is None:
            return False
        rounds[k] = replace(rounds[k], read=shards.read_burst(plan, k, ctx.index, readers,
                                                              read_ns, run_ns))
    ctx.add_units(1)
    return not ctx.stop.is_set()


def _writes_then_reads(ctx: ClientContext, plan: CheckpointPlan, writers: list,
                       readers: list, run_ns: int, rounds: list[ClientRound]) -> None:
    """MLPerf's order: every checkpoint written (each burst from a common start), then each
    read back; the checkpoints are all kept until then (keep >= count)."""
    for k in range(plan.count):
        burst_ns = (None if ctx.stop.is_set() else run_ns) if k == 0 else ctx.sync()
        if burst_ns is None:
            return
        rounds.append(ClientRound(k, shards.write_burst(plan, k, ctx.index, writers,
                                                        burst_ns, run_ns, ctx.engine)))
        if not plan.restore:
            ctx.add_units(1)
        if ctx.stop.is_set():
            return
    for k in range(len(rounds) if plan.restore else 0):
        read_ns = ctx.sync()
        if read_ns is None:
            return
        rounds[k] = replace(rounds[k], read=shards.read_burst(plan, k, ctx.index, readers,
                                                              read_ns, run_ns))
        ctx.add_units(1)
        if ctx.stop.is_set():
            return


def _totals(bursts: list[ClientBurst]) -> dict[str, Any]:
    nbytes = sum(b.io.bytes for b in bursts)
    seconds = sum(b.io.elapsed_s for b in bursts)
    return {"bytes": nbytes, "seconds": seconds, "mib_s": mib_per_s(nbytes, seconds),
            "bursts": len(bursts)}


# A client's memory besides its writers and readers (docs/PERFORMANCE.md, "Memory per client";
# demo runs at 4, 64 and 256 clients, Dec 2 2026, under load): 6.01 MiB at 256 clients (5.82
# at 4, 5.90 at 64) less its 2 MiB of buffers, rounded up to 0.5 MiB.
MEMORY_BASE = 4.5 * MiB


def _object_part(w: Workload) -> int:
    """The most an object writer's part holds: a part, or the whole checkpoint (which bounds
    every shard) when that is smaller (shards.write_size)."""
    try:
        return min(w.s3.part_size, align_up(shards.checkpoint_bytes(w)[0]))
    except ConfigError:  # no checkpoint size: refused where it is needed, not here
        return w.s3.part_size


def writer_memory(w: Workload, object_store: bool, restore: bool) -> tuple[int, int]:
    """The buffers and threads of a client's checkpoint: one writer per thread that has a
    file (an object writer holds its part twice), and as many readers for a restore."""
    c = w.checkpoint
    n = min(c.threads, c.files_per_client)
    write = object_writer_bytes(_object_part(w)) if object_store else c.transfer_size
    return n * (write + restore * c.transfer_size), n


def checkpoint_placement(plan: CheckpointPlan, clients: list[dict], sent: shards.Sent,
                         k: int) -> dict[str, Any]:
    """Where checkpoint k's files were written (the last one: older ones may be retired),
    each server busy from the burst's start until its last client was durable."""
    writes = {c["client"]: s[k].write for c, s in zip(clients, sent, strict=True)}
    start = min(w.start_s for w in writes.values())
    files = [Placed(c, plan.path(k, c, f), size, w.end_s - start)
             for c, w in writes.items() for f, size in enumerate(plan.sizes(c))]
    return placement(plan.folder, files, f"checkpoint {k}'s writes")


def restore_from_service(agg: dict[str, Any]) -> list[dict[str, str]]:
    """A mount's restore defeats the client's page cache; a restore from a service with no
    client cache (a bucket) cannot defeat the service's own."""
    if not agg.get("read_bytes"):
        return []
    gap = agg.get("restore_gap_s_max")
    when = f", at most {gap:.2f} s after the last write" if gap is not None else ""
    return [{"code": "object_read_after_write", "message": (
        f"the restore read back objects this run had just written{when}: the S3 service "
        "may have served them from its own cache, which a restore after a failure would "
        "not find warm")}]


class CheckpointPhase(Phase):
    name = "checkpoint"
    cli_options = ("scale", "checkpoints")
    main_op = "write"
    hero_test = "seq_write"
    fio_job = "checkpoint_job"
    console = "checkpoint_tables"
    streams_key = ("checkpoint", "threads")
    streams_files_key = "files_per_client"
    # its size: checkpoint.size, else the transformer's shape, else the model's parameters
    workload_sections = ("checkpoint", "model", "transformer")
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
        c = w.checkpoint
        if c.restore_after == "all_writes" and c.keep < c.count:
            raise ConfigError(f"checkpoint.restore_after = all_writes reads every checkpoint back "
                              f"after the last is written: set checkpoint.keep to "
                              f"{c.count} (--checkpoints) or more")

    def prepare(self, rc: RunContext) -> CheckpointPlan:
        plan = shards.make_plan(rc, rundata.new_run_tag(), every=0)
        shards.require_space(rc, plan, min(plan.count, plan.keep + 1))
        scale = f" (scale {plan.scale:g} of {format_size(plan.base_bytes)})" \
            if plan.scale != 1 else ""
        kind = "files" if rc.engine.caps.folders else "objects"
        files = sum(len(plan.sizes(c)) for c in range(rc.clients))
        rc.note(f"checkpoint: {format_size(plan.total_bytes)}{scale} in "
                f"{files} {kind}, {plan.count} time(s)")
        ranks = rc.workload.model.ranks
        if plan.rank_sizes:
            rc.note(f"layout: the {len(plan.rank_sizes)} ranks' files by DLIO's formula, "
                    f"each client writing those of {len(plan.rank_sizes) / rc.clients:.3g} "
                    "ranks")
        elif ranks and ranks != rc.clients:
            rc.note(f"note: MLPerf Storage writes this checkpoint with {ranks} ranks; with "
                    f"{rc.clients} clients each shard is {ranks / rc.clients:.3g}x as large")
        return plan

    def total_units(self, plan: CheckpointPlan, clients: int) -> int:
        return plan.count * clients

    client = staticmethod(run_client)

    def summarize(self, rc: RunContext, plan: CheckpointPlan,
                  clients: list[dict]) -> dict[str, Any]:
        sent = shards.client_bursts(clients)
        agg = shards.checkpoints_aggregate(plan, sent, shards.checkpoint_bursts(plan, sent))
        agg["mlperf_ranks"] = rc.workload.model.ranks
        agg["bytes"] = agg.get("write_bytes", 0) + agg.get("read_bytes", 0)
        agg.setdefault("read_bytes", 0)
        agg.setdefault("write_bytes", 0)
        if plan.checksum:  # every burst a client made, those of checkpoints others did not
            agg["verify"] = rundata.verify_summary([b.to_dict() for c in shards.every_round(
                clients) for r in c for b in r.bursts()])
        agg.update(rc.engine.aggregate(clients))  # a bucket's SDK counts
        if rc.engine.caps.folders and agg["completed"]:
            agg["placement"] = checkpoint_placement(plan, clients, sent, agg["completed"] - 1)
        if plan.part_size:  # recorded beside them: the parts its shards were sent in
            agg[rc.engine.name]["part_size"] = plan.part_size
        return agg

    def warnings(self, rc: RunContext, plan: CheckpointPlan,
                 out: dict[str, Any]) -> list[dict[str, str]]:
        agg = out["aggregate"]
        found = honesty.write_warnings(rc.info, out["monitor"], agg.get("write_bytes", 0))
        gap = agg.get("restore_gap_s_max")
        if gap is not None:
            found += honesty.restore_warnings(gap, plan.restore_within)
        # every byte read was written by this run, once: no reread of what it keeps stored
        found += rc.engine.warnings(agg, agg.get("bytes", 0))
        if not rc.engine.caps.client_cache:
            found += restore_from_service(agg)
        return found

    def cleanup(self, rc: RunContext, plan: CheckpointPlan | None, status: str) -> None:
        """Checkpoints are scratch data: the run's folder goes, whatever the status."""
        if plan is not None:
            rundata.remove_run_folder(rc, plan.folder)


PHASE = CheckpointPhase()
