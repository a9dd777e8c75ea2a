"""Data preparation and staging, as the storage sees it.

Shards mode: every client lists its share of the raw-sample folders, then its threads take the
raw samples in a random order (reshuffled each pass; every sample exactly once per pass over all
clients): stat, open, read the whole file, spend the transform time, and append the processed
bytes to their own shard, written sequentially and fsynced when full (`shard_size`). At the end
the staged shards are unlinked. Every metadata operation (list, stat, open, create, unlink) has
its own latency histogram. Randrw mode (`prep.mode = "randrw"`) runs the randrw phase
(`aiio.phases.randrw`), fio's random read/write mix.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiio import stats
from aiio.document import Where, dig
from aiio.engines import blocks
from aiio.engines.seam import OpLog, io_failure
from aiio.engines.timing import PolledStop, Window, cpu_seconds
from aiio.errors import ConfigError, RunFailed
from aiio.options import RunOptions
from aiio.phases import randrw
from aiio.phases.base import (
    OBJECT_CLIENT_BASE,
    ClientMemory,
    Phase,
    RunContext,
    client_identity,
    client_io_figures,
    ensure_dataset,
    io_aggregate,
    object_writer_bytes,
    read_write_sections,
)
from aiio.phases.rundata import new_run_tag, remove_run_folder
from aiio.phases.threads import run_parallel
from aiio.phases.train import epoch_order, shard_bounds
from aiio.run.clients import ClientContext
from aiio.stats import Histogram
from aiio.storage import dataset as ds
from aiio.units import MiB, format_size, mib_per_s
from aiio.workload import Workload

# Metadata operations by the names engines time them: a mount's, then a bucket's requests
# (HEAD, and the GETs and PUTs its reads and shard writes are); absent ones are left out.
META_OPS = ("list", "stat", "open", "create", "unlink", "head", "get", "put", "delete")


@dataclass
class PrepArgs:
    dataset: ds.Dataset
    folder: str
    method: str
    threads: int
    transfer_size: int
    passes: int
    transform_s: float
    shard_size: int
    output_ratio: float
    seed: int
    mode: str = "shards"

    def client_folder(self, client: int) -> str:
        return os.path.join(self.folder, f"client{client:05d}")


def client_items(data: ds.Dataset, seed: int, passes: int, clients: int, index: int):
    """This client's work, pass by pass: ("list", folder) for its share of the folders, then
    ("sample", file) for its share of a seeded permutation of every raw sample."""
    spf = data.params.files_per_dir
    folders = -(-data.num_files // spf)
    for p in range(passes):
        for d in range(index, folders, clients):
            yield "list", d
        order = epoch_order("sample", data.num_files, seed, 1000 + p)
        lo, hi = shard_bounds(data.num_files, clients, index)
        for f in order[lo:hi].tolist():
            yield "sample", f


class ShardStream:
    """One thread's output: processed bytes appended to shards written sequentially."""

    def __init__(self, writer: Any, folder: str, prefix: str, shard_size: int,
                 seed: int) -> None:
        self.writer, self.folder, self.prefix = writer, folder, prefix
        self.shard_size, self.seed = shard_size, seed
        self.fd: int | None = None
        self.path = ""
        self.tag = 0
        self.pos = self.pending = 0
        self.paths: list[str] = []

    def add(self, nbytes: int) -> None:
        """Queue processed bytes; whole transfer-size chunks are written at once."""
        self.pending += nbytes
        while self.pending >= self.writer.transfer_size:
            self._write(self.writer.transfer_size)

    def flush(self) -> None:
        """Write what is left and make the last shard durable."""
        while self.pending > 0:
            self._write(min(self.pending, self.writer.transfer_size))
        self._finish()

    def _write(self, n: int) -> None:
        if self.fd is None:
            self.path = os.path.join(self.folder, f"{self.prefix}-{len(self.paths):06d}.rec")
            self.fd = self.writer.create(self.path)
            self.tag = blocks.file_tag(self.seed, self.path)
            self.paths.append(self.path)
            self.pos = 0
        take = min(n, self.shard_size - self.pos)
        self.writer.write_range(self.fd, self.path, self.pos, take, self.tag)
        self.pos += take
        self.pending -= take
        if self.pos >= self.shard_size:
            self._finish()

    def _finish(self) -> None:
        if self.fd is not None:
            try:
                self.writer.fsync(self.fd, self.path)
            finally:
                self.writer.close_file(self.fd)
                self.fd = None


