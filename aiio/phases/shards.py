"""Checkpoint shards on the target, shared by the checkpoint phase and checkpoints during
training: the size (from the model or given), the per-client shard plan, write bursts (write and
fsync every file, then the folders), restore bursts (page cache defeated), retention, and burst
summaries.

A written byte counts when its file's fsync has returned (it is durable then, not when the write
call returned into a cache); a client's shard is persisted once its folders are fsynced too.

Layout: TARGET/aiio/checkpoints/<run>/ckpt-<n>/client<c>-part<f>.bin
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from aiio import stats
from aiio.engines import blocks
from aiio.engines.seam import OpLog, align_up, io_failure
from aiio.engines.timing import PolledStop, Window
from aiio.errors import ConfigError, RunFailed
from aiio.phases import checkpoint_layout
from aiio.phases.base import RunContext, client_io
from aiio.phases.rundata import split_sizes
from aiio.phases.threads import run_parallel
from aiio.results.bursts import SPENT, Burst, ClientBurst, ClientRound
from aiio.results.sections import AggregateIo
from aiio.stats import Histogram
from aiio.units import format_size, mib_per_s
from aiio.workload import Workload

if TYPE_CHECKING:
    from aiio.engines.base import Engine

SAME_START_S = 0.001  # bursts whose clients started within this count as one common start


def checkpoint_bytes(w: Workload) -> tuple[int, int, str]:
    """(bytes after --scale, bytes before it, where the size came from)."""
    c = w.checkpoint
    shape = checkpoint_layout.shape_of(w)
    if c.size > 0:
        base, source = c.size, "checkpoint.size"
    elif shape is not None:
        base, source = checkpoint_layout.total_bytes(shape), "transformer (DLIO's formula)"
    elif w.model.parameters > 0:
        base, source = int(round(w.model.parameters * w.model.bytes_per_parameter)), "model"
    else:
        raise ConfigError(f"workload {w.name} gives no checkpoint size: set checkpoint.size "
                          "(e.g. --set checkpoint.size=1GiB) or model.parameters "
                          "(e.g. --set model.parameters=8B)")
    total = int(base * c.scale)
    if total < 1:
        raise ConfigError(f"scale {c.scale:g} shrinks the {base} B checkpoint to nothing; "
                          "use a larger --scale")
    return total, base, source


@dataclass
class CheckpointPlan:
    """Everything a client needs to write, restore and retire its shards."""

    folder: str
    total_bytes: int
    base_bytes: int
    scale: float
    source: str
    clients: int
    files_per_client: int
    threads: int
    transfer_size: int
    method: str
    seed: int
    checksum: bool = False
    count: int = 1
    keep: int = 1
    restore: bool = True
    restore_within: float = 30.0
    restore_after: str = "each"
    every: int = 0
    every_unit: str = "epochs"
    stall_model: str = "synchronous"
    # Bytes per request a shard is sent in, on an engine that writes whole objects in parts
    # (Capabilities.multipart: the workload's s3.part_size); 0 on files.
    part_size: int = 0
    # A model's files rank by rank (DLIO's layout, scaled): client c writes the files of ranks
    # c, c + clients, ... as a host runs many ranks; empty: total_bytes split evenly.
    rank_sizes: list[list[int]] = field(default_factory=list, repr=False)
    _sizes: list[list[int]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.rank_sizes:
            self._sizes = [[n for r in range(c, len(self.rank_sizes), self.clients)
                            for n in self.rank_sizes[r]] for c in range(self.clients)]
            self.files_per_client = max(map(len, self._sizes))
            return
        flat = split_sizes(self.total_bytes, self.clients * self.files_per_client)
        f = self.files_per_client
        self._sizes = [flat[c * f:(c + 1) * f] for c in range(self.clients)]

    def sizes(self, client: int) -> list[int]:
        """Bytes of each of this client's files."""
        return self._sizes[client]

    def relpath(self, k: int, client: int, f: int) -> str:
        return f"ckpt-{k}/client{client:05d}-part{f:03d}.bin"

    def path(self, k: int, client: int, f: int) -> str:
        return os.path.join(self.folder, self.relpath(k, client, f))

    def tag(self, k: int, client: int, f: int) -> int:
        # The checkpoint number is in the name, so a stale block of an older one is misplaced.
        return blocks.file_tag(self.seed, self.relpath(k, client, f))

    def make_writers(self, ctx: Any) -> list:
        return make_writers(self, ctx)

    def write_burst(self, k: int, client: int, writers: list, burst_ns: int,
                    run_ns: int, eng: Engine) -> ClientBurst:
        return write_burst(self, k, client, writers, burst_ns, run_ns, eng)

    def retire(self, k: int, client: int, log: OpLog, eng: Engine) -> int:
        return retire(self, k, client, log, eng)

    def describe(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items()
               if not k.startswith("_") and k != "rank_sizes"}
        if self.rank_sizes:  # the layout in brief: 2,072 sizes are no summary
            out["ranks"] = len(self.rank_sizes)
            out["files"] = sum(map(len, self.rank_sizes))
        if not self.part_size:
            del out["part_size"]  # files are not sent in parts
        out["shard_bytes_per_client"] = stats.spread(
            [sum(self.sizes(c)) for c in range(self.clients)])
        return out


