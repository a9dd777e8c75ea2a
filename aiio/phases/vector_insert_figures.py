"""The insert stream's figures (docs/METHOD.md, "Vector search: inserts and merges"): one
client's, from its insert log's calls, its in-memory index's instants, its merges and its
queries' spans; and the run's, built as the one class every reader reads back
(aiio.results.inserts.InsertFigures). Latencies are mergeable Histograms; the rest add up over
clients. An insert log that cannot keep up is judged as queries are (aiio.phases.steadiness),
in inserts: each by the tenth of the run it arrived in, from arrival to durable."""

from __future__ import annotations

from typing import Any

import numpy as np

from aiio.phases import rates
from aiio.phases import vector_figures as vf
from aiio.phases.steadiness import SliceLog, verdict
from aiio.phases.vector_board import OPEN, met_a_merge
from aiio.phases.vector_inserts import Fresh, InsertLog
from aiio.phases.vector_merge import Merger
from aiio.results.inserts import InsertFigures, MergeFigures
from aiio.results.vector import Quantiles
from aiio.stats import Histogram

HISTOGRAMS = ("durable", "fresh", "fresh_at_least", "query_merging", "query_calm", "log_write",
              "log_fsync")
SUMS = ("arrived", "done", "done_in_duration", "written", "log_bytes", "log_writes",
        "log_syncs", "vector_bytes", "unmerged", "waiting_sum", "unserved")


def client_inserts(log: InsertLog, fresh: Fresh, merger: Merger, left: np.ndarray,
                   queries: np.ndarray, start_ns: int, end_ns: int, duration_s: float,
                   vector_len: int) -> dict[str, Any]:
    """One client's insert figures. `left`: arrivals no insert began (ns); `queries`: rows of
    (arrival, begun, done) ns of the client's queries."""
    n = fresh.count
    arrival = np.array(fresh.arrival_ns[:n], np.int64)
    begun = np.array(fresh.begun_ns[:n], np.int64)
    durable = np.array(fresh.durable_ns[:n], np.int64)
    done = durable > 0
    hist = {name: Histogram() for name in HISTOGRAMS}
    hist["durable"].record_many(durable[done] - arrival[done])
    merged = np.array(fresh.merged_ns, np.int64)
    hist["fresh"].record_many(merged - arrival[:len(merged)])
    # an insert not merged is censored: fresh no sooner than the window's end
    hist["fresh_at_least"].record_many(np.concatenate([merged - arrival[:len(merged)],
                                                       end_ns - arrival[len(merged):]]))
    _split_queries(queries, merger, hist)
    log.writer.log.flush()
    for op, name in (("write", "log_write"), ("fsync", "log_fsync")):
        if op in log.writer.log.hist:
            hist[name] = log.writer.log.hist[op]
    w_sum, w_max = vf.waiting(np.concatenate([arrival, left]) - start_ns,
                              np.concatenate([begun - start_ns,
                                              np.full(len(left), np.iinfo(np.int64).max)]))
    rows = (np.column_stack([arrival, begun, durable])[done] - start_ns) / 1e9
    slices = vf.slice_log(duration_s, rows, (left - start_ns) / 1e9, (end_ns - start_ns) / 1e9)
    return {"arrived": n + len(left), "done": int(done.sum()),
            "done_in_duration": rates.count_within(durable[done], start_ns, duration_s),
            "written": log.written,
            "record_size": log.record, "log_bytes": log.writer.log.nbytes,
            "log_writes": hist["log_write"].count, "log_syncs": hist["log_fsync"].count,
            "vector_bytes": int(done.sum()) * vector_len, "unmerged": n - fresh.merged,
            "waiting_sum": w_sum, "waiting_max": w_max, "unserved": len(left),
            "merges": [r.to_dict(start_ns) for r in merger.records],
            "histograms": {k: h.to_dict() for k, h in hist.items()},
            "steadiness": slices.slices_dict()}


def _split_queries(queries: np.ndarray, merger: Merger, hist: dict[str, Histogram]) -> None:
    """Each query's latency, into those whose span (arrival to done) met a merge of any
    client on the host (the board; its own client's too) and those that met none."""
    board = merger.ia.board  # every merge of the host, the client's own among them
    windows = board.windows() if board is not None else np.array(
        [(r.start_ns, r.end_ns or OPEN) for r in merger.records], np.int64).reshape(-1, 2)
    during = met_a_merge(queries, windows)
    latency = queries[:, 2] - queries[:, 0]
    hist["query_merging"].record_many(latency[during])
    hist["query_calm"].record_many(latency[~during])


def summarize(clients: list[dict[str, Any]], rate: float, window_s: float) -> InsertFigures:
    """The run's insert figures from each client's `inserts`; `window_s`: what the rate
    divides by (aiio.phases.rates.window), the queries' own."""
    ins = [c["inserts"] for c in clients]
    total = {k: sum(c[k] for c in ins) for k in SUMS}
    hist = {k: Histogram() for k in HISTOGRAMS}
    slices = SliceLog(ins[0]["steadiness"]["duration_s"])
    for c in ins:
        for k in HISTOGRAMS:
            hist[k].merge(Histogram.from_dict(c["histograms"][k]))
        slices.merge_slices(vf.slices_of(c["steadiness"]))
    merges = tuple(MergeFigures.from_dict({"client": cl["client"], **m})
                   for cl, c in zip(clients, ins, strict=True) for m in c["merges"])
    read = sum(m.read_bytes or 0 for m in merges)
    written = sum(m.write_bytes or 0 for m in merges)
    span = sum(m.duration_s or 0.0 for m in merges)
    return InsertFigures(
        offered_per_s=rate * len(clients), arrived=total["arrived"], done=total["done"],
        done_in_duration=total["done_in_duration"],
        done_per_s=rates.per_s(total["done_in_duration"], window_s), rate_window_s=window_s,
        durable_ms=Quantiles.of(hist["durable"]), record_size=ins[0]["record_size"],
        log_bytes=total["log_bytes"], log_syncs=total["log_syncs"],
        merges=sum(m.done for m in merges), merges_cut=sum(not m.done for m in merges),
        merge_list=merges, merge_read_bytes=read, merge_write_bytes=written,
        merge_cpu_share=sum(m.cpu_s or 0.0 for m in merges) / span if span else None,
        write_amplification=(total["log_bytes"] + written) / total["vector_bytes"]
        if total["vector_bytes"] else None,  # no vector inserted: no ratio
        query_p99_merging_ms=Quantiles.of(hist["query_merging"]).p99,
        queries_merging=hist["query_merging"].count,
        query_p99_calm_ms=Quantiles.of(hist["query_calm"]).p99,
        queries_calm=hist["query_calm"].count, fresh_ms=Quantiles.of(hist["fresh"]),
        fresh_at_least_ms=Quantiles.of(hist["fresh_at_least"]),
        unmerged=total["unmerged"],
        waiting_mean=total["waiting_sum"] / max(1, total["arrived"]),
        waiting_max=max(c["waiting_max"] for c in ins), unserved=total["unserved"],
        verdict=verdict(slices.slices, slices.waiting_s, total["unserved"], total["done"],
                        len(ins), slices.duration_s, queued=True, noun="insert",
                        nouns="inserts"))
