"""What every phase shares: the parent-side run context and the per-client I/O summary."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiio import dataset as ds
from aiio import stats
from aiio.engine import OpLog, merge_logs
from aiio.options import RunOptions
from aiio.ranks import THIS_HOST, Ranks
from aiio.stats import ByteSeries, Histogram
from aiio.target import Target, TargetInfo
from aiio.units import mib_per_s
from aiio.workload import Workload


@dataclass
class RunContext:
    """Everything a phase needs in the parent process to prepare and summarize a run."""

    workload: Workload
    target: Target
    info: TargetInfo
    method: str
    clients: int
    options: RunOptions = RunOptions()
    note: Callable[[str], None] = print
    progress: Callable[[str, int, int], None] | None = None  # (label, done, total)
    ranks: Ranks = THIS_HOST  # the hosts a dataset is written from (aiio.comm's world)


def ensure_dataset(rc: RunContext) -> ds.Dataset:
    """The run's dataset, reused when it matches, else generated with a progress bar."""
    w = rc.workload
    progress = None
    if rc.progress:
        def progress(files: int, nbytes: int) -> None:
            rc.progress("generating dataset", files, w.dataset.num_files)
    data, _ = ds.ensure(rc.target, w, progress=progress, note=rc.note, ranks=rc.ranks)
    return data


def client_io_figures(logs: list[OpLog], start_ns: int, end_ns: int,
                      prefix: str = "", main_op: str | None = None) -> dict[str, Any]:
    """One client's bytes, ops, MiB/s, latency summary (of main_op), histograms and series."""
    hist, series, ops, nbytes = merge_logs(logs)
    elapsed = (end_ns - start_ns) / 1e9
    if main_op is None:
        main_op = "read" if "read" in hist else next(iter(hist), "read")
    lat = hist.get(main_op, Histogram()).summary()
    return {
        f"{prefix}bytes": nbytes, f"{prefix}ops": ops,
        f"{prefix}elapsed_s": elapsed, f"{prefix}mib_s": mib_per_s(nbytes, elapsed),
        f"{prefix}latency": lat,
        f"{prefix}histograms": {op: h.to_dict() for op, h in hist.items()},
        f"{prefix}series": series.to_dict(),
    }


def client_identity(index: int) -> dict[str, Any]:
    return {"client": index, "host": socket.gethostname(), "pid": os.getpid()}


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def io_aggregate(clients: list[dict], prefix: str = "") -> dict[str, Any]:
    """Aggregates over every client: first done, last done, spread, fairness, latency."""
    series = [ByteSeries.from_dict(c[f"{prefix}series"]) for c in clients]
    ends = [c[f"{prefix}elapsed_s"] for c in clients]
    per_client = [c[f"{prefix}mib_s"] for c in clients]
    hist: dict[str, Histogram] = {}
    for c in clients:
        for op, d in c[f"{prefix}histograms"].items():
            hist.setdefault(op, Histogram()).merge(Histogram.from_dict(d))
    total = ByteSeries()
    for s in series:
        total.merge(s)
    return {
        "first_done": stats.first_done(series, ends),
        "last_done": stats.last_done(series, ends),
        "per_client_mib_s": stats.spread(per_client),
        "jain": stats.jain(per_client) if any(per_client) else 0.0,
        "latency": {op: h.summary() for op, h in hist.items()},
        "histograms": {op: h.to_dict() for op, h in hist.items()},
        "series_mib_s": total.per_second(max(ends) if ends else None),
        "bytes": sum(c[f"{prefix}bytes"] for c in clients),
        "ops": sum(c[f"{prefix}ops"] for c in clients),
    }

