"""Data preparation against a bucket (shards mode): each client lists its share of the raw
sample "folders" (key prefixes), then HEADs and GETs its share of the samples in a seeded
random order, spends the transform time, and PUTs the processed bytes as shard objects, which
are DELETEd when staging is done. list, head, get, put and delete each get a latency
histogram."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiio import blocks
from aiio.clients import ClientContext
from aiio.engine import OpLog
from aiio.errors import ConfigError
from aiio.options import RunOptions
from aiio.phases import prep
from aiio.phases.base import Phase, RunContext
from aiio.phases.rundata import new_run_tag
from aiio.s3 import dataset as s3ds
from aiio.s3.backend import RANDRW_REFUSED
from aiio.s3.objectio import ObjectIO, ObjectWriter
from aiio.s3.train import request_warnings, s3_aggregate
from aiio.timing import PolledStop
from aiio.workload import Workload

OBJECT_OPS = ("list", "head", "get", "put", "delete")


@dataclass
class S3PrepArgs(prep.PrepArgs):
    io: ObjectIO | None = None


class ObjectShards:
    """One thread's output: processed bytes collected into shard objects of shard_size."""

    def __init__(self, writer: ObjectWriter, prefix: str, shard_size: int, seed: int) -> None:
        self.writer, self.prefix, self.shard_size, self.seed = writer, prefix, shard_size, seed
        self.pending = 0
        self.paths: list[str] = []

    def add(self, nbytes: int) -> None:
        self.pending += nbytes
        while self.pending >= self.shard_size:
            self._put(self.shard_size)

    def flush(self) -> None:
        if self.pending > 0:
            self._put(self.pending)

    def _put(self, n: int) -> None:
        key = f"{self.prefix}-{len(self.paths):06d}.rec"
        self.writer.write_object(key, n, blocks.file_tag(self.seed, key))
        self.paths.append(key)
        self.pending -= n


class ObjectPrepWorker:
    """One prep thread: its GET reader, its shard writer and its metadata log."""

    def __init__(self, a: S3PrepArgs, ctx: ClientContext, i: int) -> None:
        self.reader = a.io.reader(a.method, a.transfer_size, OpLog(0), ctx.add_bytes)
        self.writer = ObjectWriter(a.io, a.shard_size, OpLog(0), ctx.add_bytes,
                                   seed=(a.seed * 1_000_003 + ctx.index) * 256 + i)
        self.reader.stop = PolledStop(ctx.stop)
        self.shards = ObjectShards(self.writer, f"{a.client_folder(ctx.index)}/t{i:03d}",
                                   a.shard_size, a.seed)
        self.log = OpLog(0)  # list, head, delete (get and put are in the reader and writer)
        self.samples = 0

    def reset(self, start_ns: int) -> None:
        self.reader.log = OpLog(start_ns)
        self.writer.log = OpLog(start_ns)

    def close(self) -> None:
        self.writer.close()


def _work(a: S3PrepArgs, ctx: ClientContext):
    data, io, stop = a.dataset, a.io, PolledStop(ctx.stop)

    def work(worker: ObjectPrepWorker, item: tuple[str, int]) -> None:
        kind, i = item
        if stop.is_set():
            return
        if kind == "list":
            with worker.log.timed("list"):
                io.client.list_objects_v2(Bucket=io.bucket, Prefix=f"{data.base}/d{i:05d}/")
            return
        key = data.path(i)
        with worker.log.timed("head"):
            size = io.client.head_object(Bucket=io.bucket, Key=key)["ContentLength"]
        got = worker.reader.read_file(key)
        prep.transform(a, ctx, worker, key, size, got)

    return work


def run_client(ctx: ClientContext) -> dict[str, Any]:
    a: S3PrepArgs = ctx.args

    def remove(keys: list[str], log: OpLog) -> None:
        for key in keys:
            a.io.delete(key, log)

    out = prep.shards_client(ctx, ObjectPrepWorker, _work, remove, OBJECT_OPS)
    out["s3"] = a.io.counts.to_dict()
    return out


class S3PrepPhase(prep.PrepPhase):
    object_store = True
    def variant(self, w: Workload) -> Phase:
        return self  # no randrw on a bucket: validate says so in one line

    def validate(self, w: Workload, options: RunOptions) -> None:
        if w.prep.mode != "shards":
            raise ConfigError(RANDRW_REFUSED)
        super().validate(w, options)

    def prepare(self, rc: RunContext) -> S3PrepArgs:
        w, tgt, p = rc.workload, rc.target, rc.workload.prep
        upload = ObjectIO(tgt.access, tgt.loc.bucket, s3ds.UPLOAD_STREAMS)
        data = s3ds.ensure(tgt, upload, w, None, rc.note)
        folder = str(tgt.root / "prep" / new_run_tag())
        return S3PrepArgs(data, folder, rc.method, p.threads, p.transfer_size, p.passes,
                          p.transform_time, p.shard_size, p.output_ratio, w.run.seed,
                          io=ObjectIO(tgt.access, tgt.loc.bucket, p.threads))

    def client(self, ctx: ClientContext) -> dict[str, Any]:
        return run_client(ctx)

    def summarize(self, rc: RunContext, args: S3PrepArgs, clients: list[dict]) -> dict:
        agg = prep.shards_aggregate(clients, OBJECT_OPS)
        agg["s3"] = s3_aggregate(clients)["s3"]
        return agg

    def warnings(self, rc: RunContext, args: S3PrepArgs, out: dict[str, Any]) -> list[dict]:
        return request_warnings(out["aggregate"])

    def cleanup(self, rc: RunContext, args: S3PrepArgs | None, status: str) -> None:
        """The run's shard objects go (a stopped run may leave some); the dataset stays."""
        if args is None:
            return
        args.dataset.discard_local()
        rc.target.delete([o["Key"] for o in rc.target.objects()
                          if o["Key"].startswith(args.folder + "/")])


PHASE = S3PrepPhase()
