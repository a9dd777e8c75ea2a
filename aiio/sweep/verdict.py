"""The linear-scaling verdict: pure arithmetic on a sweep's per-point figures (numpy-free).

Given, for each client count N, the aggregate bandwidth (first done), the per-client mean and,
for training, the lowest client AU, this module computes scaling efficiency
E(N) = agg(N) / (N/N0 x agg(N0)) against the smallest count N0 (1 in the usual sweep),
per-client consistency C(N) = per-client mean(N) / per-client mean(N0), how far the storage
scales linearly, the knee, whether the aggregate saturates or falls, and the largest count at
which every client met the AU goal. Every statement names the numbers it rests on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiio.sweep import knee
from aiio.sweep.knee import efficiency_text
from aiio.units import format_rate

# Points from the plateau's start on stay within this share of the plateau's mean aggregate.
PLATEAU_BAND = 0.10
# An aggregate this far above linear is suspicious (a cache serving reads, a noisy baseline).
SUPERLINEAR = 1.15
# Emulated compute this much longer than asked means the client machine could not keep pace.
COMPUTE_OVERRUN = 1.10
# The shape of a sweep whose judged figure is zero at its baseline: nothing to scale against.
NOT_MEASURABLE = "not_measurable"


@dataclass
class Point:
    """One client count's figures (means over repeats); au_min is None outside training."""

    clients: int
    aggregate_mib_s: float
    per_client_mib_s: float
    per_client_min_mib_s: float = 0.0
    jain: float = 1.0
    au_min: float | None = None
    au_goal: float | None = None
    au_mean: float | None = None
    au_pass: bool | None = None      # every repeat passed by the run's own rule
    au_rule: str = "min"             # "mean" (MLPerf, the runs' default) or "min"
    demand_mib_s: float | None = None  # what one accelerator reads at full speed
    cpu_busy: float | None = None    # client machine CPU % (mean), when the point warned of it
    process_busy: bool = False       # a client process used a whole core
    compute_s: float | None = None   # measured emulated compute per step (training)
    compute_nominal_s: float | None = None
    agg_min: float | None = None     # lowest and highest aggregate over the repeats
    agg_max: float | None = None
    repeats: int = 1


@dataclass
class Verdict:
    threshold: float
    baseline_clients: int
    baseline_mib_s: float
    efficiency: dict[int, float] = field(default_factory=dict)
    consistency: dict[int, float] = field(default_factory=dict)
    shape: str = "insufficient"
    linear_up_to: int | None = None
    knee: int | None = None
    plateau: dict[str, Any] | None = None
    dips: list[int] = field(default_factory=list)
    demand_bound_up_to: int | None = None
    peak: dict[str, Any] | None = None
    au: dict[str, Any] | None = None
    caveats: list[str] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["efficiency"] = [{"clients": n, "efficiency": e} for n, e in self.efficiency.items()]
        out["consistency"] = [{"clients": n, "consistency": c}
                              for n, c in self.consistency.items()]
        return out


def efficiency(agg_n: float, n: int, agg_base: float, n_base: int = 1) -> float:
    """agg(N) / (N/N0 x agg(N0)); 1.0 is linear; 0.0 when the baseline moved nothing."""
    if n < 1 or n_base < 1:
        raise ValueError(f"client counts must be >= 1, got {n} and {n_base}")
    ideal = agg_base * n / n_base
    return agg_n / ideal if ideal > 0 else 0.0


def consistency(per_client_n: float, per_client_base: float) -> float:
    """Per-client mean at N over per-client mean at the baseline; 1.0 means unchanged."""
    return per_client_n / per_client_base if per_client_base > 0 else 0.0


def linear_up_to(counts: Sequence[int], effs: Sequence[float],
                 threshold: float) -> tuple[int, int | None]:
    """(largest N with E >= threshold at every count up to it, the first N below it or None)."""
    last = counts[0]
    for n, e in zip(counts[1:], effs[1:], strict=True):
        if e < threshold:
            return last, n
        last = n
    return last, None


def plateau(counts: Sequence[int], aggs: Sequence[float],
            band: float = PLATEAU_BAND) -> dict[str, Any] | None:
    """Where the aggregate stops growing: the first count from which it and every later
    aggregate stay within `band` of their mean (at least two points), or None. The mean, not
    the first point, is the reference, so one noisy point does not move the plateau's start."""
    for i in range(len(aggs) - 1):
        rest = aggs[i:]
        mean = sum(rest) / len(rest)
        if mean > 0 and all((1 - band) * mean <= a <= (1 + band) * mean for a in rest):
            return {"from_clients": counts[i], "mib_s": mean, "min_mib_s": min(rest),
                    "max_mib_s": max(rest), "points": len(rest)}
    return None


