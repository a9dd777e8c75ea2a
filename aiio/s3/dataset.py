"""Datasets as objects: the same files (formats, seeds, sizes) as on a mount, PUT below
`<prefix>/aiio/datasets/<workload>/`, with index.npz and manifest.json (the manifest last, so
a dataset whose upload stopped is never taken as complete)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from aiio.engines.seam import OpLog, merge_logs
from aiio.engines.timing import Window
from aiio.errors import RunFailed
from aiio.phases.threads import result
from aiio.run.wallclock import now_iso
from aiio.s3.objectio import ObjectIO, check_parts
from aiio.storage import dataset as ds
from aiio.storage import formats

if TYPE_CHECKING:
    from aiio.s3.target import S3Target

UPLOAD_STREAMS = 8
QUEUED = 4 * UPLOAD_STREAMS  # uploads queued ahead of the ones in flight, no more


class S3Dataset(ds.Dataset):
    """A dataset whose files are objects; `folder` is a local copy of its index only."""

    def __init__(self, folder: Path, params: ds.DatasetParams, manifest: dict,
                 base: str) -> None:
        super().__init__(folder, params, manifest)
        self.base = base  # key prefix of the dataset's objects

    def path(self, i: int) -> str:
        """The object key of file i."""
        return f"{self.base}/{self.params.relpath(i)}"

    def sizes(self) -> dict[str, int]:
        """key -> object size, for every file."""
        return {self.path(i): int(s) for i, s in enumerate(self.index()["file_sizes"])}

    def discard_local(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def base_key(target: S3Target, params: ds.DatasetParams) -> str:
    return target.loc.own_key("datasets", params.workload)


def check(target: S3Target, io: ObjectIO, w: Any) -> tuple[S3Dataset | None, str]:
    """(dataset, '') when a complete, matching dataset is in the bucket, else (None, why)."""
    params = ds.DatasetParams.from_workload(w)
    ds._check_layout(params)  # before any request or note: neither could be used
    base = base_key(target, params)
    try:
        got = io.client.get_object(Bucket=target.loc.bucket, Key=f"{base}/manifest.json")
        manifest = json.loads(got["Body"].read())
    except io.client.exceptions.NoSuchKey:
        return None, "no dataset yet"
    if manifest.get("params") != asdict(params):
        return None, "the dataset there was made with other parameters"
    folder = Path(tempfile.mkdtemp(prefix="aiio-s3-index-"))
    io.client.download_file(target.loc.bucket, f"{base}/index.npz", str(folder / "index.npz"))
    return S3Dataset(folder, params, manifest, base), ""


def generate(target: S3Target, io: ObjectIO, w: Any,
             progress: Callable[[int, int], None] | None = None) -> tuple[S3Dataset, dict]:
    """PUT every file (multipart above the part size), then the index, then the manifest.
    Returns the dataset and the upload's figures (bytes, seconds, per-op latency)."""
    params = ds.DatasetParams.from_workload(w)
    base = base_key(target, params)
    part_size = w.s3.part_size
    ds._check_layout(params)  # the index a mount could not hold, the bucket cannot either
    # sample sizes are clipped at mean + 2 sd; each upload checks its real size again
    check_parts(params.samples_per_file * (params.sample_size + 2 * params.sample_size_stdev),
                part_size, "a dataset file")
    target.claim()
    _remove_old(target, base)
    stage = Path(tempfile.mkdtemp(prefix="aiio-s3-stage-"))
    sizes = np.zeros(params.num_files, dtype=np.int64)
    ranges: list[np.ndarray | None] = [None] * params.num_files
    logs = [OpLog(start_ns=Window().start_ns) for _ in range(UPLOAD_STREAMS)]
    generating = Window()
    try:
        def upload(i: int) -> None:
            path = stage / f"{i}.part"
            fmt = formats.get_format(params.format)
            got = fmt.write(path, params.sample_sizes(i).tolist(), params.file_seed(i))
            sizes[i] = io.put_file(f"{base}/{params.relpath(i)}", str(path),
                                   logs[i % UPLOAD_STREAMS], part_size)
            if not params.regular:
                ranges[i] = np.asarray(got, np.int64)
            path.unlink()

        pool = ThreadPoolExecutor(UPLOAD_STREAMS)
        try:
            uploaded = 0  # summed as files end: the whole array each time cost O(files)
            for n in _in_order(pool, upload, params.num_files, QUEUED):
                uploaded += int(sizes[n - 1])
                if progress:
                    progress(n, uploaded)
        finally:
            # a Ctrl-C or SIGTERM: the uploads in flight end, the queued ones never start
            pool.shutdown(wait=True, cancel_futures=True)
        ds._write_index(stage, params, sizes, ranges)
        io.client.upload_file(str(stage / "index.npz"), target.loc.bucket, f"{base}/index.npz")
        manifest = {"schema": ds.SCHEMA, "params": asdict(params), "complete": True,
                    "total_bytes": int(sizes.sum()), "num_files": params.num_files,
                    "num_samples": params.num_files * params.samples_per_file,
                    "part_size": part_size,
                    "generated_s": round(generating.since_start_s(generating.lap()), 3),
                    "created": now_iso()}
        io.client.put_object(Bucket=target.loc.bucket, Key=f"{base}/manifest.json",
                             Body=(json.dumps(manifest, indent=1) + "\n").encode())
    except BaseException as exc:
        shutil.rmtree(stage, ignore_errors=True)
        _remove_old(target, base)
        if isinstance(exc, Exception) and not isinstance(exc, RunFailed):
            raise RunFailed(f"dataset upload failed: {exc}; partial objects removed") from exc
        raise
    generating.close()
    return S3Dataset(stage, params, manifest, base), _upload_figures(logs, generating.elapsed_s)


