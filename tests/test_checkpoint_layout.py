"""A model checkpoint written file by file as DLIO lays it out for MLPerf Storage, on real files:
the clients share MLPerf's ranks, every rank's files are written at the formula's sizes (times
--scale), and more clients than ranks is refused."""

from __future__ import annotations

import json
from pathlib import Path

from aiio.phases.checkpoint_layout import layout_of, shape_of
from aiio.workload import load_workload

from .conftest import call_cli, run_cli

SCALE = 1e-5


def scaled(name: str) -> list[list[int]]:
    """Every rank's file sizes at SCALE, rank 0 first."""
    return [[max(1, int(n * SCALE)) for _, n in files]
            for files in layout_of(shape_of(load_workload(name)))]


def run_checkpoint(target: Path, results: Path, name: str, clients: int) -> dict:
    proc = run_cli("run", "--no-report", "--phase", "checkpoint", "--workload", name,
                   "--scale", str(SCALE), "--clients", str(clients), "-t", str(target),
                   "--results", str(results), "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_two_clients_write_the_8_ranks_of_llama3_8b(target: Path, results: Path) -> None:
    ranks = scaled("llama3-8b")
    res = run_checkpoint(target, results, "llama3-8b", 2)
    agg = res["aggregate"]
    total = sum(map(sum, ranks))
    assert agg["plan"]["total_bytes"] == total == agg["write_bytes"] == agg["read_bytes"]
    assert agg["plan"]["base_bytes"] == 112425623552  # 104.7 GiB before the scale
    for c in res["clients"]:
        mine = [n for r in range(c["client"], 8, 2) for n in ranks[r]]  # ranks c, c+2, ...
        (entry,) = c["checkpoints"]
        assert entry["write"]["files"] == len(mine) == 8
        assert entry["write"]["bytes"] == sum(mine)


def test_pipelined_70b_files_per_client_follow_the_formula(target: Path,
                                                          results: Path) -> None:
    ranks = scaled("llama3-70b")
    res = run_checkpoint(target, results, "llama3-70b", 3)  # 64 ranks do not share out evenly
    files = {c["client"]: c["checkpoints"][0]["write"]["files"] for c in res["clients"]}
    assert files == {c: sum(len(ranks[r]) for r in range(c, 64, 3)) for c in range(3)}
    assert sum(files.values()) == 128
    assert res["aggregate"]["write_bytes"] == sum(map(sum, ranks))


def test_more_clients_than_ranks_or_an_even_split_is_refused(target: Path,
                                                              results: Path) -> None:
    cases = [(("--clients", "9"), ("8 ranks", "--clients")),
             (("--set", "checkpoint.files_per_client=2"), ("rank by rank", "checkpoint.size"))]
    for args, words in cases:
        proc = call_cli("run", "--phase", "checkpoint", "--workload", "llama3-8b", "--scale",
                        str(SCALE), "-t", str(target), "--results", str(results), *args)
        assert proc.returncode == 2, proc.stderr
        line = proc.stderr.strip()
        assert len(line.splitlines()) == 1 and all(w in line for w in words), line


def test_mlperf_order_writes_every_checkpoint_then_reads_them(target: Path,
                                                             results: Path) -> None:
    proc = run_cli("run", "--no-report", "--phase", "checkpoint", "--workload", "llama3-8b",
                   "--scale", str(SCALE), "--clients", "2", "--checkpoints", "3",
                   "--set", "checkpoint.restore_after=all_writes", "--set", "checkpoint.keep=3",
                   "-t", str(target), "--results", str(results), "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    agg = json.loads(proc.stdout)["aggregate"]
    per = agg["checkpoints"]
    first_read = per[0]["read"]["start_s"]
    assert all(p["write"]["end_s"] <= first_read for p in per)  # no read before the writes end
    assert [p["read"]["bytes"] for p in per] == [p["write"]["bytes"] for p in per]
    # MLPerf's gap: the read phase's start after the write phase's end
    assert agg["restore_gap_s_max"] == first_read - per[-1]["write"]["end_s"]
    refused = call_cli("run", "--phase", "checkpoint", "--workload", "llama3-8b", "--scale",
                       str(SCALE), "--checkpoints", "3", "--set",
                       "checkpoint.restore_after=all_writes", "-t", str(target), "--results",
                       str(results))
    assert refused.returncode == 2 and "checkpoint.keep" in refused.stderr, refused.stderr
