"""The report of an acceptance run: the verdict, the pass/fail table, each threshold's margin,
regressions against the history, and links to the runs behind the checks.

Reads the result as docs/RESULTS.md defines `kind: "accept"`: `checks[]` with name, status,
measured, required, verdicts, failures, reason, warnings, regressions and result_id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiio.report import html as h
from aiio.report.common import (
    environment_pairs,
    guarded,
    header,
    missing_notice,
    other_section,
    status_notice,
    warnings_section,
)
from aiio.results import charts
from aiio.results.markup import Html
from aiio.results.result import dig

EXPECTED = {"checks": "the checks and their verdicts (none was recorded)"}
KNOWN = {"schema", "io", "kind", "id", "status", "error", "started", "finished", "checks",
         "warnings", "saved_at", "environment", "target", "spec", "spec_path", "description",
         "passed", "failed", "errors", "not_run", "history"}
PASSING = ("pass", "passed", "ok")


def checks(res: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in h.items(res.get("checks")) if isinstance(c, Mapping)]


def passed(check: Mapping[str, Any]) -> bool:
    return str(check.get("status", "")).lower() in PASSING


def title(res: Mapping[str, Any]) -> str:
    cs = checks(res)
    spec = f" {res['spec']}" if res.get("spec") else ""
    return f"aiio acceptance run{spec}: {sum(map(passed, cs))} of {len(cs)} checks passed"


def render_body(res: Mapping[str, Any]) -> list[Html]:
    cs = checks(res)
    finished = res.get("status") in ("pass", "fail", "ok")
    return [
        header(res, title(res)),
        status_notice(res, "acceptance run"),
        missing_notice(res, EXPECTED),
        overall_notice(res, cs),
        warnings_section(accept_warnings(res, cs), "acceptance run", finished),
        regressions_notice(cs),
        guarded("checks", checks_section, cs),
        guarded("margins", margins_section, cs),
        guarded("measured", spec_section, res),
        guarded("figures", figures_section, cs),
        guarded("other", other_section, res, KNOWN),
    ]


def overall_notice(res: Mapping[str, Any], cs: Sequence[Mapping[str, Any]]) -> Html:
    not_run = [str(n) for n in h.items(res.get("not_run"))]
    tail = [f"not run (the run was interrupted): {', '.join(not_run)}"] if not_run else []
    if not cs:
        return h.notice("fail", "No check was run.", tail) if tail else Html("")
    bad = [str(c.get("name", "?")) for c in cs if not passed(c)]
    if not bad and not not_run:
        return h.notice("ok", f"All {len(cs)} checks passed.")
    errors = [str(c.get("name", "?")) for c in cs if c.get("status") == "error"]
    items = ([f"errors (the check could not be judged): {', '.join(errors)}"] if errors else [])
    return h.notice("fail", f"{len(bad)} of {len(cs)} checks did not pass: {', '.join(bad)}.",
                    items + tail)


def _check_warnings(c: Mapping[str, Any]) -> list[Any]:
    return h.items(c.get("warnings")) or h.items(dig(c, "result", "warnings"))


def accept_warnings(res: Mapping[str, Any], cs: Sequence[Mapping[str, Any]]) -> list[Any]:
    out = list(h.items(res.get("warnings")))
    for c in cs:
        for w in _check_warnings(c):
            if isinstance(w, Mapping):
                out.append({"code": w.get("code", "warning"),
                            "message": f"{c.get('name', '?')}: {w.get('message', '')}"})
    return out


def regressions_notice(cs: Sequence[Mapping[str, Any]]) -> Html:
    found = [f"{c.get('name', '?')}: {_regression(r)}" for c in cs
             for r in h.items(c.get("regressions"))]
    if not found:
        return Html("")
    return h.notice("fail", "Regressions against each check's own history (worse than the "
                    "median of its last passing runs, even where the threshold still passes):",
                    found, anchor="regressions")


def _regression(r: Any) -> str:
    if not isinstance(r, Mapping):
        return str(r)
    if r.get("message"):
        return str(r["message"])
    fig = str(r.get("figure", "?"))
    return f"{fig} {h.by_name(fig, r.get('value'))} against a baseline of " \
           f"{h.by_name(fig, r.get('baseline'))}"


# --- the pass/fail table ------------------------------------------------------------------

def verdicts(c: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The check's judged thresholds; built from measured/required by name when absent."""
    given = [v for v in h.items(c.get("verdicts")) if isinstance(v, Mapping)]
    if given:
        return [dict(v) for v in given]
    meas, req = c.get("measured"), c.get("required")
    if not (isinstance(meas, Mapping) and isinstance(req, Mapping)):
        return []
    out = []
    for key, need in req.items():
        op = "<=" if key.lower().startswith("max") else ">="
        out.append({"threshold": key, "figure": key, "op": op, "required": need,
                    "measured": meas.get(key), "pass": None})
    return out


def _verdict_line(v: Mapping[str, Any]) -> Html:
    ok = v.get("pass")
    mark = h.badge("pass" if ok else "fail" if ok is False else "n/a")
    fig = str(v.get("figure") or v.get("threshold") or "?")
    got = "not measured" if v.get("measured") is None else h.by_name(fig, v.get("measured"))
    return h.join([mark, " ", h.tag("code", fig), f" {got} {v.get('op', '?')} "
                   f"{h.by_name(fig, v.get('required'))}", Html("<br>")])


