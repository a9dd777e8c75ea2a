"""The scaling verdict's arithmetic on hand-written numbers: efficiency, consistency, knee,
plateau, AU capacity, and the per-count rows built from run results (fairness and spread
over repeats)."""

from __future__ import annotations

import pytest

from aiio.results import result
from aiio.stats import Histogram
from aiio.sweep import per_point, run, verdict
from aiio.sweep.verdict import Point, judge


def pts(aggs, per_client=None, counts=(1, 2, 4, 8), au=None, goal=0.9):
    per_client = per_client or [a / n for a, n in zip(aggs, counts, strict=True)]
    return [Point(n, a, p, p, 1.0, None if au is None else au[i], None if au is None else goal)
            for i, (n, a, p) in enumerate(zip(counts, aggs, per_client, strict=True))]


def test_efficiency_formula():
    assert verdict.efficiency(400, 4, 100) == pytest.approx(1.0)
    assert verdict.efficiency(300, 4, 100) == pytest.approx(0.75)
    assert verdict.efficiency(40, 8, 40) == pytest.approx(0.125)
    # baseline other than 1 client: ideal at 8 is 8/2 x agg(2)
    assert verdict.efficiency(360, 8, 100, n_base=2) == pytest.approx(0.9)
    assert verdict.efficiency(10, 2, 0) == 0.0
    with pytest.raises(ValueError):
        verdict.efficiency(1, 0, 1)


def test_consistency_formula():
    assert verdict.consistency(45, 50) == pytest.approx(0.9)
    assert verdict.consistency(5, 0) == 0.0


def test_linear_up_to_and_knee():
    counts = [1, 2, 4, 8, 16]
    assert verdict.linear_up_to(counts, [1, .98, .93, .91, .95], 0.9) == (16, None)
    assert verdict.linear_up_to(counts, [1, .98, .85, .95, .95], 0.9) == (2, 4)
    assert verdict.linear_up_to(counts, [1, .5, .25, .125, .06], 0.9) == (1, 2)
    # exactly at the threshold still counts as linear
    assert verdict.linear_up_to([1, 2], [1, 0.9], 0.9) == (2, None)


def test_plateau_detection():
    counts = [1, 2, 4, 8, 16, 32]
    flat = verdict.plateau(counts, [100, 195, 250, 310, 305, 300])
    assert flat["from_clients"] == 8
    assert flat["mib_s"] == pytest.approx(305)
    assert flat["points"] == 3
    assert verdict.plateau(counts, [100, 200, 400, 800, 1600, 3200]) is None
    # one point alone is not a plateau
    assert verdict.plateau([1, 2], [100, 300]) is None
    # the band is around the plateau's mean: noise either side of a limit of 40 is one plateau
    assert verdict.plateau([1, 2, 4], [42.8, 41.3, 38.4])["from_clients"] == 1
    assert verdict.plateau([1, 2, 4], [40, 40, 30]) is None


def test_linear_verdict():
    v = judge(pts([100, 199, 395, 780]))
    assert v.shape == "linear"
    assert v.knee is None and v.linear_up_to == 8
    assert v.efficiency[8] == pytest.approx(780 / 800)
    assert "scales linearly up to 8 clients" in v.statements[0]
    assert "780.0 MiB/s" in v.statements[0] and "0.97" in v.statements[0]


def test_one_shared_limit_is_saturated():
    v = judge(pts([40.5, 40.1, 39.6, 40.2]))
    assert v.shape == "saturated"
    assert v.linear_up_to == 1 and v.knee == 2
    assert v.efficiency[8] == pytest.approx(40.2 / (8 * 40.5))
    assert v.plateau["from_clients"] == 1
    assert v.plateau["mib_s"] == pytest.approx((40.5 + 40.1 + 39.6 + 40.2) / 4)
    text = " ".join(v.statements)
    assert "knee is at 2 clients" in text and "saturated" in text
    assert v.consistency[8] == pytest.approx((40.2 / 8) / 40.5)
    assert "falls as clients are added" in text


def test_sublinear_and_degrading():
    v = judge(pts([100, 190, 300, 480]))
    assert (v.shape, v.linear_up_to, v.knee) == ("sublinear", 2, 4)
    v = judge(pts([100, 190, 250, 150]))
    assert v.shape == "degrading"
    assert v.peak == {"clients": 4, "mib_s": 250}
    assert "falls to 150.0 MiB/s with 8 clients" in " ".join(v.statements)


def test_saturating_after_growth():
    v = judge(pts([100, 195, 250, 310, 305, 300], counts=(1, 2, 4, 8, 16, 32)))
    assert (v.shape, v.knee, v.linear_up_to) == ("saturated", 4, 2)
    assert v.plateau["from_clients"] == 8


