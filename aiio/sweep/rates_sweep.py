"""`aiio scale --phase kvcache --rates 1,2,4,8`: one row per offered request rate of the open
loop, at the workload's client count and users, and the highest rate that was steady and
within a latency goal: the open loop's latency against its offered rate.

A rate is requests/s offered per client, the meaning of `kvcache.request_rate` (Poisson
arrivals, each client its own); each row is a full run at it, saved as any run's (the users
table's machinery, aiio.sweep.users_sweep). A row's offered rate is the rate given times the
clients; its served rate is the requests done within the duration over the duration (the
run's own requests_per_s, docs/METHOD.md). A storage that keeps up serves what arrived (the
Poisson draw of the offered rate); one that does not serves its own rate, its queue grows and
the run is overloaded. A rate is steady within the goal as a users row is (users_sweep).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping
from typing import Any

from aiio.errors import ConfigError
from aiio.phases import get_phase
from aiio.results import parts
from aiio.results.result import Result
from aiio.run.wallclock import now_iso
from aiio.sweep import users_sweep
from aiio.sweep.find_users import OnDone
from aiio.sweep.run import check_increasing, split_list, with_value
from aiio.sweep.users_sweep import (
    Axis,
    Ran,
    Tabled,
    TableRequest,
    by_value,
    p95_text,
    run_figures,
    run_rows,
    steady_at_goal,
    table_row,
    with_runs,
)
from aiio.workload import Workload

UNIT = "requests/s offered per client"


def parse_rates(text: str) -> list[float]:
    """'0.5,1,2' -> [0.5, 1.0, 2.0]: at least two finite rates above 0, increasing."""
    rates = split_list(text, "--rates", _finite, "a number of requests/s, e.g. 0.5,1,2")
    what = f"--rates {text}"
    bad = [r for r in rates if r <= 0]
    if bad:
        raise ConfigError(f"{what}: rates must be above 0 (got {bad[0]:g})")
    check_increasing(rates, what, "rates", "rates")
    return rates


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


# The requests a client must expect in the duration at the lowest rate: a run whose client
# served none measured nothing and failed, and took the rows run before it along. Arrivals
# are Poisson: at 3 expected, a client sees none in 5 % of runs (e^-3).
MIN_EXPECTED = 3.0


def check(phase: str, w: Workload, rates: list[float], text: str) -> None:
    """Refuse, in one line, a phase or workload with no open loop to set the rate of, or
    rates it cannot run at, before the first row runs."""
    p = get_phase(phase)
    if p.rate_key is None:
        raise ConfigError(f"--rates applies to a phase with an open loop (kvcache), not to "
                          f"--phase {phase}")
    why = p.closed_to_rates(with_value(w, *p.rate_key, rates[-1]))
    if why:
        raise ConfigError(why)
    duration = getattr(getattr(w, p.duration_key[0]), p.duration_key[1])
    expected = rates[0] * duration
    if expected < MIN_EXPECTED:
        raise ConfigError(
            f"--rates {text}: at {rates[0]:g} requests/s a client expects {expected:.2g} in "
            f"the {duration:g} s duration, and a run whose client serves none measures "
            f"nothing; give rates of at least {MIN_EXPECTED / duration:.3g}/s or a longer "
            "--duration")


def _offered(r: Mapping[str, Any]) -> str:
    return (f"{_rate(r['offered_per_s'])} offered, {_rate(r.get('arrived_per_s'))} arrived, "
            f"{_rate(r['served_per_s'])} served")


def _rate(v: float | None) -> str:
    """Requests/s in at most 5 characters below 1e10: three digits below 100, whole ones
    below 100,000, then thousands (k) and millions (M); never 1.28e+03 (64 clients at 20/s
    serve over 1,000 a second, and a column of 6 took 8)."""
    if v is None:
        return "-"
    if v < 100:
        return f"{v:.3g}"
    return f"{v:.0f}" if v < 1e5 else f"{v / 1e3:.0f}k" if v < 1e7 else f"{v / 1e6:.0f}M"


RATES = Axis("rate", "no offered rate", lambda r: f"up to {r['rate']:g} requests/s per client",
             lambda r: f"{_offered(r)} a second in all; {p95_text(r)}",
             lambda r: f"at {r['rate']:g}/s",
             lambda r: f"{_offered(r)}; {p95_text(r)}, {r['verdict']}")


def statement(goal: str, goal_ms: float | None, clients: int, rows: list[dict]) -> str:
    """The highest rate steady within the goal, the first above it that was not, and any
    lower that was not either."""
    return users_sweep.statement(goal, goal_ms, clients, rows, RATES)


def run_table(req: TableRequest, run_one: Callable[[Workload], dict[str, Any]],
              on_row: OnDone | None = None) -> dict:
    """Every rate's runs, the table and its statement (each row's as it is done to
    `on_row`); TableStopped, with the rows done, when a run stops it after the first
    rate's."""
    return run_rows(req, get_phase(req.phase).rate_key, "rates", run_one,
                    lambda ran, status: _table(req, ran, status), on_row)


