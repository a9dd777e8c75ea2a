"""A history series is keyed by the settings that change its figures, as MLPerf Storage keys
comparability by a hash of the workload-defining configuration: runs of one phase, workload and
client count with other settings (`--set`, batch size, threads, duration, epochs, cache method)
are never judged against each other, the history says what differs, and a history written
before settings were kept still opens, its records a key of their own."""

from __future__ import annotations

import copy
import json
import re
import sqlite3
from collections.abc import Callable

import pytest

from aiio.results import monitoring
from aiio.results.figures import run_figures
from aiio.results.history import SCHEMA_VERSION, History, run_record, sweep_record, with_regressions

from .conftest import REPO, call_cli

DATA = REPO / "tests" / "data" / "results-v2"
TRAIN = DATA / "20261201-124017-train-demo-c4" / "result.json"
SWEEP = DATA / "20261201-124028-scale-train-demo-c1_2" / "result.json"


NO_COMPUTE = {"a100": 0.02, "h100": 0.0, "b200": 0.005}  # the stored run's, less h100's


def _train(scale: float = 1.0, **train: object) -> dict:
    """The stored train result, its train settings changed and its figures scaled."""
    res = json.loads(TRAIN.read_text())
    res["workload"]["train"].update(train)
    for window in ("first_done", "last_done"):
        res["aggregate"][window]["mib_s"] *= scale
    return res


def test_runs_of_other_settings_are_never_judged_against_each_other(tmp_path):
    # three runs with no compute read as fast as the storage goes; the default run is paced by
    # its accelerators' compute and reads a tenth of it: another workload, not a regression
    fast = [run_record(_train(10.0, compute_time=NO_COMPUTE)) for _ in range(3)]
    default = run_record(_train())
    assert default.name == fast[0].name  # one phase, workload and client count ...
    assert default.key != fast[0].key   # ... two series
    assert with_regressions([*fast, default])[-1][1] == []
    # the same settings, slower: still a regression (the key splits settings, not runs)
    slower = run_record(_train(5.0, compute_time=NO_COMPUTE))
    assert slower.key == fast[0].key
    assert [r.figure for r in with_regressions([*fast, slower])[-1][1]] == ["aggregate_mib_s"]
    # the export keeps the latest record of the name, judged within its own key
    path = tmp_path / "h.sqlite"
    with History(path) as h:
        for rec in (*fast, default):
            h.add(rec)
        (latest, regressed), = monitoring.latest(with_regressions(h.records()))
    assert latest.key == default.key and regressed == []


def test_the_key_covers_the_settings_that_change_figures():
    base = run_record(_train())
    for change in ({"batch_size": 8}, {"read_threads": 8}, {"duration": 30.0},
                   {"epochs": 9}):
        assert run_record(_train(**change)).key != base.key, change
    cached = _train()
    cached["method"] = "fadvise_dontneed"
    assert run_record(cached).key != base.key
    # what does not change a figure does not split a series
    described = _train()
    described["workload"]["workload"]["description"] = "another description"
    described["id"] = "another-run"
    assert run_record(described).key == base.key
    sweep = json.loads(SWEEP.read_text())
    other = copy.deepcopy(sweep)
    other["workload"]["train"]["batch_size"] = 8
    assert sweep_record(sweep).key != sweep_record(other).key
    longer = copy.deepcopy(sweep)
    longer["sweep"]["duration_s"] = 30.0
    assert sweep_record(sweep).key != sweep_record(longer).key


def test_settings_survive_the_file_and_the_history_says_what_differs(tmp_path):
    path = tmp_path / "h.sqlite"
    with History(path) as h:
        h.add(run_record(_train(10.0, compute_time=NO_COMPUTE)))
        h.add(run_record(_train()))
        stored = h.records()
    assert [r.key for r in stored] == [run_record(_train(10.0, compute_time=NO_COMPUTE)).key,
                                       run_record(_train()).key]
    out = call_cli("history", "--history", str(path))
    assert out.returncode == 0, out.stderr
    assert re.search(r"train\.compute_time\.h100=0\.0(?![0-9])", out.stdout), out.stdout
    assert "train.compute_time.h100=0.01" in out.stdout
    assert "a100" not in out.stdout  # what the keys share is not said
    # the history page draws each key as a line of its own
    from aiio.cli.report import _history_records

    lines = {row["check"] for row in _history_records(path)}
    assert lines == {f"{r.name} [settings {r.key[2]}]" for r in stored}


