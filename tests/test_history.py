"""The results history: a real SQLite file written through the history API, regressions read
back from it, two processes writing at once, and damaged files refused and left untouched."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aiio.results.history import (
    SCHEMA_VERSION,
    History,
    HistoryError,
    Record,
    regressions,
    with_regressions,
)

from .conftest import REPO, call_cli, flat


def _check(value: float, passed: bool = True, target: str = "/mnt/a", ts: float | None = None,
           p99: float | None = None) -> Record:
    figures = {"aggregate_mib_s": value, "au_min": 0.95, "cv": 0.05}
    required = {"aggregate_mib_s": 50.0}
    if p99 is not None:
        figures["p99_ms"], required["p99_ms"] = p99, 10.0
    rec = Record(kind="check", name="train-8", target=target,
                 status="pass" if passed else "fail", passed=passed, figures=figures,
                 required=required, phase="train", workload="demo", clients="8", spec="nightly")
    if ts is not None:
        rec.ts = ts
    return rec


def _fill(path: Path, values: list[tuple[float, bool]], **kw) -> None:
    with History(path) as h:
        for i, (value, passed) in enumerate(values):
            h.add(_check(value, passed, ts=1_000_000.0 + i, **kw))


def test_records_round_trip_in_wal_mode(tmp_path):
    path = tmp_path / "h.sqlite"
    with History(path) as h:
        rid = h.add(_check(123.5, p99=2.5))
        (rec,) = h.records()
    assert rec.id == rid and rec.kind == "check" and rec.name == "train-8"
    assert rec.figures == {"aggregate_mib_s": 123.5, "au_min": 0.95, "cv": 0.05, "p99_ms": 2.5}
    assert rec.required == {"aggregate_mib_s": 50.0, "p99_ms": 10.0}
    assert rec.host and rec.version and rec.passed
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_regression_flagged_while_threshold_still_passes(tmp_path):
    path = tmp_path / "h.sqlite"
    # a failed night at 10 MiB/s must not drag the baseline down: only passing runs count
    _fill(path, [(100, True), (104, True), (10, False), (96, True), (101, True), (99, True),
                 (85, True), (95, True)])
    with History(path) as h:
        judged = with_regressions(h.records(), fraction=0.10, runs=5)
    flags = [[r.figure for r in regs] for _, regs in judged]
    # 85 is 15 % below the median (100) of the last five passing records, yet above 50; the
    # failed night has no verdict (two records are no baseline) and stays out of the baselines
    assert flags == [[], [], [], [], [], [], ["aggregate_mib_s"], []]
    reg = judged[6][1][0]
    assert reg.baseline == 100 and reg.runs == 5
    assert reg.change == pytest.approx(-0.15)
    assert judged[6][0].status == "pass"
    # 95 is 5 % below the baseline (now median of 104, 96, 101, 99, 85 = 99): not flagged
    assert judged[7][1] == []


def test_baseline_is_the_last_k_passing_of_its_own_series(tmp_path):
    path = tmp_path / "h.sqlite"
    _fill(path, [(200, True), (200, True), (100, True), (100, True), (100, True)])
    _fill(path, [(50, True)] * 3, target="/mnt/other")   # another target: another series
    with History(path) as h:
        prior = h.records(name="train-8", target="/mnt/a")
    new = _check(88.0)
    assert [r.figure for r in regressions(new, prior, 0.10, runs=3)] == ["aggregate_mib_s"]
    # with K = 5 the median is 100 again... and 88 is still 12 % below it
    assert regressions(new, prior, 0.10, runs=5)[0].baseline == 100
    assert regressions(_check(91.0), prior, 0.10, runs=3) == []
    assert regressions(_check(88.0), prior, 0.15, runs=3) == []


def test_no_verdict_without_a_baseline_and_cv_is_not_watched(tmp_path):
    path = tmp_path / "h.sqlite"
    _fill(path, [(100, True), (100, True)])
    with History(path) as h:
        prior = h.records()
    assert regressions(_check(50.0), prior) == []            # two records: no baseline yet
    assert regressions(_check(50.0), prior, runs=2)[0].runs == 2   # unless K itself is 2
    _fill(path, [(100, True)])
    with History(path) as h:
        prior = h.records()
    worse = _check(50.0)
    worse.figures["cv"], worse.required["cv"] = 0.5, 0.9     # cv was 0.05: ten times worse
    assert [r.figure for r in regressions(worse, prior)] == ["aggregate_mib_s"]


def test_lower_is_better_figures_regress_upwards(tmp_path):
    path = tmp_path / "h.sqlite"
    with History(path) as h:
        for i in range(5):
            h.add(_check(100, ts=1e6 + i, p99=2.0))
        prior = h.records()
    regs = regressions(_check(100, p99=2.5), prior)
    assert [(r.figure, round(r.change, 2)) for r in regs] == [("p99_ms", 0.25)]
    assert regressions(_check(100, p99=1.0), prior) == []   # faster is never a regression


def test_history_cli_shows_trend_and_marks_regressions(tmp_path):
    path = tmp_path / "h.sqlite"
    _fill(path, [(100, True), (101, True), (99, True), (80, True)])
    proc = call_cli("history", "--history", str(path))
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "train-8" in line)
    # the last value is marked, next to the median of the three passing records before it
    assert "(4)" in row and "aggregate_mib_s" in row and "!80.0" in row and "100.0" in row
    proc = call_cli("history", "--history", str(path), "--check", "train-8")
    assert proc.returncode == 0, proc.stderr
    assert "!80.0" in proc.stdout and proc.stdout.count("is 20% below its baseline") == 1
    proc = call_cli("history", "--history", str(path), "--check", "train-8", "--json")
    records = json.loads(proc.stdout)
    assert [len(r["regressions"]) for r in records] == [0, 0, 0, 1]
    assert records[-1]["regressions"][0]["baseline"] == 100
    proc = call_cli("history", "--history", str(path), "--check", "nosuch")
    assert proc.returncode == 2 and "known: train-8" in proc.stderr



def _served(phase: str, name: str, figures: dict, ts: float) -> Record:
    rec = Record(kind="run", name=name, target="/mnt/a", status="ok", passed=True,
                 figures=figures, phase=phase, workload="demo", clients="2")
    rec.ts = ts
    return rec


def test_a_search_is_trended_by_its_queries_and_a_kv_cache_watches_its_tokens(tmp_path):
    """A vector search's series is trended by queries/s (MLPerf's published headline), a KV
    cache's by its read bandwidth (MLPerf's KV score); both watch their served rates, so a
    drop of queries or tokens at the same bandwidth is a regression."""
    path = tmp_path / "h.sqlite"
    with History(path) as h:
        for i, (qps, tokens) in enumerate(((500, 900), (510, 910), (490, 890), (300, 500))):
            h.add(_served("vector", "vector-demo-2", {"aggregate_mib_s": 40.0,
                                                      "queries_per_s": qps}, 1e6 + i))
            h.add(_served("kvcache", "kvcache-demo-2", {"aggregate_mib_s": 40.0,
                                                        "tokens_per_s": tokens,
                                                        "storage_p95_ms": 20.0}, 1e6 + i))
    proc = call_cli("history", "--history", str(path))
    assert proc.returncode == 0, proc.stderr
    rows = {name: next(line for line in proc.stdout.splitlines() if name in line)
            for name in ("vector-demo-2", "kvcache-demo-2")}
    assert "queries_per_s" in rows["vector-demo-2"] and "!300.0" in rows["vector-demo-2"]
    assert "aggregate_mib_s" in rows["kvcache-demo-2"], rows
    proc = call_cli("history", "--history", str(path), "--check", "kvcache-demo-2", "--json")
    regs = json.loads(proc.stdout)[-1]["regressions"]
    assert [r["figure"] for r in regs] == ["tokens_per_s"], regs

WRITER = textwrap.dedent("""
    import sys
    from aiio.results.history import History, Record
    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def barrier(stage):   # the test answers once every writer has reached the same stage
        print(stage, flush=True)
        assert sys.stdin.readline() == "go\\n"

    def record(i):
        return Record("run", "run train demo c" + tag, "/t", "ok", True,
                      {"aggregate_mib_s": float(i), "au_min": 0.5, "cv": 0.1})

    barrier("ready")
    with History(path) as h:   # all open the fresh file at once: the schema race is tested too
        barrier("open")        # then all write at once
        h.add(record(0))
        barrier("first")       # and none writes its last before every other wrote its first
        for i in range(1, n):
            h.add(record(i))
