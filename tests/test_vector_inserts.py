"""The vector phase's insert stream (FreshDiskANN's): inserts appended to a run-own log on real
files, made durable in groups, searchable from memory at once, and merged by streaming merges
that read the disk index and write a new one in the run's folder, which the queries switch
to; the kept index is never written, and the run's files go at its end, failed or not."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aiio.engines.posix import PosixEngine
from aiio.engines.timing import NEVER, Deadline, DeadlineOrStop, now_ns
from aiio.errors import ConfigError, RunFailed
from aiio.phases import vector_index as vi
from aiio.phases.vector import VectorArgs, _Arrivals, _run_stream, _Stream, insert_warnings
from aiio.phases.vector_inserts import Fresh, InsertArgs, InsertLog, record_size
from aiio.phases.vector_merge import IndexView, Merger, Views
from aiio.phases.vector_search import search
from aiio.report import render
from aiio.run import runner
from aiio.term.console import vector_tables
from aiio.workload import build

from .conftest import call_cli, tiny_workload
from .storage import small_tmpfs
from .test_vector_phase import SMALL, shape, write_index

INSERTS = {"vector__insert_rate": 200, "vector__merge_every": 60, "vector__insert_sync": 8,
           "vector__duration": "2s", "run__clients": 1}


class _Stop:
    def is_set(self) -> bool:
        return False


UNTIL = DeadlineOrStop(NEVER, _Stop())


def test_each_insert_is_one_record_appended_and_fsynced_in_groups(tmp_path: Path) -> None:
    sh = shape()
    log = InsertLog(PosixEngine("o_direct"), str(tmp_path / "c0.insert.log"), sh, 4, 1)
    log.start(0)
    try:
        for i in range(10):
            log.append(i)
            if log.due():
                log.sync()
        assert log.sync()[:2] == (8, 10)  # the last group, made durable at the end
    finally:
        log.close()
    assert record_size(sh) == 4096  # 8 + 128 x 4 bytes, in a whole sector
    assert (tmp_path / "c0.insert.log").stat().st_size == 10 * 4096
    log.writer.log.flush()
    hist = log.writer.log.hist
    assert hist["write"].count == 10 and hist["fsync"].count == 3
    assert log.writer.log.nbytes == 10 * 4096  # what the calls returned, no fsync counted


def _merged(tmp_path: Path, inserts: int, **kw: Any) -> tuple[vi.IndexShape, Fresh, Merger]:
    sh = shape(**kw)
    kept = tmp_path / "disk.index"
    entry = write_index(kept, sh)
    fresh = Fresh(vi.codes(sh), 7)
    for i in range(inserts):
        fresh.add(i, i)
    run = tmp_path / "run"
    run.mkdir()
    views = Views(IndexView(str(kept), sh))
    m = Merger(PosixEngine("o_direct"), InsertArgs(str(run), 1.0, 1, inserts), 0, views, fresh,
               entry, 1)
    m.merge_once(UNTIL)
    return sh, fresh, m


@pytest.mark.parametrize("kw", [{}, {"dimensions": 1500}, {"dimensions": 16}])
def test_a_merge_writes_old_nodes_and_inserted_with_the_graphs_patches(
        tmp_path: Path, kw: dict) -> None:
    sh, fresh, m = _merged(tmp_path, 40, **kw)
    kept = tmp_path / "disk.index"
    (rec,) = m.records
    assert rec.done and rec.inserts == 40 and fresh.merged == 40
    new = m.views.current
    assert new.own and new.shape.vectors == sh.vectors + 40
    path = Path(new.path)
    assert path.parent == tmp_path / "run" and path.stat().st_size == new.shape.file_size
    assert rec.read_bytes == sh.file_size and rec.write_bytes == new.shape.file_size
    data, old = path.read_bytes(), kept.read_bytes()
    head = vi.read_header(data[:sh.sector_size])
    assert head["vectors"] == sh.vectors + 40 and head["file_size"] == new.shape.file_size
    anchors = {sh.vectors + i: fresh.anchors[i] for i in range(40)}

    def ids(buf: bytes, node: int) -> list[int]:
        at = sh.offset_of(node)
        return vi.parse_node(sh, buf[at:at + sh.read_size], node).tolist()

    for node, near in anchors.items():
        got = ids(data, node)
        assert got[0] == near and got[1:] == ids(old, near)[:sh.max_degree - 1]
        assert node in ids(data, near)  # the backward edge: its node points at it
    untouched = next(n for n in range(sh.vectors) if n not in anchors.values())
    at = sh.offset_of(untouched) + sh.within(untouched)
    assert data[at:at + sh.node_len] == old[at:at + sh.node_len]
    assert hashlib.sha256(kept.read_bytes()).digest() == hashlib.sha256(old).digest()


def test_a_search_of_the_merged_index_finds_the_inserted_vectors(tmp_path: Path) -> None:
    # the merged file is an index the beam search walks: from the entry, through the backward
    # edges, to the inserted nodes (deterministic: 30 of 40 found on this seed)
    sh, fresh, m = _merged(tmp_path, 40, graph="nearest")
    new = m.views.current
    data = Path(new.path).read_bytes()

    def fetch(nodes: list[int]) -> list[bytes]:
        return [data[new.shape.offset_of(n):new.shape.offset_of(n) + new.shape.read_size]
                for n in nodes]

    entry = vi.read_header(data[:sh.sector_size])["medoid"]
    found = [sh.vectors + i for i in range(40)
             if sh.vectors + i in search(new.shape, fresh.codes, fresh.codes[sh.vectors + i],
                                         entry, 4, 100, 10, fetch).result]
    assert len(found) >= 20, found


def test_a_second_merge_reads_the_first_and_deletes_it(tmp_path: Path) -> None:
    sh, fresh, m = _merged(tmp_path, 30)
    first = m.views.current
    for i in range(30):
        fresh.add(100 + i, 100 + i)
    m.merge_once(UNTIL)
    second = m.views.current
    assert second.shape.vectors == sh.vectors + 60 and m.records[1].inserts == 30
    assert m.records[1].read_bytes == first.shape.file_size
    assert not Path(first.path).exists() and Path(second.path).exists()
    data = Path(second.path).read_bytes()
    node = sh.vectors + 45  # an insert of the second merge
    at = sh.offset_of(node) + sh.within(node) + sh.dimensions * sh.element_size
    (degree,) = struct.unpack_from("<I", data, at)
    assert degree == sh.max_degree and struct.unpack_from("<I", data, at + 4)[0] == \
        fresh.anchors[45]


def run_inserts(target: Path, results: Path, engine: str | None = None,
                **sets: Any) -> dict[str, Any]:
    res, _ = runner.run(runner.RunRequest("vector", tiny_workload(**{**SMALL, **INSERTS, **sets}),
                                          str(target), str(results), engine=engine))
    return res


def _kept_index(target: Path) -> Path:
    (index,) = target.glob("aiio/indexes/*/disk.index")
    return index


def test_a_run_logs_every_insert_merges_and_leaves_its_folder_clean(
        target: Path, results: Path) -> None:
    res = run_inserts(target, results)
    assert res["status"] == "ok", res.get("error")
    kept = _kept_index(target)
    before = (kept.stat().st_mtime_ns, hashlib.sha256(kept.read_bytes()).digest())
    res = run_inserts(target, results)  # on the kept index, reused
    assert res["status"] == "ok", res.get("error")
    assert res["aggregate"]["index"]["reused"]
    (client,) = res["clients"]
    c, ins = client["inserts"], res["aggregate"]["inserts"]
    # the log's bytes are what its write calls returned: a record of a sector an insert
    assert c["record_size"] == 4096 and c["log_writes"] == c["written"] > 50
    assert c["log_bytes"] == c["written"] * 4096 and c["done"] == c["written"]
    assert c["log_syncs"] == -(-c["written"] // 8)
    assert ins["offered_per_s"] == 200 and ins["done"] == c["done"]
    assert ins["durable_ms"]["p99"] > 0
    # merges: each read the index it merged into and wrote the next, a sector a record
    done = [m for m in ins["merge_list"] if m["done"]]
    assert done and ins["merges"] == len(done)
    vectors = 3000
    for m in done:
        old = vi.IndexShape(vectors, 128, 4, 16, 4096, "nearest", 1).file_size
        vectors += m["inserts"]
        new = vi.IndexShape(vectors, 128, 4, 16, 4096, "nearest", 1).file_size
        assert m["read_bytes"] == old and m["write_bytes"] == new
        assert m["inserts"] >= 60 and m["duration_s"] > 0
        assert 0 < m["cpu_s"] <= m["duration_s"]  # the merge thread's CPU, within its span
    assert ins["merge_cpu_share"] == pytest.approx(
        sum(m["cpu_s"] for m in ins["merge_list"])
        / sum(m["duration_s"] for m in ins["merge_list"]))
    assert ins["write_amplification"] == pytest.approx(
        (ins["log_bytes"] + ins["merge_write_bytes"]) / (ins["done"] * 128 * 4))
    assert ins["unmerged"] == c["written"] - (vectors - 3000)
    assert ins["fresh_ms"]["p50"] > 0
    queries = res["aggregate"]["vector"]["queries"]
    assert ins["queries_merging"] + ins["queries_calm"] == queries
    assert ins["verdict"]["judged"] and "insert" in ins["verdict"]["rule"]
    # the kept index was read, never written; the run's logs and merged indexes are gone
    assert (kept.stat().st_mtime_ns, hashlib.sha256(kept.read_bytes()).digest()) == before
    assert not list(target.glob("aiio/vector/*"))
    # the console says the insert stream, and the report page as the console does (not only
    # as the aggregate's raw keys)
    tables = vector_tables(res)
    assert len(tables) == 4
    names = [str(v) for v in tables[2].columns[0]._cells]
    assert "query p99 merging / not" in names and "write amplification" in names
    page = render(res)
    assert "write amplification" in page and "query p99 merging / not" in page
    assert "fresh in the disk index" in page and "[green]" not in page  # no console markup


def test_a_merge_that_fails_part_way_fails_the_run_and_leaves_nothing(
        target: Path, results: Path) -> None:
    with pytest.raises(RunFailed) as failed:
        run_inserts(target, results, engine="external:tests.merge_failing_engine")
    error = str(failed.value)  # the first merge, its second call
    assert ".merge1.index at offset 1048576" in error and "Input/output error" in error
    (saved,) = results.glob("*/result.json")
    assert json.loads(saved.read_text())["status"] == "failed"
    assert not list(target.glob("aiio/vector/*"))
    assert len(list(target.glob("aiio/indexes/*/disk.index"))) == 1  # kept, as it was


@pytest.mark.parametrize("sets, says", [
    ({"insert_rate": -1}, r"insert_rate = -1.0 must be at least 0"),
    ({"merge_every": 0}, "merge_every = 0 must be at least 1"),
    ({"insert_sync": 0}, "insert_sync = 0 must be at least 1"),
    ({"insert_rate": 5, "queries": 10}, "runs for vector.duration"),
])
def test_bad_insert_settings_are_one_line_errors(sets: dict, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        build({"vector": sets}, "w.toml")


def test_inserts_with_the_native_reader_are_refused_in_one_line(target: Path) -> None:
    proc = call_cli("run", "--phase", "vector", "--target", str(target), "--reader", "native",
                    "--set", "vector.insert_rate=5")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "takes no inserts" in proc.stderr
    assert not list(target.glob("aiio/vector/*"))


def test_inserts_on_a_bucket_are_refused_before_anything_is_written(
        s3_server, s3_bucket, results: Path) -> None:
    with pytest.raises(ConfigError, match="appends to a log file"):
        runner.run(runner.RunRequest("vector", tiny_workload(**{**SMALL, **INSERTS}),
                                     f"s3://{s3_bucket}/v", str(results)))


def test_queries_find_the_inserted_vectors_in_memory_with_no_read(tmp_path: Path) -> None:
    sh = shape()
    fresh = Fresh(vi.codes(sh), 3)
    for i in range(5):
        fresh.add(i, i)
    codes, recent = fresh.in_memory()
    assert len(recent) == 5 and len(codes) >= sh.vectors + 5
    assert np.array_equal(recent, codes[sh.vectors:sh.vectors + 5])
    fresh.mark_merged(5, 10)
    assert len(fresh.in_memory()[1]) == 0 and fresh.merged_ns == [10] * 5


def test_an_insert_log_that_cannot_keep_up_is_called_overloaded(
        target: Path, results: Path) -> None:
    # every write of the sleepy engine takes 2 ms: one log thread makes at most 500 inserts
    # durable a second, far below the 2,000 offered
    res = run_inserts(target, results, engine="external:tests.sleepy_engine",
                      vector__insert_rate=2000, vector__merge_every=100_000,
                      vector__duration="1s")
    assert res["status"] == "ok", res.get("error")
    ins = res["aggregate"]["inserts"]
    assert ins["verdict"]["word"] == "overloaded", ins["verdict"]
    assert ins["unserved"] > ins["done"] and ins["done_per_s"] < 500
    assert any("inserts still waited at the end" in e for e in ins["verdict"]["evidence"])
    warning = next(w for w in res["warnings"] if w["code"] == "vector_insert_overload")
    assert warning["message"].startswith("the insert log did not keep up: 2000.0 inserts/s")


def _insert_rows(res: dict[str, Any]) -> dict[str, str]:
    """The console's insert table, name to value."""
    names, values = ([str(x) for x in col._cells] for col in vector_tables(res)[2].columns)
    return dict(zip(names, values, strict=True))


