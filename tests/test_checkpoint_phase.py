"""The checkpoint phase through the CLI, on real files: sizes, durability, restore, retention,
--scale, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import TINY_ARGS, call_cli, run_cli, saved_result

MiB = 1 << 20


def leftovers(target: Path) -> list[str]:
    """Everything under TARGET/aiio except the marker, the run lock and kept datasets or
    weights."""
    root = target / "aiio"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.name not in (".aiio-owned", ".runs.lock")
                  and p.parts[len(root.parts)] not in ("datasets", "models"))


def test_checkpoint_sizes_durability_restore_and_retention(target: Path, results: Path) -> None:
    size = 6 * MiB + 12345  # not a whole number of blocks: the last file gets the remainder
    proc = run_cli("run", "--no-report",
                   "--phase", "checkpoint", "-t", str(target), "--results", str(results),
                   "--clients", "3", "--checkpoints", "3", "--set", f"checkpoint.size={size}",
                   "--set", "checkpoint.files_per_client=2", "--set", "checkpoint.threads=2",
                   "-q")
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    assert res["status"] == "ok" and res["phase"] == "checkpoint"
    agg = res["aggregate"]
    assert agg["completed"] == 3
    for ck in agg["checkpoints"]:
        # the shards add up to the configured size, and the restore read every byte back
        assert ck["write"]["bytes"] == size
        assert ck["read"]["bytes"] == size
        # the restore starts only after the last client's shards are durable
        assert ck["read"]["start_s"] >= ck["write"]["end_s"]
        assert ck["restore_gap_s"] < 30
    for c in res["clients"]:
        assert len(c["checkpoints"]) == 3
        for r in c["checkpoints"]:
            w = r["write"]
            # one fsync per file, all inside the burst the client counts as done
            assert w["histograms"]["fsync"]["count"] == 2 == w["files"]
            assert w["end_s"] - w["start_s"] >= w["fsync_s"] / 2  # two threads at most
            # every metadata call inside the burst is timed: its folder's mkdir, the
            # restore's fstat of each file
            assert w["histograms"]["mkdir"]["count"] == 1
            assert r["read"]["histograms"]["stat"]["count"] == 2
        # retention keeps 1: checkpoints 0 and 1 were deleted, 2 files each
        assert c["retention"]["files_deleted"] == 4
        assert c["retention"]["unlink_histogram"]["count"] == 4
    assert leftovers(target) == []  # the run's own checkpoints are removed at the end


def test_scale_shrinks_a_model_checkpoint_and_is_stated(target: Path, results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   "--phase", "checkpoint", "--workload", "llama3-8b", "--scale",
                   "0.0001", "--clients", "2", "-t", str(target), "--results", str(results),
                   "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    plan = res["aggregate"]["plan"]
    assert plan["base_bytes"] == 112425623552  # DLIO's formula: 104.7 GiB in 16 files
    assert plan["scale"] == 0.0001
    # each of the 16 files is scaled and rounded down
    assert 0 <= 112425623552 * 0.0001 - plan["total_bytes"] < 16
    assert res["aggregate"]["write_bytes"] == plan["total_bytes"]
    assert res["aggregate"]["mlperf_ranks"] == 8


def test_impossible_values_get_one_line_and_exit_2(target: Path, results: Path) -> None:
    cases = [
        (("--workload", "llama3-8b", "--scale", "-1"), "scale"),
        (("--workload", "llama3-8b", "--scale", "0"), "scale"),
        (("--workload", "llama3-8b", "--set", "model.parameters=0", "--set",
          "transformer.layers=0"), "checkpoint size"),
        (("--workload", "llama3-8b", "--checkpoints", "0"), "[checkpoint].count"),
        (("--checkpoint-every", "1"), "--checkpoint-every does not apply"),
    ]
    for args, words in cases:
        proc = call_cli("run", "--phase", "checkpoint", "-t", str(target), "--results",
                        str(results), *args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], (args, proc.stderr)
    assert not results.exists() or not list(results.glob("*/result.json"))


def test_checkpoint_larger_than_free_space_is_refused_before_writing(target: Path,
                                                                     results: Path) -> None:
    proc = call_cli("run", "--phase", "checkpoint", "--workload", "llama3-405b", "-t",
                    str(target), "--results", str(results), "-q")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert "needs 5.17 TiB" in line and "free" in line and len(line.splitlines()) == 1
    assert leftovers(target) == []


def test_verify_on_checkpoint_states_its_cost(target: Path, results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   "--phase", "checkpoint", "--verify", "-t", str(target), "--results",
                   str(results), "--set", "checkpoint.size=4MiB", "--clients", "2", "--json",
                   "-q")
    assert proc.returncode == 0, proc.stderr
    v = json.loads(proc.stdout)["aggregate"]["verify"]
    assert v["mismatches"] == 0 and v["blocks_checked"] == 4 * MiB // 4096
    assert v["checksum_s"] > 0 and 0 < v["cost_share"] < 1


def test_train_rejects_verify_and_prep_rejects_stagger(target: Path) -> None:
    proc = call_cli("run", "--phase", "train", "--verify", "-t", str(target), *TINY_ARGS)
    assert proc.returncode == 2 and "--verify" in proc.stderr
    proc = call_cli("run", "--phase", "prep", "--stagger", "1s", "-t", str(target))
    assert proc.returncode == 2 and "--stagger does not apply" in proc.stderr


def test_first_done_counts_only_durable_bytes(target: Path, results: Path) -> None:
    """Buffered writes return long before the data is durable: first done must count only
    the files whose fsync had returned when the fastest client's shard was persisted."""
    size = 24 * MiB
    proc = run_cli("run", "--no-report",
                   "--phase", "checkpoint", "-t", str(target), "--results", str(results),
                   "--clients", "3", "--checkpoints", "2", "--set", f"checkpoint.size={size}",
                   "--set", "checkpoint.files_per_client=2", "--cache", "fadvise_dontneed",
                   "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    agg = res["aggregate"]
    for k, ck in enumerate(agg["checkpoints"]):
        w = ck["write"]
        bursts = [c["checkpoints"][k]["write"] for c in res["clients"]]
        first_end = min(b["end_s"] for b in bursts)
        durable = sum(n for b in bursts for t, n in b["durable"] if t <= first_end)
        assert w["first_done"]["bytes"] == durable <= size
        assert w["first_done"]["seconds"] == w["first_done_s"] == first_end - w["start_s"]
        assert w["last_done"]["bytes"] == size
        assert w["last_done"]["seconds"] == w["last_done_s"] == w["end_s"] - w["start_s"]
        for b in bursts:
            # each shard is persisted after its files and then its folders were fsynced
            assert b["histograms"]["dir_fsync"]["count"] == 2
            assert max(t for t, _ in b["durable"]) <= b["end_s"]
        assert w["dir_fsync_s"] == sum(b["dir_fsync_s"] for b in bursts)
    # the one stall model of the run, applied to its stall figure
    assert agg["stall_model"] == "synchronous"
    assert agg["stall_s"] == agg["persist_last_done_s"]


def test_per_client_stall_model_is_each_clients_time_to_persist(target: Path,
                                                               results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   "--phase", "checkpoint", "-t", str(target), "--results", str(results),
                   "--clients", "3", "--checkpoints", "2", "--set", "checkpoint.size=6MiB",
                   "--set", "checkpoint.stall_model=per_client", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    agg = res["aggregate"]
    own = [r["write"]["elapsed_s"] for c in res["clients"] for r in c["checkpoints"]]
    assert agg["stall_model"] == "per_client"
    assert agg["stall_s"]["n"] == 6
    assert agg["stall_s"]["max"] == max(own) and agg["stall_s"]["min"] == min(own)
