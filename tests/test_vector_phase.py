"""The vector phase: a DiskANN-style disk index laid out on real files (and a real bucket),
searched by beam search whose every hop reads the ids the previous hop's bytes held."""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aiio.engines.seam import OpLog
from aiio.engines.timing import Deadline
from aiio.errors import ConfigError
from aiio.phases import vector
from aiio.phases import vector_index as vi
from aiio.phases.vector_search import search
from aiio.run import runner
from aiio.stats import Histogram
from aiio.sweep.per_point import point_figures
from aiio.units import format_latency_ns
from aiio.workload import build

from .conftest import flat, run_cli, tiny_workload

SMALL = {"vector__vectors": 3000, "vector__max_degree": 16, "vector__search_list": 24,
         "vector__beam_width": 4, "vector__duration": "0.5s"}


def shape(**kw: Any) -> vi.IndexShape:
    base = {"vectors": 3000, "dimensions": 128, "element_size": 4, "max_degree": 16,
            "sector_size": 4096, "graph": "random", "seed": 1}
    return vi.IndexShape(**{**base, **kw})


def write_index(path: Path, sh: vi.IndexShape) -> int:
    """The index as the phase writes it, through a file engine's writer."""
    from aiio.engines.seam import Writer
    entry = vi.medoid(vi.codes(sh))
    wr = Writer("none", 1 << 20, OpLog(0))
    try:
        assert wr.write_content(str(path), vi.chunks(sh, entry, 1 << 20)) == sh.file_size
    finally:
        wr.close()
    return entry


def read_node(path: Path, sh: vi.IndexShape, node: int) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, sh.read_size, sh.offset_of(node))
    finally:
        os.close(fd)


@pytest.mark.parametrize("kw", [{}, {"graph": "nearest"}, {"graph": "clustered"},
                                {"dimensions": 1500}, {"element_size": 1, "max_degree": 64}])
def test_every_record_holds_its_fixed_degree_of_neighbours(tmp_path: Path, kw: dict) -> None:
    sh = shape(**kw)
    path = tmp_path / "disk.index"
    entry = write_index(path, sh)
    assert path.stat().st_size == sh.file_size
    head = vi.read_header(path.read_bytes()[:sh.sector_size])
    assert head["medoid"] == entry and head["node_len"] == sh.node_len
    for node in (0, 1, sh.nodes_per_sector or 1, 1234, sh.vectors - 1):
        ids = vi.parse_node(sh, read_node(path, sh, node), node)
        assert len(ids) == sh.max_degree
        assert node not in ids.tolist() and ids.max() < sh.vectors
        assert ids.tolist() == vi.neighbours(sh, node, 1)[0].tolist()


def test_a_large_record_spans_whole_sectors() -> None:
    sh = shape(dimensions=1500)  # 6,000 bytes of vector: two sectors a node
    assert sh.nodes_per_sector == 0 and sh.sectors_per_node == 2
    assert sh.read_size == 8192 and sh.offset_of(3) == (1 + 3 * 2) * 4096


