"""The report of a sweep: the scaling verdict, the two scaling charts and a row per client count.

Reads the sweep result as docs/RESULTS.md defines it (`points[]`, `table[]`, `verdict`, `sweep`);
when the table is missing (a sweep cut short before it was judged) the rows are read from the
points' own aggregates instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiio.report import html as h
from aiio.report.common import (
    guarded,
    header,
    measured_section,
    missing_notice,
    other_section,
    status_notice,
    warnings_section,
)
from aiio.report.placement import sweep_section as placement_section
from aiio.report.run import clients_section
from aiio.results import charts
from aiio.results.markup import Html
from aiio.results.result import Result, SweepRow, clients_requested, dig, main_op, model
from aiio.sweep.verdict import NOT_MEASURABLE

EXPECTED = {
    "points": "the measured client counts (no point finished)",
    "table": "the per-count table (read from the points instead)",
    "verdict": "the scaling verdict",
}
KNOWN = {"schema", "io", "kind", "id", "phase", "status", "error", "started", "finished", "points",
         "table", "verdict", "warnings", "workload", "environment", "target", "method",
         "saved_at", "options", "sweep", "charts"}


def points(res: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Points that hold a result, by client count then repeat; a point whose own count was
    read as missing at its run's count."""
    pts = [p if h.finite(p.get("clients")) is not None
           else dict(p, clients=clients_requested(p["result"]))
           for p in h.items(res.get("points"))
           if isinstance(p, Mapping) and isinstance(p.get("result"), Mapping)]
    return sorted(pts, key=lambda p: (p["clients"], h.finite(p.get("repeat")) or 0))


def title(res: Mapping[str, Any]) -> str:
    base = _base(res)
    name = dig(base, "workload", "workload", "name", default="?")
    counts = dig(res, "sweep", "clients") or sorted({p["clients"] for p in points(res)})
    return f"aiio {res.get('phase') or base.get('phase', '?')} scaling sweep: {name}, " \
           f"clients {', '.join(str(n) for n in counts) or 'none'}"


def _base(res: Mapping[str, Any]) -> Mapping[str, Any]:
    """Where the target, workload and environment are: the sweep, else its first point."""
    if res.get("target") or not points(res):
        return res
    return points(res)[0]["result"]


def render_body(res: Mapping[str, Any]) -> list[Html]:
    data = rows(res)
    return [
        header(res, title(res)),
        status_notice(res, "sweep"),
        guarded("verdict", verdict_section, res.get("verdict")),
        warnings_section(sweep_warnings(res), "sweep", res.get("status") == "ok"),
        missing_notice(res, EXPECTED),
        guarded("scaling", scaling_section, data, dig(res, "sweep", "threshold"),
                main_op(res)),
        guarded("placement", placement_section, points(res)),
        guarded("measured", measured_section, _base(res), clients_text(res, data)),
        guarded("sweep parameters", parameters_section, res.get("sweep")),
        guarded("points", points_section, points(res)),
        guarded("other", other_section, res, KNOWN),
    ]


def clients_text(res: Mapping[str, Any], data: Sequence[Mapping[str, Any]]) -> str:
    asked = dig(res, "sweep", "clients")
    done = [r["clients"] for r in data]
    text = f"{len(done)} client counts measured: {', '.join(map(str, done)) or 'none'}"
    return text + (f" (asked for {', '.join(map(str, asked))})" if asked and asked != done
                   else "")


def sweep_warnings(res: Mapping[str, Any]) -> list[dict[str, str]]:
    """Each warning once, naming the client counts that raised it; read from the points when
    the sweep did not merge them."""
    merged = list(h.items(res.get("warnings")))
    if not merged:
        seen: dict[str, dict[str, Any]] = {}
        for p in points(res):
            for w in h.items(p["result"].get("warnings")):
                if isinstance(w, Mapping):
                    e = seen.setdefault(w.get("code", "warning"), dict(w, clients=[]))
                    if p["clients"] not in e["clients"]:
                        e["clients"].append(p["clients"])
        merged = list(seen.values())
    out = []
    for w in merged:
        if not isinstance(w, Mapping):
            out.append({"code": "warning", "message": str(w)})
            continue
        at = w.get("clients")
        where = f" (at {', '.join(map(str, at))} clients)" if at else ""
        out.append({"code": w.get("code", "warning"), "message": f"{w.get('message', '')}{where}"})
    return out