def make_plan(rc: RunContext, run_tag: str, **changes: Any) -> CheckpointPlan:
    """The checkpoint plan for this run (nothing created yet: see `require_space`)."""
    w = rc.workload
    c = w.checkpoint
    total, base, source = checkpoint_bytes(w)
    ranks = _rank_sizes(w, source, rc.clients)
    if ranks:
        total = sum(map(sum, ranks))
    folder = rc.target.root / "checkpoints" / run_tag
    plan = CheckpointPlan(
        folder=str(folder), total_bytes=total, base_bytes=base, scale=c.scale, source=source,
        clients=rc.clients, files_per_client=c.files_per_client, threads=c.threads,
        transfer_size=c.transfer_size, method=rc.method, seed=w.run.seed,
        checksum=rc.options.verify, count=c.count, keep=c.keep,
        restore=c.restore, restore_within=c.restore_within, restore_after=c.restore_after,
        every=c.every,
        every_unit=c.every_unit, stall_model=c.stall_model,
        part_size=w.s3.part_size if rc.engine.caps.multipart else 0, rank_sizes=ranks)
    for name, value in changes.items():
        setattr(plan, name, value)
    return plan


def _rank_sizes(w: Workload, source: str, clients: int) -> list[list[int]]:
    """Every rank's scaled file sizes when the size is the model's layout, else none."""
    shape = checkpoint_layout.shape_of(w)
    if shape is None or source == "checkpoint.size":
        return []
    if w.checkpoint.files_per_client != 1:
        raise ConfigError(f"workload {w.name}: its files are laid out rank by rank; "
                          "checkpoint.files_per_client applies to an even split (set "
                          "checkpoint.size for one)")
    if clients > shape.ranks:
        raise ConfigError(f"workload {w.name}: its checkpoint is laid out over {shape.ranks} "
                          f"ranks, fewer than {clients} clients; use --clients {shape.ranks} "
                          "or fewer (each client writes the files of one or more ranks)")
    return [[max(1, int(n * w.checkpoint.scale)) for _, n in files]
            for files in checkpoint_layout.layout_of(shape)]


def require_space(rc: RunContext, plan: CheckpointPlan, copies: int) -> None:
    """Refuse before writing when `copies` checkpoints (retention) do not fit, or a shard is
    larger than the engine's parts can carry; then create the run's folder."""
    if plan.part_size:
        largest = max((max(plan.sizes(c), default=0) for c in range(plan.clients)), default=0)
        rc.engine.check_parts(largest, plan.part_size, "a checkpoint shard")
    if rc.options.space_check:
        rc.target.require_space(plan.total_bytes * copies,
                                f"{copies} checkpoint(s) of {format_size(plan.total_bytes)}")
    rc.target.make_run_folder(Path(plan.folder))


# --- the client side -----------------------------------------------------------------------