def test_noise_around_one_limit_is_saturated_not_degrading():
    v = judge(pts([42.8, 41.3, 38.4], counts=(1, 2, 4)))
    assert v.shape == "saturated" and v.plateau["from_clients"] == 1
    v = judge(pts([40, 40, 30], counts=(1, 2, 4)))
    assert v.shape == "degrading"


def test_au_capacity():
    v = judge(pts([100, 200, 390, 500], au=[0.99, 0.97, 0.93, 0.71]), accelerator="h100")
    assert v.au["max_clients_at_goal"] == 4
    assert v.au["first_fail"] == {"clients": 8, "au_min": 0.71, "au_mean": None}
    assert ("this storage keeps up to 4 h100 accelerators at 90% AU (lowest client AU at 4: "
            "93.0%; min rule)") in v.statements[-1]
    # a pass after a failure does not count: the claim holds for every count up to K
    v = judge(pts([100, 200, 390, 500], au=[0.99, 0.85, 0.93, 0.95]))
    assert v.au["max_clients_at_goal"] == 1
    v = judge(pts([100, 200, 390, 500], au=[0.5, 0.4, 0.3, 0.2]))
    assert v.au["max_clients_at_goal"] is None
    assert "no tested count" in v.statements[-1]


def test_all_pass_is_stated_as_a_lower_bound_and_as_demand():
    v = judge(pts([100, 200, 400, 800], au=[0.99] * 4), accelerator="a100")
    assert "at least 8 a100 accelerators" in " ".join(v.statements)
    assert any("paced by their own compute" in c for c in v.statements)


def test_superlinear_and_busy_client_caveats():
    points = pts([100, 260, 400, 800])
    points[3].cpu_busy = 97.0
    points[2].process_busy = True
    v = judge(points)
    assert any("E(2) = 1.30" in c for c in v.caveats)
    assert any("8 (97 %)" in c for c in v.caveats)
    assert any("whole core at client counts 4:" in c for c in v.caveats)


def test_single_point_has_no_shape():
    v = judge(pts([100], counts=(1,)))
    assert v.shape == "insufficient"
    assert "at least two" in v.statements[0]


def test_a_baseline_that_moved_nothing_has_no_verdict():
    # E(N) against 0 MiB/s at the baseline was 0.00 everywhere: a "sublinear" knee at 2
    v = judge(pts([0.0, 0.0, 0.0, 0.0]))
    assert v.shape == verdict.NOT_MEASURABLE and v.knee is None and not v.efficiency
    assert v.statements == ["not measurable: the phase moves no bytes (0 MiB/s at every "
                            "client count: 1, 2, 4, 8), and its sweep is judged on bandwidth; "
                            "no scaling verdict"]
    v = judge(pts([0.0, 10.0, 20.0, 40.0]))
    assert v.shape == verdict.NOT_MEASURABLE
    assert v.statements[0].startswith("not measurable: nothing moved at the baseline (1 client")


# --- rows from run results --------------------------------------------------------------

def _run(clients_mib_s, au=None, cpu=10.0):
    """A run result holding just what the table reads, built from per-client MiB/s."""
    h = Histogram()
    h.record_many([1000 * (i + 1) for i in range(100)])
    from aiio.stats import jain, spread
    agg = {"first_done": {"mib_s": sum(clients_mib_s)}, "last_done": {"mib_s": 0.9 * sum(
        clients_mib_s)}, "per_client_mib_s": spread(clients_mib_s), "jain": jain(clients_mib_s),
        "histograms": {"read": h.to_dict()}}
    if au is not None:
        agg.update({"au_mean": sum(au) / len(au), "au_min": min(au), "au_goal": 0.9,
                    "au_pass": min(au) >= 0.9, "samples_per_s": 1.0})
    return {"aggregate": agg, "monitor": {"cpu_percent_mean": cpu, "cpu_percent_max": cpu + 5},
            "warnings": []}


def test_rows_fairness_and_repeats():
    points = [
        {"clients": 1, "repeat": 0, "result": _run([100], au=[0.95])},
        {"clients": 1, "repeat": 1, "result": _run([110], au=[0.97])},
        {"clients": 2, "repeat": 0, "result": _run([50, 150], au=[0.5, 0.99])},
        {"clients": 2, "repeat": 1, "result": _run([100, 100], au=[0.98, 0.99])},
    ]
    rows = run.table_rows(points)
    one, two = rows
    assert one["aggregate_mib_s"] == pytest.approx(105)
    assert one["aggregate_spread"]["min"] == 100 and one["aggregate_spread"]["max"] == 110
    assert two["aggregate_mib_s"] == pytest.approx(200)
    assert two["efficiency"] == pytest.approx(200 / (2 * 105))
    # Jain of (50, 150) is 200^2 / (2 x 25000) = 0.8; of (100, 100) 1.0; rows keep the mean
    # and the worst, never pooling clients of different repeats
    assert two["jain"] == pytest.approx(0.9)
    assert two["jain_min"] == pytest.approx(0.8)
    assert two["per_client_mib_s"]["min"] == 50 and two["per_client_mib_s"]["max"] == 150
    assert two["consistency"] == pytest.approx(100 / 105)
    assert two["au_min"] == 0.5 and two["au_pass"] is False
    assert two["latency"]["read"]["count"] == 200
    assert two["cpu_percent"] == pytest.approx(10.0)