# --- verdict ------------------------------------------------------------------------------

def verdict_section(v: Any) -> Html:
    if not v:
        return Html("")
    if not isinstance(v, Mapping):
        return h.section("Verdict", h.notice("info", h.plain(v)), anchor="verdict")
    parts = []
    statements = [s for s in h.items(v.get("statements")) if isinstance(s, str)]
    kind = {"linear": "ok", "saturated": "warn", "degrading": "fail"}.get(v.get("shape"), "info")
    if statements:
        parts.append(h.notice(kind, f"Scaling: {_shape(v)}", statements))
    if v.get("caveats"):
        parts.append(h.notice("warn", "Caveats", v["caveats"]))
    parts.append(h.kv_table(verdict_pairs(v)))
    if v.get("basis"):
        parts.append(h.tag("p", f"Basis: {v['basis']}", class_="note"))
    parts.append(h.details("the whole verdict as recorded", h.nested_table(v)))
    return h.section("Verdict", *parts, anchor="verdict")


def _shape(v: Mapping[str, Any]) -> str:
    """The verdict's shape as the page names it: "not measurable" in words, as the console
    says it (the others as recorded, which the stored pages pin)."""
    shape = v.get("shape", "see below")
    return "not measurable" if shape == NOT_MEASURABLE else str(shape)


def _linear_up_to(v: Mapping[str, Any]) -> str:
    if v.get("linear_up_to") is not None:
        return f"{h.plain(v['linear_up_to'])} clients"
    if v.get("demand_bound_up_to") is not None:  # those points never count toward linear
        return f"not judged: paced by compute up to {h.plain(v['demand_bound_up_to'])} clients"
    return h.MISSING


def verdict_pairs(v: Mapping[str, Any]) -> list[tuple[str, str]]:
    if v.get("shape") == NOT_MEASURABLE:  # no threshold, linear range or knee was judged
        return [("shape", _shape(v)),
                ("baseline", f"{h.plain(v.get('baseline_clients'))} clients at "
                             f"{h.mib_s(v.get('baseline_mib_s'))}")]
    peak, plateau, au = v.get("peak") or {}, v.get("plateau") or {}, v.get("au") or {}
    rows = [
        ("shape", h.plain(v.get("shape"))),
        ("efficiency threshold", h.pct(v.get("threshold"), 0)),
        ("baseline", f"{h.plain(v.get('baseline_clients'))} clients at "
                     f"{h.mib_s(v.get('baseline_mib_s'))}"),
        ("scales linearly up to", _linear_up_to(v)),
        ("knee (first count below the threshold)", h.plain(v.get("knee"))),
        ("peak aggregate", f"{h.mib_s(peak.get('mib_s'))} at {h.plain(peak.get('clients'))} "
                           "clients" if peak else h.MISSING),
    ]
    if plateau:
        rows.append(("plateau", f"{h.mib_s(plateau.get('mib_s'))} from "
                                f"{h.plain(plateau.get('from_clients'))} clients"))
    if au:
        rows.append(("most clients at the AU goal",
                     f"{h.plain(au.get('max_clients_at_goal'))} (goal {h.pct(au.get('goal'), 0)})"))
    return rows


# --- the per-count rows -------------------------------------------------------------------

