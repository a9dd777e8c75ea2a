"""How the bench pairs aiio's runs with fio's (tools/bench.py): the order of a round and the
rule that says a row met its target. No speed is measured here."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np

from tools import pairs as bench


def test_every_side_takes_every_place_in_a_round_equally_often():
    # in a fixed order aiio ran first in every round, right after the files were laid out or
    # fio's second run: whatever a run leaves behind fell on one side only
    calls: list[str] = []

    def side(name: str, value: float):
        def run() -> float:
            calls.append(name)
            return value
        return run

    rounds = 6
    got = bench.interleaved(side("aiio", 1.0), side("fio", 2.0), side("fio again", 3.0),
                            repeats=rounds)
    assert got == [[1.0] * rounds, [2.0] * rounds, [3.0] * rounds]
    places = Counter((calls[i], i % 3) for i in range(len(calls)))
    assert set(places.values()) == {rounds // 3}
    assert len(places) == 9


def test_a_row_is_judged_by_its_median_pair_and_shows_the_worst():
    # one pair under the target of five: fio against itself swings as much; the spread
    # stays in the row
    row = bench.paired_row("x", [0.90, 0.97, 1.0, 0.99, 1.02], [1.0] * 5, "MiB/s", 0.95)
    assert row.met and row.ratio == 0.99 and row.ratio_min == 0.90 and row.ratio_max == 1.02
    row = bench.paired_row("x", [0.90, 0.94, 1.0, 0.93, 1.02], [1.0] * 5, "MiB/s", 0.95)
    assert not row.met and row.ratio == 0.94


def _counting(calls: list[str], name: str):
    def run() -> float:
        calls.append(name)
        return 1.0
    return run


def test_places_stay_even_when_the_rounds_asked_do_not_divide_among_the_sides():
    # every row asked for rounds that did not divide: 3 rounds of aiio and fio put aiio first
    # in two of them, 11 rounds of aiio, fio and fio again put aiio first in four and last in
    # three
    for sides, asked in ((2, 3), (3, 11), (2, 11)):
        calls: list[str] = []
        got = bench.interleaved(*[_counting(calls, str(i)) for i in range(sides)],
                                repeats=asked)
        rounds = len(got[0])
        assert rounds >= asked and rounds % sides == 0
        places = Counter((calls[i], i % sides) for i in range(len(calls)))
        assert set(places.values()) == {rounds // sides}, places


def _machine_rounds(rng: random.Random, rounds: int, slower: float = 1.0,
                   stalls: int = 0) -> tuple[list[float], list[float], list[float]]:
    """aiio, fio and fio again over `rounds` rounds on a machine like the bench's: a speed
    that drifts from round to round, 4 % noise on each run, and now and then a run that the
    machine holds back by 10 to 30 % (fio's second run fell to 0.71 of its first on it).
    aiio is `slower` times a run of fio, and held back to 0.6 in `stalls` of the rounds."""
    def run(speed: float) -> float:
        stall = rng.uniform(0.7, 0.9) if rng.random() < 0.08 else 1.0
        return speed * rng.lognormvariate(0, 0.04) * stall

    aiio, fio, again = [], [], []
    for r in range(rounds):
        speed = rng.uniform(0.8, 1.2)
        aiio.append(run(speed) * slower * (0.6 if r < stalls else 1.0))
        fio.append(run(speed))
        again.append(run(speed))
    return aiio, fio, again


def _not_met(rows: int, seed: int, tail_only: bool = False, **tool: float) -> float:
    """The share of `rows` simulated 12-round rows, target 0.95 with the A/A control, that
    are not met (`tail_only`: not met although their median met the target)."""
    rng = random.Random(seed)
    misses = 0
    for _ in range(rows):
        row = bench.paired_row("x", *_rows_of(_machine_rounds(rng, 12, **tool)))
        misses += not row.met and not (tail_only and row.ratio < 0.95)
    return misses / rows


def _rows_of(runs: tuple[list[float], list[float], list[float]]):
    aiio, fio, again = runs
    return aiio, fio, "MiB/s", 0.95, again


def test_a_tool_that_is_fio_meets_a_row_run_after_run():
    # the worst pair held to fio's own worst: with aiio's run and fio's second run
    # interchangeable, the worst of the 24 is aiio's half the time, so a tool equal to fio
    # missed a row in about one run of two (each full bench of Dec 2 missed one row of three)
    assert _not_met(400, seed=1) <= 0.05
    # a tool at exactly the target: its median misses half the time, as a median does; the
    # tail adds no more than the 1 in 20 it allows
    assert _not_met(400, seed=2, tail_only=True, slower=0.95) <= 0.05


def test_a_tool_slower_than_the_target_or_stalling_is_caught():
    assert _not_met(200, seed=3, slower=0.90) >= 0.95
    # a stall in 5 rounds of 12: the median is met, the tail is not chance
    assert _not_met(200, seed=4, stalls=5) >= 0.8


def test_one_pair_under_fios_worst_is_chance_and_the_row_says_how_likely():
    fio = [1.0] * 12
    again = [1.0, 0.98, 1.02, 0.99, 1.01, 0.97, 1.0, 1.03, 0.99, 1.0, 0.98, 1.01]
    aiio = [0.70] + [1.0, 0.99, 1.01, 0.98, 1.02, 1.0, 0.99, 1.01, 1.0, 0.98, 1.02]
    row = bench.paired_row("x", aiio, fio, "MiB/s", 0.95, again=again)
    assert row.met, row.note
    assert "1 of 12 pairs" in row.note and "0.700" in row.note
    # the same pair in five rounds: 1 time in 32 at most, were aiio's run as good as
    # 0.95 x fio's second
    aiio[:5] = [0.70] * 5
    row = bench.paired_row("x", aiio, fio, "MiB/s", 0.95, again=again)
    assert row.ratio >= 0.95 and not row.met, row.note
    assert "5 of 12 pairs" in row.note


def test_the_tail_is_judged_on_fios_second_run_over_its_first():
    # aiio's run of a round stands where fio's second run stands: aiio / fio is to be read
    # beside again / fio, not its reciprocal. fio's second runs 10 % slower than its first
    # in every round: aiio at 0.9 of fio's first is what fio itself makes
    fio = [1.0] * 12
    assert bench.paired_row("x", [0.9] * 6 + [1.0] * 6, fio, "MiB/s", 0.9,
                            again=[0.85] * 6 + [1.0] * 6).met
    row = bench.paired_row("x", [0.95] * 12, fio, "MiB/s", 0.95, again=[1 / 0.9] * 12)
    assert "0.900" not in row.note and "1.111" in row.note


def test_too_few_rounds_for_the_tail_say_so():
    # three rounds: even every pair at the bottom is 1 time in 8 by chance
    row = bench.paired_row("x", [0.96, 0.96, 0.96], [1.0] * 3, "MiB/s", 0.95,
                           again=[1.2, 1.2, 1.2])
    assert row.met and "median" in row.target and "too few" in row.note


def test_without_a_control_the_row_says_it_is_judged_by_its_median():
    row = bench.paired_row("x", [0.5, 0.97, 1.0], [1.0] * 3, "MiB/s", 0.95)
    assert row.met and "median" in row.target


def _exact_chance(ours: list[float], theirs: list[float]) -> float:
    """`tail_chance`'s share worked out over every way of swapping, whatever the rounds."""
    a, b = np.asarray(ours), np.asarray(theirs)
    seen = int((a < b.min()).sum())
    swap = (np.arange(2 ** len(a))[:, None] >> np.arange(len(a))) & 1 == 1
    side_a, side_b = np.where(swap, b, a), np.where(swap, a, b)
    return float(((side_a < side_b.min(axis=1, keepdims=True)).sum(axis=1) >= seen).mean())


def test_beyond_16_rounds_the_drawn_swaps_give_the_share_of_every_swap():
    # the 24-round rows draw their swaps: the share they give must be the exact one within
    # the draw's own error, and never below the least chance can give (the row as run is
    # one way of swapping): all 20 pairs under fio's worst is 1 in 2^20, not never
    rng = random.Random(5)
    theirs = [rng.uniform(0.85, 1.1) for _ in range(17)]
    ours = [rng.uniform(0.75, 1.1) for _ in range(17)]
    seen, chance = bench.tail_chance(ours, theirs, 1.0)
    assert seen >= 3 and abs(chance - _exact_chance(ours, theirs)) < 0.005
    seen, chance = bench.tail_chance([0.5] * 20, [1.0] * 20, 0.95)
    assert seen == 20 and 0 < chance <= 2 / 2 ** bench.EXACT_ROUNDS


def test_a_row_too_short_for_its_tail_to_fail_beside_a_met_median_says_it_is_judged_by_it():
    # chance puts k pairs under fio's worst on aiio's side 1 time in 2^k whatever they read,
    # so the tail fails only with 5 or more, and a met median leaves room for half the pairs:
    # with 6 rounds a tool that read a tenth of fio in two of them met an "A/A" target
    fio, again = [1.0] * 6, [1.0, 0.98, 1.02, 0.99, 1.01, 1.0]
    row = bench.paired_row("x", [0.1, 0.1, 1.0, 1.0, 1.0, 1.0], fio, "MiB/s", 0.95,
                           again=again)
    assert row.met and "median" in row.target, row
    assert "6 rounds are too few" in row.note and "1 time in 8" in row.note, row.note
    # with 10 the tail can fail such a row: five pairs under, 1 time in 32
    row = bench.paired_row("x", [0.8] * 5 + [1.15] * 5, [1.0] * 10, "MiB/s", 0.95,
                           again=again + again[:4])
    assert row.ratio >= 0.95 and not row.met and "A/A" in row.target, row


def test_chance_never_gives_k_pairs_under_fios_worst_less_than_1_time_in_2_to_the_k():
    # why a short row's tail cannot fail: the ways of swapping that leave those k pairs in
    # place all give as many, however far under fio they read
    rng = random.Random(11)
    for _ in range(300):
        rounds = rng.randint(5, 12)
        ours = [rng.paretovariate(1.5) ** -1 for _ in range(rounds)]
        theirs = [rng.lognormvariate(0, 0.1) for _ in range(rounds)]
        seen, chance = bench.tail_chance(ours, theirs, 1.0)
        assert chance >= 0.5 ** seen
        assert chance == _exact_chance(ours, theirs)


def test_every_row_with_an_a_a_control_runs_rounds_enough_for_its_tail_to_be_judged():
    # the psync, io_uring and local-disk stream rows ran 6 rounds to show a tail, and 6
    # leave room for 3 pairs under beside a met median: 1 time in 8
    from tools import bench as rows

    for rounds in (rows.CONTROL_ROUNDS, rows.STREAM_TMPFS_ROUNDS):
        assert 0.5 ** bench.tail_room(rounds) < bench.TAIL_ALPHA, rounds
        assert rounds % 3 == 0, rounds


def test_a_run_without_a_figure_makes_the_row_not_met_and_says_which():
    # fio reading 0 divided by zero; a second run of fio at 0 or NaN put fio's worst at
    # nothing, and the tail passed whatever aiio read
    twelve = [1.0] * 12
    nan, inf = float("nan"), float("inf")
    cases = [
        (twelve, [*twelve[:3], 0.0, *twelve[4:]], twelve, "fio's run of round 4: 0"),
        ([0.3] * 5 + [1.0] * 7, twelve, [0.0] + twelve[1:], "fio's second run of round 1: 0"),
        ([0.3] * 5 + [1.0] * 7, twelve, twelve[1:] + [nan], "fio's second run of round 12: nan"),
        ([inf] + twelve[1:], twelve, twelve, "aiio's run of round 1: inf"),
        ([-1.0] + twelve[1:], twelve, twelve, "aiio's run of round 1: -1"),
        ([], [], [], "no rounds"),
        (twelve, twelve[1:], twelve, "12 runs of aiio, 11 of fio, 12 of fio's second"),
    ]
    for aiio, fio, again, why in cases:
        row = bench.paired_row("x", aiio, fio, "MiB/s", 0.95, again=again)
        assert not row.met and why in row.note, (why, row.note)
    row = bench.paired_row("x", twelve, twelve[:3], "MiB/s", 0.95)
    assert not row.met and "12 runs of aiio, 3 of fio" in row.note


# --- storage of unknown speed: a row whose own A/A control moved by more than its margin ------

def _noisy_rounds(rng: random.Random, rounds: int, slower: float = 1.0
                  ) -> tuple[list[float], list[float], list[float]]:
    """aiio, fio and fio again on a virtual disk like the bench machine's local one: every run
    15 % apart from the next (lognormal), and one run in three served from the host's cache
    at 1.0 to 1.6 times the disk's speed (fio's second run over its first read 0.72 to 1.17
    in the 12 rounds of the full run of Dec 2 03:56, and 1.0 to 1.6 in earlier 3-round runs)."""
    def run(speed: float) -> float:
        cached = rng.uniform(1.0, 1.6) if rng.random() < 1 / 3 else 1.0
        return speed * rng.lognormvariate(0, 0.15) * cached

    aiio, fio, again = [], [], []
    for _ in range(rounds):
        speed = rng.uniform(0.8, 1.2)
        aiio.append(run(speed) * slower)
        fio.append(run(speed))
        again.append(run(speed))
    return aiio, fio, again


def _verdicts(rows: int, seed: int, machine, **tool: float) -> Counter:
    """How `rows` simulated 12-round rows on storage of unknown speed (target 0.95, A/A
    control) come out: "met", "not met" or "not judged"."""
    rng = random.Random(seed)
    seen: Counter = Counter()
    for _ in range(rows):
        aiio, fio, again = machine(rng, 12, **tool)
        row = bench.paired_row("x", aiio, fio, "MiB/s", 0.95, again=again, unknown_speed=True)
        seen["not judged" if not row.judged else "met" if row.met else "not met"] += 1
    return seen


def test_a_row_whose_own_control_moved_more_than_its_margin_is_not_judged_and_says_so():
    # the full run of Dec 2 03:56, 1-client stream on the local disk: aiio / fio read 0.779
    # where fio against itself spread 0.719..1.166 in the same rounds; the bench exited 1
    fio = [1000.0] * 12
    again = [x * 1000 for x in (0.719, 0.80, 0.86, 0.90, 0.95, 1.0, 1.02, 1.05, 1.08,
                                1.10, 1.13, 1.166)]
    aiio = [x * 1000 for x in (0.70, 0.72, 0.74, 0.76, 0.77, 0.779, 0.779, 0.80, 0.85,
                               0.9, 1.0, 1.1)]
    row = bench.paired_row("x", aiio, fio, "MiB/s", 0.95, again=again, unknown_speed=True)
    assert not row.judged and not row.met, row
    assert "not judged: storage noise (fio against itself spread 0.719..1.166, median" \
        in row.note, row.note
    # the same figures on storage the row does not call unknown: judged, and not met
    row = bench.paired_row("x", aiio, fio, "MiB/s", 0.95, again=again)
    assert row.judged and not row.met


def test_aiio_can_never_take_its_row_out_of_judgement():
    # whether the storage was noisy is read from fio's runs alone: on noisy storage no aiio
    # figure makes the row met, and one beyond the noise makes it judged (not met); on
    # steady storage every figure is judged
    rng = random.Random(21)
    for _ in range(200):
        _, fio, again = _noisy_rounds(rng, 12)
        control = bench.control_ratios(fio, again)
        floor, _ = bench.noise_bounds(control, 0.95)
        for s in (0.3, 0.6, 0.9, 1.0, 1.2, 2.0):
            row = bench.paired_row("x", [f * s for f in fio], fio, "MiB/s", 0.95,
                                   again=again, unknown_speed=True)
            if bench.storage_noise(control, 0.95):
                assert not row.met and row.judged == (s < floor), (s, row)
            else:
                assert row.judged


def test_a_row_under_fios_own_worst_is_judged_even_on_noisy_storage():
    # noise explains a median anywhere fio against itself reached: under the target times
    # fio's worst second run it explains nothing, and the row is not met
    fio = [1000.0] * 12
    again = [x * 1000 for x in (0.719, 0.80, 0.86, 0.90, 0.95, 1.0, 1.02, 1.05, 1.08,
                                1.10, 1.13, 1.166)]
    row = bench.paired_row("x", [600.0] * 12, fio, "MiB/s", 0.95, again=again,
                           unknown_speed=True)
    assert row.judged and not row.met, row
    assert "beyond the storage's noise" in row.note, row.note


def _steady_rounds(rng: random.Random, rounds: int, slower: float = 1.0
                   ) -> tuple[list[float], list[float], list[float]]:
    """aiio, fio and fio again on steady storage: a speed that drifts from round to round and
    3 % noise on each run (about what the throttled loop device gives)."""
    aiio, fio, again = [], [], []
    for _ in range(rounds):
        speed = rng.uniform(0.8, 1.2)
        fio.append(speed * rng.lognormvariate(0, 0.03))
        again.append(speed * rng.lognormvariate(0, 0.03))
        aiio.append(speed * rng.lognormvariate(0, 0.03) * slower)
    return aiio, fio, again


def test_on_steady_storage_the_rule_judges_the_rows_and_catches_a_slow_tool():
    # (b) a tool at 0.6 of fio on steady storage is caught: its median lies under the target
    # times fio's own worst, so not even a control that moved takes it out of judgement
    for machine, seed in ((_steady_rounds, 31), (_machine_rounds, 32)):
        slow = _verdicts(1000, seed, machine, slower=0.6)
        assert slow["not met"] >= 0.99 * 1000, (machine, slow)
    # a tool equal to fio on steady storage: judged nearly always, failed as seldom as the
    # median allows
    equal = _verdicts(1000, 33, _steady_rounds)
    assert equal["not judged"] <= 0.05 * 1000, equal
    assert equal["not met"] <= 0.01 * 1000, equal


def test_on_noisy_storage_an_equal_tool_is_not_judged_and_never_failed():
    # (a) the local virtual disk: a tool equal to fio failed the bench now and then; now its
    # row is not judged, fio's own runs having moved more than the margin
    equal = _verdicts(1000, 34, _noisy_rounds)
    assert equal["not judged"] >= 0.99 * 1000, equal
    assert equal["not met"] <= 0.01 * 1000, equal
    # a tool at 0.6 of fio on the same storage: not met where it lies beyond the noise
    # (seven rows in ten), not judged, and named so, in the others
    slow = _verdicts(1000, 35, _noisy_rounds, slower=0.6)
    assert slow["not met"] >= 0.65 * 1000, slow
    assert slow["met"] == 0, slow


def test_every_row_on_storage_of_unknown_speed_runs_rounds_enough_to_be_judged():
    # the engine cross-check ran 5 rounds: the control's quartiles of 5 runs said little, and
    # on steady storage (3 % a run) a fifth of its rows went unjudged while a tool equal to
    # fio missed 1.4 % of them on one side alone (the row fails on either side)
    from tools import bench as rows

    for rounds in (rows.CONTROL_ROUNDS, rows.CROSSCHECK_ROUNDS):
        rng = random.Random(36)
        unjudged = 0
        for _ in range(500):
            aiio, fio, again = _steady_rounds(rng, rounds)
            unjudged += not bench.paired_row("x", aiio, fio, "MiB/s", 0.95, again=again,
                                             unknown_speed=True).judged
        assert unjudged <= 0.05 * 500, (rounds, unjudged)


def test_on_noisy_storage_a_tool_well_under_fio_is_caught_by_the_median_s_own_spread():
    # the guard held the median to the target times fio's single worst second run: on the
    # virtual-disk model a tool at 0.6 of fio was not met in 47 % of rows and not judged (the
    # bench exiting 0) in 53 %; a tool at 0.7 was not met in 15 %. The median of 12 pairs
    # falls far less than fio's worst of 12: held to the control's median and its standard
    # error, most such rows are judged
    slow = _verdicts(1000, 37, _noisy_rounds, slower=0.6)
    assert slow["not met"] >= 0.65 * 1000, slow
    assert slow["met"] == 0, slow
    slow = _verdicts(1000, 39, _noisy_rounds, slower=0.7)
    assert slow["not met"] >= 0.25 * 1000, slow


def test_on_noisy_storage_a_row_judged_both_ways_catches_a_tool_far_over_fio():
    # the engine cross-check fails a tool faster than fio as one slower (reads served from
    # memory): on noisy storage a tool at 3 times fio was never judged
    rng = random.Random(38)
    seen: Counter = Counter()
    for _ in range(200):
        aiio, fio, again = _noisy_rounds(rng, 12, slower=3.0)
        row = bench.paired_row("x", aiio, fio, "MiB/s", 0.95, again=again,
                               unknown_speed=True, both_sides=True)
        seen["not judged" if not row.judged else "met" if row.met else "not met"] += 1
    assert seen["not met"] >= 0.99 * 200, seen
    # and an equal tool is as seldom failed from above as from below
    equal = Counter()
    for _ in range(1000):
        aiio, fio, again = _noisy_rounds(rng, 12)
        row = bench.paired_row("x", aiio, fio, "MiB/s", 0.95, again=again,
                               unknown_speed=True, both_sides=True)
        equal["not judged" if not row.judged else "met" if row.met else "not met"] += 1
    assert equal["not met"] <= 0.02 * 1000, equal
