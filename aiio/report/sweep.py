"""The report of a sweep: the scaling verdict, the two scaling charts and a row per point."""

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
from aiio.report.run import clients_section

EXPECTED = {
    "points": "the measured client counts (no point finished)",
    "verdict": "the scaling verdict",
}
KNOWN = {"schema", "kind", "id", "phase", "status", "error", "started", "finished", "points",
         "table", "verdict", "warnings", "workload", "environment", "target", "method",
         "saved_at", "options"}


def points(res: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    """(clients, result) per point that has a result, in client order."""
    out = []
    for p in res.get("points") or []:
        n, r = h.finite(get(p, "clients")), get(p, "result")
        if n is not None and isinstance(r, Mapping):
            out.append((int(n), r))
    return sorted(out, key=lambda t: t[0])


def title(res: Mapping[str, Any]) -> str:
    first = points(res)[0][1] if points(res) else res
    name = get(first, "workload", "workload", "name", default="?")
    counts = ", ".join(str(n) for n, _ in points(res)) or "none"
    return f"aiio {res.get('phase') or first.get('phase', '?')} scaling sweep: {name}, " \
           f"clients {counts}"


def render_body(res: Mapping[str, Any]) -> list[Html]:
    pts = points(res)
    base = pts[0][1] if pts else res
    return [
        header(res, title(res)),
        status_notice(res, "sweep"),
        missing_notice(res, EXPECTED),
        warnings_section(sweep_warnings(res, pts), "sweep", res.get("status") == "ok"),
        guarded("verdict", verdict_section, res.get("verdict")),
        guarded("scaling", scaling_section, pts),
        guarded("measured", measured_section, base,
                f"{len(pts)} points: {', '.join(str(n) for n, _ in pts)} clients"),
        guarded("points", points_section, pts),
        guarded("other", other_section, res, KNOWN),
    ]


def sweep_warnings(res: Mapping[str, Any], pts: Sequence[tuple[int, Mapping]]) -> list[dict]:
    """The sweep's own warnings, then each point's, naming the client counts that raised it."""
    seen: dict[tuple[str, str], list[int]] = {}
    for n, r in pts:
        for w in r.get("warnings") or []:
            if isinstance(w, Mapping):
                seen.setdefault((w.get("code", "warning"), w.get("message", "")), []).append(n)
    out = list(res.get("warnings") or [])
    for (code, message), counts in seen.items():
        out.append({"code": code, "message": f"{message} (at {', '.join(map(str, counts))} "
                                             "clients)"})
    return out


def verdict_section(verdict: Any) -> Html:
    if not verdict:
        return Html("")
    if isinstance(verdict, str):
        return h.section("Verdict", h.notice("info", verdict), anchor="verdict")
    statements = [v for v in verdict.values() if isinstance(v, str) and " " in v] \
        if isinstance(verdict, Mapping) else []
    parts = [h.notice("info", "The scaling verdict", statements)] if statements else []
    rest = {k: v for k, v in verdict.items() if v not in statements} \
        if isinstance(verdict, Mapping) else {}
    if rest:
        parts.append(h.nested_table(rest))
    elif not isinstance(verdict, Mapping):
        parts.append(h.tag("p", h.plain(verdict)))
    return h.section("Verdict", *parts, anchor="verdict",
                     note="Scaling efficiency E(N) = aggregate(N) / (N x aggregate(1)).")


def point_row(n: int, r: Mapping[str, Any], base: tuple[int, float] | None) -> dict[str, Any]:
    agg = r.get("aggregate") or {}
    fd = h.finite(get(agg, "first_done", "mib_s"))
    eff = None
    if base and fd is not None and base[1] > 0:
        eff = fd / (n / base[0] * base[1])
    spread = agg.get("per_client_mib_s") or {}
    lat = next(iter((agg.get("latency") or {}).values()), {})
    return {"clients": n, "status": r.get("status"), "first": fd,
            "last": get(agg, "last_done", "mib_s"), "eff": eff, "mean": spread.get("mean"),
            "min": spread.get("min"), "max": spread.get("max"), "cv": spread.get("cv"),
            "jain": agg.get("jain"), "au_mean": agg.get("au_mean"), "au_min": agg.get("au_min"),
            "au_goal": agg.get("au_goal"), "p50": lat.get("p50_ns"), "p99": lat.get("p99_ns"),
            "cpu": get(r, "monitor", "cpu_percent_mean")}


def rows(pts: Sequence[tuple[int, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    first = [(n, h.finite(get(r, "aggregate", "first_done", "mib_s"))) for n, r in pts]
    base = next(((n, v) for n, v in first if v), None)
    return [point_row(n, r, base) for n, r in pts]


def scaling_section(pts: Sequence[tuple[int, Mapping[str, Any]]]) -> Html:
    data = [r for r in rows(pts) if r["first"] is not None]
    if not data:
        return h.section("Scaling", h.notice("warn", "No point has aggregate figures."),
                         anchor="scaling")
    n = [r["clients"] for r in data]
    n0, a0 = data[0]["clients"], data[0]["first"]
    agg = charts.scaling(n, [("aggregate, first done", [r["first"] for r in data], "-"),
                             ("aggregate, last done", [r["last"] or 0 for r in data], "-"),
                             (f"linear from {n0} client(s)", [a0 * c / n0 for c in n], "--")],
                         title="aggregate bandwidth against clients", ylabel="MiB/s",
                         caption="Aggregate bandwidth at each client count, with the line "
                                 "linear scaling would follow.")
    mean = [h.finite(r["mean"]) or 0 for r in data]
    per = charts.scaling(n, [("per client mean", mean, "-"),
                             (f"constant at {n0} client(s)", [mean[0]] * len(n), "--")],
                         band=([h.finite(r["min"]) or 0 for r in data],
                               [h.finite(r["max"]) or 0 for r in data], "min to max"),
                         title="per-client bandwidth against clients", ylabel="MiB/s per client",
                         caption="Each client's bandwidth: the mean, and the band from the "
                                 "slowest to the fastest client.")
    figs = [agg, per]
    if any(r["au_mean"] is not None for r in data):
        goal = h.finite(data[0]["au_goal"])
        lines = [("AU mean", [(h.finite(r["au_mean"]) or 0) * 100 for r in data], "-"),
                 ("AU min", [(h.finite(r["au_min"]) or 0) * 100 for r in data], "-")]
        if goal is not None:
            lines.append((f"goal {goal:.0%}", [goal * 100] * len(n), "--"))
        figs.append(charts.scaling(n, lines, title="accelerator utilization against clients",
                                   ylabel="AU (%)", caption="Mean and lowest client AU at "
                                   "each client count, against the workload's goal."))
    return h.section("Scaling", h.figures(*figs), _table(rows(pts)), anchor="scaling")


def _table(data: list[dict[str, Any]]) -> Html:
    headers = ["clients", "status", "aggregate first done", "aggregate last done",
               "efficiency E(N)", "per client mean", "min", "max", "CV", "Jain", "AU mean",
               "AU min", "p50", "p99", "client CPU busy"]
    body = []
    for r in data:
        body.append([h.num(str(r["clients"]), r["clients"]), h.Cell(h.badge(r["status"])),
                     h.num(h.mib_s(r["first"]), r["first"]), h.num(h.mib_s(r["last"]), r["last"]),
                     h.num(h.pct(r["eff"]), r["eff"]), h.num(h.mib_s(r["mean"]), r["mean"]),
                     h.num(h.mib_s(r["min"]), r["min"]), h.num(h.mib_s(r["max"]), r["max"]),
                     h.num(h.number(r["cv"], 3), r["cv"]), h.num(h.number(r["jain"], 3), r["jain"]),
                     h.num(h.pct(r["au_mean"]), r["au_mean"]),
                     h.num(h.pct(r["au_min"]), r["au_min"]),
                     h.num(h.latency(r["p50"]), r["p50"]), h.num(h.latency(r["p99"]), r["p99"]),
                     h.num(h.number(r["cpu"], 0, "%"), r["cpu"])])
    return h.table(headers, body, sortable=True,
                   caption="One row per client count; efficiency relative to the smallest count.")


def points_section(pts: Sequence[tuple[int, Mapping[str, Any]]]) -> Html:
    if not pts:
        return Html("")
    parts = [h.details(f"{n} clients: every client's figures ({r.get('status', '?')})",
                       clients_section(r)) for n, r in pts]
    return h.section("Each point", *parts, anchor="points",
                     note="Every client's numbers at every client count, as recorded.")