def test_inserts_per_second_count_the_inserts_made_durable_within_the_duration_over_it(
        target: Path, results: Path) -> None:
    """A log behind its arrivals (2 ms a write on the sleepy engine, 2,000 offered a second)
    and fsynced only at the end, after the duration: every insert is made durable then.
    done_per_s divided them by the slowest client's window and read a rate of a run that made
    none durable within its duration; it counts those made durable within it, over it: none."""
    res = run_inserts(target, results, engine="external:tests.sleepy_engine",
                      vector__insert_rate=2000, vector__insert_sync=100_000,
                      vector__merge_every=100_000, vector__duration="1s")
    assert res["status"] == "ok", res.get("error")
    ins = res["aggregate"]["inserts"]
    assert ins["done"] > 0 and ins["done_in_duration"] == 0, ins  # durable, after it
    assert ins["done_per_s"] == 0 and ins["rate_window_s"] == 1.0
    assert [c["inserts"]["done_in_duration"] for c in res["clients"]] == [0]
    shown = _insert_rows(res)["inserts/s offered / durable in duration"]
    assert shown == f"2,000.0 / 0.0 (0 of {ins['done']:,} durable in duration; " \
                    f"{ins['arrived']:,} arrived)", shown


def test_inserts_per_second_are_those_durable_within_the_duration_and_older_results_read(
        target: Path, results: Path) -> None:
    """One set and one clock, as queries/s: the inserts made durable by the end of the
    duration, over it; a result saved before they were counted says what its rate divided."""
    res = run_inserts(target, results, run__clients=2)
    assert res["status"] == "ok", res.get("error")
    ins = res["aggregate"]["inserts"]
    done = ins["done_in_duration"]
    assert 0 < done <= ins["done"] and ins["rate_window_s"] == 2.0
    assert done == sum(c["inserts"]["done_in_duration"] for c in res["clients"])
    assert ins["done_per_s"] == pytest.approx(done / 2.0)
    assert ins["rate_window_s"] == res["aggregate"]["vector"]["rate_window_s"]
    before = json.loads(json.dumps(res))
    for key in ("done_in_duration", "rate_window_s"):
        del before["aggregate"]["inserts"][key]
    rows = _insert_rows(before)
    assert rows["inserts/s offered / durable"] == (
        f"400.0 / {ins['done_per_s']:,.1f} ({ins['done']:,} of {ins['arrived']:,} arrived, "
        "every one durable, over the slowest client's window)"), rows
    assert "every one durable, over the slowest client" in render(before)  # its ' escaped


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_an_index_and_merges_that_do_not_fit_together_are_refused_before_either_is_written(
        tmp_path: Path) -> None:
    # a 20 MiB tmpfs: the 7.8 MiB index fits, and the insert stream's log and two merged
    # indexes (16.7 MiB) fit alone, but not both: the second merge would fill the disk
    with small_tmpfs(tmp_path, 20) as mount:
        proc = call_cli("run", "--phase", "vector", "--target", str(mount), "--results",
                        str(tmp_path / "r"), "--no-history", "--quiet", "--clients", "1",
                        *[x for k, v in {**SMALL, "vector__vectors": 14000,
                                         "vector__duration": "3s", "vector__insert_rate": 50,
                                         "vector__merge_every": 20}.items()
                          for x in ("--set", f"{k.replace('__', '.')}={v}")])
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().count("\n") == 0, proc.stderr
        assert "vector index" in proc.stderr and "merged indexes" in proc.stderr
        assert not list(mount.glob("aiio/indexes/*/disk.index"))
        assert not list(mount.glob("aiio/vector/*"))


