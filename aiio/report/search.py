"""The page of a search for the most users per client within a latency goal (`aiio scale
--phase kvcache --find-max --max-users N`): its statement, a row per probe in the order the
search ran them, with each repeat's pooled P95 and verdict and a link to its run's report,
and the settings every probe shared. Reads the search's result as saved
(aiio.sweep.find_users)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiio.report import html as h
from aiio.report.common import sections
from aiio.report.table import run_links
from aiio.results.markup import Html

KNOWN = {"schema", "kind", "id", "phase", "status", "error", "started", "finished", "goal",
         "clients", "upper", "repeats", "settings", "probes", "max_users_at_goal",
         "first_not_held", "statement"}


def title(res: Mapping[str, Any]) -> str:
    return f"aiio {res.get('phase', '?')} search for the most users per client within the " \
           f"{res.get('goal', '?')} goal, at {h.plain(res.get('clients'))} client(s)"


def render_body(res: Mapping[str, Any]) -> list[Html]:
    return sections(res, title(res), "search", (("statement", statement_section),
                                                ("probes", probes_section),
                                                ("settings", settings_section)), KNOWN)


def statement_section(res: Mapping[str, Any]) -> Html:
    """The answer, as the console prints it."""
    found = res.get("max_users_at_goal") is not None and res.get("status") == "ok"
    return h.section("Statement", h.notice("ok" if found else "warn",
                                           str(res.get("statement", h.MISSING))),
                     anchor="statement")


def _each(runs: list[Any], key: str, show) -> str:
    """One figure of every repeat, in the order they ran."""
    return ", ".join(show(r.get(key)) for r in runs if isinstance(r, Mapping)) or h.MISSING


def probes_section(res: Mapping[str, Any]) -> Html:
    """A row per probe, in the order probed: its decision, each repeat's figures and run."""
    rows = []
    for p in h.items(res.get("probes")):
        if not isinstance(p, Mapping):
            continue
        runs = [r for r in h.items(p.get("runs")) if isinstance(r, Mapping)]
        goal = next((r.get("goal_ms") for r in runs), None)
        rows.append([h.num(h.plain(p.get("users")), p.get("users")), h.plain(p.get("decision")),
                     _right(_each(runs, "p95_ms", lambda v: h.number(v, 1))),
                     h.num(h.number(goal, 1), goal),
                     _each(runs, "verdict", h.plain),
                     _right(_each(runs, "requests_per_s", lambda v: h.number(v, 1))),
                     run_links(p)])
    return h.section("Probes", h.table(("users per client", "decision", "P95 ms", "goal ms",
                                        "verdict", "requests/s", "each run's report"), rows),
                     anchor="probes",
                     note="In the order the search ran them: doubling until a count fails, "
                     "then bisecting. A count holds when every repeat ended ok, was not "
                     "overloaded and its pooled P95 of request latency (queue wait + storage "
                     "time) was within the goal; straddles when the repeats disagree.")


def _right(text: str) -> h.Cell:
    """A right-aligned cell of figures (one per repeat), sorting as text."""
    return h.Cell(text, cls="n")


def settings_section(res: Mapping[str, Any]) -> Html:
    """What every probe shared."""
    s = res.get("settings") if isinstance(res.get("settings"), Mapping) else {}
    pairs = [("users per client searched", f"1 to {h.plain(res.get('upper'))}"),
             ("clients", h.plain(res.get("clients"))), ("goal", h.plain(res.get("goal"))),
             ("repeats per probe", h.plain(res.get("repeats"))),
             ("each run lasts", h.seconds(s.get("duration_s")) if s.get("duration_s")
              else h.MISSING),
             ("workload", h.plain(s.get("workload"))), ("target", h.plain(s.get("target"))),
             ("page-cache defeat asked", h.plain(s.get("method"))),
             ("engine", h.plain(s.get("engine") or "the default"))]
    return h.section("How the search was run", h.kv_table(pairs), anchor="settings")
