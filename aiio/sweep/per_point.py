"""What a sweep reads from each phase's run result: the figure the verdict judges, both
aggregates, the per-client spread, and the phase's own figures shown against clients.

Every phase sweeps. Streaming phases (train, load) are judged on first done; a checkpoint on
its write rate (bytes over the time to persist: the slowest client, as MLPerf Storage times a
checkpoint); data preparation on read plus write. Checkpoint figures are read through
`checkpoint_figures` only, so a change to the checkpoint result touches one function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiio.errors import AiioError
from aiio.phases import layout_of
from aiio.result import dig, number
from aiio.stats import Histogram

if TYPE_CHECKING:
    from aiio.phases.base import Phase


def _phase(name: str) -> Phase:
    """The phase of that name; one this aiio does not know with the contract's defaults."""
    return layout_of({"phase": name})


def basis(phase: str) -> str:
    """The figure a phase's sweep is judged on, in words."""
    return JUDGES[_phase(phase).judged_on][1]


def extras(phase: str) -> tuple[tuple[str, str, str], ...]:
    """The phase's own figures a sweep tables against clients: (key, column title, unit)."""
    return _phase(phase).sweep_extras


def point_figures(phase: str, agg: dict[str, Any]) -> dict[str, Any]:
    """{headline, first_done, last_done (MiB/s), per_client spread, jain, histograms, extras}
    of one run's aggregate, as the phase is judged (`Phase.judged_on`)."""
    return JUDGES[_phase(phase).judged_on][0](agg)


def first_done_figures(agg: dict[str, Any]) -> dict[str, Any]:
    """A streaming phase's: its first-done aggregate; the time every replica was ready."""
    view = io_view(agg)
    out = _from_view(view, view["first_done"]["mib_s"])
    if "last_ready_s" in agg:  # model loading
        out["extras"]["ready_s"] = float(agg["last_ready_s"])
    return out


def io_view(agg: dict[str, Any]) -> dict[str, Any]:
    """The part of an aggregate that holds first_done / per_client_mib_s: the aggregate itself,
    or the first sub-section that has them (phases with several stages)."""
    if "first_done" in agg:
        return agg
    for value in agg.values():
        if isinstance(value, dict) and "first_done" in value:
            return value
    raise AiioError("this phase's result has no first-done aggregate to judge scaling by")


def _from_view(view: dict[str, Any], headline: float) -> dict[str, Any]:
    return {"headline_mib_s": float(headline),
            "first_done_mib_s": float(view["first_done"]["mib_s"]),
            "last_done_mib_s": float(view["last_done"]["mib_s"]),
            "per_client_mib_s": view["per_client_mib_s"], "jain": float(view["jain"]),
            "histograms": view.get("histograms", {}), "extras": {}}


def checkpoint_figures(agg: dict[str, Any]) -> dict[str, Any]:
    """Write rate, time to persist, and the writes' per-client figures (mean over the
    checkpoints; histograms merged). The one place a sweep reads a checkpoint result."""
    bursts = agg.get("checkpoints")
    writes = [c["write"] for c in bursts if _intact_write(c)] if isinstance(bursts, list) else []
    rate, persist = _number(agg.get("write_mib_s")), _number(agg.get("persist_last_done_s"))
    if not writes or rate is None:
        raise AiioError("this checkpoint result holds no finished checkpoint write to judge "
                        "scaling by")
    pcs = [w["per_client_mib_s"] for w in writes]
    out = {"headline_mib_s": rate,
           "first_done_mib_s": _mean([w["first_done"]["mib_s"] for w in writes]),
           "last_done_mib_s": _mean([w["last_done"]["mib_s"] for w in writes]),
           "per_client_mib_s": {"mean": _mean([p["mean"] for p in pcs]),
                                "min": min(p["min"] for p in pcs),
                                "max": max(p["max"] for p in pcs),
                                "cv": _mean([p["cv"] for p in pcs])},
           "jain": _mean([w["jain"] for w in writes]),
           "histograms": _merged_dicts([w.get("histograms", {}) for w in writes]),
           "extras": {}}
    if persist is not None:
        out["extras"]["persist_s"] = persist
    return out


def _intact_write(burst: Any) -> bool:
    """A checkpoint whose writes' figures this reads are all of their types; a damaged one
    (a hand-edited result) is left out, as one that never finished."""
    w = burst.get("write") if isinstance(burst, dict) else None
    if not isinstance(w, dict) or not isinstance(w.get("histograms", {}), dict):
        return False
    spread = w.get("per_client_mib_s")
    return (all(_is_figure(dig(w, k, "mib_s")) for k in ("first_done", "last_done"))
            and isinstance(spread, dict) and _is_figure(w.get("jain"))
            and all(_is_figure(spread.get(k)) for k in ("mean", "min", "max", "cv")))


def _is_figure(value: Any) -> bool:
    return number(value) is not None


def _prep_figures(agg: dict[str, Any]) -> dict[str, Any]:
    """Read plus write first done; per-client figures are the reads' in shards mode (every
    prep client reads, not every one writes a shard in a short point), and each client's reads
    plus writes for the random mix, which holds them."""
    read, write = agg.get("read"), agg.get("write")
    if not isinstance(read, dict) or "first_done" not in read:
        return _from_view(io_view(agg), io_view(agg)["first_done"]["mib_s"])
    headline = read["first_done"]["mib_s"]
    last = read["last_done"]["mib_s"]
    if isinstance(write, dict) and "first_done" in write:
        headline += write["first_done"]["mib_s"]
        last += write["last_done"]["mib_s"]
    out = _from_view(read, headline)
    out["first_done_mib_s"], out["last_done_mib_s"] = headline, last
    if "per_client_mib_s" in agg:  # randrw: every client's reads plus writes
        out["per_client_mib_s"], out["jain"] = agg["per_client_mib_s"], float(agg["jain"])
    if isinstance(write, dict):
        out["histograms"] = _merged_dicts([read.get("histograms", {}),
                                               write.get("histograms", {})])
    for key, source in (("samples_per_s", agg.get("samples_per_s")),
                        ("metadata_ops_s", (agg.get("metadata") or {}).get("ops_s"))):
        if (value := _number(source)) is not None:
            out["extras"][key] = value
    return out


# Phase.judged_on -> (the point's figures, the basis of the verdict in words)
JUDGES: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], str]] = {
    "first_done": (first_done_figures, "aggregate MiB/s over the first-done window (until "
                   "the first client finished)"),
    "persist": (checkpoint_figures, "aggregate write MiB/s of the checkpoints: bytes written "
                "over the time to persist (until the last client's fsync returned), mean over "
                "checkpoints"),
    "read_plus_write": (_prep_figures, "aggregate read plus write MiB/s over the first-done "
                        "window (until the first client finished)"),
}


def merge_histograms(parts: list[dict[str, Any]]) -> dict[str, Histogram]:
    """Latency histograms per operation, merged by addition."""
    merged: dict[str, Histogram] = {}
    for part in parts:
        for op, d in part.items():
            merged.setdefault(op, Histogram()).merge(Histogram.from_dict(d))
    return merged


def _merged_dicts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {op: h.to_dict() for op, h in merge_histograms(parts).items()}


def _number(value: Any) -> float | None:
    """A figure, or the mean of a spread of figures (one per checkpoint)."""
    if isinstance(value, dict):
        value = value.get("mean")
    return float(value) if isinstance(value, (int, float)) else None


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