def test_inserts_never_merged_bound_the_freshness_from_below(target: Path,
                                                             results: Path) -> None:
    # no merge in the run: no insert reached the disk index, so no freshness is known; each is
    # fresh no sooner than the run's end, and the merged ones' p50 (none) must not read as fast
    res = run_inserts(target, results, vector__merge_every=100_000)
    assert res["status"] == "ok", res.get("error")
    ins = res["aggregate"]["inserts"]
    assert ins["merges"] == 0 and ins["unmerged"] == ins["done"] > 100
    assert ins["fresh_ms"]["p50"] is None
    # arrived over 2 s, aged to the end: half of them older than about 1 s
    assert 800 < ins["fresh_at_least_ms"]["p50"] < 2500, ins["fresh_at_least_ms"]
    rows = {str(k): str(v) for k, v in zip(vector_tables(res)[2].columns[0]._cells,
                                           vector_tables(res)[2].columns[1]._cells,
                                           strict=True)}
    fresh = next(v for k, v in rows.items() if k.startswith("fresh in the disk index"))
    assert "unmerged" in fresh and "at least" in fresh, fresh
    assert [t.title for t in vector_tables(res)][-1] != "merges"  # no empty grid of none


def test_no_insert_made_durable_has_no_write_amplification(target: Path,
                                                           results: Path) -> None:
    res = run_inserts(target, results, vector__insert_rate=0.1, vector__duration="1s")
    assert res["status"] == "ok", res.get("error")
    ins = res["aggregate"]["inserts"]
    assert ins["arrived"] == 0  # this seed's first arrival comes after the second
    assert ins["write_amplification"] is None  # no vector inserted: no ratio, not 0
    rows = {str(k): str(v) for k, v in zip(vector_tables(res)[2].columns[0]._cells,
                                           vector_tables(res)[2].columns[1]._cells,
                                           strict=True)}
    assert rows["write amplification"].startswith("-"), rows