""")


def _barrier(procs: list[subprocess.Popen], stage: str) -> None:
    """Let every writer on only when all have said they reached `stage`: a wall-clock start
    instant is no barrier on a loaded machine (one writer wrote all its records before
    another began)."""
    for p in procs:
        line = p.stdout.readline()
        assert line == stage + "\n", (stage, line, "" if line else p.stderr.read())
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()


def test_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "h.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag, "300"], cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for tag in "ABC"]
    try:
        for stage in ("ready", "open", "first"):
            _barrier(procs, stage)
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    with History(path) as h:
        records = h.records()
    assert len(records) == 900 and len({r.id for r in records}) == 900
    for tag in "ABC":
        mine = [r for r in records if r.name.endswith(tag)]
        assert sorted(r.figures["aggregate_mib_s"] for r in mine) == [float(i) for i in range(300)]
        assert all(len(r.figures) == 3 for r in mine)
    # they really wrote at the same time: each one's first record precedes the others' last
    spans = {tag: [r.ts for r in records if r.name.endswith(tag)] for tag in "ABC"}
    assert all(min(spans[a]) < max(spans[b]) for a in "ABC" for b in "ABC" if a != b)


def _damaged_copy(tmp_path: Path, how: str) -> Path:
    good = tmp_path / "good.sqlite"
    _fill(good, [(100.0 + i, True) for i in range(200)])
    path = tmp_path / f"{how}.sqlite"
    shutil.copy(good, path)
    with path.open("r+b") as fh:
        if how == "garbage":
            fh.write(b"this is not a database at all\n" * 50)
        elif how == "pages":
            fh.seek(4096)   # keep the header and the schema page, scramble what follows
            fh.write(bytes(range(256)) * 64)
        elif how == "truncated":
            fh.truncate(path.stat().st_size // 2)
    return path


@pytest.mark.parametrize("how, words", [("garbage", "is not an SQLite database"),
                                        ("pages", "malformed"), ("truncated", "malformed")])
def test_damaged_history_is_reported_and_left_untouched(tmp_path, how, words):
    path = _damaged_copy(tmp_path, how)
    before = path.read_bytes()
    with pytest.raises(HistoryError, match=words):
        History(path)
    proc = call_cli("history", "--history", str(path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "left untouched" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert path.read_bytes() == before


def test_foreign_and_newer_databases_are_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE songs (title TEXT)")
    conn.commit()
    conn.close()
    before = other.read_bytes()
    with pytest.raises(HistoryError, match="not an aiio history"):
        History(other)
    assert other.read_bytes() == before
    newer = tmp_path / "newer.sqlite"
    History(newer).close()
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(HistoryError, match="newer than this aiio"):
        History(newer)


RANDRW = REPO / "tests" / "data" / "results-v2" / "20261201-124012-randrw-demo-c2" / "result.json"


def _randrw_run(loop: str | None, scale: float = 1.0) -> Record:
    """The stored randrw result's history record, its loop as given and its figures scaled."""
    from aiio.results.history import run_record

    res = json.loads(RANDRW.read_text())
    if loop is not None:
        res["aggregate"]["read_loop"] = loop
    rec = run_record(res)
    rec.figures = {name: value * scale for name, value in rec.figures.items()}
    return rec


