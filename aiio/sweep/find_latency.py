"""`aiio scale --phase vector --find-max --goal-ms G`: the most clients, and the queries/s
they answer, whose runs keep the pooled p99 query latency within G ms and are not overloaded,
found as `find_max` finds the AU goal's count (double until a count fails, then bisect).

A run holds when it ended ok, was not overloaded (steady, or not judged: aiio.phases.
steadiness) and its p99 is within the goal; a count holds when every repeat does. An
overloaded run fails whatever its p99: its percentiles hold only the queries answered and grow
with the run's length. So does a run whose insert stream (vector.insert_rate) was overloaded:
its queries held only beside a log that fell behind the writes offered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiio.errors import ConfigError
from aiio.phases import get_phase
from aiio.results.parts import as_result
from aiio.stats import spread
from aiio.sweep.find_max import bracketed, decide, probed, search

GOAL_PHASES = ("vector",)  # phases whose runs answer queries with a p99 to hold a goal to


def check(phase: str, find_max: bool, goal_ms: float | None) -> float | None:
    """The goal in ms, or None for a search by AU; a one-line refusal of a goal where none
    applies, or of a vector search without one."""
    if goal_ms is None:
        if find_max and phase in GOAL_PHASES:
            raise ConfigError(f"--find-max on --phase {phase} needs --goal-ms G: the p99 query "
                              "latency, in ms, the runs must keep")
        return None
    if not find_max:
        raise ConfigError("--goal-ms goes with --find-max")
    if phase not in GOAL_PHASES:
        raise ConfigError(f"--goal-ms applies to --phase {', '.join(GOAL_PHASES)} (a search "
                          f"over --phase {phase} is by its AU goal, or --max-users' --goal)")
    if not goal_ms > 0 or goal_ms == float("inf"):
        raise ConfigError(f"--goal-ms {goal_ms:g}: must be above 0 (ms)")
    get_phase(phase)
    return goal_ms


def run_figures(res: dict[str, Any], goal_ms: float) -> dict[str, Any]:
    """What one run says for the search: queries/s, the pooled p99, its verdict, held."""
    run = as_result(res)
    v, inserts = run.vector, run.inserts
    p99 = v.latency_ms.p99 if v else None
    word = v.verdict.word if v and v.verdict else "overloaded"  # none recorded: no pass
    if word != "overloaded" and v and inserts and inserts.verdict \
            and inserts.verdict.overloaded:
        word = "inserts overloaded"  # the storage did not keep up with the load's writes
    held = (run.status == "ok" and "overloaded" not in word and p99 is not None
            and p99 <= goal_ms)
    return {"queries_per_s": (v and v.queries_per_s) or 0.0, "p99_ms": p99, "verdict": word,
            "held": held}


def driver(req: Any, measure: Callable[[int], dict[str, Any]], out: dict[str, Any]) -> None:
    """The search as a sweep driver: probes counts, records each in out['search']."""
    probes: list[dict[str, Any]] = []
    found: dict[str, Any] = {"upper": req.clients[-1], "repeats": req.repeat,
                             "goal_ms": req.goal_ms, "probes": probes}
    out["search"] = found

    def probe(n: int) -> str:
        measure(n)
        runs = [run_figures(p["result"], req.goal_ms) for p in out["points"]
                if p["clients"] == n]
        probes.append({
            "clients": n, "decision": decide([r["held"] for r in runs]),
            "queries_per_s": spread([r["queries_per_s"] for r in runs]),
            "p99_ms": spread([r["p99_ms"] or 0.0 for r in runs]),
            "verdicts": [r["verdict"] for r in runs]})
        return probes[-1]["decision"]

    good, bad = search(probe, found["upper"])
    by_n = {p["clients"]: p for p in probes}
    found.update(max_clients_at_goal=good, first_not_held=bad,
                 queries_per_s_at_goal=None if good is None
                 else by_n[good]["queries_per_s"]["mean"],
                 statement=statement(found, good, bad))


def statement(found: dict[str, Any], good: int | None, bad: int | None) -> str:
    """The answer with the probes that bracket it."""
    by_n = {p["clients"]: p for p in found["probes"]}
    goal = f"p99 query latency within {found['goal_ms']:,.{_places(found['goal_ms'])}f} ms"
    return (f"{bracketed(goal, good, bad, lambda n: _seen(by_n[n]), found['upper'])}; "
            f"{probed(found)}")


def _places(ms: float) -> int:
    """Decimals that show a goal as given: 20, 0.5, 0.000001."""
    text = f"{ms:.6f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


def _seen(p: dict[str, Any]) -> str:
    """A probe's queries/s, p99 and verdicts, as ranges over its repeats."""
    def rng(s: dict[str, float], fmt: str) -> str:
        lo, hi = format(s["min"], fmt), format(s["max"], fmt)
        return lo if lo == hi else f"{lo} to {hi}"
    words = ", ".join(dict.fromkeys(p["verdicts"]))
    return (f"{rng(p['queries_per_s'], ',.1f')} queries/s, p99 {rng(p['p99_ms'], '.2f')} ms, "
            f"{words}")
