"""What a sweep reads from each phase's run result: the figure the verdict judges, both
aggregates, the per-client spread, and the phase's own figures shown against clients.

Every phase sweeps. Streaming phases (train, load) are judged on first done; a checkpoint on
its write rate (bytes over the time to persist: the slowest client, as MLPerf Storage times a
checkpoint); data preparation on read plus write. Every figure is read off the typed result
(`aiio.results.result.Result`: its sections, checkpoints, load and summary), never by the keys
it is recorded under; the phase's own figures are those it declares (`Phase.sweep_extras`),
each found by its name in the model (`aiio.results.parts.named`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from aiio.errors import AiioError
from aiio.phases import layout_of
from aiio.results import parts
from aiio.results.layout import layout_of as result_layout
from aiio.results.result import IoFigures, Result, Spread, model
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


@dataclass(frozen=True)
class PointFigures:
    """What one run gives its row of a sweep's table, as its phase is judged: the judged
    aggregate (headline), both windows (MiB/s), the per-client spread and fairness, the
    latency histograms per operation and the phase's own figures (`Phase.sweep_extras`)."""

    headline_mib_s: float
    first_done_mib_s: float
    last_done_mib_s: float
    per_client_mib_s: Spread
    jain: float
    histograms: Mapping[str, Mapping[str, Any]]
    extras: Mapping[str, float] = field(default_factory=dict)


def point_figures(phase: str, run: Result | Mapping[str, Any]) -> PointFigures:
    """The figures of one run result (or its aggregate alone, read as a run of `phase`), as
    the phase is judged (`Phase.judged_on`), with the figures it declares for the table."""
    res = run if isinstance(run, Result) else model({"phase": phase, "aggregate": run})
    declared = _phase(phase)
    figures = JUDGES[declared.judged_on][0](res)
    own = {key: value for key, _, _ in declared.sweep_extras
           if (value := parts.named(res, key)) is not None}
    return replace(figures, extras=own)


def judged_stream(run: Result) -> IoFigures:
    """The stream a phase judged on first done is judged by: the first its headline stage
    declares (the lifecycle's training reads), else the first it declares itself."""
    stage = result_layout(run.doc).headline_stage
    io = run.first(f"{stage}." if stage else "")
    if io is None or None in (io.first_done, io.last_done, io.per_client_mib_s, io.jain):
        raise AiioError("this phase's result has no first-done aggregate to judge scaling by")
    return io


def first_done_figures(run: Result) -> PointFigures:
    """A streaming phase's: the first-done aggregate of its judged stream."""
    io = judged_stream(run)
    return _of_stream(io, io.first_done.mib_s)


def _of_stream(io: IoFigures, headline: float) -> PointFigures:
    return PointFigures(headline, io.first_done.mib_s, io.last_done.mib_s, io.per_client_mib_s,
                        io.jain, io.histograms)


def checkpoint_figures(run: Result) -> PointFigures:
    """Write rate and the writes' per-client figures (mean over the checkpoints; histograms
    merged), off the typed result: its checkpoints and each burst's write section. The one
    place a sweep reads a checkpoint result."""
    ckpt = run.checkpoint
    writes = [s for s in run.sections("checkpoint.") if s.name.endswith(".write")
              and _intact_write(s)]
    rate = ckpt.write_mib_s if ckpt else None
    if not writes or rate is None:
        raise AiioError("this checkpoint result holds no finished checkpoint write to judge "
                        "scaling by")
    pcs = [w.per_client_mib_s for w in writes if w.per_client_mib_s]
    return PointFigures(
        rate, _mean([w.first_done.mib_s for w in writes if w.first_done]),
        _mean([w.last_done.mib_s for w in writes if w.last_done]),
        Spread(mean=_mean([p.mean for p in pcs]), min=min(p.min for p in pcs),
               max=max(p.max for p in pcs), cv=_mean([p.cv or 0.0 for p in pcs])),
        _mean([w.jain or 0.0 for w in writes]), _merged_dicts([w.histograms for w in writes]))


def _intact_write(write: IoFigures) -> bool:
    """A checkpoint whose writes' figures this reads are all of their types; a damaged one
    (a hand-edited result) is left out, as one that never finished."""
    spread = write.per_client_mib_s
    return (parts.histograms_intact(write)
            and None not in (write.first_done, write.last_done, spread, write.jain)
            and spread is not None and spread.cv is not None)


def _prep_figures(run: Result) -> PointFigures:
    """Read plus write first done; per-client figures are the reads' in shards mode (every
    prep client reads, not every one writes a shard in a short point), and each client's reads
    plus writes for the random mix, which holds them."""
    read, write = run.section("read"), run.section("write")
    if read is None or read.first_done is None:
        return first_done_figures(run)
    headline, last = read.first_done.mib_s, read.last_done.mib_s
    if write is not None and write.first_done is not None:
        headline += write.first_done.mib_s
        last += write.last_done.mib_s
    mix = run.summary.top  # randrw: every client's reads plus writes
    spread, jain = (mix.per_client_mib_s, mix.jain) if mix.per_client_mib_s is not None \
        else (read.per_client_mib_s, read.jain)
    hist = read.histograms if write is None else _merged_dicts([read.histograms,
                                                                write.histograms])
    return PointFigures(headline, headline, last, spread, jain, hist)


# Phase.judged_on -> (the point's figures, the basis of the verdict in words)
JUDGES: dict[str, tuple[Callable[[Result], PointFigures], str]] = {
    "first_done": (first_done_figures, "aggregate MiB/s over the first-done window (until "
                   "the first client finished)"),
    "persist": (checkpoint_figures, "aggregate write MiB/s of the checkpoints: every "
                "checkpoint's bytes over their summed time to persist (until the last "
                "client's shard was durable)"),
    "read_plus_write": (_prep_figures, "aggregate read plus write MiB/s over the first-done "
                        "window (until the first client finished)"),
}


def merge_histograms(each: list[Mapping[str, Any]]) -> dict[str, Histogram]:
    """Latency histograms per operation, merged by addition."""
    merged: dict[str, Histogram] = {}
    for part in each:
        for op, d in part.items():
            merged.setdefault(op, Histogram()).merge(Histogram.from_dict(d))
    return merged


def _merged_dicts(each: list[Mapping[str, Any]]) -> dict[str, Any]:
    return {op: h.to_dict() for op, h in merge_histograms(each).items()}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
