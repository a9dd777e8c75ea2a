"""A vector search's insert stream (docs/METHOD.md, "Vector search: inserts and merges"), one
class per part: the stream over every client (`InsertFigures`) and each streaming merge
(`MergeFigures`), built by the phase (aiio.phases.vector_insert_figures.summarize),
serialised once (`to_dict`) and read back by every reader (`from_dict`, leniently: a result
saved before a figure was recorded reads it as None).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiio.results.lenient import as_json, count, items, mapping, number
from aiio.results.steadiness import Verdict
from aiio.results.vector import Quantiles


@dataclass(frozen=True)
class MergeFigures:
    """One streaming merge of a client's inserted vectors into a new disk index: its span
    (s from the window's start), the inserts it took, the bytes it moved and their rates, the
    merge thread's CPU time, and whether it was done (durable and switched to) or cut."""

    client: int | None
    start_s: float | None
    duration_s: float | None
    inserts: int | None
    read_bytes: int | None
    write_bytes: int | None
    done: bool
    cpu_s: float | None
    read_mib_per_s: float | None
    write_mib_per_s: float | None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> MergeFigures:
        d = mapping(d)
        return cls(count(d.get("client")), number(d.get("start_s")),
                   number(d.get("duration_s")), count(d.get("inserts")),
                   count(d.get("read_bytes")), count(d.get("write_bytes")), bool(d.get("done")),
                   number(d.get("cpu_s")), number(d.get("read_mib_per_s")),
                   number(d.get("write_mib_per_s")))


@dataclass(frozen=True)
class InsertFigures:
    """The run's insert stream: inserts offered and made durable (`done_per_s` counts those
    durable within the duration over `rate_window_s`; both None in a result from before, whose
    rate divided every insert by the slowest client's window), their log, the streaming
    merges, how fresh the disk index was, and the queries' latency while merges ran and while
    none did."""

    offered_per_s: float | None     # insert_rate x clients
    arrived: int | None
    done: int | None                # durable: their log records' fsync returned
    done_in_duration: int | None
    done_per_s: float | None
    rate_window_s: float | None     # the duration (a run stopped early: its end)
    durable_ms: Quantiles
    record_size: int | None
    log_bytes: int | None
    log_syncs: int | None
    merges: int | None              # done: durable, and the queries switched to it
    merges_cut: int | None          # begun, and the run ended first (their files deleted)
    merge_list: tuple[MergeFigures, ...]  # every merge begun, with its client
    merge_read_bytes: int | None
    merge_write_bytes: int | None
    merge_cpu_share: float | None   # the merge threads' CPU time / their spans (None: no merge)
    write_amplification: float | None  # bytes written (log + merges) per inserted vector byte
    query_p99_merging_ms: float | None
    queries_merging: int | None
    query_p99_calm_ms: float | None
    queries_calm: int | None
    fresh_ms: Quantiles             # arrival to in the disk index: the merged inserts'
    fresh_at_least_ms: Quantiles    # every insert, the unmerged at their age at the end
    unmerged: int | None            # inserted, not in a disk index at the end
    waiting_mean: float | None
    waiting_max: int | None
    unserved: int | None            # arrived, never written before the run stopped
    verdict: Verdict | None         # None: saved before it was recorded

    def to_dict(self) -> dict[str, Any]:
        return {f.name: as_json(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: Any) -> InsertFigures | None:
        """None where the run had no insert stream."""
        if not isinstance(d, Mapping):
            return None
        counts = {k: count(d.get(k)) for k in (
            "arrived", "done", "done_in_duration", "record_size", "log_bytes", "log_syncs",
            "merges", "merges_cut", "merge_read_bytes", "merge_write_bytes", "queries_merging",
            "queries_calm", "unmerged", "waiting_max", "unserved")}
        nums = {k: number(d.get(k)) for k in (
            "offered_per_s", "done_per_s", "rate_window_s", "merge_cpu_share",
            "write_amplification", "query_p99_merging_ms", "query_p99_calm_ms", "waiting_mean")}
        verdict = d.get("verdict")
        return cls(durable_ms=Quantiles.from_dict(d.get("durable_ms")),
                   fresh_ms=Quantiles.from_dict(d.get("fresh_ms")),
                   fresh_at_least_ms=Quantiles.from_dict(d.get("fresh_at_least_ms")),
                   merge_list=tuple(MergeFigures.from_dict(m) for m in items(d.get("merge_list"))),
                   verdict=Verdict.from_dict(verdict) if isinstance(verdict, Mapping) else None,
                   **counts, **nums)
