"""The history report: each check's figures over time, regressions marked.

Input is a list of records {check, time, figure, value, passed, regression, status}, one per
figure of one check in one run, as the history database returns them; each is read once into a
typed `Point`, which the sections read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiio.report import html as h
from aiio.results import charts
from aiio.results.figures import FIGURES
from aiio.results.markup import Html


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


@dataclass(frozen=True)
class Point:
    """One figure of one check in one run, or a run that failed with no figure to draw."""

    check: str
    time: dt.datetime | None
    figure: str | None             # None: no figure (a failed or interrupted run)
    named: str                     # the figure as its series names it ("?" when unnamed)
    value: float | None
    passed: bool | None            # None: not judged
    regression: bool
    status: str

    @classmethod
    def of(cls, r: Mapping[str, Any]) -> Point:
        figure, passed = r.get("figure"), r.get("passed")
        return cls(str(r.get("check", "?")), when(r.get("time")),
                   None if figure is None else str(figure), str(r.get("figure", "?")),
                   h.finite(r.get("value")), passed if isinstance(passed, bool) else None,
                   bool(r.get("regression")), str(r.get("status") or ""))

    @property
    def failed_without_figure(self) -> bool:
        return self.figure is None and self.passed is False


def points(records: Iterable[Mapping[str, Any] | Point]) -> list[Point]:
    return [r if isinstance(r, Point) else Point.of(r) for r in records]


def failures(records: Iterable[Point]) -> dict[str, list[Point]]:
    """Per check, its records that failed with no figure to draw (figure None), oldest first."""
    out: dict[str, list[Point]] = {}
    for p in records:
        if p.failed_without_figure and p.time is not None:
            out.setdefault(p.check, []).append(p)
    for rows in out.values():
        rows.sort(key=lambda p: p.time)
    return out


def group(records: Iterable[Point]) -> dict[tuple[str, str], list[Point]]:
    """Records by (check, figure), oldest first; records without a time or value are dropped
    (failures without a figure are read by `failures`)."""
    out: dict[tuple[str, str], list[Point]] = {}
    for p in records:
        if p.failed_without_figure or p.time is None or p.value is None:
            continue
        out.setdefault((p.check, p.named), []).append(p)
    for rows in out.values():
        rows.sort(key=lambda p: p.time)
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


def render_body(records: Sequence[Mapping[str, Any] | Point], source: str) -> list[Html]:
    read = points(records)
    groups, failed = group(read), failures(read)
    dropped = len(read) - sum(len(v) for v in groups.values()) \
        - sum(len(v) for v in failed.values())
    parts = [h.tag("h1", "aiio history: the trend of every check"),
             h.tag("p", f"{len(read)} records from {source}", class_="meta")]
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


Groups = Mapping[tuple[str, str], list[Point]]
Failures = Mapping[str, list[Point]]


def regressions_notice(groups: Groups) -> Html:
    latest = [(k, rows[-1]) for k, rows in groups.items()]
    regressed = [f"{c} / {f}: {shown(f, p.value)} on {p.time:%Y-%m-%d %H:%M}"
                 for (c, f), p in latest if p.regression]
    if not regressed:
        return h.notice("ok", "No check's latest run is a regression against its baseline.")
    return h.notice("fail", "Latest run regressed against its own baseline:", regressed)


def summary_section(groups: Groups, failed: Failures) -> Html:
    rows = []
    keys = list(groups) + [(c, "(no figure)") for c in failed if c not in {k[0] for k in groups}]
    order = sorted(keys, key=lambda k: (not _last(groups, failed, k).regression, k))
    for check, figure in order:
        recs, fails = groups.get((check, figure), []), failed.get(check, [])
        last = _last(groups, failed, (check, figure))
        status = _verdict(last)
        n_reg = sum(p.regression for p in recs)
        n_bad = sum(p.passed is False for p in recs) + len(fails)
        value = h.num(shown(figure, last.value), last.value) \
            if last.value is not None else h.Cell("none: it failed")
        rows.append([check, figure, h.num(str(len(recs) + len(fails)), len(recs) + len(fails)),
                     h.Cell(f"{last.time:%Y-%m-%d %H:%M}", last.time.isoformat()),
                     value, h.Cell(h.badge(status), status), h.num(str(n_bad), n_bad),
                     h.num(str(n_reg), n_reg)])
    return h.section("Checks", h.table(["check", "figure", "runs", "latest run", "latest value",
                                        "latest verdict", "failed", "regressions"], rows,
                                       sortable=True),
                     note="Checks whose latest run regressed first. Failed counts every run "
                          "that did not pass: failed thresholds, and runs that failed, errored "
                          "or were interrupted (those have no value to draw; the charts mark "
                          "them with a red x on the time axis).", anchor="summary")


def _last(groups: Groups, failed: Failures, key: tuple[str, str]) -> Point:
    """The latest record of a check's figure, or its later failure without a figure."""
    recs = groups.get(key, []) + failed.get(key[0], [])
    return max(recs, key=lambda p: p.time)


def _verdict(last: Point) -> str:
    if last.regression:
        return "regression"
    if last.figure is None:
        return last.status or "failed"
    return "pass" if last.passed else "fail" if last.passed is False else "n/a"


def charts_section(groups: Groups, failed: Failures) -> Html:
    figs = []
    for (check, figure), recs in groups.items():
        unit, k = unit_of(figure)
        unit = f" ({unit})" if unit else ""
        fails = [p.time for p in failed.get(check, [])]
        figs.append(charts.trend(
            [p.time for p in recs], [p.value * k for p in recs],
            [p.passed for p in recs], [p.regression for p in recs],
            title=f"{check}: {figure}", ylabel=f"{figure}{unit}", failed_at=fails,
            caption=f"{check}, {figure}{unit} over {len(recs)} "
                    f"run{'s' * (len(recs) != 1)}; circled: a regression against the check's "
                    "own baseline" + (f"; red x on the time axis: {len(fails)} run(s) that "
                                      "failed with no value" if fails else "") + "."))
    return h.section("Trends", h.figures(*figs), anchor="trends")
