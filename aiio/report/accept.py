"""The report of an acceptance run: the pass/fail table, each threshold's margin, and the runs
behind the checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiio.report import charts
from aiio.report import html as h
from aiio.report.common import (
    get,
    guarded,
    header,
    measured_section,
    missing_notice,
    other_section,
    status_notice,
    warnings_section,
)
from aiio.report.html import Html

EXPECTED = {"checks": "the checks and their verdicts (none was recorded)"}
KNOWN = {"schema", "kind", "id", "phase", "status", "error", "started", "finished", "checks",
         "warnings", "saved_at", "workload", "environment", "target", "method", "options"}
PASSING = ("pass", "passed", "ok")


def checks(res: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in res.get("checks") or [] if isinstance(c, Mapping)]


def passed(check: Mapping[str, Any]) -> bool:
    return str(check.get("status", "")).lower() in PASSING


def title(res: Mapping[str, Any]) -> str:
    cs = checks(res)
    ok = sum(passed(c) for c in cs)
    return f"aiio acceptance run: {ok} of {len(cs)} checks passed"


def render_body(res: Mapping[str, Any]) -> list[Html]:
    cs = checks(res)
    first = next((c["result"] for c in cs if isinstance(c.get("result"), Mapping)), None)
    parts = [
        header(res, title(res)),
        status_notice(res, "acceptance run"),
        missing_notice(res, EXPECTED),
        overall_notice(cs),
        warnings_section(accept_warnings(res, cs), "acceptance run",
                         res.get("status") == "ok"),
        guarded("checks", checks_section, cs),
        guarded("margins", margins_section, cs),
    ]
    base = res if res.get("target") else first
    if isinstance(base, Mapping):
        parts.append(guarded("measured", measured_section, base, "per check, see above"))
    parts.append(guarded("other", other_section, res, KNOWN))
    return parts


def overall_notice(cs: Sequence[Mapping[str, Any]]) -> Html:
    if not cs:
        return Html("")
    bad = [c.get("name", "?") for c in cs if not passed(c)]
    if not bad:
        return h.notice("ok", f"All {len(cs)} checks passed.")
    return h.notice("fail", f"{len(bad)} of {len(cs)} checks did not pass: {', '.join(bad)}.")


def accept_warnings(res: Mapping[str, Any], cs: Sequence[Mapping[str, Any]]) -> list[Any]:
    out = list(res.get("warnings") or [])
    for c in cs:
        for w in get(c, "result", "warnings", default=[]):
            if isinstance(w, Mapping):
                out.append({"code": w.get("code", "warning"),
                            "message": f"{c.get('name', '?')}: {w.get('message', '')}"})
    return out


def _figures(value: Any) -> Html:
    """measured/required as one line per figure."""
    if isinstance(value, Mapping):
        return h.join(h.join([h.tag("code", k), f" {h.by_name(k, v)}", Html("<br>")])
                      for k, v in value.items())
    return h.esc(h.plain(value))


def checks_section(cs: Sequence[Mapping[str, Any]]) -> Html:
    if not cs:
        return Html("")
    ordered = sorted(enumerate(cs), key=lambda t: (passed(t[1]), t[0]))
    rows = []
    for i, c in ordered:
        failures = c.get("failures") or []
        rows.append([h.num(str(i + 1), i + 1), c.get("name", "?"),
                     h.Cell(h.badge(c.get("status")), str(c.get("status"))),
                     h.Cell(_figures(c.get("measured"))), h.Cell(_figures(c.get("required"))),
                     h.Cell(h.join(h.join([f, Html("<br>")]) for f in failures)
                            if isinstance(failures, list) else h.plain(failures))])
    return h.section("Checks", h.table(["#", "check", "status", "measured", "required",
                                        "why it failed"], rows, sortable=True),
                     note="Failed checks first, then in the order of the spec (#).",
                     anchor="checks")


def direction(key: str) -> str | None:
    """'min' when the measured figure must reach the threshold, 'max' when it must stay under."""
    k = key.lower()
    if k.startswith("min_") or k.endswith("_min"):
        return "min"
    if k.startswith("max_") or k.endswith("_max"):
        return "max"
    return None


def margins(cs: Sequence[Mapping[str, Any]]) -> list[tuple[str, float, str]]:
    """(check: figure, measured as a share of its threshold, direction) for numeric pairs."""
    out = []
    for c in cs:
        meas, req = c.get("measured"), c.get("required")
        if not (isinstance(meas, Mapping) and isinstance(req, Mapping)):
            continue
        for key, need in req.items():
            got, need_x, way = h.finite(meas.get(key)), h.finite(need), direction(key)
            if got is not None and need_x and way:
                out.append((f"{c.get('name', '?')}: {key}", got / need_x, way))
    return out


def margins_section(cs: Sequence[Mapping[str, Any]]) -> Html:
    found = margins(cs)
    if not found:
        return Html("")
    labels = [m[0] for m in found]
    # A max threshold is met below 100 %; draw it inverted so "taller is better" for every bar.
    values = [m[1] if m[2] == "min" else (1 / m[1] if m[1] > 0 else 10.0) for m in found]
    chart = charts.bars(labels, values, percent=True, goal=1.0, goal_label="threshold (100 %)",
                        title="margin against each threshold", xlabel="check: figure",
                        ylabel="headroom (% of threshold)",
                        caption="Measured against required; for a maximum (latency, seconds) "
                                "the ratio is inverted so that above 100 % always means met.")
    rows = [[label, way, h.num(h.pct(v), v)] for (label, _, way), v in zip(found, values,
                                                                             strict=True)]
    return h.section("Margins", h.figures(chart),
                     h.table(["check: figure", "threshold kind", "headroom"], rows,
                             sortable=True), anchor="margins")