class PrepWorker:
    """One prep thread: its reader, its shard stream and its metadata log. On an engine that
    sends objects in parts a shard is one object, sent in one request."""

    def __init__(self, a: PrepArgs, ctx: ClientContext, i: int) -> None:
        self.engine = ctx.engine
        self.reader = ctx.engine.reader(a.transfer_size, OpLog(0), ctx.add_bytes)
        write_size = a.shard_size if ctx.engine.caps.multipart else a.transfer_size
        self.writer = ctx.engine.writer(write_size, OpLog(0), ctx.add_bytes,
                                        seed=(a.seed * 1_000_003 + ctx.index) * 256 + i)
        self.reader.stop = PolledStop(ctx.stop)
        self.writer.stop = PolledStop(ctx.stop)
        self.shards = ShardStream(self.writer, a.client_folder(ctx.index), f"t{i:03d}",
                                  a.shard_size, a.seed)
        self.log = OpLog(0)  # metadata: list, stat, unlink (open and create are in the others)
        self.samples = 0

    def reset(self, start_ns: int) -> None:
        self.reader.log = OpLog(start_ns)
        self.writer.log = OpLog(start_ns)

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


def _work(a: PrepArgs, ctx: ClientContext):
    """The per-item body run on each prep thread."""
    data = a.dataset
    stop = PolledStop(ctx.stop)

    def work(worker: PrepWorker, item: tuple[str, int]) -> None:
        kind, i = item
        if stop.is_set():
            return
        if kind == "list":  # folder i: where its first file is (a key prefix on a bucket)
            path = os.path.dirname(data.path(i * data.params.files_per_dir))
            worker.engine.listdir(worker.log, path)
            return
        path = data.path(i)
        size = worker.engine.stat(worker.log, path)
        try:
            # The size just stat'ed bounds the read: no second stat (fstat) per sample.
            got = worker.reader.read_file(path, 0, size)
        except OSError as exc:
            raise io_failure(exc, "reading", path) from exc
        transform(a, ctx, worker, path, size, got)

    return work


def transform(a: PrepArgs, ctx: ClientContext, worker: Any, path: str, size: int,
              got: int) -> None:
    """After a sample's read: check it was whole, spend the transform time, queue the output."""
    if got != size and not ctx.stop.is_set():
        raise RunFailed(f"read {got} of the {size} bytes of {path}")
    if a.transform_s > 0:
        time.sleep(a.transform_s)
    worker.shards.add(int(got * a.output_ratio))
    worker.samples += 1
    ctx.add_units(1)


def shards_client(ctx: ClientContext) -> dict[str, Any]:
    """One client of the shards mode (see the module doc)."""
    a: PrepArgs = ctx.args
    # a bucket sizes its connection pool to the threads, so no request waits for one
    ctx.engine = ctx.engine.with_streams(a.threads)
    workers = [PrepWorker(a, ctx, i) for i in range(a.threads)]
    cleanup = OpLog(0)
    try:
        run = Window(ctx.ready_and_wait())
        start_ns = run.start_ns
        cpu0 = cpu_seconds()
        for wk in workers:
            wk.reset(start_ns)
        cleanup.start_ns = start_ns
        items = client_items(a.dataset, a.seed, a.passes, ctx.count, ctx.index)
        run_parallel(items, workers, _work(a, ctx), start_ns)
        for wk in workers:
            wk.shards.flush()
        for wk in workers:  # staging done: the processed shards are removed
            _unlink_all(wk.shards.paths, cleanup, ctx.engine)
        end_ns = run.close()
    finally:
        for wk in workers:
            wk.close()
    out = _shards_figures(ctx, workers, cleanup, start_ns, end_ns, cpu0)
    out.update(ctx.engine.client_figures(out, out["elapsed_s"]))  # a bucket's SDK counts
    return out


def _unlink_all(paths: list[str], log: OpLog, eng: Any) -> None:
    for path in paths:
        eng.unlink(log, path)