def make_writers(plan: CheckpointPlan, ctx: Any) -> list[Any]:
    """One writer of the run's engine per thread, each with its own seeded payload; a
    file's bytes count when it is durable (count_at_fsync). An engine that sends objects in
    parts writes a part per request."""
    n = min(plan.threads, plan.files_per_client)
    out = []
    for i in range(n):
        wr = ctx.engine.writer(write_size(plan, ctx.index), OpLog(0), ctx.add_bytes,
                               seed=(plan.seed * 1_000_003 + ctx.index) * 64 + i,
                               checksum=plan.checksum, count_at_fsync=True)
        wr.stop = PolledStop(ctx.stop)
        out.append(wr)
    return out


def write_size(plan: CheckpointPlan, client: int) -> int:
    """What a client's writer's buffer holds: a transfer on files; on a bucket a part, or
    its largest shard (4 KiB-widened) when that is smaller: such a shard is one PUT, and a
    part-size buffer, made at once, held bytes it never sent."""
    if not plan.part_size:
        return plan.transfer_size
    return min(plan.part_size, align_up(max(plan.sizes(client), default=plan.part_size)))


def make_readers(plan: CheckpointPlan, ctx: Any) -> list[Any]:
    n = min(plan.threads, plan.files_per_client)
    out = []
    for _ in range(n):
        rd = ctx.engine.reader(plan.transfer_size, OpLog(0), ctx.add_bytes)
        rd.stop = PolledStop(ctx.stop)
        out.append(rd)
    return out


def write_burst(plan: CheckpointPlan, k: int, client: int, writers: list[Any],
                burst_ns: int, run_ns: int, eng: Engine) -> ClientBurst:
    """Write and fsync every file of this client's shard of checkpoint k, then fsync the
    folders that name them; the burst ends when all of that has returned (persisted)."""
    burst = Window(burst_ns)  # from the common release of checkpoint k
    folder = os.path.join(plan.folder, f"ckpt-{k}")
    meta = OpLog(burst_ns)  # the folder's mkdir: inside the burst, so timed with it
    eng.makedirs(meta, folder)
    items = list(enumerate(plan.sizes(client)))
    synced: list[tuple[int, int, str]] = []  # (durable instant, bytes, path) per file

    def work(wr: Any, item: tuple[int, int]) -> None:
        f, size = item
        path = plan.path(k, client, f)
        done = wr.write_file(path, size, plan.tag(k, client, f))
        synced.append((wr.synced_ns, done, path))

    logs = run_parallel(items, writers, work, burst_ns)
    # New names are durable only once their folder is: ckpt-k's entries, and ckpt-k's own
    # entry in the run's folder (it may be new in this burst).
    eng.fsync_dir(meta, folder)
    eng.fsync_dir(meta, plan.folder)
    end_ns = burst.close()
    fig = burst_figures([*logs, meta], burst_ns, end_ns, run_ns, "write", len(items))
    return replace(fig, durable=durable_instants(synced, burst_ns, end_ns, run_ns, eng.name))


def durable_instants(synced: list[tuple[int, int, str]], burst_ns: int, end_ns: int,
                     run_ns: int, engine: str) -> tuple[tuple[float, int], ...]:
    """(seconds since the run's start, bytes) of each file, in order, at the instant its
    writer says it became durable (`synced_ns`). First done counts the bytes durable by then,
    so an instant outside the burst that wrote the file (unset, or later than the burst's
    end) is the engine's error, said in one line, never a figure."""
    for at, _, path in synced:
        if not burst_ns <= at <= end_ns:
            when = ("it never said when" if at == 0 else
                    f"{(at - burst_ns) / 1e9:+.3f} s from the start of a burst of "
                    f"{(end_ns - burst_ns) / 1e9:.3f} s")
            raise RunFailed(f"engine {engine}: its writer dated {path} durable outside the "
                            f"burst that wrote it ({when}); first done needs the instant its "
                            "fsync or completing request returned (the writer's synced_ns)")
    return tuple(sorted(((at - run_ns) / 1e9, n) for at, n, _ in synced))


