"""`aiio scale --phase kvcache --find-max --max-users N`: the most users each client sustains
within a latency goal, at the workload's client count, found as `find_max` finds clients
(double the users until a count fails, then bisect).

A user count holds when its run ended ok, was not overloaded (steady, or not judged for too
few requests), and the pooled P95 of its requests' latency (queue wait + storage time) is
within the goal class's latency (`kvcache.goals`); with `--repeat R` every repeat must hold.
Each probe is a full run whose result is saved as any run's; the search's own result lists
them with the answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiio.errors import AiioError, ConfigError, RunFailed, RunInterrupted
from aiio.options import RunOptions
from aiio.phases import get_phase
from aiio.results import parts
from aiio.results.kvcache import Goal
from aiio.results.result import SCHEMA, Result, unique_folder
from aiio.run import hosts, memcheck, owner, runner
from aiio.run.comm import world
from aiio.run.wallclock import now_iso, now_stamp
from aiio.sweep.find_max import HOLDS, decide, search
from aiio.sweep.run import with_value
from aiio.workload import Workload

OnSaved = Callable[[dict[str, Any], Path], None]


@dataclass
class UsersSearch:
    phase: str
    workload: Workload
    target: str
    upper: int        # the most users per client the search may try
    goal: str         # a key of the phase's goals
    repeat: int = 1
    results_dir: str = "reports"
    method: str = "auto"
    options: RunOptions = RunOptions()
    engine: str | None = None  # --engine: every probe runs on it
    on_saved: OnSaved | None = None  # each probe's, once saved (its report written)


def check(phase: str, w: Workload, upper: int | None, goal: str | None) -> tuple[int, str]:
    """(upper bound, goal class), or a one-line refusal."""
    goal = check_goal(phase, w, goal, "--max-users")
    if upper is None or upper < 2:
        raise ConfigError("--find-max over users needs --max-users N (at least 2)")
    return upper, goal


def check_goal(phase: str, w: Workload, goal: str | None, flag: str) -> str:
    """The goal class users are judged by (the workload's first by default); `flag` names the
    option in a refusal of a phase whose clients serve no users."""
    key = get_phase(phase).users_key
    if key is None:
        raise ConfigError(f"{flag} applies to a phase whose clients serve users "
                          f"(kvcache), not to --phase {phase}")
    goals = getattr(w, key[0]).goals
    goal = goal or next(iter(goals))
    if goal not in goals:
        raise ConfigError(f"--goal {goal}: not one of the workload's goals "
                          f"({', '.join(goals)})")
    return goal


QUANTILES = ("p50", "p95", "p99")


@dataclass(frozen=True)
class KvRun:
    """What the users and rates tables and the search read of a KV-cache run: the pooled
    request latency and queue wait (ms), each class's goal by name, whether the storage kept
    up, its verdict in a word."""

    latency_ms: Mapping[str, float | None]   # p50, p95, p99
    queue_ms: Mapping[str, float | None]     # p50, p95, p99
    goals: Mapping[str, Goal]
    overloaded: bool                         # recorded as not: an unrecorded verdict is no pass
    verdict: str
    requests_per_s: float | None


def kv_figures(run: Result) -> KvRun:
    """The run's KV-cache figures (all missing, and no pass, when it recorded none)."""
    kv = run.kvcache
    if kv is None:
        none = dict.fromkeys(QUANTILES)
        return KvRun(none, none, {}, True, "overloaded", None)
    return KvRun({q: kv.latency.pooled.ms[q] for q in QUANTILES},
                 {q: kv.queue_wait.pooled.ms[q] for q in QUANTILES},
                 {g.name: g for g in kv.goals}, not kv.verdict.kept_up, kv.verdict.word,
                 kv.requests_per_s)


def probe_figures(res: Result | Mapping[str, Any], goal: str) -> dict[str, Any]:
    """What one run says for the search: its verdict, the pooled P95 and the goal."""
    run = parts.as_result(res)
    kv = kv_figures(run)
    p95 = kv.latency_ms["p95"]
    target = kv.goals[goal].goal_ms if goal in kv.goals else None
    held = (run.status == "ok" and not kv.overloaded and p95 is not None
            and target is not None and p95 <= target)
    return {"status": run.status, "p95_ms": p95, "goal_ms": target,
            "overloaded": kv.overloaded, "verdict": kv.verdict,
            "requests_per_s": kv.requests_per_s, "held": held, **saved_in(run)}


def saved_in(run: Result) -> dict[str, str]:
    """Where a search's or table's run is saved, beside it (`runs_of` adds it; a run read
    back from its own folder records none)."""
    folder = run.get("folder")
    return {"folder": folder} if isinstance(folder, str) else {}


def refuse_early(req: Any, where: tuple[str, str], values: list[Any]) -> None:
    """Refuse before the first run (one line, exit 2) any value of the workload's key
    `where` a run would refuse at its start (the phase's own checks, the memory its clients
    need): a table ran its first values and then stopped failed at one no host could hold,
    where a clients sweep refuses its largest point before its first."""
    phase, clients = get_phase(req.phase), req.workload.run.clients
    here = hosts.split_clients(clients, world().size)[0]  # this host's share, as a run's
    for v in values:
        w = with_value(req.workload, *where, v)
        try:
            phase.variant(w).validate(w, req.options)
            memcheck.check_need(memcheck.target_need(w, req.phase, req.target, clients,
                                                     req.method, req.engine), here)
        except AiioError as exc:  # which value, since the run's own words name none
            raise ConfigError(f"{where[0]}.{where[1]} = {v}: {exc}") from None


def run_search(req: UsersSearch, run_one: Callable[[Workload], dict[str, Any]],
               on_probe: OnDone | None = None) -> dict:
    """The search, each probe run by `run_one` (a run of the workload given), the search so
    far passed to `on_probe` "running" after each probe; Stopped, with the probes done and
    what they decided, when a run stops it after the first probe."""
    section, key = get_phase(req.phase).users_key
    refuse_early(req, (section, key), [1, req.upper])  # the fewest and the most it may try
    probes: list[dict[str, Any]] = []

    def probe(users: int) -> str:
        runs: list[dict[str, Any]] = []
        try:
            for _ in range(req.repeat):
                runs.append(probe_figures(run_one(with_value(req.workload, section, key,
                                                             users)), req.goal))
        except BaseException:
            if runs:  # the repeats done are kept, the count left undecided
                probes.append({"users": users, "decision": UNDECIDED, "runs": runs})
            raise
        decision = decide([r["held"] for r in runs])
        probes.append({"users": users, "decision": decision, "runs": runs})
        if on_probe is not None:
            on_probe(_search_doc(req, probes, *so_far(probes), "running"))
        return decision
    try:
        good, bad = search(probe, req.upper)
    except (AiioError, OSError, KeyboardInterrupt) as exc:
        if not probes:  # nothing decided: the run's own partial result says it all
            raise
        code = stop_code(exc)
        why = str(exc) or "interrupted by the user"  # a bare KeyboardInterrupt has no text
        out = {**_search_doc(req, probes, *so_far(probes), stop_status(code)), "error": why}
        raise Stopped(f"{why}; the search stopped after {_count(len(probes), 'probe')}",
                      out, code) from None
    return _search_doc(req, probes, good, bad, "ok")


def so_far(probes: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    """(the most users that held, the fewest above it that did not) of the probes done."""
    held = [p["users"] for p in probes if p["decision"] == HOLDS]
    good = max(held, default=None)
    above = [p["users"] for p in probes if p["decision"] not in (HOLDS, UNDECIDED)
             and (good is None or p["users"] > good)]
    return good, min(above, default=None)


def stop_code(exc: BaseException) -> int:
    """The exit code of what stopped a search or table: the error's own, 130 for a Ctrl-C,
    1 for what the system refused (an OSError no stage turned into a message of its own)."""
    if isinstance(exc, AiioError):
        return exc.exit_code
    return RunInterrupted.exit_code if isinstance(exc, KeyboardInterrupt) else \
        RunFailed.exit_code


def stop_status(code: int) -> str:
    """How a search or table a run stopped ended: interrupted (Ctrl-C) or failed."""
    return "interrupted" if code == RunInterrupted.exit_code else "failed"


def _search_doc(req: UsersSearch, probes: list[dict[str, Any]], good: int | None,
                bad: int | None, status: str) -> dict[str, Any]:
    return {"kind": "find_max_users", "phase": req.phase, "status": status, "goal": req.goal,
            "clients": req.workload.run.clients, "upper": req.upper, "repeats": req.repeat,
            "settings": settings(req), "probes": probes, "max_users_at_goal": good,
            "first_not_held": bad,
            "statement": statement(req, probes, good, bad, done=status == "ok"),
            "finished": now_iso()}


def settings(req: Any) -> dict[str, Any]:
    """What every run of a search or table ran with, beside the key it varies."""
    section, key = get_phase(req.phase).duration_key
    return {"workload": req.workload.name, "target": req.target, "method": req.method,
            "engine": req.engine,
            "duration_s": getattr(getattr(req.workload, section), key)}


def _p95(r: Mapping[str, Any]) -> str:
    return "no P95" if r["p95_ms"] is None else f"P95 {r['p95_ms']:.1f} ms"


# a probe a stop cut within its repeats: those done are kept, the count decided neither way
UNDECIDED = "undecided"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def statement(req: UsersSearch, probes: list[dict], good: int | None,
              bad: int | None, done: bool = True) -> str:
    """The answer with the probes that bracket it; of a search stopped early, what its
    probes decided, said as no more than that."""
    by = {p["users"]: p for p in probes}

    def seen(n: int) -> str:
        """What the repeat that decided the count showed: the first that did not hold, of a
        count that did not (a straddling count's held repeat is not why it failed)."""
        runs = by[n]["runs"]
        r = next((x for x in runs if not x["held"]), runs[0])
        return f"{_p95(r)}, {r['verdict']}"

    goal = f"the {req.goal} goal"
    clients = f"{req.workload.run.clients} client(s)"
    if not done:
        return _stopped_statement(req, probes, good, bad, goal, clients, seen)
    if good is None:
        return f"{goal} does not hold even with 1 user per client at {clients} ({seen(1)})"
    head = f"{goal} holds up to {_count(good, 'user')} per client at {clients} ({seen(good)})"
    if bad is None:
        return f"{head}, the largest allowed (--max-users {req.upper})"
    return f"{head}; with {bad} it does not ({seen(bad)})"


def _stopped_statement(req: UsersSearch, probes: list[dict], good: int | None,
                       bad: int | None, goal: str, clients: str,
                       seen: Callable[[int], str]) -> str:
    """What a search's probes decided before a run stopped it, and no more."""
    said = []
    if good is not None:
        said.append(f"{goal} held up to {_count(good, 'user')} per client at {clients} "
                    f"({seen(good)})")
    if bad is not None:
        said.append(f"with {bad} it did not ({seen(bad)})" if good is not None else
                    f"{goal} does not hold even with 1 user per client at {clients} "
                    f"({seen(bad)})")
    if not said:
        said.append(f"{goal} at {clients}: no count was decided")
    cut = next((p for p in probes if p["decision"] == UNDECIDED), None)
    if cut is not None:
        said.append(f"the search stopped within the probe of {cut['users']} "
                    f"({len(cut['runs'])} of {req.repeat} repeats done: {seen(cut['users'])})")
    else:
        said.append("the search stopped before it tried "
                    + ("more" if bad is None else "the counts between"))
    return "; ".join(said)


class Stopped(AiioError):
    """A run stopped a search or a table (interrupted, failed): `.doc` holds what was done
    before it, `.folder` where it is saved; the stop's exit code."""

    def __init__(self, message: str, doc: dict[str, Any], exit_code: int) -> None:
        super().__init__(message)
        self.doc, self.exit_code = doc, exit_code
        self.folder: Path | None = None


OnDone = Callable[[dict[str, Any]], None]  # the search or table so far, after each step


def saved(results_dir: str, name: str, run: Callable[[OnDone], dict],
          what: str) -> tuple[dict, Path]:
    """The search or table `run` makes, saved beside its runs: "running" after every probe
    or row (with its writer's mark, so one killed outright is read back as interrupted with
    what it did), then as it ended; a stopped one's message says where `what` (its probes,
    its rows) are saved."""
    started = now_iso()
    folder: Path | None = None  # from the first step done

    def on_done(doc: dict[str, Any]) -> None:
        nonlocal folder
        # not finished: a reader takes the writer's mark for a process still running, or
        # gone without saving an end
        folder = save({"started": started, **doc, "finished": None, "writer": owner.mark()},
                      results_dir, name, folder)
    try:
        out = {"started": started, **run(on_done)}
    except Stopped as stopped:
        stopped.doc = {"started": started, **stopped.doc}
        stopped.folder = save(stopped.doc, results_dir, name, folder)
        stopped.args = (f"{stopped}; its {what} saved in {stopped.folder / 'result.json'}",)
        raise
    return out, save(out, results_dir, name, folder)


def find_users(req: UsersSearch) -> tuple[dict[str, Any], Path]:
    """Run the search; save it beside the probes' own results, after every probe too."""
    return saved(req.results_dir, f"find-max-users-{req.phase}",
                 lambda on_probe: run_search(req, runs_of(req), on_probe), "probes")


def runs_of(req: UsersSearch | Any) -> Callable[[Workload], dict[str, Any]]:
    """A full run of a workload, saved as any run's, for a request over users: its result,
    with the name of the folder it is saved in (`folder`, beside the table's own)."""
    def run_one(w: Workload) -> dict[str, Any]:
        res, folder = runner.run(runner.RunRequest(req.phase, w, req.target, req.results_dir,
                                                   req.method, req.options,
                                                   on_saved=req.on_saved, engine=req.engine))
        return {**res, "folder": folder.name}
    return run_one


def save(out: dict[str, Any], results_dir: str, name: str, folder: Path | None = None) -> Path:
    """A search's or table's own result, in a new folder beside its runs' (or `folder`, where
    it was saved before): a result of the schema any result has, its id the folder's name
    (`aiio report` reads it again), written whole or not at all."""
    if folder is None:
        folder = unique_folder(Path(results_dir), f"{now_stamp()}-{name}")
    out.update(schema=SCHEMA, id=folder.name)
    tmp = folder / ".result.json.tmp"
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    os.replace(tmp, folder / "result.json")
    return folder