def _open_paths() -> list[str]:
    """What this process's descriptors name (a deleted file ends in ' (deleted)')."""
    out = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            out.append(os.readlink(fd))
        except FileNotFoundError:  # the listing's own descriptor, closed since
            pass
    return out


def test_a_stream_waiting_for_its_next_arrival_lets_a_replaced_index_go(
        tmp_path: Path) -> None:
    # an open loop's stream between queries held its handles on the index a merge replaced:
    # the merge deleted the file, and its blocks stayed taken until the stream's next query
    sh = shape()
    first, second = tmp_path / "first.index", tmp_path / "second.index"
    write_index(first, sh)
    write_index(second, sh)
    a = VectorArgs(str(tmp_path), "o_direct", sh, 4, 24, 10, 1, 1.0, 1.0, 0,
                   inserts=InsertArgs(str(tmp_path), 1.0, 1, 1))
    views = Views(IndexView(str(first), sh))
    s = _Stream(PosixEngine("o_direct"), a, None, views)
    try:
        assert _open_paths().count(str(first)) == 4
        views.switch(IndexView(str(second), sh, 1, own=True))
        first.unlink()
        assert not s.idle_until(now_ns() + 300_000_000, threading.Event())
        assert not [p for p in _open_paths() if p.startswith(str(first))]
        assert _open_paths().count(str(second)) == 4
    finally:
        s.close()


