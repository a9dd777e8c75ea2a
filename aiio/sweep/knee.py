"""Where linear scaling ends, judged against the noise (pure functions on a sweep's points).

A point is below linear when E(N) < threshold. It is a knee only when the drop is outside the
noise: with repeats, when E(N) stays below the threshold even at the top of the spread of its
repeats and of the baseline's; with one repeat, when the drop is sustained (no later point is
linear again). Where a single run decides (one repeat, and the only point below, or a dip the
next points recover from), the verdict says plainly that one repeat cannot tell.

Points where every client met its AU goal (demand-bound) measure the accelerators' compute
pacing, not the storage: they never count toward linear scaling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from aiio.results.result import au_meets_goal
from aiio.units import format_rate


class PointLike(Protocol):
    clients: int
    aggregate_mib_s: float
    per_client_mib_s: float
    agg_min: float | None
    agg_max: float | None
    repeats: int
    au_min: float | None
    au_goal: float | None
    au_mean: float | None
    au_pass: bool | None
    au_rule: str


@dataclass
class KneeCall:
    linear_up_to: int | None       # largest storage-bound count judged linear, None if none
    knee: int | None               # first count whose drop is a knee, None if none
    dips: list[int] = field(default_factory=list)  # below the threshold but not a knee
    notes: list[str] = field(default_factory=list)


def efficiency_text(e: float, threshold: float) -> str:
    """E with two decimals, or three when two would round it onto the threshold."""
    text = f"{e:.2f}"
    return f"{e:.3f}" if text == f"{threshold:.2f}" and e != threshold else text


def meets_goal(p: PointLike, goal: float) -> bool:
    """Whether a count met the AU goal by the runs' own rule (mean: MLPerf's, every repeat
    passed; min: every client); the one rule of the AU sentence, demand-bound points,
    --find-max and sizing."""
    return au_meets_goal(p.au_rule, p.au_mean, p.au_min, p.au_pass, goal)


def demand_bound(p: PointLike) -> bool:
    """The clients met their AU goal by the runs' own rule: the point measures compute
    pacing, not storage."""
    return p.au_min is not None and p.au_goal is not None and meets_goal(p, p.au_goal)


def relative_noise(p: PointLike) -> float | None:
    """Half the range of the repeats' aggregates over their mean; None with one repeat."""
    if p.repeats < 2 or p.agg_min is None or p.agg_max is None or p.aggregate_mib_s <= 0:
        return None
    return (p.agg_max - p.agg_min) / 2 / p.aggregate_mib_s


def efficiency_high(e: float, p: PointLike, base: PointLike) -> float | None:
    """E(N) at the top of the noise of the point and of the baseline; None without repeats."""
    mine, theirs = relative_noise(p), relative_noise(base)
    if mine is None or theirs is None:
        return None
    return e * (1 + mine) / (1 - theirs) if theirs < 1 else float("inf")


def call_knee(points: Sequence[PointLike], effs: dict[int, float],
              threshold: float) -> KneeCall:
    """linear-up-to, knee and the notes that explain every point below the threshold."""
    base = points[0]
    call = KneeCall(None if demand_bound(base) else base.clients, None)
    for i, p in enumerate(points[1:], start=1):
        if demand_bound(p) or call.knee is not None:
            continue
        e = effs[p.clients]
        if e >= threshold:
            call.linear_up_to = p.clients
            continue
        later = [q for q in points[i + 1:] if not demand_bound(q)]
        note, is_knee = _judge_drop(p, base, e, later, effs, threshold)
        if note:
            call.notes.append(note)
        if is_knee:
            call.knee = p.clients
        else:
            call.dips.append(p.clients)
            call.linear_up_to = p.clients
    return call


def _judge_drop(p: PointLike, base: PointLike, e: float, later: Sequence[PointLike],
                effs: dict[int, float], t: float) -> tuple[str, bool]:
    """(the sentence on a point below the threshold, or "" when the headline says it all;
    whether it is a knee)."""
    n, head = p.clients, f"E({p.clients}) = {efficiency_text(e, t)} < {t:.2f}"
    high = efficiency_high(e, p, base)
    if high is not None:
        if high >= t:
            return (f"{head} is within the spread of its repeats and the baseline's (up to "
                    f"E = {high:.2f} over {p.repeats} repeats): not counted as a knee"), False
        return (f"{head} is outside the spread of {p.repeats} repeats (at most E = "
                f"{high:.2f}): a knee"), True
    recovered = [q for q in later if effs[q.clients] >= t]
    if recovered:
        n_last = recovered[-1].clients
        e_last = efficiency_text(effs[n_last], t)
        return (f"cannot tell with one repeat whether {n} is a knee: {head}, yet the later "
                f"points are linear again (E({n_last}) = {e_last}); "
                "not counted as a knee; --repeat 3 tells noise from a knee"), False
    if not later:
        return (f"cannot tell with one repeat whether {n} is the knee: {head} is the only "
                "point below the threshold, so one run decides; --repeat 3 tells noise from "
                "a knee"), True
    return "", True  # sustained: every later point stays below, the headline says it all


def fast_baseline(points: Sequence[PointLike], effs: dict[int, float],
                  threshold: float) -> str | None:
    """A caveat when the baseline alone puts every later point below linear: every later
    point is below against it, yet linear against the second count (the robust baseline)."""
    rest = [p for p in points[1:] if not demand_bound(p)]
    if len(rest) < 2 or demand_bound(points[0]):
        return None
    if any(effs[p.clients] >= threshold for p in rest):
        return None
    ref = rest[0]
    again = {p.clients: p.aggregate_mib_s / (p.clients / ref.clients * ref.aggregate_mib_s)
             for p in rest[1:]} if ref.aggregate_mib_s > 0 else {}
    if not again or min(again.values()) < threshold:
        return None
    base, last = points[0], rest[-1].clients
    best = max(p.per_client_mib_s for p in rest)
    word = "client" if base.clients == 1 else "clients"
    return (f"the baseline at {base.clients} {word} moved {format_rate(base.per_client_mib_s)} "
            f"per client, more than any later point (best {format_rate(best)} per client), and "
            f"it alone puts every E(N) below {threshold:.2f}: against {ref.clients} clients "
            f"as the baseline every later point is linear (E({last}) = {again[last]:.2f}). "
            "The baseline may have run fast (a warm cache, a quiet moment)"
            + ("; cannot tell with one repeat" if base.repeats < 2 else ""))
