"""`aiio scale --phase kvcache --users 8,16,32`: one row per count of users per client, at the
workload's client count, and the most users that were steady and within a latency goal.

Each row is a full run saved as any run's (as `--find-max --max-users` probes are); the row
keeps the run's read and write bandwidth (first done), the pooled request latency percentiles
(queue wait + storage time), the share of requests within the goal class's latency and the
steady/overloaded/not judged verdict. A count is steady within the goal when every repeat
ended ok, was judged steady and its pooled P95 was within the goal; "not judged" (too few
requests to see a trend) is not steady. The rows, their means and the statement serve the
table over the open loop's rate too (aiio.sweep.rates_sweep).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiio.errors import AiioError
from aiio.options import RunOptions
from aiio.phases import get_phase
from aiio.results import parts
from aiio.results.result import Result
from aiio.run.wallclock import now_iso
from aiio.sweep.find_users import (
    OnDone,
    OnSaved,
    Stopped,
    kv_figures,
    probe_figures,
    refuse_early,
    runs_of,
    saved,
    saved_in,
    settings,
    stop_code,
    stop_status,
)
from aiio.sweep.run import with_value
from aiio.workload import Workload

# a row's verdict over its repeats: the worst any repeat had
WORST = ("overloaded", "not judged", "steady")


@dataclass
class TableRequest:
    """A table over one workload key (users per client, the open loop's rate): a run, or
    `repeat`, at each value."""

    phase: str
    workload: Workload
    target: str
    values: list[Any]  # users per client, or rates, increasing
    goal: str          # a key of the phase's goals
    repeat: int = 1
    results_dir: str = "reports"
    method: str = "auto"
    options: RunOptions = RunOptions()
    engine: str | None = None  # --engine: every run of the table is on it
    on_saved: OnSaved | None = None  # each run's, once saved (its report written)


def run_figures(res: Result | Mapping[str, Any], goal: str) -> dict[str, Any]:
    """What one run gives its row."""
    run = parts.as_result(res)
    kv = kv_figures(run)
    probe = probe_figures(run, goal)
    return {"status": run.status,
            "read_mib_s": _mib_s(run, "read"), "write_mib_s": _mib_s(run, "write"),
            "latency_ms": dict(kv.latency_ms), "queue_ms": dict(kv.queue_ms),
            "shares": {name: g.share_within for name, g in kv.goals.items()},
            "goal_ms": probe["goal_ms"],
            "share_within": kv.goals[goal].share_within if goal in kv.goals else None,
            "within_goal": (probe["p95_ms"] is not None and probe["goal_ms"] is not None
                            and probe["p95_ms"] <= probe["goal_ms"]),
            "verdict": probe["verdict"], "requests_per_s": probe["requests_per_s"],
            **saved_in(run)}


def _mib_s(run: Result, way: str) -> float:
    """The first-done MiB/s of the run's section named `way` (read, write); 0 without one."""
    io = run.section(way)
    return io.first_done.mib_s if io is not None and io.first_done is not None else 0.0


def table_row(at: Mapping[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row (`at`: where, {"users": 8}): the mean of its repeats' figures, the worst
    verdict, within the goal only when every repeat was."""
    def mean(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if len(known) == len(values) else None

    first = runs[0]
    return {**at, "repeats": len(runs),
            "status": next((r["status"] for r in runs if r["status"] != "ok"), "ok"),
            **{k: mean([r[k] for r in runs])
               for k in ("read_mib_s", "write_mib_s", "share_within", "requests_per_s")},
            **{group: {k: mean([r[group].get(k) for r in runs]) for k in first[group]}
               for group in ("latency_ms", "queue_ms", "shares")},
            "goal_ms": first["goal_ms"],
            "within_goal": all(r["within_goal"] and r["status"] == "ok" for r in runs),
            "verdict": min((r["verdict"] for r in runs), key=_rank), "runs": runs}


def _rank(word: str) -> int:
    return WORST.index(word) if word in WORST else 0


def steady_at_goal(r: dict[str, Any]) -> bool:
    return r["verdict"] == "steady" and r["within_goal"]


@dataclass(frozen=True)
class Axis:
    """What a table varies, as its rows key it and its statement says a row."""

    key: str                              # the row's key of the value: users, rate
    none: str                             # "no user count"
    most: Callable[[Mapping], str]        # "up to 16 users per client"
    held: Callable[[Mapping], str]        # what the best row showed: "P95 40.0 ms"
    at: Callable[[Mapping], str]          # "with 32"
    seen: Callable[[Mapping], str]        # what a row that missed showed


def p95_text(r: Mapping[str, Any]) -> str:
    p95 = r["latency_ms"]["p95"]
    return "no P95" if p95 is None else f"P95 {p95:.1f} ms"


USERS = Axis("users", "no user count", lambda r: f"up to {r['users']} users per client",
             p95_text, lambda r: f"with {r['users']}",
             lambda r: f"{p95_text(r)}, {r['verdict']}")


def statement(goal: str, goal_ms: float | None, clients: int, rows: list[dict],
              axis: Axis = USERS) -> str:
    """The most (users, or the highest rate) steady within the goal, the first row above it
    that was not, and any smaller that was not either (a noisy P95 at a light load)."""
    held = [r for r in rows if steady_at_goal(r)]
    best = held[-1][axis.key] if held else 0
    what = f"the {goal} goal (P95 within {goal_ms:g} ms)" if goal_ms is not None else goal
    at = f"at {clients} client(s)"
    if not held:
        head = f"{axis.none} was steady within {what} {at}"
    else:
        head = f"{what} held, steady, {axis.most(held[-1])} {at} ({axis.held(held[-1])})"
    missed = [r for r in rows if not steady_at_goal(r)]
    above = [r for r in missed if r[axis.key] > best]
    below = [r for r in missed if r[axis.key] < best]
    if above:
        head += f"; {axis.at(above[0])} it did not ({axis.seen(above[0])})"
    if below:
        head += "; nor " + ", ".join(f"{axis.at(r)} ({axis.seen(r)})" for r in below)
    return head


class TableStopped(Stopped):
    """A run stopped the table (interrupted, failed): `.table` holds the rows done before it,
    `.runs` their runs, `.folder` where the table is saved; the stop's exit code."""

    def __init__(self, message: str, table: dict[str, Any], runs: list[dict[str, Any]],
                 exit_code: int) -> None:
        super().__init__(message, table, exit_code)
        self.runs = runs

    @property
    def table(self) -> dict[str, Any]:
        return self.doc


Ran = list[tuple[Any, dict[str, Any]]]  # each value's runs, in the order they ran


def run_rows(req: TableRequest, where: tuple[str, str], noun: str,
             run_one: Callable[[Workload], dict[str, Any]],
             build: Callable[[Ran, str], dict], on_row: OnDone | None = None) -> dict:
    """Every value's runs of the workload's key `where` (section, key), in order, made a
    table by `build` (the runs, the table's status), passed to `on_row` "running" after each
    value's runs; TableStopped, with the rows done (`noun` names them), when a run stops it
    after the first value's."""
    refuse_early(req, where, req.values)
    ran: Ran = []
    try:
        for v in req.values:
            for _ in range(req.repeat):
                ran.append((v, run_one(with_value(req.workload, *where, v))))
            if on_row is not None:
                on_row(build(ran, "running"))
    except (AiioError, OSError, KeyboardInterrupt) as exc:
        done = [v for v in req.values if [x for x, _ in ran].count(v) == req.repeat]
        if not done:  # nothing to tabulate: the run's own partial result says it all
            raise
        code = stop_code(exc)
        # a bare KeyboardInterrupt (a Ctrl-C outside a run's own handling) has no text
        why = str(exc) or "interrupted by the user"
        out = {**build([(v, r) for v, r in ran if v in done], stop_status(code)),
               "error": why}
        raise TableStopped(f"{why}; the table stopped after {len(done)} of "
                           f"{len(req.values)} {noun}", out, [r for _, r in ran],
                           code) from None
    return build(ran, "ok")


def by_value(ran: Ran) -> list[tuple[Any, list[dict[str, Any]]]]:
    """Each value with its runs, in the order the values ran."""
    return [(v, [r for x, r in ran if x == v]) for v in dict.fromkeys(v for v, _ in ran)]


def run_table(req: TableRequest, run_one: Callable[[Workload], dict[str, Any]],
              on_row: OnDone | None = None) -> dict:
    """Every count's runs, the table and its statement (each row's as it is done to
    `on_row`); TableStopped, with the rows done, when a run stops it after the first
    count's."""
    return run_rows(req, get_phase(req.phase).users_key, "user counts", run_one,
                    lambda ran, status: _table(req, ran, status), on_row)


def _table(req: TableRequest, ran: Ran, status: str) -> dict:
    """The table of the counts' runs and its statement."""
    rows = [table_row({"users": v}, [run_figures(r, req.goal) for r in runs])
            for v, runs in by_value(ran)]
    best = [r["users"] for r in rows if steady_at_goal(r)]
    clients = req.workload.run.clients
    return {"kind": "users_table", "phase": req.phase, "status": status, "goal": req.goal,
            "goal_ms": rows[0]["goal_ms"], "clients": clients, "users": req.values,
            "repeats": req.repeat, "settings": settings(req), "rows": rows,
            "most_users_steady_at_goal": best[-1] if best else None,
            "statement": statement(req.goal, rows[0]["goal_ms"], clients, rows),
            "finished": now_iso()}


Tabled = tuple[dict[str, Any], Path, list[dict[str, Any]]]


def with_runs(req: TableRequest, name: str,
              table: Callable[[TableRequest, Callable[[Workload], dict], OnDone], dict]
              ) -> Tabled:
    """Run `table`, each row's runs full runs saved as any run's (each passed to
    `req.on_saved` once saved, however the table then ends); save the table beside them.
    Returns the table, its folder and every run's result."""
    run, ran = runs_of(req), []

    def run_one(w: Workload) -> dict[str, Any]:
        ran.append(run(w))
        return ran[-1]
    out, folder = saved(req.results_dir, name, lambda on_row: table(req, run_one, on_row),
                        "rows")
    return out, folder, ran


def users_table(req: TableRequest) -> Tabled:
    """Run the table over users per client; save it beside the rows' own runs."""
    return with_runs(req, f"users-{req.phase}", run_table)


HEADINGS = ("users", "read MiB/s", "write MiB/s", "p50 ms", "p95 ms", "p99 ms", "within",
            "verdict")
_WIDTHS = (6, 11, 11, 8, 8, 8, 7)  # the verdict, last, is as long as it is


def cells(r: Mapping[str, Any]) -> list[str]:
    """A row's figures as the console and the page show them."""
    lat = r["latency_ms"]
    return [str(r["users"]), f"{r['read_mib_s']:.1f}", f"{r['write_mib_s']:.1f}",
            *(ms_text(lat[k]) for k in ("p50", "p95", "p99")),
            "-" if r["share_within"] is None else f"{r['share_within']:.0%}", r["verdict"]]


def text_table(out: dict[str, Any]) -> list[str]:
    """The table as lines of at most 80 columns."""
    def line(c: list[str] | tuple[str, ...]) -> str:
        return " ".join(f"{x:>{w}}" for x, w in zip(c, _WIDTHS, strict=False)) + f"  {c[-1]}"
    return [line(HEADINGS), *(line(cells(r)) for r in out["rows"])]


def ms_text(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"