def test_a_history_written_before_settings_were_kept_opens(tmp_path):
    """Schema 1 had no settings: read as it is, migrated in place by the first record added
    (a column added, nothing rewritten), its records a key of their own, never a baseline for
    runs that record theirs."""
    path = tmp_path / "old.sqlite"
    History(path).close()  # today's schema, taken back to schema 1's: no settings column
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE records DROP COLUMN settings")
    conn.execute("PRAGMA user_version = 1")
    new = run_record(_train())
    for i in range(3):
        conn.execute("INSERT INTO records (ts, host, version, kind, name, target, phase, "
                     "workload, clients, status, passed, result_id, spec) VALUES "
                     "(?, 'h', '0.1', 'run', ?, ?, 'train', 'demo', '4', 'ok', 1, '', '')",
                     (1_000.0 + i, new.name, new.target))
        conn.execute("INSERT INTO figures VALUES (?, 'aggregate_mib_s', 1000.0, NULL)", (i + 1,))
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with History(path) as h:
        old = h.records()
    assert path.read_bytes() == before  # reading it changes nothing
    with History(path) as h:
        h.add(new)
        every = h.records()
    assert len(old) == 3 and all(r.settings == "" for r in old)
    assert len({r.key for r in old}) == 1 and old[0].key != new.key
    assert with_regressions(every)[-1][1] == []  # far below 1000 MiB/s, yet not judged so
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_a_check_is_judged_within_its_settings(tmp_path):
    """An acceptance check whose spec changed a setting starts a key of its own."""
    from aiio.accept.run import Measured, check_settings

    fast, default = _train(10.0, compute_time=NO_COMPUTE), _train()
    assert check_settings(Measured({}, "", [fast], [])) != \
        check_settings(Measured({}, "", [default], []))
    assert check_settings(None) == ""


def test_runs_on_another_engine_are_another_series():
    # the sleepy engine's every call takes 2 ms more: its run is not the same storage's
    # regression; a result saved before engines were recorded is its target's own engine's
    stored = _train()
    assert "engine" not in stored
    posix, sleepy = copy.deepcopy(stored), copy.deepcopy(stored)
    posix["engine"], sleepy["engine"] = "posix", "sleepy"
    assert run_record(posix).key == run_record(stored).key
    assert run_record(sleepy).key != run_record(posix).key
    assert "engine" in run_record(sleepy).settings


def test_the_engine_that_timed_the_figures_is_a_setting():
    """`aiio run --engine` changes every call the figures time (io_uring's ring, an external
    engine whose calls sleep 2 ms): runs on another engine are another series. The target's
    own engine (posix on a mount, s3 on a bucket) is what every keyed record so far ran, so
    naming it changes no key."""
    base = run_record(_train())
    for engine in ("io_uring", "external:tests.sleepy_engine"):
        other = _train()
        other["engine"] = engine
        assert run_record(other).key != base.key, engine
    named = _train()
    named["engine"] = "posix"
    assert run_record(named).key == base.key


def test_a_sweep_records_its_table_not_its_last_repeat():
    """With --repeat the sweep's table shows each count's mean over its repeats, and its
    verdict judges that; the history (and acceptance of a sweep) took the last repeat of the
    largest count alone, so a regression was judged on one run the table never showed."""
    from aiio.sweep.run import table_rows

    sweep = json.loads(SWEEP.read_text())
    first = sweep["points"][-1]
    again = copy.deepcopy(first)
    again["repeat"] = first["repeat"] + 1
    for window in ("first_done", "last_done"):
        again["result"]["aggregate"][window]["mib_s"] *= 0.5
    sweep["points"].append(again)
    sweep["table"] = table_rows(sweep["points"], sweep["phase"])
    top = sweep["table"][-1]
    figures = sweep_record(sweep).figures
    assert top["repeats"] == 2
    assert figures["aggregate_mib_s"] == pytest.approx(top["aggregate_mib_s"])
    assert figures["last_done_mib_s"] == pytest.approx(top["last_done_mib_s"])


def test_the_export_names_each_records_settings(tmp_path):
    """A dashboard keeps a time series per label set: without the key among the labels, the
    latest record of one name was one series whatever its settings, and a panel or alert over
    time set three compute-0 runs against a default run's 92 % lower figure."""
    from prometheus_client.parser import text_string_to_metric_families

    fast, default = run_record(_train(10.0, compute_time=NO_COMPUTE)), run_record(_train())

    def exported(rec) -> dict[str, str]:
        path = monitoring.write(tmp_path / "aiio.prom", monitoring.latest([(rec, [])]))
        family = next(f for f in text_string_to_metric_families(path.read_text())
                      if f.name == "aiio_aggregate_bytes_per_second")
        (sample,) = family.samples
        return sample.labels

    assert exported(fast)["settings"] == fast.key[2]
    assert exported(fast) != exported(default)


