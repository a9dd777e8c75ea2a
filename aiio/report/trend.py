"""The history report: each check's figures over time, regressions marked.

Input is a list of records {check, time, figure, value, passed, regression}, one per figure of
one check in one run, as the history database returns them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aiio.report import charts
from aiio.report import html as h
from aiio.report.html import Html


def when(value: Any) -> dt.datetime | None:
    """An ISO 8601 string or a Unix time as a datetime; None when it is neither."""
    if isinstance(value, dt.datetime):
        return value
    x = h.finite(value)
    if x is not None:
        return dt.datetime.fromtimestamp(x)
    try:
        return dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None


def group(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Records by (check, figure), oldest first; records without a time or value are dropped."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        t, v = when(r.get("time")), h.finite(r.get("value"))
        if t is None or v is None:
            continue
        row = dict(r, time=t, value=v)
        out.setdefault((str(r.get("check", "?")), str(r.get("figure", "?"))), []).append(row)
    for rows in out.values():
        rows.sort(key=lambda r: r["time"])
    return out


def unit_of(figure: str) -> tuple[str, float]:
    """The unit a figure's name implies, and the factor from the stored value to it."""
    words = set(figure.lower().split("_"))
    f = figure.lower()
    if "mib_s" in f:
        return "MiB/s", 1.0
    if f.endswith("_ns"):
        return "ms", 1e-6
    if f.endswith("_ms"):
        return "ms", 1.0
    if f.endswith(("_s", "seconds")):
        return "s", 1.0
    if f.endswith("_bytes"):
        return "GiB", 2.0 ** -30
    if {"au", "efficiency", "fraction"} & words:
        return "%", 100.0
    return "as recorded", 1.0


def shown(figure: str, value: float) -> str:
    unit, k = unit_of(figure)
    return f"{value * k:,.4g} {unit}"


def render_body(records: Sequence[Mapping[str, Any]], source: str) -> list[Html]:
    groups = group(records)
    dropped = len(records) - sum(len(v) for v in groups.values())
    parts = [h.tag("h1", "aiio history: the trend of every check"),
             h.tag("p", f"{len(records)} records from {source}", class_="meta")]
    if dropped:
        parts.append(h.notice("warn", f"{dropped} records had no usable time or value and are "
                              "not shown."))
    if not groups:
        parts.append(h.notice("warn", "The history holds no records yet: run `aiio accept` "
                              "(or a run or sweep) to start one."))
        return parts
    parts.append(regressions_notice(groups))
    parts.append(summary_section(groups))
    parts.append(charts_section(groups))
    return parts


def regressions_notice(groups: Mapping[tuple[str, str], list[dict[str, Any]]]) -> Html:
    latest = [(k, rows[-1]) for k, rows in groups.items()]
    regressed = [f"{c} / {f}: {shown(f, r['value'])} on {r['time']:%Y-%m-%d %H:%M}"
                 for (c, f), r in latest if r.get("regression")]
    if not regressed:
        return h.notice("ok", "No check's latest run is a regression against its baseline.")
    return h.notice("fail", "Latest run regressed against its own baseline:", regressed)


def summary_section(groups: Mapping[tuple[str, str], list[dict[str, Any]]]) -> Html:
    rows = []
    order = sorted(groups.items(), key=lambda kv: (not kv[1][-1].get("regression"), kv[0]))
    for (check, figure), recs in order:
        last = recs[-1]
        status = "regression" if last.get("regression") else \
            "pass" if last.get("passed") else "fail" if last.get("passed") is False else "n/a"
        n_reg = sum(bool(r.get("regression")) for r in recs)
        rows.append([check, figure, h.num(str(len(recs)), len(recs)),
                     h.Cell(f"{last['time']:%Y-%m-%d %H:%M}", last["time"].isoformat()),
                     h.num(shown(figure, last["value"]), last["value"]),
                     h.Cell(h.badge(status), status), h.num(str(n_reg), n_reg)])
    return h.section("Checks", h.table(["check", "figure", "runs", "latest run", "latest value",
                                        "latest verdict", "regressions"], rows, sortable=True),
                     note="Checks whose latest run regressed first.", anchor="summary")


def charts_section(groups: Mapping[tuple[str, str], list[dict[str, Any]]]) -> Html:
    figs = []
    for (check, figure), recs in groups.items():
        unit, k = unit_of(figure)
        figs.append(charts.trend(
            [r["time"] for r in recs], [r["value"] * k for r in recs],
            [r.get("passed") if isinstance(r.get("passed"), bool) else None for r in recs],
            [bool(r.get("regression")) for r in recs],
            title=f"{check}: {figure}", ylabel=f"{figure} ({unit})",
            caption=f"{check}, {figure} ({unit}) over {len(recs)} "
                    f"run{'s' * (len(recs) != 1)}; circled: a regression against the check's "
                    "own baseline."))
    return h.section("Trends", h.figures(*figs), anchor="trends")
