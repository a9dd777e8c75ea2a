"""`aiio scale --find-max`: the largest client count at which the AU goal holds, found in about
log2 steps (double the count until it fails, then bisect between the last hold and the first
failure) instead of a full sweep.

Each probed count runs `--repeat R` times. It holds when every repeat passed the AU goal, fails
when none did, and straddles when the repeats disagree: the goal sits inside their spread, and
the search treats it as not held (the claim "holds at N" must hold run after run). With one
repeat a single run decides each probe, and the result says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiio.errors import ConfigError
from aiio.phases import get_phase
from aiio.results.result import model
from aiio.stats import spread

HOLDS, FAILS, STRADDLES = "holds", "fails", "straddles"
UNMEASURED = "not measurable"  # no AU at this count (compute 0, or no measured step)


def decide(passes: list[bool]) -> str:
    """holds (every repeat passed), fails (none did) or straddles (they disagree)."""
    if not passes:
        raise ValueError("no repeats to decide on")
    if all(passes):
        return HOLDS
    return FAILS if not any(passes) else STRADDLES


def search(probe: Callable[[int], str], upper: int) -> tuple[int | None, int | None]:
    """(largest count that holds, smallest count above it that does not), probing 1, 2, 4, ...
    up to `upper`, then bisecting; (None, 1) when one client already fails, (upper, None)
    when every probe up to `upper` holds."""
    good, bad, n = None, None, 1
    while True:
        if probe(n) == HOLDS:
            good = n
            if n >= upper:
                return good, None
            n = min(2 * n, upper)
        else:
            bad = n
            break
    while good is not None and bad - good > 1:
        mid = (good + bad) // 2
        if probe(mid) == HOLDS:
            good = mid
        else:
            bad = mid
    return good, bad


def check(phase: str, upper: int | None, goal_ms: float | None = None) -> int:
    """The search's upper bound; --find-max needs a goal (training's AU, or a p99 query
    latency given in `goal_ms`: aiio.sweep.find_latency) and --max-clients."""
    if goal_ms is None and not get_phase(phase).accelerators:
        raise ConfigError(f"--find-max searches for the AU goal, which only the train phase has "
                          f"(got --phase {phase})")
    if upper is None or upper < 2:
        raise ConfigError("--find-max needs --max-clients N (at least 2): the largest count "
                          "the search may try")
    return upper


def driver(req: Any, measure: Callable[[int], dict[str, Any]], out: dict[str, Any]) -> None:
    """The search as a sweep driver: probes counts, records each decision in out['search']."""
    upper = req.clients[-1]
    probes: list[dict[str, Any]] = []
    found: dict[str, Any] = {"upper": upper, "repeats": req.repeat, "probes": probes}
    out["search"] = found

    def probe(n: int) -> str:
        row = measure(n)
        runs = [model(p["result"]).summary.au for p in out["points"] if p["clients"] == n]
        unmeasured = [au for au in runs if au is None or au.min is None]
        if unmeasured:  # the search stops: nothing to judge
            entry = {"clients": n, "decision": UNMEASURED, "au_min": None, "au_mean": None,
                     "note": unmeasured[0].note if unmeasured[0] else None,
                     "goal": row.get("au_goal")}
            probes.append(entry)
            return UNMEASURED
        entry = {"clients": n, "decision": decide([bool(au.passed) for au in runs]),
                 "au_min": spread([au.min for au in runs]),
                 "au_mean": spread([au.mean for au in runs]),
                 "goal": row.get("au_goal"), "au_rule": runs[0].recorded_rule or "mean"}
        probes.append(entry)
        return entry["decision"]

    good, bad = search(probe, upper)
    found.update(max_clients_at_goal=good, first_not_held=bad,
                 statement=statement(found, good, bad))


def statement(found: dict[str, Any], good: int | None, bad: int | None) -> str:
    """The answer with its bracketing points and their spreads."""
    by_n = {p["clients"]: p for p in found["probes"]}
    if bad is not None and by_n[bad]["decision"] == UNMEASURED:
        held = (f"the AU goal holds up to {good} client{'s' if good != 1 else ''} "
                f"({_au(by_n[good])}); " if good is not None else "")
        return (f"{held}with {bad} client{'s' if bad != 1 else ''} AU could not be measured "
                f"({by_n[bad]['note']}); {probed(found)}")
    return (f"{bracketed('the AU goal', good, bad, lambda n: _au(by_n[n]), found['upper'])}; "
            f"{probed(found)}")


def bracketed(goal: str, good: int | None, bad: int | None, seen: Callable[[int], str],
              upper: int) -> str:
    """'<goal> holds up to <good> clients (<seen>); with <bad> it does not (<seen>)'."""
    if good is None:
        return f"{goal} does not hold even with 1 client ({seen(1)})"
    head = f"{goal} holds up to {good} client{'s' if good != 1 else ''} ({seen(good)})"
    if bad is None:
        return f"{head}, the largest allowed (--max-clients {upper})"
    return f"{head}; with {bad} it does not ({seen(bad)})"


def probed(found: dict[str, Any]) -> str:
    """How many counts the search probed, and whether one run decided each."""
    n = len(found["probes"])
    one = ("; one repeat per count: a single run decided each probe (--repeat 3 shows "
           "the spread)") if found["repeats"] < 2 else ""
    return f"{n} count{'s' if n != 1 else ''} probed{one}"


def _au(p: dict[str, Any]) -> str:
    """The AU figure the probe was decided on (the mean AU under the mean rule, the lowest
    client's under the min rule), as a range over its repeats, with the rule named."""
    rule = p.get("au_rule", "mean")
    figure, label = (p["au_min"], "lowest client AU") if rule == "min" else \
        (p["au_mean"], "mean AU")
    lo, hi = figure["min"], figure["max"]
    rng = f"{lo:.1%}" if figure["n"] == 1 else f"{lo:.1%} to {hi:.1%} over " \
                                               f"{figure['n']} repeats"
    goal = f" against {p['goal']:.0%}, {rule} rule" if p.get("goal") is not None else \
        f", {rule} rule"
    return f"{p['decision']}: {label} {rng}{goal}"