def test_the_judged_stream_is_the_headline_stages_first_section():
    window = {"seconds": 1.0, "bytes": 1.0, "mib_s": 1.0}
    stream = {"first_done": window, "last_done": window, "jain": 1.0,
              "per_client_mib_s": {"mean": 1.0, "min": 1.0, "max": 1.0, "cv": 0.0}}
    lifecycle = result.model({"phase": "all", "aggregate": {"prep": {}, "train": stream}})
    assert per_point.judged_stream(lifecycle).path == ("aggregate", "train")
    assert per_point.judged_stream(result.model({"phase": "train", "aggregate": stream})).path \
        == ("aggregate",)
    with pytest.raises(Exception, match="no first-done"):
        per_point.judged_stream(result.model({"phase": "train", "aggregate": {"x": 1}}))


def test_efficiency_text_never_rounds_onto_the_threshold():
    assert verdict.efficiency_text(0.8989, 0.9) == "0.899"
    assert verdict.efficiency_text(0.9, 0.9) == "0.90"
    assert verdict.efficiency_text(0.75, 0.9) == "0.75"
    v = judge(pts([100, 179.78, 360, 720]))
    assert "E(2) = 0.899 < 0.90" in " ".join(v.statements)


def test_compute_overrun_caveat():
    points = pts([100, 170, 340, 560])
    for p in points:
        p.compute_nominal_s = 0.010
        p.compute_s = 0.0102
    points[3].compute_s = 0.0132
    v = judge(points)
    assert any("ran long at client counts 8 (13.2 ms) against 10.0 ms" in c for c in v.caveats)


# --- the verdict respects the noise -----------------------------------------------------

COUNTS5 = (1, 2, 4, 8, 16)


def with_repeats(points, lo, hi):
    """Give each point the range of its repeats' aggregates (lo/hi as shares of the mean)."""
    for p, a, b in zip(points, lo, hi, strict=True):
        p.agg_min, p.agg_max, p.repeats = a * p.aggregate_mib_s, b * p.aggregate_mib_s, 3
    return points


def test_one_noisy_point_is_no_knee_with_one_repeat():
    v = judge(pts([100, 200, 350, 800, 1600], counts=COUNTS5))
    assert v.knee is None and v.shape == "linear" and v.linear_up_to == 16
    text = " ".join(v.statements)
    assert "knee at 4" not in text and "knee is at 4" not in text
    assert "cannot tell with one repeat" in text and "E(4) = 0.88 < 0.90" in text
    assert "E(16) = 1.00" in text
    assert "each client keeps its bandwidth" in text


def test_a_dip_within_the_spread_of_repeats_is_no_knee():
    points = with_repeats(pts([100, 200, 350, 800, 1600], counts=COUNTS5),
                          [0.97, 0.95, 0.90, 0.96, 0.97], [1.03, 1.05, 1.10, 1.04, 1.03])
    v = judge(points)
    assert v.knee is None and v.shape == "linear"
    assert "within the spread of its repeats" in " ".join(v.statements)
    assert "cannot tell with one repeat" not in " ".join(v.statements)


def test_a_drop_outside_the_spread_of_repeats_is_a_knee():
    points = with_repeats(pts([100, 200, 300, 320, 330], counts=COUNTS5),
                          [0.98] * 5, [1.02] * 5)
    v = judge(points)
    assert (v.knee, v.linear_up_to, v.shape) == (4, 2, "saturated")
    assert "outside the spread of" in " ".join(v.statements)


def test_a_single_last_point_below_cannot_tell_with_one_repeat():
    v = judge(pts([100, 200, 400, 700]))
    assert v.knee == 8
    assert "cannot tell with one repeat" in " ".join(v.statements)
    # two points below in a row are more than one run deciding
    v = judge(pts([100, 190, 300, 480]))
    assert v.knee == 4 and "cannot tell" not in " ".join(v.statements)