_held = knee.meets_goal


def au_capacity(points: Sequence[Point]) -> dict[str, Any] | None:
    """Largest count such that every count up to it met the AU goal by the runs' rule."""
    if not points or points[0].au_min is None:
        return None
    goal = points[0].au_goal or 0.0
    keeps, first_fail, unmeasured = None, None, None
    for p in points:
        if p.au_min is None:  # no measured step at this count: AU cannot judge it, nor beyond
            unmeasured = p.clients
            break
        if _held(p, goal):
            keeps = p.clients
            continue
        first_fail = {"clients": p.clients, "au_min": p.au_min, "au_mean": p.au_mean}
        break
    at_max = next((p for p in points if p.clients == keeps), None)
    return {"goal": goal, "demand_mib_s": points[0].demand_mib_s,
            "rule": "min" if points[0].au_mean is None else points[0].au_rule,
            "max_clients_at_goal": keeps, "first_fail": first_fail,
            "not_measured_from": unmeasured,
            "all_pass": first_fail is None and unmeasured is None,
            "au_min_at_max": at_max.au_min if at_max else None,
            "au_mean_at_max": at_max.au_mean if at_max else None}


def judge(points: Sequence[Point], threshold: float = 0.9,
          accelerator: str = "") -> Verdict:
    """The verdict over points sorted by client count (the first is the baseline)."""
    if not points:
        raise ValueError("no points to judge")
    base = points[0]
    v = Verdict(threshold, base.clients, base.aggregate_mib_s)
    if base.aggregate_mib_s <= 0:  # E(N) would divide by nothing: no shape, no knee, no E
        v.shape, v.statements = NOT_MEASURABLE, [_not_measurable(points)]
        return v
    counts = [p.clients for p in points]
    aggs = [p.aggregate_mib_s for p in points]
    for p in points:
        v.efficiency[p.clients] = efficiency(p.aggregate_mib_s, p.clients, base.aggregate_mib_s,
                                             base.clients)
        v.consistency[p.clients] = consistency(p.per_client_mib_s, base.per_client_mib_s)
    peak_i = max(range(len(aggs)), key=aggs.__getitem__)
    v.peak = {"clients": counts[peak_i], "mib_s": aggs[peak_i]}
    v.au = au_capacity(points)
    notes: list[str] = []
    if len(points) >= 2:
        call = knee.call_knee(points, v.efficiency, threshold)
        v.linear_up_to, v.knee, v.dips, notes = call.linear_up_to, call.knee, call.dips, \
            call.notes
        v.demand_bound_up_to = _demand_bound_up_to(points)
        v.shape, v.plateau = _shape(counts, aggs, v.knee)
        if all(knee.demand_bound(p) for p in points):
            v.shape = "demand_bound"
    v.statements = _statements(v, points, accelerator)
    v.statements[1:1] = notes  # each point below the threshold, right after the headline
    v.caveats = _caveats(v, points)
    return v


def _not_measurable(points: Sequence[Point]) -> str:
    """Why no verdict: the judged figure is zero at every count, or at the baseline."""
    base = points[0]
    if all(p.aggregate_mib_s <= 0 for p in points):
        counts = ", ".join(str(p.clients) for p in points)
        return (f"not measurable: the phase moves no bytes (0 MiB/s at every client count: "
                f"{counts}), and its sweep is judged on bandwidth; no scaling verdict")
    return (f"not measurable: nothing moved at the baseline ({_clients(base.clients)}, "
            "0 MiB/s), so E(N) has no reference; no scaling verdict")


def _demand_bound_up_to(points: Sequence[Point]) -> int | None:
    """The largest count up to which every point was demand-bound, or None."""
    last = None
    for p in points:
        if not knee.demand_bound(p):
            break
        last = p.clients
    return last


def _shape(counts: Sequence[int], aggs: Sequence[float],
           knee: int | None) -> tuple[str, dict[str, Any] | None]:
    """linear (no knee), saturated (a plateau of at least two points up to the last),
    degrading (no plateau, the last point well below the peak) or sublinear (still growing,
    less than in proportion)."""
    if knee is None:
        return "linear", None
    flat = plateau(counts, aggs)
    if flat is not None:
        return "saturated", flat
    if aggs[-1] < (1 - PLATEAU_BAND) * max(aggs):
        return "degrading", None
    return "sublinear", None


