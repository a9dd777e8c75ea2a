"""Model weights kept in a bucket for the load phase: one object per weight file below
`<prefix>/aiio/models/<key>/` and a manifest object, reused by later runs while it matches
(a mount keeps them in a folder under a lock: aiio.phases.load.ensure_weights)."""

from __future__ import annotations

import json
from typing import Any

from aiio.engines import blocks
from aiio.engines.seam import OpLog
from aiio.phases import load
from aiio.phases.rundata import split_sizes
from aiio.phases.threads import run_parallel
from aiio.s3.objectio import ObjectIO, ObjectWriter, check_parts
from aiio.units import format_size

UPLOAD_STREAMS = 4  # weight objects uploaded at once


def ensure_weights(rc: Any, total: int) -> tuple[str, bool]:
    """Reuse matching weight objects, or PUT them; returns (key prefix, reused)."""
    w, tgt = rc.workload, rc.target
    io = ObjectIO(tgt.access, tgt.loc.bucket, UPLOAD_STREAMS)
    # every block carries its crc32c, as a mount's weights do, so --verify can check them;
    # weights uploaded before that (tagged by index, no checksums) do not match and are redone
    params = {**load.weight_params(w, total), "blocks": "checksummed"}
    base = tgt.loc.own_key("models", f"{params['model']}-{total}B-{w.load.files}f-"
                                     f"s{w.run.seed}")
    try:
        got = io.client.get_object(Bucket=tgt.loc.bucket, Key=f"{base}/manifest.json")
        if json.loads(got["Body"].read()).get("params") == params:
            return base, True
    except io.client.exceptions.NoSuchKey:
        pass
    names, sizes = load.weight_names(w.load.files), split_sizes(total, w.load.files)
    check_parts(max(sizes), w.s3.part_size, "a weight object")
    tgt.claim()
    tgt.delete([o["Key"] for o in tgt.objects() if o["Key"].startswith(base + "/")])
    rc.note(f"uploading model weights: {format_size(total)} in {w.load.files} object(s)")
    writers = [ObjectWriter(io, w.s3.part_size, OpLog(0), seed=params["seed"] + i,
                            checksum=True) for i in range(min(UPLOAD_STREAMS, len(names)))]

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