class _Ctx:
    """What a query stream asks of its client: the stop, and where its count goes."""

    def __init__(self) -> None:
        self.stop = threading.Event()

    def add_units(self, n: int) -> None:
        pass


def test_a_stream_whose_arrivals_ended_early_lets_the_index_go(tmp_path: Path) -> None:
    # an open loop's stream takes the next arrival as its query ends: one beyond the deadline
    # ends it seconds before the run does, and its handles stayed on the index it last read
    sh = shape()
    first = tmp_path / "first.index"
    entry = write_index(first, sh)
    a = VectorArgs(str(tmp_path), "o_direct", sh, 4, 24, 10, 1, 1.0, 1.0, 0,
                   inserts=InsertArgs(str(tmp_path), 1.0, 1, 1))
    views = Views(IndexView(str(first), sh, 0, own=True))
    s = _Stream(PosixEngine("o_direct"), a, None, views)
    try:
        start = now_ns()
        deadline = Deadline(start + 1)  # the first arrival (1 a second) comes after it
        _run_stream(s, _Ctx(), vi.codes(sh), None, entry, _Arrivals(a, 1, start, deadline),
                    DeadlineOrStop(deadline, threading.Event()), np.random.default_rng(1),
                    vi.query_codes(sh, vi.codes(sh), 4, 1))
        assert str(first) not in _open_paths()
    finally:
        s.close()