def _table(req: TableRequest, ran: Ran, status: str) -> dict:
    """The table of the rates' runs (`ran`: each rate's, in order) and its statement."""
    clients, rows = req.workload.run.clients, []
    for v, runs in by_value(ran):
        row = table_row({"rate": v}, [run_figures(r, req.goal) for r in runs])
        row["offered_per_s"], row["served_per_s"] = v * clients, row["requests_per_s"]
        row["arrived_per_s"] = _mean([arrived_per_s(r) for r in runs])
        rows.append(row)
    best = [r["rate"] for r in rows if steady_at_goal(r)]
    goal_ms = rows[0]["goal_ms"]
    return {"kind": "rates_table", "phase": req.phase, "status": status, "goal": req.goal,
            "goal_ms": goal_ms, "clients": clients, "users": _users(req),
            "rates": req.values, "rate_unit": UNIT, "repeats": req.repeat,
            "settings": users_sweep.settings(req), "rows": rows,
            "highest_rate_steady_at_goal": best[-1] if best else None,
            "statement": statement(req.goal, goal_ms, clients, rows), "finished": now_iso()}


def arrived_per_s(res: Result | Mapping[str, Any]) -> float | None:
    """What the run's Poisson draws really offered: every request that arrived within the
    duration (served, or still waiting at its end), over it; None when it recorded none."""
    kv = parts.as_result(res).kvcache
    if kv is None or None in (kv.requests, kv.verdict.waiting_at_end) \
            or not kv.rate_window_s:
        return None
    return (kv.requests + kv.verdict.waiting_at_end) / kv.rate_window_s


def _mean(values: list[float | None]) -> float | None:
    return None if None in values else sum(values) / len(values)


def _users(req: TableRequest) -> int:
    """The users each client serves at every rate."""
    section, key = get_phase(req.phase).users_key
    return getattr(getattr(req.workload, section), key)


def rates_table(req: TableRequest) -> Tabled:
    """Run the table over the offered rate; save it beside the rows' own runs."""
    return with_runs(req, f"rates-{req.phase}", run_table)


HEADINGS = ("rate", "arrived", "served", "p50", "p95", "p99", "queue95", "verdict",
            "within %")
_SPECS = (">5", ">7", ">6", ">6", ">6", ">6", ">7", "<10", "")


def cells(r: Mapping[str, Any], goals: list[str]) -> list[str]:
    """A row's figures as the console and the page show them; within: a share per goal."""
    lat = r["latency_ms"]
    return [_rate(r["rate"]), _rate(r.get("arrived_per_s")), _rate(r["served_per_s"]),
            *(_ms(lat[k]) for k in ("p50", "p95", "p99")), _ms(r["queue_ms"]["p95"]),
            r["verdict"], "/".join("-" if r["shares"][g] is None
                                   else f"{100 * r['shares'][g]:.0f}" for g in goals)]


def goals_of(out: Mapping[str, Any]) -> list[str]:
    """The goals the within column's shares are of, in its order."""
    return list(out["rows"][0]["shares"])


def legend(out: Mapping[str, Any]) -> str:
    """What the table's columns are."""
    return (f"rate: {UNIT}; arrived, served: requests/s over the {out['clients']} client(s), "
            "arrived = the Poisson arrivals within the duration, served = done within it; "
            "p50, p95, p99: request latency, queue95: the P95 of its queue wait, in ms; "
            f"within %: of requests, within the {'/'.join(goals_of(out))} goals")


def text_table(out: dict[str, Any]) -> list[str]:
    """The table, a row per rate, and what its columns are: at most 80 columns with five
    goals (the shares, one per goal, come last)."""
    def line(c: list[str] | tuple[str, ...]) -> str:
        return " ".join(f"{x:{s}}" for x, s in zip(c, _SPECS, strict=True))
    goals = goals_of(out)
    return [line(HEADINGS), *(line(cells(r, goals)) for r in out["rows"]),
            *textwrap.wrap(legend(out), 80)]


def _ms(v: float | None) -> str:
    """A latency in ms: tenths below 100 ms, whole ms above (a column of 6)."""
    return "-" if v is None else f"{v:.1f}" if v < 100 else f"{v:.0f}"
