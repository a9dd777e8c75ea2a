"""The prep phase: every raw sample once per pass, metadata counts that match the files
created, and the randrw mix."""

from __future__ import annotations

import json
import math
from pathlib import Path

from aiio.phases.prep import client_items
from aiio.storage.dataset import check
from aiio.storage.target import Target

from .conftest import TINY_ARGS, call_cli, run_cli, tiny_workload

PREP = (*TINY_ARGS, "--set", "prep.threads=1", "--set", "prep.passes=2",
        "--set", "prep.shard_size=256KiB", "--set", "prep.transfer_size=64KiB")


def test_every_sample_once_per_pass_over_all_clients(target: Path) -> None:
    from aiio.storage import dataset as ds
    data = ds.generate(Target(target), tiny_workload(dataset__num_files=37))
    for clients in (1, 3, 5):
        seen = [[] for _ in range(2)]
        lists = 0
        for c in range(clients):
            items = list(client_items(data, 1, 2, clients, c))
            lists += sum(1 for kind, _ in items if kind == "list")
            half = len(items) // 2
            for p, part in enumerate((items[:half], items[half:])):
                seen[p] += [i for kind, i in part if kind == "sample"]
        assert all(sorted(s) == list(range(37)) for s in seen)
        assert lists == 2 * math.ceil(37 / 10)
        assert seen[0] != seen[1]  # reshuffled between passes


def test_prep_reads_each_sample_per_pass_and_counts_metadata(target: Path,
                                                            results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   "--phase", "prep", "-t", str(target), "--results", str(results),
                   *PREP, "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    data, _ = check(Target(target), tiny_workload())
    agg = res["aggregate"]
    assert agg["samples"] == 2 * 24
    assert agg["read_bytes"] == 2 * data.total_bytes
    assert agg["write_bytes"] == agg["read_bytes"]  # output_ratio 1
    ops = agg["metadata"]["ops"]
    assert ops["stat"]["count"] == ops["open"]["count"] == 48
    assert ops["list"]["count"] == 2 * 3  # 24 files, 10 to a folder, 2 passes
    assert ops["create"]["count"] == ops["unlink"]["count"] == agg["shards"]
    for c in res["clients"]:
        # one thread per client: its shards are its output stream cut at shard_size
        assert c["shards"] == math.ceil(c["write"]["bytes"] / (256 * 1024))
        assert c["metadata"]["ops"]["create"]["count"] == c["shards"]
    assert not (target / "aiio" / "prep").exists()  # staged shards removed, folder too


def test_randrw_mix_with_verify(target: Path, results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   "--phase", "prep", "-t", str(target), "--results", str(results),
                   "--set", "prep.mode=randrw", "--set", "prep.file_size=4MiB",
                   "--set", "prep.duration=1s", "--set", "prep.threads=2", "--clients", "2",
                   "--verify", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    agg = res["aggregate"]
    assert agg["mode"] == "randrw"
    # each client's closing fsync has its latency histogram beside the writes'
    assert [c["write"]["histograms"]["fsync"]["count"] for c in res["clients"]] == [1, 1]
    assert agg["write"]["latency"]["fsync"]["count"] == 2
    assert agg["read"]["ops"] > 0 and agg["write"]["ops"] > 0
    assert agg["read_bytes"] == 4096 * agg["read"]["latency"]["read"]["count"]
    assert agg["verify"]["mismatches"] == 0
    assert agg["verify"]["blocks_checked"] == agg["read"]["latency"]["read"]["count"]
    assert not (target / "aiio" / "prep").exists()


def test_randrw_reads_only_counts_every_read_and_byte(target: Path, results: Path) -> None:
    """The read-only mix (fio randread at N threads): every read timed, bytes exact."""
    proc = run_cli("run", "--no-report",
                   "--phase", "prep", "-t", str(target), "--results", str(results),
                   "--set", "prep.mode=randrw", "--set", "prep.file_size=4MiB",
                   "--set", "prep.read_share=1", "--set", "prep.duration=500ms",
                   "--set", "prep.threads=3", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    agg = out["aggregate"]
    reads = agg["read"]["latency"]["read"]["count"]
    assert reads > 0 and agg["write"]["ops"] == 0 and agg["write_bytes"] == 0
    assert agg["read_bytes"] == 4096 * reads == agg["bytes"]
    assert sum(c["read"]["bytes"] for c in out["clients"]) == agg["read_bytes"]


def test_prep_verify_needs_randrw(target: Path) -> None:
    proc = call_cli("run", "--phase", "prep", "--verify", "-t", str(target), *TINY_ARGS)
    assert proc.returncode == 2 and "randrw" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_clients_with_no_file_do_not_close_the_first_done_window(target: Path,
                                                                 results: Path) -> None:
    # More clients than files: a client with none ends at once, and the first-done window
    # (until the first client finished) closed with it, after 1.7 ms of an 26 ms run.
    proc = run_cli("run", "--no-report", "--phase", "prep", "-t", str(target), "--results",
                   str(results), "--set", "dataset.num_files=2", "--set",
                   "dataset.sample_size=64KiB", "--set", "dataset.sample_size_stdev=0",
                   "--clients", "3", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    working = [c for c in res["clients"] if c["read"]["bytes"]]
    assert len(working) == 2
    for kind in ("read", "write"):
        window = min(c[kind]["elapsed_s"] for c in working if c[kind]["ops"])
        assert res["aggregate"][kind]["first_done"]["seconds"] == window, kind
