"""What MLPerf Storage's validator would say of a run at submission, said on the host that ran
it: the workload-defining settings and their key (MLPerf's comparability key), whether they
are the CLOSED division's, O_DIRECT in effect (not only asked for), data and results on
different filesystems, and the checkpoint's reads kept off the page cache. Nothing here
measures; the filesystem checks stat the folders the run named."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiio.document import dig
from aiio.results.beside import MonitorFigures
from aiio.results.parts import (
    TargetInfo,
    as_result,
    host_ram_bytes,
    read_bytes,
    restore_gap_s,
    written_bytes,
)
from aiio.results.result import Result
from aiio.units import GiB, format_size

# MLPerf Storage v3.0's CLOSED workloads: unet3d and retinanet on b200 and mi355, the four
# llama3 checkpoints (the others aiio ships are its own: demo, dlrm, prep...)
MLPERF_WORKLOADS = ("unet3d-b200", "retinanet-b200", "retinanet-mi355", "llama3-8b",
                    "llama3-70b", "llama3-405b", "llama3-1t")
# v2.0's training workloads (a100, h100): v3.0 runs them as what-if figures, never CLOSED
V2_WORKLOADS = ("unet3d", "resnet50", "cosmoflow")
# The keys a CLOSED submission may not change. Its validator lets only the dataset's size and
# folders, the reader's threads, transfer and prefetch sizes, O_DIRECT and the storage change
# (and the accelerator count is the answer): aiio's dataset.num_files, files_per_dir,
# train.read_threads, transfer_size, prefetch, the cache method, [run] are left out.
DEFINING = {
    "train": (("dataset", "format"), ("dataset", "samples_per_file"),
              ("dataset", "sample_size"), ("dataset", "sample_size_stdev"),
              ("train", "accelerator"), ("train", "batch_size"), ("train", "epochs"),
              ("train", "duration"),  # MLPerf runs its epochs to the end, never to a clock
              ("train", "au_goal"), ("train", "shuffle")),
    "checkpoint": (("model", "parameters"), ("model", "bytes_per_parameter"),
                   ("model", "ranks"), ("checkpoint", "size"), ("checkpoint", "scale")),
}
# A checkpoint's whole [transformer] shape is its layout: every key defines it.
SHAPE_SECTION = "transformer"
# The cause found in a run's warnings that O_DIRECT was not what kept reads off a cache
CACHE_WARNINGS = ("device_saw_fewer_bytes", "device_saw_fewer_writes", "unconfirmed_bytes")


def mlperf_settings(workload: Mapping[str, Any], phase: str) -> tuple[str, dict[str, Any]]:
    """(the key, the settings it hashes): the workload-defining values as dotted names."""
    found: dict[str, Any] = {}
    for section, name in DEFINING[phase]:
        found[f"{section}.{name}"] = (workload.get(section) or {}).get(name)
    if phase == "train":  # the compute time of the accelerator emulated, not the others'
        t = workload.get("train") or {}
        found["train.compute_time"] = (t.get("compute_time") or {}).get(t.get("accelerator"))
    else:
        for name, value in sorted((workload.get(SHAPE_SECTION) or {}).items()):
            found[f"{SHAPE_SECTION}.{name}"] = value
    text = json.dumps(found, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:8], found


def settings(res: Mapping[str, Any], phase: str) -> dict[str, Any]:
    """The run's MLPerf key and the values it holds, beside aiio's own settings key."""
    from aiio.results.history import key_of

    key, found = mlperf_settings(res["workload"], phase)
    return {"mlperf_key": key, "defining": found, "aiio_key": key_of(res)}


def closed_check(workload: Mapping[str, Any], phase: str) -> dict[str, Any]:
    """The workload-defining values are those of the MLPerf workload of the same name."""
    from aiio.workload import load_workload

    name = (workload.get("workload") or {}).get("name")
    if name in V2_WORKLOADS:
        return _check("closed", False, f"{name} is MLPerf Storage v2.0's (a100, h100); v3.0's "
                      "CLOSED division trains unet3d and retinanet on b200 and mi355")
    if name not in MLPERF_WORKLOADS:
        return _check("closed", False, f"{name} is not an MLPerf Storage workload")
    _, shipped = mlperf_settings(load_workload(name).to_dict(), phase)
    _, ran = mlperf_settings(workload, phase)
    changed = [f"{k} {shipped[k]} -> {ran[k]}" for k in shipped if ran.get(k) != shipped[k]]
    return _check("closed", not changed, "changed: " + "; ".join(changed) if changed
                  else f"{name} as MLPerf defines it")


def o_direct_check(res: Result | Mapping[str, Any]) -> dict[str, Any]:
    """O_DIRECT asked for, taken by a filesystem that is not memory, and the storage's bytes
    confirmed where a block device can: the flag alone proves nothing on tmpfs or FUSE."""
    run = as_result(res)
    target = TargetInfo.of(run)
    if target.in_bucket:
        return _check("o_direct", True, f"objects from a bucket ({run.method}): every GET "
                      "reaches the server, no client page cache to bypass")
    if run.method != "o_direct":
        return _check("o_direct", False, f"method {run.method}: O_DIRECT was not used")
    if target.memory_backed:
        return _check("o_direct", False, f"O_DIRECT taken by {target.fstype}, which "
                      "lives in memory: no storage read these bytes")
    codes = {w.code: w.message for w in run.warnings}
    for code in CACHE_WARNINGS:
        if code in codes:
            return _check("o_direct", False, f"O_DIRECT set, but {codes[code]}")
    monitor, moved = MonitorFigures.of(run), read_bytes(run)
    if monitor and monitor.device and monitor.device_read_bytes is not None and moved:
        # the device's count is the machine's: other work only adds
        return _check("o_direct", True, f"O_DIRECT on {target.fstype}; block device "
                      f"{monitor.device} read {format_size(monitor.device_read_bytes)} while "
                      f"the clients read {format_size(moved)}")
    return _check("o_direct", True, f"O_DIRECT on {target.fstype}; no block device "
                  "counted the bytes")


def apart_check(data: str, results: str) -> dict[str, Any]:
    """Data and results on different filesystems (by device, not by mount point: a bind
    mount is a mount point on the same filesystem); a bucket is apart from any folder."""
    if "://" in data:
        return _check("results_apart_from_data", True, f"data in {data}, results in a folder")
    there, here = _device(data), _device(results)
    apart = there is None or here is None or there != here
    return _check("results_apart_from_data", apart,
                  f"data on device {_dev_text(there)}, results on device {_dev_text(here)}")


def per_host_check(res: Result | Mapping[str, Any]) -> dict[str, Any]:
    """Every client host emulated as many accelerators (MLPerf's validator refuses a
    distributed run whose count is not the same on every node)."""
    counts = [h.clients or 0 for h in as_result(res).hosts]
    same = len(set(counts)) <= 1
    shown = ", ".join(map(str, counts)) or "no host recorded"
    return _check("accelerators_per_host", same,
                  f"{shown} on {len(counts)} host(s)" + ("" if same else
                  ": MLPerf asks the same count on every host"))


def processes_check(res: Result | Mapping[str, Any]) -> dict[str, Any]:
    """One process a rank of the model's layout: MLPerf's CLOSED checkpointing runs every
    rank (or its 8-process subset, which writes only those ranks' files; aiio does not)."""
    run = as_result(res)
    ranks = dig(run.doc, "workload", "model", "ranks", default=0) or 0
    processes = len(run.clients)
    ok = processes == ranks
    return _check("processes", ok, f"{processes} process(es) wrote the files of {ranks} ranks"
                  + ("" if ok else f": MLPerf runs one process a rank ({ranks})"))


def restore_cache_check(res: Result | Mapping[str, Any]) -> dict[str, Any]:
    """MLPerf clears the caches between writes and reads when a client host wrote under 3 x
    its memory; aiio reads back with the page cache defeated by its method instead (a
    bucket's objects have none on the client)."""
    run = as_result(res)
    ram = max(host_ram_bytes(run), default=0)
    per_host = written_bytes(run) / max(1, len(run.hosts))
    ok = run.method == "o_direct" or TargetInfo.of(run).in_bucket or per_host >= 3 * ram
    return _check("restore_not_from_cache", ok,
                  f"method {run.method}, {per_host / GiB:.2f} GiB written per host of "
                  f"{ram / GiB:.1f} GiB memory")


def restore_gap_check(res: Result | Mapping[str, Any], within_s: float = 30.0) -> dict[str, Any]:
    """The reads start within 30 s of the writes' end."""
    gap = restore_gap_s(as_result(res))
    ok = gap is not None and gap < within_s
    return _check("read_within_30_s", ok, "no read measured" if gap is None
                  else f"reads began {gap:.1f} s after the writes' end")


def _device(path: str) -> int | None:
    """The device id of the filesystem a path (or its nearest existing parent) is on."""
    p = Path(path).resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return os.stat(p).st_dev
    except OSError:
        return None


def _dev_text(dev: int | None) -> str:
    return "unknown" if dev is None else f"{os.major(dev)}:{os.minor(dev)}"


def _check(name: str, ok: bool, value: str) -> dict[str, Any]:
    return {"check": name, "ok": ok, "value": value}