def rows(res: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The sweep's table, or rows of the same shape read from its points."""
    table = [r for r in h.items(res.get("table")) if isinstance(r, Mapping)
             and h.finite(r.get("clients")) is not None]
    if table:
        return sorted((dict(r) for r in table), key=lambda r: r["clients"])
    by_count: dict[int, list[Mapping[str, Any]]] = {}
    for p in points(res):
        by_count.setdefault(int(p["clients"]), []).append(p["result"])
    out = [_row(n, runs) for n, runs in sorted(by_count.items())]
    # the smallest count with a figure is the baseline; against one that moved nothing E(N)
    # is undefined, as in a judged sweep's table (not measured against a later count)
    base = next((r for r in out if r["aggregate_mib_s"] is not None), None)
    for r in out:
        r["efficiency"] = None
        if base and base["aggregate_mib_s"] > 0 and r["aggregate_mib_s"] is not None:
            r["efficiency"] = r["aggregate_mib_s"] / (r["clients"] / base["clients"]
                                                      * base["aggregate_mib_s"])
    return out


def _mean(values: Sequence[Any]) -> float | None:
    xs = [x for x in (h.finite(v) for v in values) if x is not None]
    return sum(xs) / len(xs) if xs else None


def _row(n: int, runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One count's figures from its runs (means over repeats)."""
    sums = [(r if isinstance(r, Result) else model(r)).summary for r in runs]
    tops = [s.top for s in sums]
    pcs = [t.per_client_mib_s for t in tops]
    row = {"clients": n, "repeats": len(runs),
           "aggregate_mib_s": _mean([t.first_done and t.first_done.mib_s for t in tops]),
           "last_done_mib_s": _mean([t.last_done and t.last_done.mib_s for t in tops]),
           "per_client_mib_s": {k: _mean([getattr(p, k) if p else None for p in pcs])
                                for k in ("mean", "min", "max", "cv")},
           "jain": _mean([t.jain for t in tops]),
           "latency": tops[0].latency,
           "cpu_percent": _mean([dig(r, "monitor", "cpu_percent_mean") for r in runs])}
    aus = [s.au for s in sums]
    if all(au is not None for au in aus):
        row.update(au_mean=_mean([au.mean for au in aus]),
                   au_min=min(au.min or 0 for au in aus), au_goal=aus[0].goal)
    return row


# --- charts and table ---------------------------------------------------------------------

def scaling_section(data: Sequence[Mapping[str, Any]], threshold: Any = None,
                    op: str = "read") -> Html:
    """The scaling charts and table; latency is the phase's main operation's (`op`)."""
    data = [r for r in data if h.finite(r.get("aggregate_mib_s")) is not None]
    if not data:
        return h.section("Scaling", h.notice("warn", "No client count has aggregate figures."),
                         anchor="scaling")
    return h.section("Scaling", h.figures(*scaling_charts(data, h.finite(threshold))),
                     table(data, op),
                     anchor="scaling",
                     note="Aggregate: all clients' bytes over the window in which every "
                          "client was running (first done), mean over repeats.")


def _pc(r: Mapping[str, Any], key: str) -> float:
    return h.finite(dig(r, "per_client_mib_s", key)) or 0.0


def scaling_charts(data: Sequence[Mapping[str, Any]],
                   threshold: float | None = None) -> list[Html | None]:
    n = [int(r["clients"]) for r in data]
    n0, a0 = n[0], float(data[0]["aggregate_mib_s"])
    spread = [r.get("aggregate_spread") or {} for r in data]
    band = None
    if any((h.finite(s.get("n")) or 1) > 1 for s in spread):
        band = ([h.finite(s.get("min")) or 0 for s in spread],
                [h.finite(s.get("max")) or 0 for s in spread], "repeats: min to max")
    agg = charts.scaling(n, [
        ("aggregate, first done", [float(r["aggregate_mib_s"]) for r in data], "-"),
        ("aggregate, last done", [h.finite(r.get("last_done_mib_s")) or 0 for r in data], "-"),
        (f"linear from {n0} client(s)", [a0 * c / n0 for c in n], "--")],
        band=band, title="aggregate bandwidth against clients", ylabel="aggregate MiB/s",
        loglog=True,
        caption="Does the aggregate grow in proportion to the clients? Both axes are "
                "logarithmic, so linear scaling is a straight line: the dashed one, of slope "
                "1, from the smallest count. A line that bends below it has stopped scaling.")
    mean = [_pc(r, "mean") for r in data]
    per = charts.scaling(n, [("per-client mean", mean, "-"),
                             (f"constant at {n0} client(s)", [mean[0]] * len(n), "--")],
                         band=([_pc(r, "min") for r in data], [_pc(r, "max") for r in data],
                               "slowest to fastest client"),
                         title="per-client bandwidth against clients", ylabel="MiB/s per client",
                         caption="Does each client keep its bandwidth as clients are added? "
                                 "Mean, and the band from the slowest to the fastest client.")
    out = [agg, _efficiency_chart(data, threshold), per]
    if any(r.get("au_min") is not None for r in data):
        goal = h.finite(data[0].get("au_goal"))
        lines = [("AU mean", [(h.finite(r.get("au_mean")) or 0) * 100 for r in data], "-"),
                 ("AU of the lowest client", [(h.finite(r.get("au_min")) or 0) * 100
                                              for r in data], "-")]
        if goal is not None:
            lines.append((f"goal {goal:.0%}", [goal * 100] * len(n), "--"))
        out.append(charts.scaling(n, lines, title="accelerator utilization against clients",
                                  ylabel="AU (%)", caption="Mean and lowest client AU at each "
                                  "count, against the workload's goal."))
    return out


def _efficiency_chart(data: Sequence[Mapping[str, Any]],
                      threshold: float | None) -> Html | None:
    """E(N) per count beyond the first (the baseline, 100 % by definition) against the
    threshold."""
    pts = [(int(r["clients"]), h.finite(r.get("efficiency")), SweepRow.of(r).au)
           for r in data[1:]]
    pts = [(n, e, au) for n, e, au in pts if e is not None]
    if not pts:
        return None
    n0 = int(data[0]["clients"])
    return charts.efficiency([n for n, _, _ in pts], [e for _, e, _ in pts], threshold,
                             paced=[au is not None and au.paced_by_compute
                                    for _, _, au in pts],
                             caption=f"E(N) = aggregate(N) / (N/{n0} x aggregate({n0})): the "
                                     "share of linear scaling reached at each count; red bars "
                                     "are below the threshold; grey bars were paced by the "
                                     "emulated compute (AU met its goal), not by the "
                                     "storage.")


def _lat(r: Mapping[str, Any], key: str, main: str) -> Any:
    lat = r.get("latency") or {}
    op = main if main in lat else next(iter(lat), None)
    return dig(lat, op, key) if op else None


def table(data: Sequence[Mapping[str, Any]], op: str = "read") -> Html:
    headers = ["clients", "repeats", "aggregate first done", "last done", "efficiency E(N)",
               "consistency C(N)", "per client mean", "slowest client", "fastest client",
               "CV", "Jain", "AU mean", "AU lowest", "p50", "p99", "client CPU busy",
               "warnings"]
    body = []
    for r in data:
        cells = [("clients", h.plain), ("repeats", h.plain), ("aggregate_mib_s", h.mib_s),
                 ("last_done_mib_s", h.mib_s), ("efficiency", h.pct), ("consistency", h.pct)]
        row = [h.num(fmt(r.get(k)), r.get(k)) for k, fmt in cells]
        row += [h.num(h.mib_s(dig(r, "per_client_mib_s", k)), dig(r, "per_client_mib_s", k))
                for k in ("mean", "min", "max")]
        cv = dig(r, "per_client_mib_s", "cv")
        row += [h.num(h.number(cv, 3), cv), h.num(h.number(r.get("jain"), 3), r.get("jain")),
                h.num(h.pct(r.get("au_mean")), r.get("au_mean")),
                h.num(h.pct(r.get("au_min")), r.get("au_min")),
                h.num(h.latency(_lat(r, "p50_ns", op)), _lat(r, "p50_ns", op)),
                h.num(h.latency(_lat(r, "p99_ns", op)), _lat(r, "p99_ns", op)),
                h.num(h.number(r.get("cpu_percent"), 0, "%"), r.get("cpu_percent")),
                h.plain(r.get("warnings") or "")]
        body.append(row)
    return h.table(headers, body, sortable=True,
                   caption="One row per client count; E(N) = aggregate(N) / (N/N0 x "
                           "aggregate(N0)), C(N) = per-client mean(N) / per-client mean(N0).")


# --- parameters and points ----------------------------------------------------------------

def parameters_section(params: Any) -> Html:
    if not isinstance(params, Mapping):
        return Html("")
    rows = [("client counts asked for", h.plain(params.get("clients"))),
            ("repeats per count", h.plain(params.get("repeat"))),
            ("efficiency threshold", h.pct(params.get("threshold"), 0)),
            ("each point runs for", h.seconds(params.get("duration_s"))
             if params.get("duration_s") else "a fixed amount of work"),
            ("left out of every point", h.plain(params.get("excluded")))]
    return h.section("How the sweep was run", h.kv_table(rows), anchor="parameters")


def points_section(pts: Sequence[Mapping[str, Any]]) -> Html:
    if not pts:
        return Html("")
    parts = []
    for p in pts:
        r = p["result"]
        rep = f", repeat {int(p['repeat']) + 1}" if h.finite(p.get("repeat")) is not None else ""
        where = f" in {p['folder']}" if p.get("folder") else ""
        parts.append(h.details(f"{p['clients']} clients{rep}: every client's figures "
                               f"({r.get('status', '?')}){where}", clients_section(r)))
    return h.section("Each point", *parts, anchor="points",
                     note="Every client's numbers at every client count, as recorded.")