def _in_order(pool: ThreadPoolExecutor, fn: Callable[[int], None], count: int,
              ahead: int) -> Iterator[int]:
    """fn(0) .. fn(count - 1) on the pool, at most `ahead` queued at a time; yields how many
    have ended, in order. `pool.map` queued all of them at once: ten million files took
    gigabytes and minutes before the first was counted, and a signal meanwhile left them all
    queued, to be uploaded before the command could end."""
    pending: deque[Future] = deque()
    done = queued = 0
    while done < count:
        while queued < count and len(pending) < ahead:
            pending.append(pool.submit(fn, queued))
            queued += 1
        result(pending.popleft())  # wakes for a signal's handler (aiio.phases.threads)
        done += 1
        yield done


def _upload_figures(logs: list[OpLog], seconds: float) -> dict:
    hist, _series, ops, nbytes = merge_logs(logs)
    return {"bytes": nbytes, "seconds": round(seconds, 3),
            "mib_s": nbytes / 2**20 / seconds if seconds else 0.0,
            "latency": {op: h.summary() for op, h in hist.items()}}


def _remove_old(target: S3Target, base: str) -> None:
    keys = [o["Key"] for o in target.objects() if o["Key"].startswith(base + "/")]
    target.delete(keys)


def ensure(target: S3Target, io: ObjectIO, w: Any,
           progress: Callable[[int, int], None] | None = None,
           note: Callable[[str], None] | None = None) -> S3Dataset:
    """Reuse a matching dataset in the bucket, or upload one."""
    dataset, why = check(target, io, w)
    if dataset is not None:
        return dataset
    if note:
        note(f"uploading dataset {w.name}: {why}")
    return generate(target, io, w, progress)[0]


def ensure_for_run(rc: Any) -> S3Dataset:
    """The run's dataset in the bucket (reused, or uploaded with a progress bar), its index
    loaded before the fork; the run's engine then GETs each whole object without a Range."""
    w, tgt = rc.workload, rc.target
    progress = None
    if rc.progress:
        def progress(files: int, nbytes: int) -> None:
            rc.progress("uploading dataset", files, w.dataset.num_files)
    upload = ObjectIO(tgt.access, tgt.loc.bucket, UPLOAD_STREAMS)
    data = ensure(tgt, upload, w, progress, rc.note)
    rc.engine.sizes.update(data.sizes())
    return data
