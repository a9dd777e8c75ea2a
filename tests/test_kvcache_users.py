"""`aiio scale --phase kvcache --users 1,2,4`: a table over users per client at one client
count, each row a real run, and the most users that were steady and within a latency goal."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from aiio.sweep import users_sweep as us
from aiio.sweep.users_sweep import statement

from .conftest import call_cli, ctrl_c_after_runs, tiny_workload
from .test_kvcache import TINY

SETS = tuple(x for k, v in TINY.items() if k != "kvcache__duration"
             for x in ("--set", f"{k.replace('__', '.')}={v}"))


def sweep(target: Path, results: Path, *args: str, duration: str = "1s") -> dict:
    """The table's JSON; each run lasts `duration` (shorter where no figure of a run's own
    is checked, only how the table is made of them)."""
    got = call_cli("scale", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   "--clients", "2", "--duration", duration, "--json",
                   "--set", "kvcache.goals.lenient=100", "--set", "kvcache.goals.never=1e-6",
                   *SETS, *args)
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def test_one_row_per_user_count_with_its_bandwidth_latency_goal_and_verdict(
        target: Path, results: Path) -> None:
    out = sweep(target, results, "--users", "1,2,4", "--goal", "lenient")
    rows = out["rows"]
    assert [r["users"] for r in rows] == [1, 2, 4] and out["clients"] == 2
    for r in rows:
        assert r["status"] == "ok"
        assert r["read_mib_s"] > 0 and r["write_mib_s"] > 0
        lat = r["latency_ms"]
        assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"]
        assert r["goal_ms"] == 100_000 and r["share_within"] == 1.0 and r["within_goal"]
        assert r["verdict"] in ("steady", "not judged", "overloaded")
    steady = [r["users"] for r in rows if r["verdict"] == "steady"]
    assert out["most_users_steady_at_goal"] == (max(steady) if steady else None)
    # each row's run is saved as any run, and the sweep's own result beside them
    assert len(list(results.glob("*-kvcache-*/result.json"))) == 3
    saved = json.loads(next(results.glob("*-users-kvcache/result.json")).read_text())
    assert saved["rows"] == rows


def test_a_goal_no_request_meets_holds_at_no_count(target: Path, results: Path) -> None:
    """With --repeat 2 each row is the mean of its two runs, each kept in the row."""
    out = sweep(target, results, "--users", "1,2", "--goal", "never", "--repeat", "2",
                duration="300ms")
    for r in out["rows"]:
        assert r["repeats"] == 2 and len(r["runs"]) == 2
        assert r["read_mib_s"] == sum(run["read_mib_s"] for run in r["runs"]) / 2
    assert len(list(results.glob("*-kvcache-*/result.json"))) == 4
    assert [r["share_within"] for r in out["rows"]] == [0.0, 0.0]
    assert not any(r["within_goal"] for r in out["rows"])
    assert out["most_users_steady_at_goal"] is None
    assert "no user count was steady within the never goal" in out["statement"]


def row(users: int, verdict: str, within: bool, p95: float = 10.0) -> dict:
    return {"users": users, "verdict": verdict, "within_goal": within,
            "latency_ms": {"p50": 5.0, "p95": p95, "p99": p95}}


def test_the_statement_names_the_most_steady_users_within_the_goal_and_the_first_beyond() -> None:
    rows = [row(8, "steady", True), row(16, "steady", True, 40.0),
            row(32, "overloaded", False, 900.0), row(64, "not judged", True)]
    said = statement("interactive", 50.0, 2, rows)
    assert said.startswith("the interactive goal (P95 within 50 ms) held, steady, up to 16 "
                           "users per client at 2 client(s) (P95 40.0 ms)")
    assert "with 32 it did not (P95 900.0 ms, overloaded)" in said


def test_a_smaller_count_that_missed_the_goal_is_named_beside_the_most() -> None:
    rows = [row(1, "steady", False, 51.6), row(4, "steady", True, 41.2),
            row(16, "steady", False, 308.3)]
    said = statement("interactive", 50.0, 2, rows)
    assert "up to 4 users per client" in said
    assert said.endswith("with 16 it did not (P95 308.3 ms, steady); "
                         "nor with 1 (P95 51.6 ms, steady)")


def test_a_count_not_judged_is_not_called_steady() -> None:
    said = statement("interactive", 50.0, 1, [row(1, "not judged", True)])
    assert said.startswith("no user count was steady within the interactive goal")
    assert "with 1 it did not (P95 10.0 ms, not judged)" in said


@pytest.mark.parametrize("flags", [("--users", "1,2"), ("--find-max", "--max-users", "2")])
def test_every_run_over_users_is_on_the_engine_asked_for(target: Path, results: Path,
                                                          flags: tuple) -> None:
    sweep(target, results, *flags, "--goal", "lenient", "--engine",
          "external:tests.sleepy_engine", "--no-history", duration="300ms")
    runs = [json.loads(p.read_text()) for p in results.glob("*-kvcache-*/result.json")]
    assert runs and all(r["engine"] == "sleepy" for r in runs)
    # --no-history records none of the runs (it was refused for a search)
    assert not (results / "history.sqlite").exists()


# the search's second run comes only if its first probe held: apart from the busy pass
@pytest.mark.parametrize("flags", [("--users", "1,2"), pytest.param(
    ("--find-max", "--max-users", "2"), marks=pytest.mark.serial)])
def test_the_runs_at_each_user_count_are_a_history_series_of_their_own(
        target: Path, results: Path, flags: tuple) -> None:
    """Each row's or probe's run is recorded as any run (its users in its settings key, so
    never a baseline for another count's). A search's probes went unrecorded."""
    from aiio.results.history import History, differences

    sweep(target, results, *flags, "--goal", "lenient", duration="0.5s")
    with History(results / "history.sqlite") as h:
        recs = [r for r in h.records() if r.kind == "run"]
    assert len(recs) == 2 and len({r.key for r in recs}) == 2
    assert all(r.phase == "kvcache" and r.figures.get("tokens_per_s") for r in recs)
    said = sorted(differences([r.settings for r in recs]).values())
    assert said == ["kvcache.users=1", "kvcache.users=2"], said
    # --no-history: test_every_run_over_users_is_on_the_engine_asked_for


def test_ctrl_c_within_the_first_counts_repeats_records_the_runs_done(
        target: Path, results: Path) -> None:
    """A Ctrl-C in the first count's second repeat leaves no row to table, but its first
    run finished and was saved: it went unrecorded in the history. The run it interrupted
    is recorded as `aiio run` records one, interrupted."""
    code, _, err = ctrl_c_after_runs(
        ("scale", "-p", "kvcache", "-t", str(target), "--results", str(results), "--clients",
         "2", "--duration", "2s", *SETS, "--users", "1,2", "--repeat", "2"), results,
        target=target)
    assert code == 130, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    from aiio.results.history import History
    with History(results / "history.sqlite") as h:
        recs = h.records()
    assert [r.status for r in recs] == ["ok", "interrupted"]
    assert recs[0].figures["aggregate_mib_s"] > 0


def test_a_table_killed_outright_keeps_the_rows_done(target: Path, results: Path) -> None:
    """SIGKILL (the OOM killer, a batch system's limit, MPI's launcher a moment after its
    SIGTERM) in the second count's run: the table was saved only at its end, so the row
    done was lost with it. It is saved after every row, and read back as interrupted."""
    from aiio.results.result import load
    code, _, _ = ctrl_c_after_runs(
        ("scale", "-p", "kvcache", "-t", str(target), "--results", str(results), "--clients",
         "2", "--duration", "2s", "--set", "kvcache.goals.lenient=100", *SETS, "--users",
         "1,2,4", "--goal", "lenient"), results, target=target, sig=signal.SIGKILL)
    assert code == -signal.SIGKILL
    (folder,) = results.glob("*-users-kvcache")
    table = load(folder)
    assert table.status == "interrupted" and "process gone" in table.doc["error"]
    assert [r["users"] for r in table.doc["rows"]] == [1]
    shown = call_cli("report", str(folder))  # its page, drawn again from the rows done
    assert shown.returncode == 0, shown.stderr
    assert "process gone" in (folder / "report.html").read_text()


def test_ctrl_c_between_rows_saves_the_rows_done(target: Path, results: Path) -> None:
    # A table interrupted at its second count lost its first row: no table was saved.
    # the first count's run done and the second's begun
    code, out, err = ctrl_c_after_runs(
        ("scale", "-p", "kvcache", "-t", str(target), "--results", str(results), "--clients",
         "2", "--duration", "2s", "--set", "kvcache.goals.lenient=100", *SETS, "--users",
         "1,2,4", "--goal", "lenient"), results, target=target)
    assert code == 130, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "the table stopped after 1 of 3 user counts" in err
    (folder,) = results.glob("*-users-kvcache")
    assert str(folder) in err
    from aiio.results.history import History
    with History(results / "history.sqlite") as h:  # the row done and the run stopped
        recs = h.records()
    assert [r.status for r in recs] == ["ok", "interrupted"]
    assert recs[0].figures["aggregate_mib_s"] > 0
    table = json.loads((folder / "result.json").read_text())
    assert table["status"] == "interrupted" and [r["users"] for r in table["rows"]] == [1]
    assert " ".join(out.split()).count(" ".join(table["statement"].split())) == 1
    assert out.splitlines()[0].split()[:2] == ["users", "read"]  # the rows done, shown
    assert out.splitlines()[1].split()[0] == "1"
    page = (folder / "report.html").read_text()  # the page of the rows done, saying why
    assert f"report: {folder / 'report.html'}" in out and "it was interrupted" in page
    left = {p.relative_to(target).parts[:2] for p in target.rglob("*") if p.is_file()}
    assert left <= {("aiio", ".aiio-owned"), ("aiio", ".runs.lock")}, left


def test_a_ctrl_c_outside_a_run_says_why_the_table_stopped(target: Path,
                                                            results: Path) -> None:
    # A Ctrl-C while a run's report was written (the run saved, its own stop handling over)
    # reached the table as a bare KeyboardInterrupt, whose text is empty: the table's error
    # was "" and the console said "aiio: ; the table stopped after 1 of 2 user counts".
    def on_saved(res: dict, folder: Path) -> None:
        if len(list(results.glob("*-kvcache-*/result.json"))) == 2:
            raise KeyboardInterrupt

    w = tiny_workload(**{**TINY, "run__clients": 2})
    req = us.TableRequest("kvcache", w, str(target), [1, 2], "lenient",
                          results_dir=str(results), on_saved=on_saved)
    with pytest.raises(us.TableStopped) as stopped:
        us.users_table(req)
    assert str(stopped.value).startswith("interrupted by the user; the table stopped after "
                                         "1 of 2 user counts"), stopped.value
    assert stopped.value.exit_code == 130
    table = json.loads((stopped.value.folder / "result.json").read_text())
    assert table["status"] == "interrupted" and table["error"] == "interrupted by the user"
