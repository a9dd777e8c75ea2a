"""Figures of a run the sweeps and MLPerf's checks ask for: the bytes written and read, the
hosts' memory, the target's filesystem, the restore's gap; and the figures a phase names for a
sweep's table (`Phase.sweep_extras`), each found by its name (`named`). Read off the document
as `aiio.results.result` reads the rest; the vector, KV-cache and monitor figures are
`aiio.results.beside`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiio.document import dig
from aiio.errors import AiioError
from aiio.results.result import IoFigures, Result, model, number
from aiio.results.steadiness import Verdict


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_result(res: Result | Mapping[str, Any]) -> Result:
    """A run's typed result, from the document a run returns (or one already typed)."""
    return res if isinstance(res, Result) else model(res)


def written_bytes(run: Result) -> int:
    """The bytes the run wrote over every client (0 when it recorded none)."""
    return int(number(run.summary.figures.get("write_bytes")) or 0)


def host_ram_bytes(run: Result) -> list[int]:
    """Each host's memory (bytes) as the run recorded its environment, where it did."""
    hosts = run.doc.get("hosts")
    return [int(ram) for h in (hosts if isinstance(hosts, list) else ())
            if (ram := number(dig(h, "environment", "ram_bytes"))) is not None]


def read_bytes(run: Result) -> int:
    """The bytes the run read over every client: its read section's, else its one stream's."""
    figures = run.summary.figures
    return int(number(figures.get("read_bytes")) or run.summary.bytes or 0)


def restore_gap_s(run: Result) -> float | None:
    """The longest time a client waited between its checkpoint writes' end and its reads."""
    return number(run.summary.figures.get("restore_gap_s_max"))


@dataclass(frozen=True)
class TargetInfo:
    """The filesystem the run's target was on, as probed at the start."""

    fstype: str | None
    memory_backed: bool
    in_bucket: bool          # s3://...: a client holds no page cache of objects

    @classmethod
    def of(cls, run: Result) -> TargetInfo:
        d = _mapping(run.doc.get("target"))
        fstype = d.get("fstype")
        return cls(None if fstype is None else str(fstype), bool(d.get("memory_backed")),
                   "://" in str(d.get("path", "")))


def steadiness(run: Result, where: tuple[str, str]) -> Verdict | None:
    """The steady-or-overloaded verdict the run recorded where its phase keeps it
    (`Phase.steadiness_at`); None when it recorded none."""
    got = dig(run.summary.figures, *where)
    return Verdict.from_dict(got) if isinstance(got, Mapping) else None


def histograms_intact(io: IoFigures) -> bool:
    """The section's histograms are recorded as an object (or not at all), not damaged."""
    return isinstance(io.figures.get("histograms", {}), Mapping)


# --- the figures a phase names for a sweep's table (Phase.sweep_extras) ---------------------

def _persist_s(run: Result) -> float | None:
    """Mean time to persist a checkpoint: until the last client's shard was durable."""
    spread = run.checkpoint.persist_last_done_s if run.checkpoint else None
    return spread.mean if spread else None


def _query_p99_ms(run: Result) -> float | None:
    got = run.vector  # a search that recorded no p99 shows 0, as sweeps always have
    return None if got is None or got.queries_per_s is None else got.latency_ms.p99 or 0.0


NAMED: Mapping[str, Callable[[Result], float | None]] = {
    "ready_s": lambda r: r.model_load.last_ready_s if r.model_load else None,
    "persist_s": _persist_s,
    "samples_per_s": lambda r: r.summary.samples_per_s,
    "metadata_ops_s": lambda r: r.metadata.ops_s if r.metadata else None,
    "queries_per_s": lambda r: (v := r.vector) and v.queries_per_s,
    "query_p99_ms": _query_p99_ms,
}


def named(run: Result, name: str) -> float | None:
    """The figure a phase names `name` (in its sweep_extras); None when the run has none."""
    if name not in NAMED:
        raise AiioError(f"no figure of a run is named {name!r} (one of {', '.join(NAMED)})")
    return NAMED[name](run)