def _lines(items: Any) -> Html:
    if isinstance(items, str):
        return h.esc(items)
    return h.join(h.join([str(x), Html("<br>")]) for x in items or [])


def checks_section(cs: Sequence[Mapping[str, Any]]) -> Html:
    if not cs:
        return Html("")
    ordered = sorted(enumerate(cs), key=lambda t: (passed(t[1]), t[0]))
    rows = []
    for i, c in ordered:
        what = " ".join(str(c[k]) for k in ("phase", "workload") if c.get(k))
        if c.get("clients") is not None:
            what += f", {h.plain(c['clients'])} clients"
        why = c.get("failures") or ([c["reason"]] if c.get("reason") else [])
        n_reg = len(h.items(c.get("regressions")))
        run_id = c.get("result_id")
        # the folder, not the id: a run that started in the same second got a -2 suffix
        where = c.get("result_folder") or run_id
        link = h.tag("a", run_id, href=f"../{where}/report.html") if run_id else "not saved"
        rows.append([h.num(str(i + 1), i + 1),
                     h.Cell(h.join([h.tag("strong", c.get("name", "?")), Html("<br>"),
                                    c.get("description") or ""]), str(c.get("name"))),
                     what, h.Cell(h.badge(c.get("status")), str(c.get("status"))),
                     h.Cell(h.join(_verdict_line(v) for v in verdicts(c)) or "none judged"),
                     h.Cell(_lines(why)), h.num(str(n_reg), n_reg),
                     h.Cell(link), h.num(h.seconds(c.get("seconds")), c.get("seconds"))])
    return h.section("Checks", h.table(["#", "check", "what", "status", "thresholds",
                                        "why it did not pass", "regressions", "run", "took"],
                                       rows, sortable=True),
                     note="Failed checks first, then in the order of the spec (#). The run "
                          "link opens the report of the run the figures come from.",
                     anchor="checks")


# --- margins ------------------------------------------------------------------------------

def margins(cs: Sequence[Mapping[str, Any]]) -> list[tuple[str, float, str]]:
    """(check: figure, headroom, op): measured / required for a minimum, required / measured
    for a maximum, so that above 1 always means the threshold is met."""
    out = []
    for c in cs:
        for v in verdicts(c):
            got, need = h.finite(v.get("measured")), h.finite(v.get("required"))
            if got is None or not need:
                continue
            op = str(v.get("op", ">="))
            room = got / need if op.startswith(">") else (need / got if got > 0 else 10.0)
            out.append((f"{c.get('name', '?')}: {v.get('figure') or v.get('threshold')}",
                        room, op))
    return out


def margins_section(cs: Sequence[Mapping[str, Any]]) -> Html:
    found = margins(cs)
    if not found:
        return Html("")
    labels = [m[0] for m in found]
    values = [m[1] for m in found]
    spread = max(values) / max(min(v for v in values if v > 0), 1e-9) if any(values) else 1
    log = spread > 20
    chart = charts.bars(labels, values, percent=True, goal=1.0, goal_label="threshold (100 %)",
                        title="headroom against each threshold", xlabel="check: figure",
                        ylabel="headroom (% of threshold" + (", log scale)" if log else ")"),
                        log=log,
                        caption="Measured over required for a minimum, required over measured "
                                "for a maximum (latency, seconds): above 100 % is met, red is not.")
    rows = [[label, op, h.num(h.pct(v), v)] for (label, v, op) in found]
    return h.section("Margins", h.figures(chart),
                     h.table(["check: figure", "must be", "headroom"], rows, sortable=True),
                     anchor="margins")


# --- what was measured --------------------------------------------------------------------

def spec_section(res: Mapping[str, Any]) -> Html:
    target = res.get("target")
    path = target.get("path") if isinstance(target, Mapping) else target
    rows = [("spec", h.plain(res.get("spec"))), ("spec file", h.plain(res.get("spec_path"))),
            ("description", h.plain(res.get("description"))), ("target", h.plain(path)),
            ("checks passed / failed / errors", " / ".join(
                h.plain(res.get(k)) for k in ("passed", "failed", "errors"))),
            ("history", h.plain(res.get("history")))]
    parts = [h.kv_table(rows, caption="acceptance run")]
    if isinstance(res.get("environment"), Mapping):
        parts.append(h.kv_table(environment_pairs(res["environment"]), caption="environment"))
    return h.section("What was measured", h.grid(*parts), anchor="measured",
                     note="Each check's own workload, clients, filesystem and cache-defeat "
                          "method are in the report of its run.")


def figures_section(cs: Sequence[Mapping[str, Any]]) -> Html:
    parts = [h.details(f"{c.get('name', '?')}: every figure its result holds",
                       h.kv_table([(k, h.by_name(k, v)) for k, v in c["measured"].items()]))
             for c in cs if isinstance(c.get("measured"), Mapping) and c["measured"]]
    if not parts:
        return Html("")
    return h.section("Every measured figure", *parts, anchor="figures")