def _shards_figures(ctx: ClientContext, workers: list[PrepWorker], cleanup: OpLog,
                    start_ns: int, end_ns: int, cpu0: float) -> dict[str, Any]:
    out = client_identity(ctx.index)
    elapsed = (end_ns - start_ns) / 1e9
    read = client_io_figures([w.reader.log for w in workers], start_ns, end_ns, main_op="read")
    write = client_io_figures([w.writer.log for w in workers], start_ns, end_ns,
                              main_op="write")
    # read requests (a read call, or a GET whose body came in chunks) per second
    read["iops"] = read["histograms"].get(ctx.engine.caps.read_op, {}).get("count", 0) / elapsed
    samples = sum(w.samples for w in workers)
    logs = [w.log for w in workers] + [cleanup]
    out.update(elapsed_s=elapsed, cpu_s=cpu_seconds() - cpu0, samples=samples,
               samples_per_s=samples / elapsed if elapsed else 0.0,
               shards=sum(len(w.shards.paths) for w in workers),
               read=read, write=write, bytes=read["bytes"] + write["bytes"],
               metadata=metadata_figures(logs, read, write, elapsed))
    return out


def metadata_figures(logs: list[OpLog], read: dict, write: dict, elapsed: float,
                     names: tuple[str, ...] = META_OPS) -> dict[str, Any]:
    """Counts, operations per second and latency of every metadata operation type (`names`);
    those timed inside the reads and writes come from there."""
    hist: dict[str, Histogram] = {}
    for log in logs:
        log.flush()
        for op, h in log.hist.items():
            hist.setdefault(op, Histogram()).merge(h)
    for fig in (read, write):
        for op in names:
            if op in fig["histograms"] and op not in ("read", "write"):
                hist.setdefault(op, Histogram()).merge(Histogram.from_dict(fig["histograms"][op]))
    ops = {op: hist[op] for op in names if op in hist}
    total = sum(h.count for h in ops.values())
    return {"ops": {op: {"count": h.count, "ops_s": h.count / elapsed if elapsed else 0.0,
                         "latency": h.summary(), "histogram": h.to_dict()}
                    for op, h in ops.items()},
            "total": total, "ops_s": total / elapsed if elapsed else 0.0}


def shards_aggregate(clients: list[dict], names: tuple[str, ...] = META_OPS,
                     read_op: str = "read") -> dict[str, Any]:
    """Read and write aggregates, metadata rates and latencies over every client; read IOPS
    count `read_op`, the engine's read request."""
    read = io_aggregate([c["read"] for c in clients])
    write = io_aggregate([c["write"] for c in clients])
    last = max(c["elapsed_s"] for c in clients)
    read["iops"] = read["latency"].get(read_op, {}).get("count", 0) / last if last else 0.0
    meta: dict[str, Any] = {}
    for op in names:
        hs = [Histogram.from_dict(c["metadata"]["ops"][op]["histogram"]) for c in clients
              if op in c["metadata"]["ops"]]
        if hs:
            h = sum(hs, Histogram())
            meta[op] = {"count": h.count, "ops_s": h.count / last if last else 0.0,
                        "latency": h.summary()}
    total = sum(m["count"] for m in meta.values())
    samples = sum(c["samples"] for c in clients)
    return {"read": read, "write": write,
            "metadata": {"ops": meta, "total": total, "ops_s": total / last if last else 0.0},
            "samples": samples, "samples_per_s": samples / last if last else 0.0,
            "shards": sum(c["shards"] for c in clients),
            "per_client_samples_per_s": stats.spread([c["samples_per_s"] for c in clients]),
            "read_bytes": read["bytes"], "write_bytes": write["bytes"],
            "bytes": read["bytes"] + write["bytes"],
            "read_mib_s": mib_per_s(read["bytes"], last),
            "write_mib_s": mib_per_s(write["bytes"], last)}


# --- the parent side --------------------------------------------------------------------------

