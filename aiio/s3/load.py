"""Model loading from a bucket: every replica fetches every weight object at once, cold, as
parallel ranged GETs (the way parallel downloaders read large objects) over its threads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiio import blocks
from aiio.clients import ClientContext
from aiio.engine import OpLog
from aiio.errors import RunFailed
from aiio.phases import load
from aiio.phases.base import RunContext, client_identity, client_io_figures
from aiio.phases.rundata import split_sizes
from aiio.phases.threads import run_parallel
from aiio.s3.objectio import ObjectIO, ObjectWriter, check_parts
from aiio.s3.train import request_warnings, reread_warning, s3_aggregate
from aiio.timing import PolledStop, Window, cpu_seconds
from aiio.units import MiB, format_size, mib_per_s

RANGE_SIZE = 8 * MiB  # bytes per ranged GET


@dataclass
class S3LoadArgs(load.LoadArgs):
    io: ObjectIO | None = None

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.pop("io", None)
        return out

    def ranges(self) -> list[tuple[int, int, int]]:
        """(file, offset, length) of every ranged GET of one replica."""
        return [(f, off, min(RANGE_SIZE, size - off)) for f, size in enumerate(self.sizes)
                for off in range(0, size, RANGE_SIZE)]


def ensure_weights(rc: RunContext, io: ObjectIO, total: int) -> tuple[str, bool]:
    """Reuse matching weight objects, or PUT them; returns (key prefix, reused)."""
    w, tgt = rc.workload, rc.target
    # every block carries its crc32c, as a mount's weights do, so --verify can check them;
    # weights uploaded before that (tagged by index, no checksums) do not match and are redone
    params = {**load._params(w, total), "blocks": "checksummed"}
    base = tgt.loc.own_key("models", f"{params['model']}-{total}B-{w.load.files}f-"
                                     f"s{w.run.seed}")
    try:
        got = io.client.get_object(Bucket=tgt.loc.bucket, Key=f"{base}/manifest.json")
        if json.loads(got["Body"].read()).get("params") == params:
            return base, True
    except io.client.exceptions.NoSuchKey:
        pass
    names, sizes = load._names(w.load.files), split_sizes(total, w.load.files)
    check_parts(max(sizes), w.s3.part_size, "a weight object")
    tgt.claim()
    tgt.delete([o["Key"] for o in tgt.objects() if o["Key"].startswith(base + "/")])
    rc.note(f"uploading model weights: {format_size(total)} in {w.load.files} object(s)")
    writers = [ObjectWriter(io, w.s3.part_size, OpLog(0), seed=params["seed"] + i,
                            checksum=True) for i in range(min(4, len(names)))]

    def work(wr: ObjectWriter, f: int) -> None:
        wr.write_object(f"{base}/{names[f]}", sizes[f], blocks.file_tag(params["seed"], names[f]))

    try:
        run_parallel(range(len(names)), writers, work)
    finally:
        for wr in writers:
            wr.close()
    io.client.put_object(Bucket=tgt.loc.bucket, Key=f"{base}/manifest.json",
                         Body=json.dumps({"params": params, "complete": True}).encode())
    return base, False


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """One replica: wait for its (staggered) start, GET every range of every weight object."""
    a: S3LoadArgs = ctx.args
    items = a.ranges()
    readers = [a.io.reader(a.method, a.transfer_size, OpLog(0), ctx.add_bytes)
               for _ in range(min(a.threads, len(items)))]
    checkers = {id(rd): blocks.Verifier() for rd in readers}
    for rd in readers:
        rd.stop = PolledStop(ctx.stop)

    def work(rd: Any, item: tuple[int, int, int]) -> None:
        f, off, length = item
        if a.checksum:
            key, tag, verifier = a.path(f), a.tag(f), checkers[id(rd)]
            rd.check = lambda view, n, pos: verifier.check(view, n, key, tag, pos)
        got = rd.read_file(a.path(f), off, length)
        if got != length and not ctx.stop.is_set():
            raise RunFailed(f"loading read {got} of the {length} bytes at {off} of {a.path(f)}")

    start_ns = ctx.ready_and_wait()
    cpu0 = cpu_seconds()
    if ctx.index * a.stagger_s > 0:
        ctx.stop.wait(ctx.index * a.stagger_s)
    own = Window()  # this replica's own (staggered) start
    logs = run_parallel(items, readers, work, start_ns)
    own.close()
    ctx.add_units(len(a.names))
    out = client_identity(ctx.index)
    out.update(client_io_figures(logs, start_ns, own.end_ns, main_op="read"))
    load_s = own.elapsed_s
    out.update(start_s=(own.start_ns - start_ns) / 1e9, load_s=load_s,
               mib_s=mib_per_s(out["bytes"], load_s), cpu_s=cpu_seconds() - cpu0,
               requests=len(items), requests_per_s=len(items) / load_s if load_s else 0.0,
               s3=a.io.counts.to_dict())
    if a.checksum:
        merged = blocks.Verifier()
        for v in checkers.values():
            merged.merge(v)
        out.update(verify=merged.to_dict(), verify_s=merged.seconds)
    return out


class S3LoadPhase(load.LoadPhase):
    object_store = True
    client = staticmethod(run_client)

    def prepare(self, rc: RunContext) -> S3LoadArgs:
        w, tgt = rc.workload, rc.target
        total, base, source = load.weight_bytes(w)
        io = ObjectIO(tgt.access, tgt.loc.bucket, w.load.threads)
        prefix, reused = ensure_weights(rc, ObjectIO(tgt.access, tgt.loc.bucket, 4), total)
        if reused:
            rc.note(f"reusing model weights in s3://{tgt.loc.bucket}/{prefix}/")
        return S3LoadArgs(prefix, load._names(w.load.files), split_sizes(total, w.load.files),
                          total, base, w.load.scale, source, rc.method, w.load.threads,
                          w.load.transfer_size, w.load.stagger, w.run.seed,
                          rc.options.verify, reused, io)

    def summarize(self, rc: RunContext, a: S3LoadArgs, clients: list[dict]) -> dict[str, Any]:
        agg = super().summarize(rc, a, clients)
        agg.update(s3_aggregate(clients))
        return agg

    def warnings(self, rc: RunContext, a: S3LoadArgs, out: dict[str, Any]) -> list[dict]:
        return (request_warnings(out["aggregate"])
                + reread_warning(out["aggregate"]["bytes"], a.total_bytes))


PHASE = S3LoadPhase()
