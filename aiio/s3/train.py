"""Training against a bucket: the mount's train phase (batches, loader threads, emulated
accelerator, AU) with each sample range fetched by one GET, whole-object or ranged, and
checkpoints during training PUT as shard objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiio.errors import ConfigError
from aiio.options import RunOptions
from aiio.phases import train_checkpoints
from aiio.phases.base import RunContext
from aiio.phases.train import TrainArgs, TrainPhase, run_client
from aiio.s3 import dataset as s3ds
from aiio.s3.objectio import ObjectIO
from aiio.s3.shards import object_plan, remove
from aiio.stats import Histogram
from aiio.workload import Workload


@dataclass
class S3TrainArgs(TrainArgs):
    io: ObjectIO | None = None


def request_figures(out: dict[str, Any], io: ObjectIO) -> dict[str, Any]:
    """Per client: GET requests, requests/s, and what the SDK did behind them."""
    hist = out["histograms"].get("get")
    requests = Histogram.from_dict(hist).summary()["count"] if hist else 0
    elapsed = out["elapsed_s"]
    return {"requests": requests, "requests_per_s": requests / elapsed if elapsed else 0.0,
            "s3": io.counts.to_dict()}


def run_s3_client(ctx: Any) -> dict[str, Any]:
    # The loader threads make their readers while this thread reports ready; the client and
    # its first request are made here, so they finish before the start instant.
    ctx.args.io.client  # noqa: B018
    out = run_client(ctx)
    out.update(request_figures(out, ctx.args.io))
    return out


def s3_aggregate(clients: list[dict]) -> dict[str, Any]:
    """Requests and the SDK's retries and throttling answers, summed over the clients."""
    elapsed = max((c["elapsed_s"] for c in clients), default=0.0)
    requests = sum(c.get("requests", 0) for c in clients)
    sums = {k: sum(c.get("s3", {}).get(k, 0) for c in clients)
            for k in ("calls", "attempts", "retries", "throttled")}
    return {"requests": requests, "requests_per_s": requests / elapsed if elapsed else 0.0,
            "s3": {**sums, "retries_per_client": [c.get("s3", {}).get("retries", 0)
                                                   for c in clients],
                   "throttled_per_client": [c.get("s3", {}).get("throttled", 0)
                                            for c in clients]}}


def request_warnings(agg: dict[str, Any]) -> list[dict[str, str]]:
    s3 = agg.get("s3", {})
    if not s3.get("retries") and not s3.get("throttled"):
        return []
    return [{"code": "s3_retries", "message": (
        f"the S3 client retried {s3['retries']} request(s) and got {s3['throttled']} "
        "throttling answer(s) (503 SlowDown or similar): the service pushed back, and the "
        "time spent retrying is inside the figures")}]


def reread_warning(read_bytes: int, stored_bytes: int) -> list[dict[str, str]]:
    """An object read twice in one run may come from the server's own cache."""
    if read_bytes <= stored_bytes:
        return []
    return [{"code": "object_reread", "message": (
        f"objects were read again within this run ({read_bytes / max(stored_bytes, 1):.1f}x "
        "the stored bytes): the S3 service may have served the repeats from its own cache")}]


class S3TrainPhase(TrainPhase):
    object_store = True
    client = staticmethod(run_s3_client)

    def validate(self, w: Workload, options: RunOptions) -> None:
        super().validate(w, options)
        if w.train.reader == "native":
            raise ConfigError("--reader native reads files through format libraries; s3:// "
                              "targets are read with GET requests (--reader raw)")

    def prepare(self, rc: RunContext) -> S3TrainArgs:
        w, tgt = rc.workload, rc.target
        progress = None
        if rc.progress:
            def progress(files: int, nbytes: int) -> None:
                rc.progress("uploading dataset", files, w.dataset.num_files)
        upload = ObjectIO(tgt.access, tgt.loc.bucket, s3ds.UPLOAD_STREAMS)
        data = s3ds.ensure(tgt, upload, w, progress, rc.note)
        data.index()  # load before the fork so clients share one copy of it
        io = ObjectIO(tgt.access, tgt.loc.bucket, w.train.read_threads, data.sizes())
        checkpoints = train_checkpoints.plan(rc, data.num_samples,
                                             lambda rc, base, copies: object_plan(rc, base))
        return S3TrainArgs(w, data, rc.method, w.compute_time,
                           None if w.train.duration > 0 else w.train.epochs, w.train.duration,
                           checkpoints, io.reader, io)

    def summarize(self, rc: RunContext, args: S3TrainArgs, clients: list[dict]) -> dict:
        agg = super().summarize(rc, args, clients)
        agg.update(s3_aggregate(clients))
        # the part size the dataset was uploaded with (a reused dataset keeps its own)
        agg["s3"]["dataset_part_size"] = args.dataset.manifest.get("part_size")
        if args.checkpoint is not None:
            agg["s3"]["checkpoint_part_size"] = args.checkpoint.part_size
        return agg

    def warnings(self, rc: RunContext, args: S3TrainArgs, out: dict[str, Any]) -> list[dict]:
        return (super().warnings(rc, args, out) + request_warnings(out["aggregate"])
                + reread_warning(out["aggregate"]["bytes"], args.dataset.total_bytes))

    def cleanup(self, rc: RunContext, args: S3TrainArgs | None, status: str) -> None:
        """The dataset's objects stay for reuse (only the local copy of its index goes); the
        checkpoints written during training go."""
        if args is not None:
            args.dataset.discard_local()
            if args.checkpoint is not None:
                remove(rc, args.checkpoint)


PHASE = S3TrainPhase()