def _clients(n: int) -> str:
    return f"{n} client" + ("" if n == 1 else "s")


def _statements(v: Verdict, points: Sequence[Point], accelerator: str) -> list[str]:
    """Plain sentences, each with the figures it rests on."""
    by_n = {p.clients: p for p in points}
    base, last = points[0], points[-1]
    if len(points) < 2:
        return [f"only {_clients(base.clients)} measured ({format_rate(base.aggregate_mib_s)}): "
                "a scaling verdict needs at least two client counts"]
    out = [_scaling_sentence(v, by_n, base, last)]
    if v.shape == "saturated":
        p = v.plateau
        out.append(f"saturated: the aggregate stays at about {format_rate(p['mib_s'])} "
                   f"({format_rate(p['min_mib_s'], unit=False)} to "
                   f"{format_rate(p['max_mib_s'], unit=False)}) from "
                   f"{_clients(p['from_clients'])} on; adding clients only divides it")
    elif v.shape == "degrading":
        out.append(f"degrading: the aggregate peaks at {format_rate(v.peak['mib_s'])} with "
                   f"{_clients(v.peak['clients'])} and falls to "
                   f"{format_rate(last.aggregate_mib_s)} with {_clients(last.clients)}")
    elif v.shape == "sublinear":
        out.append(f"sublinear: the aggregate still grows, to {format_rate(last.aggregate_mib_s)} "
                   f"with {_clients(last.clients)}, but less than in proportion")
    out.append(_consistency_sentence(v, base, last))
    if v.au is not None:
        out.append(_au_sentence(v.au, points, accelerator))
    return out


def _scaling_sentence(v: Verdict, by_n: dict[int, Point], base: Point, last: Point) -> str:
    t = v.threshold
    bound = _demand_sentence(v, by_n)
    if v.shape == "demand_bound":
        return bound
    lead = bound + "; " if bound else ""
    if v.knee is None:
        e = v.efficiency[last.clients]
        ideal = f"{last.clients / base.clients:g} x {format_rate(base.aggregate_mib_s)} at " \
                f"{_clients(base.clients)}"
        every = "at every storage-bound point" if bound else "at every point"
        if v.dips:
            every += f" but {', '.join(map(str, v.dips))} (see below)"
        return (f"{lead}scales linearly up to {_clients(last.clients)} (the largest tested): "
                f"E(N) >= {t:.2f} {every}; E({last.clients}) = {efficiency_text(e, t)} "
                f"({format_rate(last.aggregate_mib_s)} against {ideal})")
    k = by_n[v.knee]
    e = v.efficiency[v.knee]
    ideal_k = k.clients / base.clients * base.aggregate_mib_s
    head = (f"scales linearly up to {_clients(v.linear_up_to)}; the knee"
            if v.linear_up_to is not None else "below linear at the first storage-bound "
            "point; the knee")
    return (f"{lead}{head} is at {_clients(v.knee)}: E({v.knee}) = {efficiency_text(e, t)} "
            f"< {t:.2f} ({format_rate(k.aggregate_mib_s)} against an ideal {format_rate(ideal_k)})")


def _demand_sentence(v: Verdict, by_n: dict[int, Point]) -> str:
    """Demand-bound points, stated apart: they measure compute pacing, not storage."""
    k = v.demand_bound_up_to
    if k is None:
        return ""
    held = "every client met" if (v.au or {}).get("rule", "min") == "min" else \
        "the mean AU met"  # the runs' own rule decided (knee.meets_goal)
    text = (f"not limited by storage up to {_clients(k)}: {held} the AU goal, so "
            "the clients were paced by their own compute time and the aggregate there is the "
            f"accelerators' demand ({format_rate(by_n[k].aggregate_mib_s)} at {k}), not the "
            "storage's limit; such points never count toward linear scaling")
    if v.shape == "demand_bound":
        text += f"; the storage's limit lies above {format_rate(v.peak['mib_s'])}"
    return text


def _consistency_sentence(v: Verdict, base: Point, last: Point) -> str:
    c = v.consistency[last.clients]
    # a dip the verdict did not count as a knee does not count here either
    kept = {n: c for n, c in v.consistency.items() if n not in v.dips}
    worst_n = min(kept, key=kept.__getitem__)
    text = (f"per-client bandwidth at {_clients(last.clients)} is {c:.2f} of that at "
            f"{_clients(base.clients)} (mean {format_rate(last.per_client_mib_s)} against "
            f"{format_rate(base.per_client_mib_s)}; slowest client "
            f"{format_rate(last.per_client_min_mib_s)}, Jain fairness {last.jain:.3f})")
    if kept[worst_n] >= v.threshold:
        return "each client keeps its bandwidth: " + text
    return "each client's bandwidth falls as clients are added: " + text