def read_burst(plan: CheckpointPlan, k: int, client: int, readers: list[Any],
               burst_ns: int, run_ns: int, eng: Engine | None = None) -> ClientBurst:
    """Read back every byte of this client's shard of checkpoint k (cache defeated)."""
    burst = Window(burst_ns)
    items = list(enumerate(plan.sizes(client)))
    checkers = {id(rd): blocks.Verifier() for rd in readers}

    def work(rd: Any, item: tuple[int, int]) -> None:
        f, size = item
        path = plan.path(k, client, f)
        if plan.checksum:
            tag, verifier = plan.tag(k, client, f), checkers[id(rd)]
            rd.check = lambda view, n, pos: verifier.check(view, n, path, tag, pos)
        try:
            got = rd.read_file(path)
        except OSError as exc:
            raise io_failure(exc, "restoring", path) from exc
        if got != size and not (rd.stop and rd.stop.is_set()):
            raise RunFailed(f"restore read {got} of the {size} bytes of {path}")

    logs = run_parallel(items, readers, work, burst_ns)
    fig = burst_figures(logs, burst_ns, burst.close(), run_ns, "read", len(items))
    if plan.checksum:
        merged = blocks.Verifier()
        for v in checkers.values():
            merged.merge(v)
        fig = replace(fig, verify=merged.to_dict())
    return fig


def burst_figures(logs: list[OpLog], burst_ns: int, end_ns: int, run_ns: int, op: str,
                  files: int) -> ClientBurst:
    """One client's figures for one burst; times are seconds since the run's common start."""
    return ClientBurst.of(client_io(logs, burst_ns, end_ns, main_op=op),
                          (burst_ns - run_ns) / 1e9, (end_ns - run_ns) / 1e9, files)


def retire(plan: CheckpointPlan, k: int, client: int, log: OpLog, eng: Engine) -> int:
    """Delete this client's files of checkpoint k (retention); each unlink is timed."""
    removed = 0
    for f in range(len(plan.sizes(client))):
        try:
            eng.unlink(log, plan.path(k, client, f))
        except FileNotFoundError:
            continue
        removed += 1
    if not eng.caps.folders:
        return removed  # a key prefix is no folder: nothing left to remove
    if plan.stall_model != "synchronous":
        # No barrier: a slower client may have opened ckpt-k's folder and not yet created
        # its file there; removing the (empty) folder now would fail its write. The run's
        # folder, with these empty ones, is removed when the run ends.
        return removed
    try:  # behind the barrier every shard is in: the last client to retire removes the folder
        os.rmdir(os.path.join(plan.folder, f"ckpt-{k}"))
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
            raise
    return removed


def retention_figures(log: OpLog) -> dict[str, Any]:
    """One client's retention deletes (the only calls its log holds: an unlink of a file, a
    DELETE of an object): how many, their latency summary and histogram."""
    log.flush()
    h = Histogram()
    for deletes in log.hist.values():
        h.merge(deletes)
    return {"files_deleted": h.count, "unlink_latency": h.summary(),
            "unlink_histogram": h.to_dict()}


# --- the parent side -----------------------------------------------------------------------

def burst_aggregate(entries: list[ClientBurst]) -> dict[str, Any]:
    """All clients' figures for one burst, over its real window from the first client's start:
    first done (until the fastest client was done), last done (until the slowest was: MLPerf's
    duration), and the aggregate MiB/s over the last-done window. Written bytes count from
    their file's fsync on."""
    agg = AggregateIo.over([e.io for e in entries]).to_dict()
    start = min(e.start_s for e in entries)
    first, last = min(e.end_s for e in entries), max(e.end_s for e in entries)
    if all(e.durable is not None for e in entries):
        durable = sum(n for e in entries for t, n in e.durable or () if t <= first)
        agg["first_done"] = _window(durable, first - start)
        agg["last_done"] = _window(agg["bytes"], last - start)
    if max(e.start_s for e in entries) - start > SAME_START_S:
        # each client's series starts at its own burst start: their sum would mix instants
        del agg["series_mib_s"]
    agg.update(first_done_s=first - start, last_done_s=last - start, start_s=start, end_s=last,
               mib_s=mib_per_s(agg["bytes"], last - start))
    for call in SPENT:
        if any(call in e.spent_s for e in entries):
            agg[f"{call}_s"] = sum(e.spent_s.get(call, 0.0) for e in entries)
    return agg


