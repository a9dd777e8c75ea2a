"""Latency: percentiles and a histogram per operation type, for every kind of I/O in the run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiio.report import html as h
from aiio.report import series as sr
from aiio.report.parts import histogram_sets
from aiio.results import charts
from aiio.results.markup import Html

DATA_OPS = ("read", "write")
MAX_CHARTS = 12  # beyond this the table still lists every operation


def latency_section(res: Mapping[str, Any]) -> Html:
    sets = {place: ops for place, ops in histogram_sets(res).items()
            if any(x.count for x in ops.values())}
    if not sets:
        return h.section("Latency", h.notice("warn", "No latency histogram in this result."),
                         anchor="latency")
    headers = ["operation", "count", "min", "mean", "p50", "p90", "p99", "p99.9", "max"]
    rows, figs = [], []
    for place, ops in sets.items():
        # Data operations first, then by how many calls there were.
        for op, hist in sorted(ops.items(), key=lambda t: (t[0] not in DATA_OPS,
                                                          -t[1].count, t[0])):
            if not hist.count:
                continue
            name = f"{place}: {op}" if place else op
            s = hist.summary()
            rows.append([name, h.num(h.number(s["count"]), s["count"])] + [
                h.num(h.latency(s[k]), s[k]) for k in
                ("min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns")])
            if len(figs) < MAX_CHARTS:
                figs.append(charts.latency_histogram(
                    name, sr.octave_bins(hist.nonzero()),
                    {"p50": s["p50_ns"], "p99": s["p99_ns"], "max": s["max_ns"]},
                    caption=f"{name}: {s['count']:,} calls over all clients. Recorded in "
                            "log-linear buckets (64 per power of two, under 1 % error), drawn "
                            "in bins of 1/8 of a power of two."))
    return h.section("Latency", h.table(headers, rows), h.figures(*figs), anchor="latency",
                     note="Merged over every client; each operation is one system call "
                          "(open, read of one transfer, write, fsync, ...).")