SERVED = REPO / "tests" / "data" / "sweeps-v3"


@pytest.mark.parametrize(("folder", "section", "paths"), [
    ("20261203-083304-scale-vector-demo-c1_2", "vector",
     {"queries_per_s": ("queries_per_s",), "query_p99_ms": ("latency_ms", "p99")}),
    ("20261203-083309-scale-kvcache-demo-c1_2", "kvcache",
     {"tokens_per_s": ("tokens_per_s",),
      "storage_p95_ms": ("storage_time", "pooled", "p95_ms"),
      "request_p95_ms": ("latency", "pooled", "p95_ms")}),
])
def test_a_sweep_records_its_served_figures_over_its_repeats(folder, section, paths):
    """A vector or KV-cache sweep with --repeat recorded its bandwidth as the repeats' mean
    but its queries/s, tokens/s and request latencies as the last repeat's alone: the
    series a vector search is trended by showed a figure its table (the repeats' mean) never
    did."""
    from aiio.sweep.run import table_rows

    sweep = json.loads((SERVED / folder / "result.json").read_text())
    first = sweep["points"][-1]
    again = copy.deepcopy(first)
    again["repeat"] = first["repeat"] + 1
    for path in paths.values():
        *up, last = path
        node = again["result"]["aggregate"][section]
        for key in up:
            node = node[key]
        node[last] *= 0.5
    sweep["points"].append(again)
    sweep["table"] = table_rows(sweep["points"], sweep["phase"])
    figures = sweep_record(sweep).figures
    for name, path in paths.items():
        mine = first["result"]["aggregate"][section]
        for key in path:
            mine = mine[key]
        assert figures[name] == pytest.approx(mine * 0.75), name
    extras = sweep["table"][-1].get("figures", {})
    for name in set(extras) & set(paths):  # as the table shows it
        assert figures[name] == pytest.approx(extras[name]["mean"]), name


def _repeated(folder: str, change: Callable[[dict], None]) -> dict:
    """A stored sweep whose largest count ran twice: first a changed copy of its run, then
    the run itself, so its last repeat is the one as stored."""
    from aiio.sweep.run import table_rows

    sweep = json.loads((SERVED / folder / "result.json").read_text())
    last = sweep["points"][-1]
    again = copy.deepcopy(last)
    change(again["result"])
    last["repeat"] = again["repeat"] + 1
    sweep["points"].insert(-1, again)
    sweep["table"] = table_rows(sweep["points"], sweep["phase"])
    return sweep


def _halve(*path: str) -> Callable[[dict], None]:
    def change(res: dict) -> None:
        *up, key = path
        node = res
        for k in up:
            node = node[k]
        node[key] *= 0.5
    return change


@pytest.mark.parametrize(("folder", "figure", "path"), [
    ("20261203-083256-scale-train-demo-c1_2", "samples_per_s",
     ("aggregate", "samples_per_s")),
    ("20261203-083350-scale-load-demo-c1_2", "load_s",
     ("aggregate", "last_ready_s")),
])
def test_a_sweep_records_every_figure_over_its_repeats(folder, figure, path):
    """Samples/s, a load's time and the rest were the last repeat's alone while the
    aggregate beside them was the repeats' mean: a record mixed one run with two."""
    sweep = _repeated(folder, _halve(*path))
    stored = run_figures(sweep["points"][-1]["result"])[figure]
    assert sweep_record(sweep).figures[figure] == pytest.approx(stored * 0.75)


def test_a_sweeps_p99_pools_its_repeats_histograms():
    """The p99 of a sweep's record is that of every repeat's latencies in one histogram, as
    its table's latency pools them; neither the last repeat's alone nor a mean of p99s."""
    from aiio.stats import Histogram

    slow = Histogram()
    for _ in range(100_000):  # far more than the run's own reads: most of the pool
        slow.record(2_000_000_000)

    def change(res: dict) -> None:
        agg = res["aggregate"]
        agg["histograms"]["read"] = slow.to_dict()
        agg["latency"]["read"] = {**agg["latency"]["read"], **slow.summary()}

    sweep = _repeated("20261203-083256-scale-train-demo-c1_2", change)
    stored = run_figures(sweep["points"][-1]["result"])["p99_ms"]
    assert stored < 1_000
    assert sweep_record(sweep).figures["p99_ms"] == pytest.approx(2_000, rel=0.05)
