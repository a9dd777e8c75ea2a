"""The history report: each check's figures over time, regressions marked.

Input is a list of records {check, time, figure, value, passed, regression}, one per figure of
one check in one run, as the history database returns them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aiio import charts
from aiio.figures import FIGURES
from aiio.markup import Html
from aiio.report import html as h


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


def failures(records: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per check, its records that failed with no figure to draw (figure None), oldest first."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        t = when(r.get("time"))
        if r.get("figure") is None and r.get("passed") is False and t is not None:
            out.setdefault(str(r.get("check", "?")), []).append(dict(r, time=t))
    for rows in out.values():
        rows.sort(key=lambda r: r["time"])
    return out


def group(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Records by (check, figure), oldest first; records without a time or value are dropped
    (failures without a figure are read by `failures`)."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        if r.get("figure") is None and r.get("passed") is False:
            continue
        t, v = when(r.get("time")), h.finite(r.get("value"))
        if t is None or v is None:
            continue
        row = dict(r, time=t, value=v)
        out.setdefault((str(r.get("check", "?")), str(r.get("figure", "?"))), []).append(row)
    for rows in out.values():
        rows.sort(key=lambda r: r["time"])
    return out


# A declared figure's unit, and the factor from its stored value: "%" figures are fractions.
DECLARED = {"%": ("%", 100.0), "": ("", 1.0)}


def unit_of(figure: str) -> tuple[str, float]:
    """The unit a check's figure declares (figures.FIGURES), else the one its name implies,
    and the factor from the stored value to it."""
    declared = FIGURES.get(figure)
    if declared is not None:
        return DECLARED.get(declared.unit, (declared.unit, 1.0))
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
    if h.is_count(f):
        return "", 1.0
    if {"au", "efficiency", "fraction"} & words:
        return "%", 100.0
    return "as recorded", 1.0


def shown(figure: str, value: float) -> str:
    unit, k = unit_of(figure)
    return f"{value * k:,.4g} {unit}".rstrip()


def render_body(records: Sequence[Mapping[str, Any]], source: str) -> list[Html]:
    groups, failed = group(records), failures(records)
    dropped = len(records) - sum(len(v) for v in groups.values()) \
        - sum(len(v) for v in failed.values())
    parts = [h.tag("h1", "aiio history: the trend of every check"),
             h.tag("p", f"{len(records)} records from {source}", class_="meta")]
    if dropped:
        parts.append(h.notice("warn", f"{dropped} records had no usable time or value and are "
                              "not shown."))
    if not groups and not failed:
        parts.append(h.notice("warn", "The history holds no records yet: run `aiio accept` "
                              "(or a run or sweep) to start one."))
        return parts
    parts.append(regressions_notice(groups))
    parts.append(summary_section(groups, failed))
    parts.append(charts_section(groups, failed))
    return parts


def regressions_notice(groups: Mapping[tuple[str, str], list[dict[str, Any]]]) -> Html:
    latest = [(k, rows[-1]) for k, rows in groups.items()]
    regressed = [f"{c} / {f}: {shown(f, r['value'])} on {r['time']:%Y-%m-%d %H:%M}"
                 for (c, f), r in latest if r.get("regression")]
    if not regressed:
        return h.notice("ok", "No check's latest run is a regression against its baseline.")
    return h.notice("fail", "Latest run regressed against its own baseline:", regressed)


def summary_section(groups: Mapping[tuple[str, str], list[dict[str, Any]]],
                    failed: Mapping[str, list[dict[str, Any]]]) -> Html:
    rows = []
    keys = list(groups) + [(c, "(no figure)") for c in failed if c not in {k[0] for k in groups}]
    order = sorted(keys, key=lambda k: (not _last(groups, failed, k).get("regression"), k))
    for check, figure in order:
        recs, fails = groups.get((check, figure), []), failed.get(check, [])
        last = _last(groups, failed, (check, figure))
        status = _verdict(last)
        n_reg = sum(bool(r.get("regression")) for r in recs)
        n_bad = sum(r.get("passed") is False for r in recs) + len(fails)
        value = h.num(shown(figure, last["value"]), last["value"]) \
            if h.finite(last.get("value")) is not None else h.Cell("none: it failed")
        rows.append([check, figure, h.num(str(len(recs) + len(fails)), len(recs) + len(fails)),
                     h.Cell(f"{last['time']:%Y-%m-%d %H:%M}", last["time"].isoformat()),
                     value, h.Cell(h.badge(status), status), h.num(str(n_bad), n_bad),
                     h.num(str(n_reg), n_reg)])
    return h.section("Checks", h.table(["check", "figure", "runs", "latest run", "latest value",
                                        "latest verdict", "failed", "regressions"], rows,
                                       sortable=True),
                     note="Checks whose latest run regressed first. Failed counts every run "
                          "that did not pass: failed thresholds, and runs that failed, errored "
                          "or were interrupted (those have no value to draw; the charts mark "
                          "them with a red x on the time axis).", anchor="summary")


def _last(groups: Mapping[tuple[str, str], list[dict[str, Any]]],
          failed: Mapping[str, list[dict[str, Any]]], key: tuple[str, str]) -> dict[str, Any]:
    """The latest record of a check's figure, or its later failure without a figure."""
    recs = groups.get(key, []) + failed.get(key[0], [])
    return max(recs, key=lambda r: r["time"])


def _verdict(last: Mapping[str, Any]) -> str:
    if last.get("regression"):
        return "regression"
    if last.get("figure") is None:
        return str(last.get("status") or "failed")
    return "pass" if last.get("passed") else "fail" if last.get("passed") is False else "n/a"


def charts_section(groups: Mapping[tuple[str, str], list[dict[str, Any]]],
                   failed: Mapping[str, list[dict[str, Any]]]) -> Html:
    figs = []
    for (check, figure), recs in groups.items():
        unit, k = unit_of(figure)
        unit = f" ({unit})" if unit else ""
        fails = [r["time"] for r in failed.get(check, [])]
        figs.append(charts.trend(
            [r["time"] for r in recs], [r["value"] * k for r in recs],
            [r.get("passed") if isinstance(r.get("passed"), bool) else None for r in recs],
            [bool(r.get("regression")) for r in recs],
            title=f"{check}: {figure}", ylabel=f"{figure}{unit}", failed_at=fails,
            caption=f"{check}, {figure}{unit} over {len(recs)} "
                    f"run{'s' * (len(recs) != 1)}; circled: a regression against the check's "
                    "own baseline" + (f"; red x on the time axis: {len(fails)} run(s) that "
                                      "failed with no value" if fails else "") + "."))
    return h.section("Trends", h.figures(*figs), anchor="trends")