def _au_figure(au: dict[str, Any], mean: float | None, low: float, at: str) -> str:
    """The AU the rule decided on, named: the mean AU (and the lowest client) or the lowest."""
    if au["rule"] == "mean":
        return f"mean AU{at}: {mean:.1%}, lowest client {low:.1%}; mean rule"
    return f"lowest client AU{at}: {low:.1%}; min rule"


def _au_sentence(au: dict[str, Any], points: Sequence[Point], accelerator: str) -> str:
    goal, k, fail = au["goal"], au["max_clients_at_goal"], au["first_fail"]
    acc = f" {accelerator}" if accelerator else ""
    need = (f" (each{acc} accelerator reads {format_rate(au['demand_mib_s'])} at full speed)"
            if au.get("demand_mib_s") else "")
    if k is None:
        return (f"no tested count keeps the accelerators at {goal:.0%} AU: with "
                f"{_clients(fail['clients'])} the "
                f"{_au_figure(au, fail['au_mean'], fail['au_min'], '')}" + need)
    head = "at least " if fail is None else "up to "
    figure = _au_figure(au, au["au_mean_at_max"], au["au_min_at_max"], f" at {k}")
    text = (f"this storage keeps {head}{k}{acc} accelerator{'s' if k != 1 else ''} at "
            f"{goal:.0%} AU ({figure})")
    if fail is None and au.get("not_measured_from") is not None:
        return text.replace("at least", "up to") + (
            f"; from {_clients(au['not_measured_from'])} AU could not be measured (every "
            "step was an epoch's first: the dataset is too small for that many clients)")
    if fail is None:
        return text + f"; {k} is the largest count tested"
    return text + (f"; with {_clients(fail['clients'])} the "
                   f"{_au_figure(au, fail['au_mean'], fail['au_min'], '')} "
                   "(below the goal)" + need + _au_recovery(fail, points))


def _au_recovery(fail: dict[str, Any], points: Sequence[Point]) -> str:
    """A failure that later counts pass again: with one repeat, that single run decided."""
    later = [p for p in points if p.clients > fail["clients"] and p.au_min is not None
             and _held(p, p.au_goal or 0.0)]
    failed = next(p for p in points if p.clients == fail["clients"])
    if not later:
        return ""
    again = ", ".join(str(p.clients) for p in later)
    if failed.repeats < 2:
        return (f"; cannot tell with one repeat whether {fail['clients']} is noise: the goal "
                f"holds again at {again}; --repeat 3 tells")
    return f"; the goal holds again at {again}, yet {fail['clients']} failed in its repeats"


def _caveats(v: Verdict, points: Sequence[Point]) -> list[str]:
    """Reasons the verdict may describe something other than the storage."""
    out = []
    slow = [p for p in points if p.compute_s and p.compute_nominal_s
            and p.compute_s > COMPUTE_OVERRUN * p.compute_nominal_s]
    if slow:
        names = ", ".join(f"{p.clients} ({p.compute_s * 1e3:.1f} ms)" for p in slow)
        out.append(f"the emulated compute ran long at client counts {names} against "
                   f"{slow[0].compute_nominal_s * 1e3:.1f} ms asked: the client machine could "
                   "not keep pace, so those clients read less for their own reasons")
    if len(points) >= 2 and (fast := knee.fast_baseline(points, v.efficiency, v.threshold)):
        out.append(fast)
    over = [(n, e) for n, e in v.efficiency.items() if e > SUPERLINEAR]
    if over:
        n, e = max(over, key=lambda x: x[1])
        out.append(f"E({n}) = {e:.2f} is well above 1: a cache may be serving reads, or the "
                   f"baseline at {_clients(v.baseline_clients)} ran slow")
    busy = [p for p in points if p.cpu_busy is not None]
    if busy:
        names = ", ".join(f"{p.clients} ({p.cpu_busy:.0f} %)" for p in busy)
        out.append(f"the client machine's CPUs were saturated at client counts {names}: a knee "
                   "there may be the client's, not the storage's")
    single = [str(p.clients) for p in points if p.process_busy]
    if single:
        out.append(f"a client process used a whole core at client counts {', '.join(single)}: "
                   "its own Python loop may have limited it")
    return out
