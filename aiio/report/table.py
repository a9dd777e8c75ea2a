"""The page of a table over users per client or over the open loop's offered rate (`aiio
scale --phase kvcache --users` / `--rates`): its statement, a row per value with the
figures as the console shows them, a link to each row's own run report, and the settings
every run shared. Reads the table's result as saved (aiio.sweep.users_sweep, rates_sweep)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aiio.report import html as h
from aiio.report.common import sections
from aiio.results.markup import Html
from aiio.sweep import rates_sweep, users_sweep

KNOWN = {"schema", "kind", "id", "phase", "status", "error", "started", "finished", "goal",
         "goal_ms", "clients", "users", "rates", "rate_unit", "repeats", "settings", "rows",
         "statement", "most_users_steady_at_goal", "highest_rate_steady_at_goal"}


def _users_cells(res: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], list[str]]:
    return users_sweep.cells


def _rates_cells(res: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], list[str]]:
    goals = rates_sweep.goals_of(res)
    return lambda r: rates_sweep.cells(r, goals)


# each kind: what it varies, its columns, a row's cells, the legend of its columns
KINDS = {
    "users_table": ("users per client", users_sweep.HEADINGS, _users_cells,
                    lambda res: "read, write: MiB/s over the clients, first done; p50, p95, "
                                "p99: request latency, in ms; within: of requests, within the "
                                f"{res.get('goal', '?')} goal"),
    "rates_table": ("offered rate", rates_sweep.HEADINGS, _rates_cells, rates_sweep.legend),
}


def _values(res: Mapping[str, Any]) -> str:
    if res.get("kind") == "rates_table":
        return f"{', '.join(f'{v:g}' for v in h.items(res.get('rates')))} " \
               f"{res.get('rate_unit', '')}".strip()
    return ", ".join(str(v) for v in h.items(res.get("users")))


def title(res: Mapping[str, Any]) -> str:
    what = KINDS[str(res.get("kind"))][0]
    return f"aiio {res.get('phase', '?')} table over the {what}: {_values(res)}, at " \
           f"{h.plain(res.get('clients'))} client(s)"


def render_body(res: Mapping[str, Any]) -> list[Html]:
    return sections(res, title(res), "table", (("statement", statement_section),
                                               ("table", table_section),
                                               ("settings", settings_section)), KNOWN)


def statement_section(res: Mapping[str, Any]) -> Html:
    """The statement the console prints under the table."""
    best = res.get("most_users_steady_at_goal", res.get("highest_rate_steady_at_goal"))
    return h.section("Statement", h.notice("ok" if best is not None else "warn",
                                           str(res.get("statement", h.MISSING))),
                     anchor="statement")


def table_section(res: Mapping[str, Any]) -> Html:
    """A row per value, its figures as the console shows them, and its runs' reports."""
    _, headings, cells_of, legend = KINDS[str(res.get("kind"))]
    cells = cells_of(res)
    rows = [[*(h.Cell(c, cls=None if head == "verdict" else "n")
               for head, c in zip(headings, cells(r), strict=True)),
             h.num(h.plain(r.get("repeats")), r.get("repeats")), run_links(r)]
            for r in h.items(res.get("rows")) if isinstance(r, Mapping)]
    return h.section("Table", h.table((*headings, "repeats", "each run's report"), rows),
                     anchor="table", note=f"{legend(res)}. A request's latency is its queue "
                     "wait + storage time, pooled over the clients; a row is the mean of its "
                     "repeats, its verdict the worst of theirs.")


def run_links(r: Mapping[str, Any]) -> Html:
    """A link to each of the row's runs' pages, saved beside the table's folder."""
    links = [h.tag("a", run["folder"], href=f"../{run['folder']}/report.html")
             for run in h.items(r.get("runs"))
             if isinstance(run, Mapping) and isinstance(run.get("folder"), str)]
    return h.join(sum(([link, h.tag("br")] for link in links), [])[:-1]) if links \
        else Html(h.MISSING)


def settings_section(res: Mapping[str, Any]) -> Html:
    """What every run of the table shared."""
    s = res.get("settings") if isinstance(res.get("settings"), Mapping) else {}
    goal_ms = res.get("goal_ms")
    pairs = [("offered rates", _values(res)) if res.get("kind") == "rates_table"
             else ("users per client", _values(res))]
    if res.get("kind") == "rates_table":
        pairs.append(("users per client", h.plain(res.get("users"))))
    pairs += [("clients", h.plain(res.get("clients"))),
              ("goal", f"{res.get('goal', h.MISSING)} (P95 within {goal_ms:g} ms)"
               if isinstance(goal_ms, int | float) else h.plain(res.get("goal"))),
              ("repeats per row", h.plain(res.get("repeats"))),
              ("each run lasts", h.seconds(s.get("duration_s")) if s.get("duration_s")
               else h.MISSING),
              ("workload", h.plain(s.get("workload"))), ("target", h.plain(s.get("target"))),
              ("page-cache defeat asked", h.plain(s.get("method"))),
              ("engine", h.plain(s.get("engine") or "the default"))]
    return h.section("How the table was run", h.kv_table(pairs), anchor="settings")
