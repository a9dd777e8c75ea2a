"""How the bench pairs aiio's runs with fio's, and when a row of pairs meets its target.

A row runs rounds: one run of each side per round, in an order that rotates, so that drifting
storage speed falls on every side alike. Its figure is the median of aiio / fio over the
rounds, printed with their min and max. Where fio also runs a second time each round (the A/A
control), the row's lower tail is judged against fio's own: see `tail_chance`.
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

REPEATS = 3
# a row's lower tail is "not chance" when a tool running at exactly the target would show as
# many pairs under fio's worst second run at most 1 time in 20
TAIL_ALPHA = 0.05
# rounds up to this many: every way of swapping aiio's run with fio's second (2^16 = 65,536);
# beyond, the row as run and as many swaps drawn at random from a fixed seed
EXACT_ROUNDS = 16
# storage of unknown speed: a row is judged when this many standard errors of its median
# (read from fio against itself) fit within its margin (`storage_noise`)
NOISE_Z = 2.0
# ... and a median this many standard errors of a difference of two medians beyond the
# control's lies beyond the noise (`noise_bounds`): at 2 the 1-client stream of Dec 2 03:56
# (0.779 against fio's 0.719..1.166, median 1.0; a tool equal to fio, as the throttled rows
# showed) would have failed the bench; at 3 it is not judged
BOUND_Z = 3.0


@dataclass
class Row:
    name: str
    aiio: float
    reference: float
    unit: str
    ratio: float
    target: str
    met: bool
    note: str = ""
    ratio_min: float | None = None  # over the rounds: each aiio run against its round's fio run
    ratio_max: float | None = None
    runs: dict[str, list[float]] | None = None  # each side's figure per round, in round order
    # False: the row's storage moved by more than its margin (`storage_noise`); it neither
    # meets nor fails, and the bench names it in its summary
    judged: bool = True


def interleaved(*runs: Callable[[], float], repeats: int = REPEATS) -> list[list[float]]:
    """`repeats` rounds of one run of each, so drifting storage speed hits all alike; a list
    of figures per callable, in round order. Each round starts one callable further on
    (a b c, b c a, c a b, ...): every side takes every place in a round equally often, so
    what a place brings falls on none of them alone. In a fixed order aiio always ran first
    in a round. What the run before leaves behind is not spread so: with aiio, fio and fio
    again, aiio's run always follows one of fio's (fio's first follows aiio's in two rounds
    of three, its second in one), and the first run after the files are laid out is
    always the first callable's. The rounds are `repeats` rounded up to a multiple of the
    callables: 3 rounds of two sides put one first twice."""
    figures: list[list[float]] = [[] for _ in runs]
    rounds = -(-repeats // len(runs)) * len(runs)
    for r in range(rounds):
        for k in range(len(runs)):
            i = (r + k) % len(runs)
            figures[i].append(runs[i]())
    return figures


def control_ratios(first: list[float], again: list[float]) -> list[float]:
    """The A/A control: the reference's second run of each round over its first. aiio's run
    stands where the second stands (another run beside the reference's), so these are what
    aiio's ratios would be were it the reference: read beside aiio / fio, never inverted."""
    return [z / y for y, z in zip(first, again, strict=True)]


def control_note(first: list[float], again: list[float]) -> str:
    """The A/A control's median and spread, as the row's own ratios are printed."""
    ratios = control_ratios(first, again)
    return (f"fio's second run over its first in the same rounds: "
            f"{statistics.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f})")


@functools.cache
def _swaps(rounds: int) -> np.ndarray:
    """Which rounds swap aiio's run with fio's second, one row per way of swapping. Drawn
    swaps follow the row as run (no swap): it is one of the ways, so the share is never
    below 1 in the draws + 1; without it 20 pairs under fio's worst read "0.0 %" by chance
    where every way of swapping gives 1 in 2^20."""
    if rounds <= EXACT_ROUNDS:
        swaps = np.array(list(itertools.product((False, True), repeat=rounds)))
    else:
        drawn = np.random.default_rng(0).random((2 ** EXACT_ROUNDS, rounds)) < 0.5
        swaps = np.vstack([np.zeros((1, rounds), dtype=bool), drawn])
    swaps.flags.writeable = False  # kept for every row of as many rounds
    return swaps


def tail_chance(ratios: list[float], control: list[float], at_least: float
                ) -> tuple[int, float]:
    """How many of aiio's pairs fall under `at_least` times fio's worst second run, and how
    often a tool running at exactly `at_least` times fio shows as many: the share of the ways
    of swapping, round by round, aiio's pair (scaled by 1 / `at_least`) with fio's second run
    over its first that give as many or more. The share is exact, whatever the machine's
    spread, when that tool's run and fio's second are interchangeable within each round: the
    rotation spreads the places in a round over the sides but does not make them so round by
    round, and what a run leaves behind falls on aiio's more (`interleaved`). On simulated
    machines whose runs depended on their place, on the time or on heavy-tailed stalls the
    share stayed under 1 in 20; where a run right after fio's second was held back, it did not
    (docs/PERFORMANCE.md). The share is never under 1 in 2^k for k pairs under, however
    far under they read (`tail_room`). Holding the worst pair to fio's worst alone failed a
    tool at the target about one row in two: the worst of the two sides is either side's by
    chance."""
    ours = np.asarray(ratios) / at_least
    theirs = np.asarray(control)
    seen = int((ours < theirs.min()).sum())
    if seen == 0:
        return 0, 1.0
    swap = _swaps(len(ours))
    side_a = np.where(swap, theirs, ours)
    side_b = np.where(swap, ours, theirs)
    counts = (side_a < side_b.min(axis=1, keepdims=True)).sum(axis=1)
    return seen, float((counts >= seen).mean())


def tail_room(rounds: int) -> int:
    """How many pairs a met median leaves under the target: the tail can fail a row beside a
    met median only when chance puts that many on aiio's side less than 1 time in 20. Each
    way of swapping that leaves the k pairs under fio's worst where they are gives as many,
    so `tail_chance` is never under 1 in 2^k, however far under they read: 5 pairs, which a
    met median leaves room for from 10 rounds on. (The pairs are counted under the target
    times fio's worst second run over its first; where that second run beat its first in
    every round, more could be: 1 row in 2^rounds of a tool equal to fio.)"""
    return rounds // 2


def no_figure(xs: list[float], ys: list[float], again: list[float] | None) -> str:
    """Why the runs make no row to judge, "" when they do: rounds that do not pair, or a run
    whose figure is no speed (not finite; fio's not above 0, as each divides). A second run
    of fio at 0 or NaN put fio's worst at nothing, and the tail passed whatever aiio read."""
    # (side, its run, its figures, whether 0 is a figure: aiio's run may read nothing)
    sides = [("aiio", "aiio's run", xs, True), ("fio", "fio's run", ys, False)]
    if again is not None:
        sides.append(("fio's second", "fio's second run", again, False))
    counts = [len(figures) for _, _, figures, _ in sides]
    if len(set(counts)) > 1:
        return f"{counts[0]} runs of aiio, " + ", ".join(
            f"{len(figures)} of {side}" for side, _, figures, _ in sides[1:])
    if not counts[0]:
        return "no rounds"
    for _, run, figures, zero in sides:
        for r, x in enumerate(figures):
            if not math.isfinite(x) or x < 0 or (x == 0 and not zero):
                return f"{run} of round {r + 1}: {x:g}"
    return ""


def _runs(xs: list[float], ys: list[float], again: list[float] | None) -> dict[str, list[float]]:
    """Each side's figure per round, for --json."""
    runs = {"aiio": list(xs), "fio": list(ys)}
    if again is not None:
        runs["fio again"] = list(again)
    return runs


def _median_unsure(control: list[float]) -> float:
    """How far (in logs) the median of as many ratios as the control's moves by chance, one
    standard error: 1.25 sigma / sqrt(n), sigma read from the control's quartiles (in logs:
    one stall in twelve rounds moves them little, as it moves the median little)."""
    low, _, high = statistics.quantiles([math.log(c) for c in control], n=4,
                                        method="inclusive")
    return 1.2533 * (high - low) / 1.349 / math.sqrt(len(control))


def storage_noise(control: list[float], at_least: float) -> bool:
    """Whether fio against itself (the A/A control) moved by more than a row's margin can
    resolve: fio's own median (its second run over its first) misses the target or its
    mirror 1 / `at_least`, or the median of the row's pairs is too unsure for the margin.
    A tool equal to fio reads ratios spread as fio's second runs over its first; its median
    moves by `_median_unsure`. The row is judged when `NOISE_Z` times that is within the
    margin: beyond, a tool equal to fio misses the median more than 1 time in 40 by chance.
    The false rates are in docs/PERFORMANCE.md, the simulations in tests/test_bench_pairs.py."""
    mid = statistics.median(control)
    unsure = NOISE_Z * _median_unsure(control)
    return not at_least <= mid <= 1 / at_least or unsure > -math.log(at_least)


def noise_bounds(control: list[float], at_least: float) -> tuple[float, float]:
    """The medians the storage's noise cannot explain for a tool at the target: under the
    lower bound (or, for a row judged both ways, over the upper) the row is judged, not met.
    The bound is the target times the control's median (taken no further from 1 than it
    lies: fio's second run helped by its first must not raise the bar) moved by `BOUND_Z`
    standard errors of a difference of two medians, or fio's worst second run over its
    first, whichever is tighter. fio's worst alone (the rule before) left a tool at 0.6 of
    fio unjudged in about half the rows on the virtual-disk model, and had no upper bound:
    the worst of twelve is far below where a median of twelve can fall."""
    mid = statistics.median(control)
    moved = math.exp(BOUND_Z * math.sqrt(2) * _median_unsure(control))
    low = at_least * max(min(control), min(1.0, mid) / moved)
    high = max(min(max(control), max(1.0, mid) * moved) / at_least, 1 / at_least)
    return low, high


def _on_unknown_storage(row: Row, control: list[float], at_least: float,
                        both_sides: bool) -> Row:
    """A row on storage of unknown speed whose A/A control moved more than its margin: not
    judged, with its figures, unless its median lies where the noise cannot take a tool at
    the target (`noise_bounds`; over the upper bound only for a row judged `both_sides`):
    then judged and not met. Whether the storage was noisy is read from fio's runs alone, so
    that no figure of aiio's can take its row out of judgement."""
    if not storage_noise(control, at_least):
        return row
    spread = (f"fio against itself spread {min(control):.3f}..{max(control):.3f}, median "
              f"{statistics.median(control):.3f}")
    low, high = noise_bounds(control, at_least)
    if row.ratio < low or (both_sides and row.ratio > high):
        side, bound = ("under", low) if row.ratio < low else ("over", high)
        row.met = False
        row.note += (f"; beyond the storage's noise ({spread}): the median {row.ratio:.3f} is "
                     f"{side} {bound:.3f}, {BOUND_Z:g} standard errors beyond a tool at the "
                     f"target")
        return row
    row.met, row.judged = False, False
    row.note = f"not judged: storage noise ({spread}); {row.note}"
    return row


def paired_row(name: str, xs: list[float], ys: list[float], unit: str,
               at_least: float, again: list[float] | None = None,
               unknown_speed: bool = False, both_sides: bool = False) -> Row:
    """A row whose ratio is the median of the paired runs' ratios, with their min and max:
    the best of each side hid how much a single run could miss. Met when the median meets
    the target and, with fio's second runs of the same rounds (`again`, the A/A control),
    when no more pairs fall under the target times fio's worst second run than chance gives
    a tool at the target (`tail_chance`, 1 in 20). Without a control, or with too few rounds
    for the tail to fail a row whose median met (`tail_room`: under 10), the median alone
    judges, and the target says so. `unknown_speed`: storage whose speed moves on its own (a
    virtual disk): with a control that moved more than the margin, the row is not judged
    (`storage_noise`) unless its median lies beyond the noise (`noise_bounds`), over it too
    when the row fails a tool faster than fio as one slower (`both_sides`)."""
    row = _paired(name, xs, ys, unit, at_least, again)
    if unknown_speed and again is not None and math.isfinite(row.ratio):
        return _on_unknown_storage(row, control_ratios(ys, again), at_least, both_sides)
    return row


def _paired(name: str, xs: list[float], ys: list[float], unit: str, at_least: float,
            again: list[float] | None) -> Row:
    """`paired_row` on any storage: the median and, with a control, the tail."""
    why = no_figure(xs, ys, again)
    if why:
        nan = float("nan")
        return Row(name, nan, nan, unit, nan, f">= {at_least}", False,
                   note=f"no ratio to judge: {why}", runs=_runs(xs, ys, again))
    ratios = [x / y for x, y in zip(xs, ys, strict=True)]
    mid = statistics.median(ratios)
    row = Row(name, statistics.median(xs), statistics.median(ys), unit, mid,
              f">= {at_least}, median", mid >= at_least, ratio_min=min(ratios),
              ratio_max=max(ratios), runs=_runs(xs, ys, again))
    if again is None:
        return row
    row.note = control_note(ys, again)
    room = tail_room(len(ratios))
    if 0.5 ** room >= TAIL_ALPHA:
        row.note += (f"; {len(ratios)} rounds are too few for the tail to fail a row whose "
                     f"median met: that leaves {room} pairs under the target at most, as "
                     f"many as chance gives 1 time in {2 ** room}")
        return row
    control = control_ratios(ys, again)
    seen, chance = tail_chance(ratios, control, at_least)
    row.target = f">= {at_least}, A/A"
    row.met = row.met and chance >= TAIL_ALPHA
    if seen:
        row.note += (f"; {seen} of {len(ratios)} pairs under {at_least} x fio's worst "
                     f"second run ({at_least * min(control):.3f}), the worst "
                     f"{min(ratios):.3f}: as many by chance {chance:.1%} of the time")
    return row
