"""Bandwidth over time (aggregate and per client, for each kind of I/O a run did) and the
timeline of timed events (checkpoint bursts, stalls, staggered loads)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiio.report import html as h
from aiio.report import series as sr
from aiio.report.parts import Stream, events, io_sections
from aiio.results import charts
from aiio.results.markup import Html
from aiio.results.result import ClientFigures, IoFigures, Result, model
from aiio.stats import ByteSeries

MAX_TIMELINE_CLIENTS = 32  # rows beyond this would be too thin to read


def bandwidth_section(res: Mapping[str, Any]) -> Html:
    run = res if isinstance(res, Result) else model(res)
    sections = io_sections(run)
    if not sections:
        if any(c.events for c in run.clients):
            return Html("")  # burst-only phases are drawn on the timeline
        return h.section("Bandwidth over time", h.notice(
            "warn", "No client recorded a time series of bytes."), anchor="bandwidth")
    parts = [_charts(run, s) for s in sections]
    return h.section("Bandwidth over time", *parts, anchor="bandwidth",
                     note="Bytes each client's system calls returned, per interval, since the "
                          "common start; the dashed lines mark when the first and the last "
                          "client finished.")


def _charts(run: Result, sec: Stream) -> Html:
    own = []
    for c in run.clients:
        figures = sec.of(c)
        if figures is not None:
            s = _byte_series(figures)
            own.append((c, s, _end(figures, s)))
    ends = [e for _, _, e in own]
    end = max(ends)
    step = sr.step_for(end, own[0][1].bucket_s)
    unit = "per second" if step == 1.0 else f"per {step:g} s interval"
    lines = [(f"client {_id(c)}", *sr.rates(s, e, step)) for c, s, e in own]
    by_mean = sorted(zip(lines, [h.finite(_mib_s(c, sec)) or 0 for c, _, _ in own],
                         strict=True), key=lambda t: t[1])
    highlight = [by_mean[0][0][0], by_mean[-1][0][0]]
    total = ByteSeries(own[0][1].bucket_s)
    for _, s, _ in own:
        total.merge(s)
    marks = [(min(ends), "first done"), (end, "last done")] if len(own) > 1 else []
    what = f"{sec.label or run.phase} ".lstrip()
    agg = charts.time_lines([("all clients", *sr.rates(total, end, step))],
                            title=f"aggregate {what}bandwidth", ylabel=f"MiB/s ({unit})",
                            marks=marks, steps=True,
                            caption=f"Aggregate {what}bandwidth of all {len(own)} clients, "
                                    f"MiB/s {unit}.")
    note = "" if len(lines) <= charts.MANY_LINES else \
        f" Grey: the other clients; coloured: the slowest and the fastest ({', '.join(highlight)})."
    per = charts.time_lines(lines, title=f"{what}bandwidth per client",
                            ylabel=f"MiB/s ({unit})", highlight=highlight, marks=marks,
                            steps=True, caption=f"Each client's {what}bandwidth, MiB/s {unit}."
                                                f"{note}")
    return h.figures(agg, per)


def _byte_series(figures: IoFigures) -> ByteSeries:
    return ByteSeries.from_dict({"bucket_s": figures.bucket_s,
                                 "bytes": list(figures.byte_series())})


def _end(figures: IoFigures, series: ByteSeries) -> float:
    """A stream's own end time (its elapsed_s); its last bucket when that was not recorded."""
    end = figures.elapsed_s
    return end if end is not None and end > 0 else series.end_s


def _mib_s(c: ClientFigures, sec: Stream) -> float | None:
    figures = sec.of(c)
    return figures.mib_s if figures is not None else None


def _id(c: ClientFigures) -> Any:
    return "?" if c.client is None else c.client


def timeline_section(res: Mapping[str, Any]) -> Html:
    """When each client did what: one row per client, one bar per timed event."""
    run = res if isinstance(res, Result) else model(res)
    clients = sorted((c for c in run.clients if c.events),
                     key=lambda c: h.finite(c.client) or 0)
    if not clients:
        return Html("")
    shown = clients[:MAX_TIMELINE_CLIENTS]
    phase = run.phase or "run"
    rows = [(f"client {_id(c)}",
             [(label or phase, start, end) for label, start, end in events(c)]) for c in shown]
    cut = "" if len(shown) == len(clients) else f" (the first {len(shown)} of {len(clients)})"
    chart = charts.timeline(rows, title=f"{phase} timeline per client",
                            caption=f"Each client's timed events since the common start{cut}: "
                                    "checkpoint writes and restores, stalls, loads.")
    return h.section("Timeline", h.figures(chart), _events_table(clients, phase),
                     anchor="timeline")


def _events_table(clients: Sequence[ClientFigures], phase: str) -> Html:
    body = []
    for c in clients:
        for label, start, end in events(c):
            body.append([h.num(str(_id(c)), c.client), label or phase,
                         h.num(h.seconds(start), start), h.num(h.seconds(end), end),
                         h.num(h.seconds(end - start), end - start)])
    return h.details(f"every event ({len(body)})", h.table(
        ["client", "event", "starts", "ends", "lasts"], body, sortable=True))