def _window(nbytes: float, seconds: float) -> dict[str, float]:
    return {"seconds": seconds, "bytes": nbytes, "mib_s": mib_per_s(nbytes, seconds)}


# Each client's record of each checkpoint, read back from what it sent: [client][k]
Sent = list[list[ClientRound]]
Round = TypeVar("Round")


def every_round(clients: list[dict],
                read: Callable[[dict[str, Any]], Round] = ClientRound.from_dict,
                ) -> list[list[Round]]:
    """Each client's records of its checkpoints, read back by their class (`read`)."""
    return [[read(r) for r in c.get("checkpoints", [])] for c in clients]


def completed(rounds: list[list[Round]]) -> list[list[Round]]:
    """Each client's records of the checkpoints every client completed."""
    k = min(map(len, rounds), default=0)
    return [c[:k] for c in rounds]


def client_bursts(clients: list[dict]) -> Sent:
    """Each client's bursts of the checkpoints every client completed."""
    return completed(every_round(clients))


def checkpoint_bursts(plan: CheckpointPlan, sent: Sent) -> list[Burst]:
    """Each checkpoint over every client: its write and restore, and the gap between."""
    per = []
    for k in range(len(sent[0]) if sent else 0):
        entries = [c[k] for c in sent]
        write = burst_aggregate([e.write for e in entries])
        read = gap = None
        if all(e.read is not None for e in entries):
            read = burst_aggregate([e.read for e in entries if e.read is not None])
            gap = read["start_s"] - write["end_s"]
        per.append(Burst(k, write, read, gap))
    if plan.restore_after == "all_writes" and per and per[0].read is not None:
        # the reads follow every write: the gap is the read phase's start after the write
        # phase's end (MLPerf Storage's 30 s), the same for each checkpoint
        gap = per[0].read["start_s"] - per[-1].write["end_s"]
        per = [replace(b, restore_gap_s=gap) for b in per]
    return per


def checkpoints_aggregate(plan: CheckpointPlan, sent: Sent,
                          per: list[Burst]) -> dict[str, Any]:
    """Per checkpoint (`per`, from `checkpoint_bursts`) and over all of them: time to
    persist, stall, restore, MiB/s."""
    out: dict[str, Any] = {"plan": plan.describe(), "checkpoints": [b.to_dict() for b in per],
                           "completed": len(per), "stall_model": plan.stall_model}
    if not per:
        return out
    writes = [b.write for b in per]
    if plan.stall_model == "synchronous":  # every accelerator waits for the last shard
        stalls = [w["last_done_s"] for w in writes]
    else:  # each accelerator waits for its own shard
        stalls = [r.write.io.elapsed_s for c in sent for r in c]
    out.update(_over_bursts("write", "persist", writes), stall_s=stats.spread(stalls))
    reads = [b.read for b in per if b.read is not None]
    if reads:
        out.update(_over_bursts("read", "restore", reads),
                   restore_gap_s_max=max(b.restore_gap_s for b in per if b.read is not None))
    return out


def _over_bursts(op: str, step: str, bursts: list[dict]) -> dict[str, Any]:
    """One direction over every checkpoint: bytes, MiB/s over the summed last-done times (each
    burst's own window, so the pauses between checkpoints count for nothing), and the spread
    of first and last done."""
    nbytes = sum(b["bytes"] for b in bursts)
    return {f"{op}_bytes": nbytes,
            f"{op}_mib_s": mib_per_s(nbytes, sum(b["last_done_s"] for b in bursts)),
            f"{step}_first_done_s": stats.spread([b["first_done_s"] for b in bursts]),
            f"{step}_last_done_s": stats.spread([b["last_done_s"] for b in bursts])}
