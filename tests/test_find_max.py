"""`aiio scale --find-max`: the search for the largest client count at the AU goal, as pure
functions on a known answer, and on real runs."""

from __future__ import annotations

import math

import pytest

from aiio.results import result
from aiio.sweep import find_max, run

from .conftest import call_cli, tiny_workload


def _probe_with_truth(limit: int, seen: list[int]):
    def probe(n: int) -> str:
        seen.append(n)
        return find_max.HOLDS if n <= limit else find_max.FAILS
    return probe


@pytest.mark.parametrize("limit, upper", [(1, 64), (5, 64), (37, 64), (100, 1024), (63, 64)])
def test_search_finds_the_largest_count_in_about_log2_steps(limit, upper):
    seen: list[int] = []
    good, bad = find_max.search(_probe_with_truth(limit, seen), upper)
    assert (good, bad) == (limit, limit + 1)
    assert len(seen) == len(set(seen))  # never probes a count twice
    assert len(seen) <= 2 * math.ceil(math.log2(upper)) + 1, seen


def test_search_bounds():
    seen: list[int] = []
    assert find_max.search(_probe_with_truth(0, seen), 64) == (None, 1) and seen == [1]
    seen = []
    assert find_max.search(_probe_with_truth(1000, seen), 12) == (12, None)
    assert seen == [1, 2, 4, 8, 12]


def test_a_straddling_probe_is_not_held():
    assert find_max.decide([True, True, True]) == find_max.HOLDS
    assert find_max.decide([False, False]) == find_max.FAILS
    assert find_max.decide([True, False, True]) == find_max.STRADDLES
    answers = {1: "holds", 2: "holds", 4: "straddles", 3: "holds"}
    assert find_max.search(answers.__getitem__, 8) == (3, 4)


@pytest.mark.long
def test_find_max_on_real_runs_with_repeats(ram_target, results):
    """Clients paced by 100 ms of compute per 64 KiB batch, from RAM: the goal holds at every
    count the search may try, so it doubles up to the bound and says so, with each probe's
    spread over its repeats (AU goal 0.5: a busy shared machine still keeps it)."""
    w = tiny_workload(train__compute_time={"h100": 0.1}, train__batch_size=1,
                      train__read_threads=1, dataset__sample_size_stdev=0,
                      train__transfer_size="64KiB", train__au_goal=0.5)
    req = run.SweepRequest("train", w, str(ram_target), [1, 3], duration_s=2.0, repeat=2,
                           results_dir=str(results), charts=False, find_max=True)
    out, folder = run.sweep(req, driver=find_max.driver)
    s = out["search"]
    assert [p["clients"] for p in s["probes"]] == [1, 2, 3]
    assert s["max_clients_at_goal"] == 3 and s["first_not_held"] is None
    for p in s["probes"]:
        assert p["decision"] == "holds" and p["au_min"]["n"] == 2
    assert "holds up to 3 clients" in s["statement"] and "the largest allowed" in s["statement"]
    assert "over 2 repeats" in s["statement"]
    saved = result.load(folder)
    assert saved["search"]["max_clients_at_goal"] == 3
    assert saved.notices == ()  # its counts (2 probed, not asked for) are its points' own
    assert out["status"] == "ok" and len(out["points"]) == 6


def test_find_max_through_the_cli_and_its_bad_input(tmp_path):
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    for args, words in ((("--phase", "load", "--max-clients", "4"), "only the train phase"),
                        ((), "needs --max-clients"),
                        (("--max-clients", "4", "--clients", "1,2"), "not both")):
        proc = call_cli("scale", "--find-max", "--target", str(target), "--results",
                        str(results), *args)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not results.exists()


def test_find_max_stops_where_au_cannot_be_measured(target, results):
    """8 one-sample files, batch 2: 4 clients get one step per epoch, all warm-up; the search
    says AU could not be measured there instead of calling it a failure (or crashing)."""
    w = tiny_workload(dataset__num_files=8, train__compute_time={"h100": 0.05},
                      train__au_goal=0.5, dataset__sample_size_stdev=0, train__epochs=1)
    # 1 s points (the shortest a point may be): every step is an epoch's first at any length.
    # The null method: the search must reach 4 clients, and with real reads a loaded machine
    # (load 300 to 600) once held AU under the goal at 1 client already.
    req = run.SweepRequest("train", w, str(target), [1, 4], repeat=1, duration_s=1.0,
                           results_dir=str(results), charts=False, find_max=True,
                           method="null")
    out, _ = run.sweep(req, driver=find_max.driver)
    s = out["search"]
    by_n = {p["clients"]: p for p in s["probes"]}
    assert [p["clients"] for p in s["probes"]][:3] == [1, 2, 4]
    assert by_n[4]["decision"] == "not measurable" and s["first_not_held"] == 4
    assert "with 4 clients AU could not be measured" in s["statement"]
    assert "samples per client" in s["statement"]
    assert out["status"] == "ok"


def _spread(value: float) -> dict:
    return {"n": 1, "min": value, "max": value, "mean": value}


@pytest.mark.parametrize("rule, quoted, other", [("mean", "mean AU 95.0%", "80.0%"),
                                                  ("min", "lowest client AU 80.0%", "95.0%")])
def test_the_statement_quotes_the_figure_its_rule_decided_on(rule, quoted, other):
    """With the mean rule a probe holds on the mean AU (95 % against 90 %) while its lowest
    client is at 80 %: quoting the lowest client beside "holds" contradicts the decision."""
    probe = {"clients": 1, "decision": find_max.HOLDS, "au_min": _spread(0.80),
             "au_mean": _spread(0.95), "goal": 0.9, "au_rule": rule}
    found = {"upper": 1, "repeats": 1, "probes": [probe]}
    text = find_max.statement(found, 1, None)
    assert quoted in text and f"{rule} rule" in text and other not in text, text


def test_one_probe_is_one_count_probed():
    # a goal no count meets stops at the first probe: "1 counts probed"
    probe = {"clients": 1, "decision": find_max.FAILS, "au_min": _spread(0.99),
             "au_mean": _spread(0.99), "goal": 1.0, "au_rule": "mean"}
    text = find_max.statement({"upper": 4, "repeats": 1, "probes": [probe]}, None, 1)
    assert "1 count probed" in text and "1 counts" not in text, text