def test_a_fast_baseline_gets_its_caveat():
    # the one-client point ran 15 % fast; every later point is linear among themselves
    v = judge(pts([115, 200, 400, 800]))
    assert v.efficiency[8] == pytest.approx(0.87, abs=0.005)
    caveat = " ".join(v.caveats)
    assert "baseline" in caveat and "1 client" in caveat
    assert "against 2 clients" in caveat and "E(8) = 1.00" in caveat
    assert "cannot tell with one repeat" in caveat
    # a baseline in line with the rest gets no such caveat
    assert not any("baseline" in c for c in judge(pts([100, 200, 400, 800])).caveats)


def test_demand_bound_points_are_stated_apart_and_never_scale_linearly():
    v = judge(pts([100, 200, 400, 800], au=[0.99] * 4), accelerator="a100")
    assert v.shape == "demand_bound" and v.linear_up_to is None
    text = " ".join(v.statements)
    assert "scales linearly" not in text
    assert "not limited by storage up to 8 clients" in text
    # demand-bound up to 4, then storage-bound and below linear at 8 and 16
    v = judge(pts([100, 200, 400, 500, 520], counts=COUNTS5, au=[.99, .98, .95, .6, .3]))
    text = " ".join(v.statements)
    assert "not limited by storage up to 4 clients" in text
    assert "scales linearly" not in text
    assert v.knee == 8 and v.linear_up_to is None


def test_an_au_failure_that_later_counts_recover_from_cannot_tell_with_one_repeat():
    v = judge(pts([100, 200, 390, 500], au=[0.99, 0.85, 0.93, 0.95]))
    assert v.au["max_clients_at_goal"] == 1  # the claim still holds only up to 1
    assert ("cannot tell with one repeat whether 2 is noise: the goal holds again at 4, 8"
            in " ".join(v.statements))
    # a failure that stays failed needs no such remark
    v = judge(pts([100, 200, 390, 500], au=[0.99, 0.97, 0.93, 0.71]))
    assert "is noise" not in v.statements[-1]


def test_au_not_measurable_at_a_count_ends_the_judged_range():
    # 8 clients share too few samples for a measured step: that point has no AU at all
    points = pts([100, 200, 400, 800], au=[0.95, 0.95, 0.93, None])
    v = judge(points)
    assert v.au["max_clients_at_goal"] == 4 and v.au["first_fail"] is None
    assert v.au["not_measured_from"] == 8 and v.au["all_pass"] is False
    (sentence,) = [s for s in v.statements if s.startswith("this storage keeps")]
    assert "up to 4" in sentence and "8 clients AU could not be measured" in sentence


def test_au_capacity_decides_on_the_runs_own_rule():
    """MLPerf's rule (the default) passes a count on the mean AU; a sweep that judged the same
    runs on the lowest client's AU would call a count failed that `aiio run` calls passed."""
    points = pts([100, 200, 390, 500], au=[0.95, 0.88, 0.85, 0.60], goal=0.9)
    for p, mean, passed in zip(points, (0.97, 0.93, 0.91, 0.70), (True, True, True, False),
                               strict=True):
        p.au_mean, p.au_pass, p.au_rule = mean, passed, "mean"
    v = judge(points, accelerator="h100")
    assert v.au["max_clients_at_goal"] == 4 and v.au["first_fail"]["clients"] == 8
    text = v.statements[-1]
    assert "up to 4 h100 accelerators at 90% AU" in text and "mean rule" in text, text
    assert "mean AU at 4: 91.0%" in text and "lowest client 85.0%" in text, text
    for p in points:
        p.au_rule = "min"
    v = judge(points, accelerator="h100")
    assert v.au["max_clients_at_goal"] == 1 and "min rule" in v.statements[-1]


def test_demand_bound_is_decided_on_the_runs_own_rule():
    """A count whose runs passed the AU goal by their own rule (the mean, MLPerf's) was paced
    by compute: the verdict does not call it linear scaling of the storage while its own AU
    sentence says the storage kept those accelerators at the goal. Seen on a lifecycle sweep
    of a busy machine: mean AU 92.5 % at 2 clients, lowest client 89.3 %, and the verdict
    read "scales linearly up to 2" from a compute-paced aggregate."""
    points = pts([81.5, 167.9], counts=(1, 2), au=[0.99, 0.893], goal=0.9)
    for p, mean in zip(points, (0.99, 0.925), strict=True):
        p.au_mean, p.au_pass, p.au_rule = mean, True, "mean"
    v = judge(points)
    assert v.shape == "demand_bound" and v.demand_bound_up_to == 2
    assert "scales linearly" not in " ".join(v.statements)
    assert "keeps at least 2" in v.statements[-1]
    # under the min rule the lowest client decides, and 2 clients did not hold
    for p in points:
        p.au_rule = "min"
    v = judge(points)
    assert v.demand_bound_up_to == 1 and v.shape != "demand_bound"