def test_clustered_neighbours_stay_mostly_in_their_cluster() -> None:
    sh = shape(vectors=20_000, graph="clustered")
    ids = vi.neighbours(sh, 5000, 200).astype(np.int64)
    own = (ids // sh.cluster_size) == (np.arange(5000, 5200)[:, None] // sh.cluster_size)
    assert own.mean() > 0.8
    assert (vi.neighbours(shape(vectors=20_000), 5000, 200).astype(np.int64)
            // sh.cluster_size == 5000 // sh.cluster_size).mean() < 0.3


def test_each_hop_reads_the_ids_the_last_reads_returned(tmp_path: Path) -> None:
    sh = shape()
    path = tmp_path / "disk.index"
    entry = write_index(path, sh)
    hops: list[list[int]] = []
    parsed: set[int] = {entry}

    def fetch(nodes: list[int]) -> list[bytes]:
        assert set(nodes) <= parsed  # only ids some earlier read returned
        hops.append(nodes)
        got = [read_node(path, sh, n) for n in nodes]
        for n, data in zip(nodes, got, strict=True):
            parsed.update(vi.parse_node(sh, data, n).tolist())
        return got

    trace = search(sh, vi.codes(sh), np.zeros(vi.CODE_DIMS, np.float32), entry, 4, 24, 10,
                   fetch)
    assert hops[0] == [entry] and trace.hops == len(hops) > 2
    assert trace.reads == sum(map(len, hops)) and max(map(len, hops)) == 4
    assert len(set(sum(hops, []))) == trace.reads  # no node read twice


def test_the_next_reads_come_from_the_bytes_not_from_the_generator(tmp_path: Path) -> None:
    """A record rewritten on the storage changes where the search reads next."""
    sh = shape()
    path = tmp_path / "disk.index"
    entry = write_index(path, sh)
    rec = sh.offset_of(entry) + sh.within(entry) + sh.dimensions * sh.element_size
    with open(path, "r+b") as fh:  # the entry now points at node 2999 only
        fh.seek(rec)
        fh.write(struct.pack("<I", 1) + struct.pack("<I", 2999))
    read: list[int] = []

    def fetch(nodes: list[int]) -> list[bytes]:
        read.extend(nodes)
        return [read_node(path, sh, n) for n in nodes]

    search(sh, vi.codes(sh), np.zeros(vi.CODE_DIMS, np.float32), entry, 4, 24, 10, fetch)
    assert read[:2] == [entry, 2999]


def run_vector(target: str, results: Path, **sets: Any) -> dict[str, Any]:
    res, _ = runner.run(runner.RunRequest("vector", tiny_workload(**{**SMALL, **sets}),
                                          target, str(results)))
    assert res["status"] == "ok", res.get("error")
    return res


def test_a_run_on_files_counts_every_read_of_every_query(target: Path, results: Path) -> None:
    res = run_vector(str(target), results, vector__queries=15)
    agg, v = res["aggregate"], res["aggregate"]["vector"]
    assert v["queries"] == 30  # 15 a client, 2 clients
    reads = sum(c["queries"]["reads"] for c in res["clients"])
    assert agg["histograms"]["read"]["count"] == reads
    assert agg["bytes"] == reads * 4096  # one sector a node read, O_DIRECT or not
    assert v["reads_per_query"] == pytest.approx(reads / 30)
    assert v["hops_per_query"] * 4 >= v["reads_per_query"] > v["hops_per_query"]
    assert v["read_amplification"] == pytest.approx(agg["bytes"] / (30 * 10 * 128 * 4))
    assert set(v["latency_ms"]) == {"p50", "p95", "p99", "p999"}
    assert len(v["per_client_queries_per_s"]) == 2 and v["latency_ms"]["p99"] > 0
    assert not any(target.glob("aiio/vector/*"))  # on a mount the index is kept elsewhere,
    assert len(list(target.glob("aiio/indexes/*/disk.index"))) == 1  # for the next run
    extras = point_figures("vector", agg).extras  # a sweep's columns beside the reads
    assert extras == {"queries_per_s": v["queries_per_s"],
                      "query_p99_ms": v["latency_ms"]["p99"]}
    # a run by count has no duration: every query, over the slowest client's window (it
    # ends with its last answer: no drain runs past anything)
    window = max(c["elapsed_s"] for c in res["clients"])
    assert v["queries_in_duration"] is None and v["rate_window_s"] == window
    assert v["queries_per_s"] == pytest.approx(30 / window)


def test_the_report_leads_with_the_query_p99_not_a_node_reads(target: Path,
                                                               results: Path) -> None:
    """A vector search's headline latency is its queries' (MLPerf's vector database publishes
    query p99): the page's latency card is the p99 of every client's queries pooled, named
    so. A node read, one of some 35 a query makes, was the card, named "p99 latency"; its
    p99 is in the headline figures as read latency."""
    from aiio import report
    from aiio.report.verdict import cards
    from aiio.results.figures import FIGURES, run_figures

    res = run_vector(str(target), results, vector__queries=15)
    query_p99 = res["aggregate"]["vector"]["latency_ms"]["p99"]
    figs = run_figures(res)
    assert figs["query_p99_ms"] == query_p99
    shown = str(cards(res))
    assert (f"<b>{FIGURES['p99_ms'].format(query_p99)}</b>"
            "<span>query p99 latency (pooled over clients)</span>") in shown, shown
    assert "<span>p99 latency</span>" not in shown, shown
    assert FIGURES["p99_ms"].format(figs["p99_ms"]) not in shown and query_p99 > figs["p99_ms"]
    assert "read latency p50 / p99 / max" in str(report.render(res))


def test_a_query_that_returns_fewer_than_top_k_counts_only_what_it_returns(
        target: Path, results: Path) -> None:
    # 6 vectors cannot give a top 10: each query returns all 6, and the bytes read are set
    # against those 6 vectors, not against 10 it never returned
    res = run_vector(str(target), results, vector__vectors=6, vector__max_degree=3,
                     vector__search_list=10, vector__top_k=10, vector__queries=4)
    v = res["aggregate"]["vector"]
    assert v["vector_bytes_per_query"] == 6 * 128 * 4
    assert v["read_amplification"] == pytest.approx(v["bytes_per_query"] / (6 * 128 * 4))


def test_open_loop_offers_queries_at_the_rate(target: Path, results: Path) -> None:
    res = run_vector(str(target), results, vector__rate=20, vector__duration="1s")
    v = res["aggregate"]["vector"]
    assert v["offered_per_s"] == 40
    assert 0 < v["queries"] <= 80  # Poisson arrivals inside the window only
    # judged (arrivals in every third); steady or not depends on this shared machine's load:
    # the known-speed tests judge it on a device of known rate
    assert v["verdict"]["judged"] and "query latency" in v["verdict"]["rule"], v["verdict"]


def test_an_open_loop_client_runs_its_whole_duration(target: Path, results: Path) -> None:
    # at 3 queries a second the last arrives well before the end: the client's window ended
    # with its last query, and queries/s over that shorter window overstated the rate
    res = run_vector(str(target), results, vector__rate=3, vector__duration="1s",
                     run__clients=1)
    (client,) = res["clients"]
    assert client["elapsed_s"] >= 1.0
    v = res["aggregate"]["vector"]
    assert v["rate_window_s"] == 1.0 and 0 < v["queries_in_duration"] <= v["queries"]
    assert v["queries_per_s"] == pytest.approx(v["queries_in_duration"] / 1.0)


def test_queries_per_second_count_the_queries_done_within_the_duration_over_it(
        target: Path, results: Path) -> None:
    """A closed loop whose queries (a hop a read of 2 ms on the sleepy engine, about L = 100
    hops: 0.2 s at least) all outlast its 0.1 s: each client answers one, after the duration.
    queries/s divided them by the slowest client's window, a drain in which no query was
    offered, and read about 2 / 0.2 s of a run that answered none within its duration; it
    counts the queries done within the duration, over it: none."""
    from aiio.term.console import vector_tables

    res, _ = runner.run(runner.RunRequest(
        "vector", tiny_workload(**{**SMALL, "vector__beam_width": 1, "vector__search_list": 100,
                                   "vector__duration": "0.1s"}),
        str(target), str(results), engine="external:tests.sleepy_engine"))
    assert res["status"] == "ok", res.get("error")
    v = res["aggregate"]["vector"]
    assert v["queries"] == 2 and v["queries_in_duration"] == 0  # answered, after it
    assert v["queries_per_s"] == 0 and v["per_client_queries_per_s"] == [0, 0]
    assert v["rate_window_s"] == 0.1 and v["latency_ms"]["p99"] > 100  # latency holds them
    assert all(c["elapsed_s"] > 0.15 and c["queries_per_s"] == 0 for c in res["clients"])
    names, values = ([str(x) for x in col._cells] for col in vector_tables(res)[0].columns)
    shown = dict(zip(names, values, strict=True))
    assert shown["queries/s (done in duration)"] == "0.0 (0 of 2 queries)", shown


def test_queries_per_second_are_the_queries_done_within_the_duration(
        target: Path, results: Path) -> None:
    """One set and one clock: the queries done by the end of the duration, over it; each
    client's alike, so theirs add up to the run's."""
    res = run_vector(str(target), results)
    v = res["aggregate"]["vector"]
    done = v["queries_in_duration"]
    assert 0 < done <= v["queries"] and v["rate_window_s"] == 0.5
    assert done == sum(c["queries"]["in_duration"] for c in res["clients"])
    assert v["queries_per_s"] == pytest.approx(done / 0.5)
    assert sum(v["per_client_queries_per_s"]) == pytest.approx(v["queries_per_s"])


def test_a_bucket_reads_each_node_with_one_ranged_get(s3_server, s3_bucket,
                                                       results: Path) -> None:
    res = run_vector(f"s3://{s3_bucket}/v", results, vector__queries=5)
    agg, v = res["aggregate"], res["aggregate"]["vector"]
    reads = sum(c["queries"]["reads"] for c in res["clients"])
    assert agg["requests"] == reads and agg["bytes"] == reads * 4096
    assert v["requests_per_query"] == pytest.approx(v["reads_per_query"])
    codes = [w["code"] for w in res["warnings"]]
    assert "vector_request_bound" in codes and "vector_cached" not in codes
    # the console's node read latency is the GET's, request to body closed: the body's
    # chunks alone ("read") took microseconds of a GET's milliseconds
    from aiio.term.console import vector_tables
    names, values = ([str(v) for v in col._cells] for col in vector_tables(res)[0].columns)
    row = dict(zip(names, values, strict=True))
    assert "read latency p50 / p99" not in row
    get = agg["histograms"]["get"]
    assert row["GET latency p50 / p99"] == " / ".join(
        format_latency_ns(Histogram.from_dict(get).percentile(q)) for q in (50, 99))


@pytest.mark.parametrize("sets, says", [
    ({"bogus": 1}, "unknown key 'bogus'"),
    ({"sector_size": "6KiB"}, "multiple of 4 KiB"),
    ({"top_k": 50, "search_list": 20}, "more than the search list"),
    ({"max_degree": 64, "vectors": 10}, "needs more than that many"),
    ({"graph": "hnsw"}, "is not one of nearest, random, clustered"),
])
def test_bad_vector_settings_are_one_line_errors(sets: dict, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        build({"vector": sets}, "w.toml")


def test_an_open_loop_beyond_what_the_storage_answers_is_called_overloaded(
        target: Path, results: Path) -> None:
    # every read of the sleepy engine takes 2 ms: one stream answers at most 1 / (hops x 2 ms)
    # queries a second, far below the 400 a second offered
    res, _ = runner.run(runner.RunRequest(
        "vector", tiny_workload(**{**SMALL, "vector__rate": 400, "vector__duration": "1s"}),
        str(target), str(results), engine="external:tests.sleepy_engine"))
    assert res["status"] == "ok", res.get("error")
    v = res["aggregate"]["vector"]
    # judged by the KV-cache phase's rule, in queries: the queue grew through the run
    verdict = v["verdict"]
    assert verdict["word"] == "overloaded" and "queries" in verdict["rule"], verdict
    assert verdict["waiting_at_end"] == v["unanswered"] > 0
    assert verdict["queue_depth"][-1] > 2 * verdict["queue_depth"][1]
    assert any("queries still waited at the end" in e for e in verdict["evidence"])
    warning = next(w for w in res["warnings"] if w["code"] == "vector_overload")
    assert warning["message"].startswith("overloaded: ")


def test_an_open_loop_far_past_the_storage_keeps_its_queue_as_an_array_off_the_clock(
        target: Path, results: Path) -> None:
    # 2 million queries a second offered to reads that sleep 2 ms: nearly every arrival is
    # still waiting at the end. They are drawn at once as an array, after the window, and the
    # client's CPU time is the window's: the queue's bookkeeping made a client that waited on
    # its storage look CPU-bound (client_process_busy), as the KV-cache phase's does not
    res, _ = runner.run(runner.RunRequest(
        "vector", tiny_workload(**{**SMALL, "vector__rate": 2_000_000, "vector__duration": "1s",
                                   "run__clients": 1}),
        str(target), str(results), engine="external:tests.sleepy_engine"))
    assert res["status"] == "ok", res.get("error")
    v = res["aggregate"]["vector"]
    assert v["unanswered"] == pytest.approx(2_000_000, rel=0.01)  # Poisson: 0.07 % a sigma
    assert v["waiting_max"] >= v["unanswered"] - 1  # the last to arrive found them all
    assert v["verdict"]["word"] == "overloaded"
    assert "client_process_busy" not in [w["code"] for w in res["warnings"]]


def test_the_queue_left_at_the_end_is_the_arrivals_one_by_one_would_give() -> None:
    a = vector.VectorArgs("f", "o_direct", shape(), 4, 24, 10, 1, 50_000.0, 1.0, 0)
    one, bulk = (vector._Arrivals(a, 7, 0, Deadline(10**9)) for _ in range(2))
    for arr in (one, bulk):
        for _ in range(5):  # the streams took five
            arr.take()
    by_one = []
    while (t := one.take()) is not None and t < 6 * 10**8:
        by_one.append(t)
    left = bulk.left_over(6 * 10**8)
    assert isinstance(left, np.ndarray) and left.dtype == np.int64
    assert left.tolist() == by_one and 29_000 < len(left) < 31_000
    assert not len(bulk.left_over(6 * 10**8))  # taken once


def test_the_command_shows_queries_per_second(target: Path, results: Path) -> None:
    proc = run_cli("run", "--phase", "vector", "--target", str(target), "--results",
                   str(results), "--no-history", "--no-report", "--clients", "1",
                   *sum((["--set", f"vector.{k.split('__')[1]}={v}"] for k, v in SMALL.items()),
                        []), "--set", "vector.queries=4")
    assert proc.returncode == 0, proc.stderr
    assert "queries/s" in proc.stdout and "hops / reads per query" in flat(proc.stdout)
    # 4 queries are too few to judge, and the line says why: the run's own result (tuples,
    # before it is saved as JSON) showed "not judged: " and no reason
    assert "not judged: too few queries" in flat(proc.stdout), proc.stdout
    bad = run_cli("run", "--phase", "vector", "--target", str(target), "--set",
                  "vector.beam_width=0")
    assert bad.returncode == 2 and "[vector].beam_width = 0" in bad.stderr
    assert "Traceback" not in bad.stderr


def _with_files(soft: int, hard: int, *args: str) -> subprocess.CompletedProcess:
    """`aiio ARGS` in a process that may open `soft` files (raisable to `hard`)."""
    return subprocess.run([sys.executable, "-m", "aiio", *args], capture_output=True, text=True,
                          timeout=300, preexec_fn=lambda: resource.setrlimit(
                              resource.RLIMIT_NOFILE, (soft, hard)))


def test_a_client_opens_a_handle_per_read_in_flight_within_the_hard_limit(
        target: Path, results: Path) -> None:
    # 64 streams of 32 reads in flight hold 2,048 handles on the index: under a soft limit
    # of 1,024 the client failed with "Too many open files" when its hard limit allowed them
    many = ["run", "--phase", "vector", "--target", str(target), "--results", str(results),
            "--no-history", "--no-report", "-q", "--clients", "1",
            "--set", "vector.vectors=3000", "--set", "vector.max_degree=16",
            "--set", "vector.concurrency=64", "--set", "vector.beam_width=32",
            "--set", "vector.queries=64"]
    ran = _with_files(1024, 4096, *many)
    assert ran.returncode == 0, ran.stderr
    refused = _with_files(1024, 1024, *many)  # the hard limit itself is too low: said first
    assert refused.returncode == 2, refused.stderr
    assert "ulimit -n" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert "Traceback" not in refused.stderr


def test_the_null_method_is_refused_as_it_returns_no_ids(target: Path, results: Path) -> None:
    # no read returns bytes under it: every search would end at the entry node, one read
    proc = run_cli("run", "--phase", "vector", "--target", str(target), "--cache", "null",
                   "--no-history", "--results", str(results))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "null" in proc.stderr and "Traceback" not in proc.stderr
    assert not any(target.glob("aiio/vector/*"))


def test_an_index_a_bucket_cannot_take_in_parts_is_refused_first(s3_server, s3_bucket,
                                                                  results: Path) -> None:
    # 110 M vectors of 772-byte records: 84 GiB, 10,700 parts of 8 MiB, above S3's 10,000
    proc = run_cli("run", "--phase", "vector", "--target", f"s3://{s3_bucket}/v", "--results",
                   str(results), "--no-history", "--set", "vector.vectors=110000000")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "10,000 parts" in proc.stderr and "Traceback" not in proc.stderr


def test_the_index_is_written_in_calls_no_larger_than_it_is() -> None:
    """The index is written in calls of s3.part_size (whole sectors), through one buffer of
    that size made at once: a 1.7 MiB index at s3.part_size = 5 GiB made a 5 GiB buffer.
    A call is no larger than the index, widened to whole sectors."""
    from aiio.phases.vector import index_chunk, shape_of
    small = tiny_workload(vector__vectors=3000, s3__part_size="5GiB")
    one = shape_of(small)
    assert index_chunk(small, one) == -(-one.file_size // one.sector_size) * one.sector_size
    large = tiny_workload(vector__vectors=20000, s3__part_size="5MiB")
    many = shape_of(large)
    assert many.file_size > 5 * 2**20  # written in several calls, each a part
    assert index_chunk(large, many) == 5 * 2**20 // many.sector_size * many.sector_size


def test_a_run_that_answered_no_query_has_no_per_query_figure(target: Path, results: Path,
                                                              monkeypatch, tmp_path) -> None:
    """An open loop offered so slowly that no query arrives in the duration: every figure per
    query divided by no query, and read 0.0 hops, 0.0 reads, 0 B and '0.0x the vectors
    returned', as though queries had taken none. They are no figure (None; the console
    '-'), as the insert stream's write amplification is with no insert durable."""
    import io

    from rich.console import Console

    from aiio.errors import RunFailed
    from aiio.results import result
    from aiio.term import console as tc

    with pytest.raises(RunFailed, match="nothing measured"):  # and its result saved
        runner.run(runner.RunRequest("vector", tiny_workload(
            **{**SMALL, "vector__rate": 0.001, "vector__duration": "0.2s"}), str(target),
            str(results)))
    (path,) = results.glob("*/result.json")
    res = dict(result.load(path).doc)
    v = res["aggregate"]["vector"]
    assert v["queries"] == 0 and v["unanswered"] == 0, v
    for key in ("hops_per_query", "reads_per_query", "bytes_per_query",
                "vector_bytes_per_query", "read_amplification"):
        assert v[key] is None, key
    con = Console(record=True, width=80, file=io.StringIO(), color_system=None)
    monkeypatch.setattr(tc, "out_console", lambda: con)
    tc.print_result(res, tmp_path, tc.phase_tables(res))
    text = con.export_text()
    assert "hops / reads per query" in text and "0.0x" not in text, text