def test_a_run_timed_by_another_read_loop_is_not_judged_against_the_compiled_loops_baseline():
    # a host where numba stopped importing reads through the Python loop, about 40 % slower on
    # a fast target: that is the client, not a storage regression
    compiled = [_randrw_run("compiled (numba 0.68.1)") for _ in range(5)]
    python = _randrw_run("python (numba is not installed: pip install 'aiio[fast]')", 0.6)
    assert python.series != compiled[0].series
    assert "python loop" in python.name
    assert with_regressions([*compiled, python])[-1][1] == []
    # a record that says nothing of its loop (made before it was recorded) stays in the series
    # of the compiled loop, and a slower compiled run is still a regression
    assert _randrw_run(None).series == compiled[0].series
    slower = _randrw_run("compiled (numba 0.68.1)", 0.6)
    assert [r.figure for r in with_regressions([*compiled, slower])[-1][1]]


def test_a_check_or_sweep_names_its_read_loop_in_its_series_as_a_run_does():
    from aiio.accept.run import Measured, series_of
    from aiio.results.history import sweep_record

    res = json.loads(RANDRW.read_text())
    res["aggregate"]["read_loop"] = "io_uring (depth 16)"
    assert series_of("nightly-randrw", Measured({}, "", [res], [])) == \
        "nightly-randrw [io_uring (depth 16)]"
    sweep = {"kind": "sweep", "phase": "randrw", "status": "ok", "sweep": {"clients": [1, 2]},
             "points": [{"clients": 1, "result": json.loads(RANDRW.read_text())},
                        {"clients": 2, "result": res}]}
    assert series_of("nightly-sweep", Measured({}, "", [], [], sweep=sweep)).endswith(
        " [io_uring (depth 16)]")
    assert sweep_record(sweep).name.endswith("c1,2 [io_uring (depth 16)]")


