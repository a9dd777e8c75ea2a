"""`aiio scale --phase kvcache --rates 2,4`: a table over the open loop's offered request rate
(requests/s per client, as `kvcache.request_rate`) at one client count, each row a real run,
and the highest rate that was steady and within a latency goal. The disk of known speed is
tests/test_kvcache_known_speed.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiio.results.history import History, differences
from aiio.sweep.rates_sweep import statement, text_table

from .conftest import call_cli, ctrl_c_after_runs, flat, widest
from .test_kvcache import TINY

SETS = tuple(x for k, v in TINY.items() if k != "kvcache__duration"
             for x in ("--set", f"{k.replace('__', '.')}={v}"))
OPEN = ("--set", "kvcache.load=open")
GOALS = ("--set", "kvcache.goals.lenient=100", "--set", "kvcache.goals.never=1e-6")


def sweep(target: Path, results: Path, *args: str) -> dict:
    got = call_cli("scale", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   "--clients", "2", "--duration", "1s", "--json", *GOALS, *SETS, *args)
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def test_one_row_per_rate_offered_against_served_with_latency_queue_goals_and_verdict(
        target: Path, results: Path) -> None:
    out = sweep(target, results, *OPEN, "--rates", "5,10", "--goal", "lenient")
    assert out["kind"] == "rates_table" and out["clients"] == 2 and out["users"] == 3
    assert out["rates"] == [5.0, 10.0]
    rows = out["rows"]
    assert [r["rate"] for r in rows] == [5.0, 10.0]
    for r in rows:
        assert r["status"] == "ok"
        # offered: the rate given, per client, over both clients; served: the requests done
        # within the duration, over it (the run's own requests_per_s)
        assert r["offered_per_s"] == 2 * r["rate"]
        assert r["served_per_s"] == r["runs"][0]["requests_per_s"] >= 0
        lat, queue = r["latency_ms"], r["queue_ms"]
        assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"]
        assert 0 <= queue["p50"] <= queue["p95"] <= queue["p99"] <= lat["p99"]
        # the share within every goal of the workload, the one judged among them
        assert set(r["shares"]) == {"interactive", "responsive", "batch", "lenient", "never"}
        assert r["shares"]["lenient"] == 1.0 and r["shares"]["never"] == 0.0
        assert r["share_within"] == 1.0 and r["within_goal"]
        assert r["verdict"] in ("steady", "not judged", "overloaded")
    steady = [r["rate"] for r in rows if r["verdict"] == "steady"]
    assert out["highest_rate_steady_at_goal"] == (max(steady) if steady else None)
    # each row's run is saved as any run, at its own rate, and the table's result beside them
    runs = [json.loads(p.read_text()) for p in results.glob("*-kvcache-*/result.json")]
    assert sorted(r["workload"]["kvcache"]["request_rate"] for r in runs) == [5.0, 10.0]
    # arrived: what the Poisson draws really offered, every request that arrived within the
    # duration (served, or still waiting at its end) over it; served is done within it
    kv = {r["workload"]["kvcache"]["request_rate"]: r["aggregate"]["kvcache"] for r in runs}
    for r in rows:
        k = kv[r["rate"]]
        assert r["arrived_per_s"] == \
            (k["requests"] + k["verdict"]["waiting_at_end"]) / k["rate_window_s"]
        assert 0 < r["served_per_s"] <= r["arrived_per_s"]
    saved = json.loads(next(results.glob("*-rates-kvcache/result.json")).read_text())
    assert saved["rows"] == rows


def test_the_runs_at_each_rate_are_a_history_series_of_their_own(target: Path,
                                                                  results: Path) -> None:
    sweep(target, results, *OPEN, "--rates", "5,10", "--goal", "lenient")
    with History(results / "history.sqlite") as h:
        recs = [r for r in h.records() if r.kind == "run"]
    assert len(recs) == 2 and len({r.key for r in recs}) == 2
    said = sorted(differences([r.settings for r in recs]).values())
    assert said == ["kvcache.request_rate=10.0", "kvcache.request_rate=5.0"]


def test_the_console_prints_a_row_a_rate_in_80_columns(target: Path, results: Path) -> None:
    got = call_cli("scale", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   "--clients", "2", "--duration", "1s", *GOALS, *SETS, *OPEN,
                   "--rates", "5,10", "--goal", "never")
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].split() == ["rate", "arrived", "served", "p50", "p95", "p99", "queue95",
                                "verdict", "within", "%"]
    assert [line.split()[0] for line in lines[1:3]] == ["5", "10"]
    # the shares within interactive/responsive/batch/lenient/never, the last two 100 and 0
    assert all(line.split()[-1].endswith("/100/0") for line in lines[1:3]), lines
    assert "no offered rate was steady within the never goal" in flat(got.stdout)
    assert widest(got.stdout) <= 80, got.stdout


def test_no_history_records_nothing(target: Path, results: Path) -> None:
    sweep(target, results, *OPEN, "--rates", "5,10", "--no-history")
    assert not (results / "history.sqlite").exists()


@pytest.mark.parametrize(("args", "said"), [
    ((*OPEN, "--rates", "0,2"), "--rates 0,2: rates must be above 0 (got 0)"),
    ((*OPEN, "--rates", "-1,2"), "--rates -1,2: rates must be above 0 (got -1)"),
    ((*OPEN, "--rates", "2,1"), "--rates 2,1: rates must increase"),
    ((*OPEN, "--rates", "2,2"), "2 is repeated"),
    ((*OPEN, "--rates", "4"), "--rates 4: a sweep needs at least two rates"),
    ((*OPEN, "--rates", "1,x"), "--rates '1,x': every entry must be a number"),
    ((*OPEN, "--rates", "1,inf"), "--rates '1,inf': every entry must be a number"),
    ((*OPEN, "--rates", "1,"), "give a comma-separated list"),
    # arrivals a client could not keep: refused before the first row runs, not at the last
    ((*OPEN, "--rates", "1,1e9"), "kvcache.request_rate 1e+09/s over kvcache.duration"),
    # so few arrivals a client would likely serve none and its row measure nothing
    ((*OPEN, "--rates", "0.01,1"), "--rates 0.01,1: at 0.01 requests/s a client expects 0.3 "
                                   "in the 30 s duration"),
    (("--rates", "1,2"), "--rates sets the open loop's rate: this workload's kvcache.load is "
                         "closed; add --set kvcache.load=open"),
    ((*OPEN, "--rates", "1,2", "--users", "1,2"), "--rates is a table over the rate"),
    ((*OPEN, "--rates", "1,2", "--find-max"), "--rates is a table over the rate"),
    ((*OPEN, "--rates", "1,2", "--max-users", "4"), "--rates is a table over the rate"),
    ((*OPEN, "--rates", "1,2", "--max-clients", "4"), "--rates is a table over the rate"),
    ((*OPEN, "--rates", "1,2", "--goal-ms", "5"), "--goal-ms is a p99 query latency"),
    ((*OPEN, "--rates", "1,2", "--clients", "1,2"), "sweeps the rate at one client count"),
    ((*OPEN, "--rates", "1,2", "--goal", "fast"),
     "--goal fast: not one of the workload's goals"),
])
def test_a_rate_table_refuses_what_it_cannot_do_in_one_line(args: tuple, said: str,
                                                            target: Path,
                                                            results: Path) -> None:
    got = call_cli("scale", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   *args)
    assert got.returncode == 2 and said in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1
    assert not results.exists()


def test_a_phase_without_an_open_loop_refuses_rates(target: Path, results: Path) -> None:
    got = call_cli("scale", "-p", "train", "-t", str(target), "--results", str(results),
                   "--rates", "1,2")
    assert got.returncode == 2, got.stderr
    assert "--rates applies to a phase with an open loop (kvcache), not to --phase train" \
        in got.stderr
    assert not results.exists()


def test_the_help_says_what_a_rate_is() -> None:
    got = call_cli("scale", "--help")
    text = " ".join(got.stdout.split())
    assert "--rates" in text and "requests/s offered per client" in text


def row(rate: float, verdict: str, within: bool, p95: float = 10.0,
        served: float | None = None) -> dict:
    return {"rate": rate, "offered_per_s": 2 * rate, "arrived_per_s": 2 * rate + 0.5,
            "served_per_s": 2 * rate if served is None else served,
            "verdict": verdict, "within_goal": within,
            "latency_ms": {"p50": 5.0, "p95": p95, "p99": p95}}


def test_the_statement_names_the_highest_steady_rate_within_the_goal_and_the_first_beyond():
    rows = [row(1, "steady", True), row(2, "steady", True, 40.0),
            row(8, "overloaded", False, 900.0, served=5.0), row(16, "not judged", True)]
    said = statement("interactive", 50.0, 2, rows)
    assert said.startswith("the interactive goal (P95 within 50 ms) held, steady, up to 2 "
                           "requests/s per client at 2 client(s) (4 offered, 4.5 arrived, 4 "
                           "served a second in all; P95 40.0 ms)")
    assert ("at 8/s it did not (16 offered, 16.5 arrived, 5 served; P95 900.0 ms, "
            "overloaded)") in said


def test_no_rate_steady_within_the_goal_is_said_so():
    said = statement("batch", 1000.0, 1, [row(0.5, "not judged", True),
                                          row(4, "overloaded", False, 2500.0, served=2.5)])
    assert said.startswith("no offered rate was steady within the batch goal (P95 within "
                           "1000 ms) at 1 client(s)")
    assert ("at 0.5/s it did not (1 offered, 1.5 arrived, 1 served; P95 10.0 ms, not "
            "judged)") in said


def test_the_table_fits_80_columns_at_a_thousand_requests_a_second_and_five_goals_met():
    # 64 clients at 20/s serve over 1,000 requests/s: the served column read 1.28e+03, eight
    # characters in a column of six, and five goals all met ran the line past 80
    goals = ("interactive", "responsive", "batch", "lenient", "never")
    r = {**row(20, "not judged", True, 12345.6, served=1280.4), "offered_per_s": 1280.0,
         "arrived_per_s": 1291.2,
         "queue_ms": {"p95": 12345.6}, "shares": dict.fromkeys(goals, 1.0)}
    r["latency_ms"]["p50"] = 12345.6
    lines = text_table({"rows": [r, {**r, "rate": 1e4, "offered_per_s": 640000.0,
                                     "arrived_per_s": 640123.0, "served_per_s": 2.5}],
                       "clients": 64})
    assert max(len(line) for line in lines) <= 80, lines
    assert lines[1].split()[:3] == ["20", "1291", "1280"]
    assert lines[2].split()[:3] == ["10000", "640k", "2.5"]
    # a rate past what any storage serves still fits its column of 5 (400000 took 6)
    far = text_table({"rows": [{**r, "rate": 4e5, "offered_per_s": 8e5, "arrived_per_s": 799668.0,
                                "served_per_s": 82.0}], "clients": 2})
    assert far[1].split()[:3] == ["400k", "800k", "82"]
    assert far[1].index("400k") == 1 and max(len(line) for line in far) <= 80, far


def test_ctrl_c_between_rows_saves_the_rows_done_and_records_their_runs(target: Path,
                                                                        results: Path) -> None:
    # A table interrupted at its second rate lost its first row: no table was saved and the
    # finished run was not in the history.
    # the first rate's run done and the second's begun
    code, out, err = ctrl_c_after_runs(
        ("scale", "-p", "kvcache", "-t", str(target), "--results", str(results), "--clients",
         "2", "--duration", "2s", *GOALS, *SETS, *OPEN, "--rates", "5,10,20", "--goal",
         "lenient"), results, target=target)
    assert code == 130, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    (folder,) = results.glob("*-rates-kvcache")
    assert str(folder) in err
    table = json.loads((folder / "result.json").read_text())
    assert table["status"] == "interrupted" and [r["rate"] for r in table["rows"]] == [5.0]
    assert out.splitlines()[0].split()[:2] == ["rate", "arrived"]  # the rows done, shown
    assert out.splitlines()[1].split()[0] == "5"
    with History(results / "history.sqlite") as h:
        runs = [r for r in h.records() if r.kind == "run"]
    # the first rate's, and the run the Ctrl-C stopped, recorded as `aiio run` records one:
    # a table has no record of its own, and an interrupted record never enters a baseline
    assert [r.status for r in runs] == ["ok", "interrupted"]
    left = {p.relative_to(target).parts[:2] for p in target.rglob("*") if p.is_file()}
    assert left <= {("aiio", ".aiio-owned"), ("aiio", ".runs.lock")}, left