def test_an_insert_merged_before_its_group_was_fsynced_is_durable_at_the_merge(
        target: Path, results: Path) -> None:
    # one fsync for the whole run (insert_sync above every insert), merges every 30: the merged
    # index, fsynced, holds the inserts long before the log's fsync at the end; an insert is
    # durable at whichever came first, and never fresh in the disk index before it is durable
    res = run_inserts(target, results, vector__insert_rate=50, vector__insert_sync=100_000,
                      vector__merge_every=30)
    assert res["status"] == "ok", res.get("error")
    ins = res["aggregate"]["inserts"]
    assert ins["log_syncs"] == 1 and ins["merges"] >= 2 and ins["done"] == ins["arrived"]
    # the log's one fsync, at the end of the 2 s, would make the p50 about a second
    assert ins["durable_ms"]["p50"] <= ins["fresh_ms"]["p99"], ins


def test_an_insert_is_durable_at_its_merge_or_its_fsync_whichever_came_first() -> None:
    fresh = Fresh(vi.codes(shape()), 3)
    for i in range(5):
        fresh.add(i, i)
    fresh.mark_merged(3, 100)  # a merge, fsynced, holds the first three
    fresh.synced(0, 5, 200)  # then the log's fsync covers all five
    assert fresh.durable_ns == [100, 100, 100, 200, 200]
    fresh.synced(5, 5, 300)
    fresh.add(5, 5)
    fresh.synced(5, 6, 300)
    fresh.mark_merged(6, 400)  # the fsync came first: it stays
    assert fresh.durable_ns[5] == 300


@pytest.mark.parametrize("share, warned", [(0.8, True), (0.3, False), (None, False)])
def test_merges_mostly_on_the_clients_cpu_are_said(share: float | None, warned: bool) -> None:
    # a merge copies and patches the index in the client's own process: when that, not the
    # storage, took most of its span, the queries that met it waited on the client too
    ins = {"verdict": {"overloaded": False}, "merge_cpu_share": share, "queries_merging": 7,
           "query_p99_merging_ms": 24.8, "query_p99_calm_ms": 5.3}
    found = [w for w in insert_warnings(ins) if w["code"] == "vector_merge_client_bound"]
    assert bool(found) == warned
    if warned:
        assert "80 %" in found[0]["message"] and "client" in found[0]["message"]


def test_without_o_direct_the_cached_warning_names_the_merges_reads(target: Path,
                                                                    results: Path) -> None:
    # a merge reads the index the queries read meanwhile: their pages, cached, serve it too
    res, _ = runner.run(runner.RunRequest(
        "vector", tiny_workload(**{**SMALL, **INSERTS}), str(target), str(results),
        method="fadvise_dontneed"))
    assert res["status"] == "ok", res.get("error")
    (cached,) = [w for w in res["warnings"] if w["code"] == "vector_cached"]
    assert "merges" in cached["message"], cached