def test_history_of_a_check_finds_its_records_read_by_another_loop_as_their_own_series(tmp_path):
    # a user asks for the check by its name; the records a Python loop timed are its too,
    # shown apart (their own table, their own baseline), not hidden
    path = tmp_path / "h.sqlite"
    with History(path) as h:
        for i, name in enumerate(["train-8", "train-8 [python loop]", "train-8",
                                  "train-80", "train-8 [python loop]"]):
            rec = _check(100.0 + i, ts=1_000_000.0 + i)
            rec.name = name
            h.add(rec)
    proc = call_cli("history", "--history", str(path), "--check", "train-8", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["name"] for r in json.loads(proc.stdout)] == [
        "train-8", "train-8 [python loop]", "train-8", "train-8 [python loop]"]
    proc = call_cli("history", "--history", str(path), "--check", "train-8")
    assert proc.returncode == 0, proc.stderr
    assert "train-8 on /mnt/a (last 2)" in flat(proc.stdout)
    assert "train-8 [python loop] on /mnt/a (last 2)" in flat(proc.stdout)
    proc = call_cli("history", "--history", str(path), "--check", "train-8 [python loop]",
                    "--json")
    assert [r["name"] for r in json.loads(proc.stdout)] == ["train-8 [python loop]"] * 2


def test_an_mpi_run_whose_hosts_read_through_different_loops_is_not_in_the_compiled_series():
    # hosts of an MPI run may differ: half the clients on one without numba read through the
    # Python loop, and the run's label lists each loop, the compiled one first (sorted)
    from aiio.results.history import loop_variant

    python = "python (numba is not installed: pip install 'aiio[fast]')"
    mixed = f"compiled (numba 0.68.1) on 2 clients; {python} on 2 clients"
    assert _randrw_run(mixed).name == "run randrw demo c2 [mixed loops]"
    assert loop_variant("compiled (numba 0.68.1) on 2 clients; compiled (numba 0.60.0) on "
                        "2 clients") == ""
    assert loop_variant(f"{python} on 1 client; python (--verify checks every read) on "
                        "3 clients") == " [python loop]"


def test_the_compiled_rings_runs_are_one_series_whatever_numba_compiled_them():
    from aiio.results.history import loop_variant

    for label in ("io_uring (depth 16), compiled (numba 0.68.1)",
                  "io_uring (depth 16), compiled (numba 0.70.0)", "io_uring (depth 16)"):
        assert loop_variant(label) == " [io_uring (depth 16)]", label
    assert loop_variant("io_uring (depth 4), compiled (numba 0.68.1)") == " [io_uring (depth 4)]"


def _randrw_sweep(*loops: str | None) -> dict:
    """A sweep of the stored randrw result, one point per loop (None: a point that records
    none), at client counts 1, 2, ... in the order given."""
    points = []
    for n, loop in enumerate(loops, 1):
        res = json.loads(RANDRW.read_text())
        if loop is None:
            res["aggregate"].pop("read_loop", None)
        else:
            res["aggregate"]["read_loop"] = loop
        points.append({"clients": n, "result": res})
    return {"kind": "sweep", "phase": "randrw", "status": "ok",
            "workload": points[0]["result"]["workload"],
            "sweep": {"clients": list(range(1, len(loops) + 1))}, "points": points}


def test_a_sweep_whose_points_read_through_different_loops_is_in_no_loops_series():
    # the series followed the largest count's loop alone: a sweep whose smaller counts read
    # through the Python loop (numba gone part way) landed in the compiled loop's series
    from aiio.accept.run import Measured, series_of
    from aiio.results.history import sweep_record, variant_of

    python = "python (numba is not installed: pip install 'aiio[fast]')"
    compiled = "compiled (numba 0.68.1)"
    mixed = _randrw_sweep(python, compiled)
    assert sweep_record(mixed).name == "sweep randrw demo c1,2 [mixed loops]"
    assert series_of("nightly-sweep", Measured({}, "", [], [], sweep=mixed)) == \
        "nightly-sweep [mixed loops]"
    assert variant_of(_randrw_sweep(compiled, python)) == " [mixed loops]"
    # points alike are that loop's series, whatever the versions; a point that records no
    # loop (it ended before its figures) says nothing of it
    assert variant_of(_randrw_sweep(python, python)) == " [python loop]"
    assert variant_of(_randrw_sweep(compiled, "compiled (numba 0.60.0)")) == ""
    assert variant_of(_randrw_sweep(None, python)) == " [python loop]"
    assert variant_of(_randrw_sweep(None, None)) == ""
    # an MPI point whose hosts differ makes the sweep mixed too
    assert variant_of(_randrw_sweep(compiled, f"{compiled} on 1 client; {python} on 1 client")) \
        == " [mixed loops]"
