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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from aiio import blocks, engine, stats
from aiio.engine import OpLog, Reader, Writer, io_failure
from aiio.errors import ConfigError, RunFailed
from aiio.phases.base import RunContext, client_io_figures, io_aggregate
from aiio.phases.rundata import split_sizes
from aiio.phases.threads import run_parallel
from aiio.stats import Histogram
from aiio.timing import PolledStop, Window
from aiio.units import format_size, mib_per_s
from aiio.workload import Workload

SAME_START_S = 0.001  # bursts whose clients started within this count as one common start


def checkpoint_bytes(w: Workload) -> tuple[int, int, str]:
    """(bytes after --scale, bytes before it, where the size came from)."""
    c = w.checkpoint
    if c.size > 0:
        base, source = c.size, "checkpoint.size"
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
    every: int = 0
    every_unit: str = "epochs"
    stall_model: str = "synchronous"
    _sizes: list[int] = field(default_factory=list, repr=False)
    delete_op: ClassVar[str] = "unlink"  # the operation retention deletes a shard with

    def __post_init__(self) -> None:
        self._sizes = split_sizes(self.total_bytes, self.clients * self.files_per_client)

    def sizes(self, client: int) -> list[int]:
        """Bytes of each of this client's files."""
        f = self.files_per_client
        return self._sizes[client * f:(client + 1) * f]

    def relpath(self, k: int, client: int, f: int) -> str:
        return f"ckpt-{k}/client{client:05d}-part{f:03d}.bin"

    def path(self, k: int, client: int, f: int) -> str:
        return os.path.join(self.folder, self.relpath(k, client, f))

    def tag(self, k: int, client: int, f: int) -> int:
        # The checkpoint number is in the name, so a stale block of an older one is misplaced.
        return blocks.file_tag(self.seed, self.relpath(k, client, f))

    # Where the shards go: files here; a bucket's plan (aiio/s3/checkpoint.py) puts objects.
    def make_writers(self, ctx: Any) -> list:
        return make_writers(self, ctx)

    def write_burst(self, k: int, client: int, writers: list, burst_ns: int,
                    run_ns: int) -> dict[str, Any]:
        return write_burst(self, k, client, writers, burst_ns, run_ns)

    def retire(self, k: int, client: int, log: OpLog) -> int:
        return retire(self, k, client, log)

    def describe(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        out["shard_bytes_per_client"] = stats.spread(
            [sum(self.sizes(c)) for c in range(self.clients)])
        return out


def make_plan(rc: RunContext, run_tag: str, **changes: Any) -> CheckpointPlan:
    """The checkpoint plan for this run (nothing created yet: see `require_space`)."""
    w = rc.workload
    c = w.checkpoint
    total, base, source = checkpoint_bytes(w)
    folder = rc.target.root / "checkpoints" / run_tag
    plan = CheckpointPlan(
        folder=str(folder), total_bytes=total, base_bytes=base, scale=c.scale, source=source,
        clients=rc.clients, files_per_client=c.files_per_client, threads=c.threads,
        transfer_size=c.transfer_size, method=rc.method, seed=w.run.seed,
        checksum=rc.options.verify, count=c.count, keep=c.keep,
        restore=c.restore, restore_within=c.restore_within, every=c.every,
        every_unit=c.every_unit, stall_model=c.stall_model)
    for name, value in changes.items():
        setattr(plan, name, value)
    return plan


def require_space(rc: RunContext, plan: CheckpointPlan, copies: int) -> None:
    """Refuse before writing when `copies` checkpoints (retention) do not fit; then create
    the run's folder."""
    if rc.options.space_check:
        rc.target.require_space(plan.total_bytes * copies,
                                f"{copies} checkpoint(s) of {format_size(plan.total_bytes)}")
    rc.target.make_run_folder(Path(plan.folder))


# --- the client side -----------------------------------------------------------------------

def make_writers(plan: CheckpointPlan, ctx: Any) -> list[Writer]:
    """One Writer per thread, each with its own seeded payload."""
    n = min(plan.threads, plan.files_per_client)
    out = []
    for i in range(n):
        wr = Writer(plan.method, plan.transfer_size, OpLog(0), ctx.add_bytes,
                    seed=(plan.seed * 1_000_003 + ctx.index) * 64 + i, checksum=plan.checksum,
                    count_at_fsync=True)
        wr.stop = PolledStop(ctx.stop)
        out.append(wr)
    return out


def make_readers(plan: CheckpointPlan, ctx: Any) -> list[Reader]:
    n = min(plan.threads, plan.files_per_client)
    out = []
    for _ in range(n):
        rd = Reader(plan.method, plan.transfer_size, OpLog(0), ctx.add_bytes)
        rd.stop = PolledStop(ctx.stop)
        out.append(rd)
    return out


def write_burst(plan: CheckpointPlan, k: int, client: int, writers: list[Writer],
                burst_ns: int, run_ns: int) -> dict[str, Any]:
    """Write and fsync every file of this client's shard of checkpoint k, then fsync the
    folders that name them; the burst ends when all of that has returned (persisted)."""
    burst = Window(burst_ns)  # from the common release of checkpoint k
    folder = os.path.join(plan.folder, f"ckpt-{k}")
    meta = OpLog(burst_ns)  # the folder's mkdir: inside the burst, so timed with it
    engine.makedirs(meta, folder)
    items = list(enumerate(plan.sizes(client)))
    durable: list[list[float]] = []  # [seconds since the run's start, bytes] per file

    def work(wr: Writer, item: tuple[int, int]) -> None:
        f, size = item
        done = wr.write_file(plan.path(k, client, f), size, plan.tag(k, client, f))
        durable.append([(wr.synced_ns - run_ns) / 1e9, done])

    logs = run_parallel(items, writers, work, burst_ns)
    # New names are durable only once their folder is: ckpt-k's entries, and ckpt-k's own
    # entry in the run's folder (it may be new in this burst).
    writers[0].fsync_dir(folder)
    writers[0].fsync_dir(plan.folder)
    fig = burst_figures([*logs, meta], burst_ns, burst.close(), run_ns, "write", len(items))
    fig["durable"] = sorted(durable)
    return fig


def read_burst(plan: CheckpointPlan, k: int, client: int, readers: list[Reader],
               burst_ns: int, run_ns: int) -> dict[str, Any]:
    """Read back every byte of this client's shard of checkpoint k (cache defeated)."""
    burst = Window(burst_ns)
    items = list(enumerate(plan.sizes(client)))
    checkers = {id(rd): blocks.Verifier() for rd in readers}

    def work(rd: Reader, item: tuple[int, int]) -> None:
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
        fig["verify"] = merged.to_dict()
    return fig


def burst_figures(logs: list[OpLog], burst_ns: int, end_ns: int, run_ns: int, op: str,
                  files: int) -> dict[str, Any]:
    """One client's figures for one burst; times are seconds since the run's common start."""
    fig = client_io_figures(logs, burst_ns, end_ns, main_op=op)
    fig.update(start_s=(burst_ns - run_ns) / 1e9, end_s=(end_ns - run_ns) / 1e9, files=files)
    for extra in ("fsync", "dir_fsync", "checksum", "verify"):
        if extra in fig["histograms"]:
            h = Histogram.from_dict(fig["histograms"][extra])
            fig[f"{extra}_s"] = h.sum / 1e9
            if extra.endswith("fsync"):
                fig[f"{extra}_latency"] = h.summary()
    return fig


def retire(plan: CheckpointPlan, k: int, client: int, log: OpLog) -> int:
    """Delete this client's files of checkpoint k (retention); each unlink is timed."""
    removed = 0
    for f in range(plan.files_per_client):
        try:
            engine.unlink(log, plan.path(k, client, f))
        except FileNotFoundError:
            continue
        removed += 1
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


def retention_figures(log: OpLog, delete_op: str = "unlink") -> dict[str, Any]:
    """One client's retention deletes: how many, their latency summary and histogram."""
    log.flush()
    h = log.hist.get(delete_op, Histogram())
    return {"files_deleted": h.count, "unlink_latency": h.summary(),
            "unlink_histogram": h.to_dict()}


# --- the parent side -----------------------------------------------------------------------

def burst_aggregate(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """All clients' figures for one burst, over its real window from the first client's start:
    first done (until the fastest client was done), last done (until the slowest was: MLPerf's
    duration), and the aggregate MiB/s over the last-done window. Written bytes count from
    their file's fsync on."""
    agg = io_aggregate(entries)
    start = min(e["start_s"] for e in entries)
    first, last = min(e["end_s"] for e in entries), max(e["end_s"] for e in entries)
    if all("durable" in e for e in entries):
        durable = sum(n for e in entries for t, n in e["durable"] if t <= first)
        agg["first_done"] = _window(durable, first - start)
        agg["last_done"] = _window(agg["bytes"], last - start)
    if max(e["start_s"] for e in entries) - start > SAME_START_S:
        # each client's series starts at its own burst start: their sum would mix instants
        del agg["series_mib_s"]
    agg.update(first_done_s=first - start, last_done_s=last - start, start_s=start, end_s=last,
               mib_s=mib_per_s(agg["bytes"], last - start))
    for extra in ("fsync_s", "dir_fsync_s", "checksum_s", "verify_s"):
        if any(extra in e for e in entries):
            agg[extra] = sum(e.get(extra, 0.0) for e in entries)
    return agg


def _window(nbytes: float, seconds: float) -> dict[str, float]:
    return {"seconds": seconds, "bytes": nbytes, "mib_s": mib_per_s(nbytes, seconds)}


def checkpoints_aggregate(plan: CheckpointPlan, clients: list[dict]) -> dict[str, Any]:
    """Per checkpoint and over all of them: time to persist, stall, restore, MiB/s."""
    rounds = min((len(c.get("checkpoints", [])) for c in clients), default=0)
    per = []
    for k in range(rounds):
        entries = [c["checkpoints"][k] for c in clients]
        one = {"n": k, "write": burst_aggregate([e["write"] for e in entries])}
        if all("read" in e for e in entries):
            one["read"] = burst_aggregate([e["read"] for e in entries])
            one["restore_gap_s"] = one["read"]["start_s"] - one["write"]["end_s"]
        per.append(one)
    out: dict[str, Any] = {"plan": plan.describe(), "checkpoints": per, "completed": rounds,
                           "stall_model": plan.stall_model}
    if not per:
        return out
    writes = [p["write"] for p in per]
    if plan.stall_model == "synchronous":  # every accelerator waits for the last shard
        stalls = [w["last_done_s"] for w in writes]
    else:  # each accelerator waits for its own shard
        stalls = [c["checkpoints"][k]["write"]["elapsed_s"] for c in clients for k in range(rounds)]
    out.update(_over_bursts("write", "persist", writes), stall_s=stats.spread(stalls))
    reads = [p["read"] for p in per if "read" in p]
    if reads:
        out.update(_over_bursts("read", "restore", reads),
                   restore_gap_s_max=max(p["restore_gap_s"] for p in per if "read" in p))
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
