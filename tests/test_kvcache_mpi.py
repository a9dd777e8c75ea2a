"""The KV-cache phase under real MPI ranks: one result whose pooled request percentiles are
those of every client's requests on every host, merged, not of one host's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiio.phases.kvcache_figures import client_logs
from aiio.stats import Histogram

from .conftest import saved_results
from .mpi import mpi_run, needs_mpi
from .test_kvcache import TINY

SETS = tuple(x for k, v in TINY.items() for x in ("--set", f"{k.replace('__', '.')}={v}"))


@needs_mpi
def test_two_ranks_pool_every_clients_requests(target: Path, results: Path) -> None:
    done = mpi_run(2, "run", "--phase", "kvcache", "--target", str(target), "--results",
                   str(results), "--no-report", "--no-history", "--json", "--clients", "4",
                   *SETS)
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)
    assert [r["id"] for r in saved_results(results)] == [res["id"]]
    assert res["status"] == "ok" and res["ranks"] == 2 and res["split"] == [2, 2]
    assert [c["rank"] for c in res["clients"]] == [0, 0, 1, 1]
    kv = res["aggregate"]["kvcache"]
    logs = client_logs(res["clients"])
    served = [log.counts["requests"] for log in logs]
    assert all(served) and kv["requests"] == sum(served)
    pooled = Histogram()
    for log in logs:
        pooled.merge(log.hist["latency"])
    got = kv["latency"]["pooled"]
    assert got["count"] == pooled.count == kv["requests"]
    for p in (50, 95, 99):
        assert got[f"p{p}_ms"] == pytest.approx(pooled.percentile(p) / 1e6, rel=1e-9)
    # MLPerf's figure beside it: the largest of the four clients' own P95s
    each = [log.hist["latency"].percentile(95) / 1e6 for log in logs]
    assert kv["latency"]["max_client_p95_ms"] == pytest.approx(max(each), rel=1e-9)
    # bytes add up over the hosts
    assert sum(h["aggregate"]["read_bytes"] for h in res["hosts"]) == \
        res["aggregate"]["read_bytes"] > 0


@needs_mpi
def test_a_table_over_users_runs_each_count_across_the_ranks(target: Path,
                                                            results: Path) -> None:
    done = mpi_run(2, "scale", "--phase", "kvcache", "--target", str(target), "--results",
                   str(results), "--no-history", "--json", "--users", "1,2", "--clients", "2",
                   "--duration", "1s", *SETS)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)  # one JSON document: only rank 0 printed
    assert [r["users"] for r in out["rows"]] == [1, 2]
    runs = [r for r in saved_results(results) if r["kind"] == "run"]
    assert len(runs) == 2
    for run in runs:
        assert run["ranks"] == 2 and run["split"] == [1, 1]
        assert [h["rank"] for h in run["hosts"]] == [0, 1]
    by_users = {r["aggregate"]["kvcache"]["users_per_client"]: r for r in runs}
    for row in out["rows"]:
        kv = by_users[row["users"]]["aggregate"]["kvcache"]
        assert row["latency_ms"]["p95"] == kv["latency"]["pooled"]["p95_ms"]


@needs_mpi
def test_the_per_host_table_shows_each_hosts_read_and_write_rates(target: Path,
                                                                   results: Path) -> None:
    """A host's aggregate of a phase that reads and writes holds a section each, no window of
    its own: the per-host table read the missing window as 0 and showed 0.0 MiB/s for a host
    that had moved GiBs (the report: a dash). Both show each stream's rate, as the host's
    sections record it."""
    from io import StringIO

    from rich.console import Console

    from aiio.report import html
    from aiio.report.hosts import hosts_section
    from aiio.results import result
    from aiio.term.console import bare_rate, host_table

    done = mpi_run(2, "run", "--phase", "kvcache", "--target", str(target), "--results",
                   str(results), "--no-report", "--no-history", "-q", *SETS)
    assert done.returncode == 0, done.stderr
    (path,) = results.glob("*/result.json")
    run = result.load(path)
    out = StringIO()
    Console(file=out, width=200).print(host_table(run))
    text, page = out.getvalue(), str(hosts_section(run))
    for h in run.hosts:
        agg = h.io.figures
        for side in ("read", "write"):
            rate = agg[side]["first_done"]["mib_s"]
            assert rate > 0 and f"{side} {bare_rate(rate)}" in text, text
            assert f"{side} {html.mib_s(rate)}" in page  # the report's hosts table