def _prepare_shards(rc: RunContext, folder: str) -> PrepArgs:
    w = rc.workload
    p = w.prep
    data = ensure_dataset(rc)
    out_bytes = int(data.total_bytes * p.output_ratio * p.passes)
    if rc.options.space_check:
        rc.target.require_space(out_bytes, f"prep shards ({p.passes} pass(es) of "
                                           f"{format_size(data.total_bytes)} x {p.output_ratio:g})")
    rc.target.make_run_folder(Path(folder))  # after the checks: none left over
    if rc.engine.caps.folders:  # a key prefix needs no folder
        for c in range(rc.clients):
            os.mkdir(os.path.join(folder, f"client{c:05d}"))
    return PrepArgs(data, folder, rc.method, p.threads, p.transfer_size, p.passes,
                    p.transform_time, p.shard_size, p.output_ratio, w.run.seed)


# A client's memory besides its readers and writers (docs/PERFORMANCE.md, "Memory per client";
# demo runs at 4, 64 and 256 clients, Dec 2 2026, under load): 9.71 MiB at 4 clients (9.66 at
# 64, 9.54 at 256) less its 4 MiB of buffers, rounded up to 0.5 MiB.
MEMORY_BASE = 6 * MiB


class PrepPhase(Phase):
    name = "prep"
    main_op = "read"
    hero_test = "seq_read"  # and seq_write beside it: see fio/pairing
    fio_job = "prep_job"
    console = "prep_tables"
    streams_key = ("prep", "threads")
    judged_on = "read_plus_write"
    sweep_extras = (("samples_per_s", "samples/s", "1/s"), ("metadata_ops_s", "meta ops/s", "1/s"))
    hero_pairing = "direction_sides"
    metadata_at = ("metadata",)
    workload_sections = ("dataset", "prep")  # the raw samples in, its own settings

    def io_sections(self, part: Mapping[str, Any], client: bool) -> dict[str, Where]:
        return read_write_sections(part)

    def client_memory(self, w: Workload, clients: int, lifecycle: bool = False) -> ClientMemory:
        """Each thread's reader and writer (an object writer sends each shard as one part)."""
        p = w.prep
        write = object_writer_bytes(p.shard_size) if self.object_store else p.transfer_size
        return ClientMemory(OBJECT_CLIENT_BASE if self.object_store else MEMORY_BASE,
                            p.threads * (p.transfer_size + write), p.threads)

    def variant(self, w: Workload) -> Phase:
        """prep.mode = "randrw" runs the randrw phase."""
        return randrw.PHASE if w.prep.mode == "randrw" else self

    def result_variant(self, res: dict[str, Any]) -> Phase:
        mode = dig(res, "aggregate", "mode") or dig(res, "workload", "prep", "mode")
        return randrw.PHASE if mode == "randrw" else self

    def validate(self, w: Workload, options: RunOptions) -> None:
        if w.prep.shard_size % 4096:
            raise ConfigError(f"prep.shard_size = {w.prep.shard_size} B must be a multiple of "
                              "4 KiB (O_DIRECT needs aligned lengths)")
        if options.verify:
            raise ConfigError("--verify checks data aiio wrote with block checksums; prep reads "
                              "the raw dataset in shards mode: use prep.mode=randrw, or the "
                              "checkpoint or load phase")

    def prepare(self, rc: RunContext) -> PrepArgs:
        folder = str(rc.target.root / "prep" / new_run_tag())  # made once checks pass
        return _prepare_shards(rc, folder)

    def total_units(self, args: PrepArgs, clients: int) -> int:
        return args.dataset.num_files * args.passes

    def client(self, ctx: ClientContext) -> dict[str, Any]:
        return shards_client(ctx)

    def summarize(self, rc: RunContext, args: PrepArgs, clients: list[dict]) -> dict[str, Any]:
        agg = shards_aggregate(clients, read_op=rc.engine.caps.read_op)
        agg.update(rc.engine.aggregate(clients))  # a bucket's SDK counts
        return agg

    def warnings(self, rc: RunContext, args: PrepArgs, out: dict[str, Any]) -> list[dict]:
        # what the run keeps stored: the raw dataset, and the shards it wrote (read never)
        agg = out["aggregate"]
        return rc.engine.warnings(agg, args.dataset.total_bytes + agg.get("write_bytes", 0))

    def cleanup(self, rc: RunContext, args: PrepArgs | None, status: str) -> None:
        """The run's shards go; the raw dataset is kept for reuse (a bucket's local copy of
        its index goes)."""
        if args is not None:
            args.dataset.discard_local()
            remove_run_folder(rc, args.folder)


PHASE = PrepPhase()
