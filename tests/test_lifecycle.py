"""Checkpoints during training, and the whole lifecycle (prep, train with checkpoints, load)
in one run and one result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import TINY_ARGS, call_cli, run_cli, saved_result

MiB = 1 << 20

CKPT = ("--set", "checkpoint.size=4MiB")


def test_checkpoints_during_training_cost_au_and_read_bandwidth(target: Path,
                                                                results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   "--phase", "train", "-t", str(target), "--results", str(results),
                   *TINY_ARGS, *CKPT, "--checkpoint-every", "1", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    ck = res["aggregate"]["checkpoint"]
    assert ck["completed"] == 2  # 2 epochs, one checkpoint after each
    for c in res["clients"]:
        assert len(c["checkpoints"]) == 2
        assert c["checkpoint_stall_s"] > 0
        assert c["au"] < c["au_without_checkpoints"]  # the stall counts against AU
        assert c["retention"]["files_deleted"] == 1
    for p in ck["checkpoints"]:
        assert p["write"]["bytes"] == 4 << 20
        assert {"read_dip", "au_lost", "read_mib_s_during", "au_during"} <= set(p)
        assert p["accelerator_s_lost"] > 0
    assert res["aggregate"]["write_bytes"] == 8 << 20
    assert not (target / "aiio" / "checkpoints").exists()


def test_checkpoint_every_steps(target: Path, results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   "--phase", "train", "-t", str(target), "--results", str(results),
                   *TINY_ARGS, *CKPT, "--checkpoint-every", "4steps", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    for c in res["clients"]:
        assert len(c["checkpoints"]) == c["steps"] // 4
    bad = call_cli("run", "--phase", "train", "-t", str(target), *TINY_ARGS, *CKPT,
                   "--checkpoint-every", "4 hours")
    assert bad.returncode == 2 and "expected N, Nepochs or Nsteps" in bad.stderr


def test_all_phases_in_one_run_and_one_result(target: Path, results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   "--phase", "all", "-t", str(target), "--results", str(results),
                   *TINY_ARGS, *CKPT, "--set", "load.size=2MiB", "--set",
                   "prep.shard_size=256KiB", "--verify")
    assert proc.returncode == 0, proc.stderr
    for title in ("prep:", "train:", "checkpoints during training", "load:", "verify"):
        assert title in proc.stdout
    res = saved_result(results)
    assert res["phase"] == "all" and res["status"] == "ok"
    agg = res["aggregate"]
    assert [s["phase"] for s in agg["stages"]] == ["prep", "train", "load"]
    assert agg["prep"]["samples"] == 24
    assert agg["train"]["checkpoint"]["completed"] == 2
    assert agg["load"]["complete"] and agg["verify"]["mismatches"] == 0
    for c in res["clients"]:
        assert {"prep", "train", "load"} <= set(c)
        assert c["load"]["bytes"] == 2 << 20
    kept = sorted(p.name for p in (target / "aiio").iterdir())
    assert kept == [".aiio-owned", ".runs.lock", "datasets", "models"]


def _train_with_checkpoints(target: Path, results: Path, *extra: str,
                            timeout: float = 300) -> dict:
    proc = run_cli("run", "--no-report",
                   "--phase", "train", "-t", str(target), "--results", str(results),
                   *TINY_ARGS, "--clients", "3", "--set", "checkpoint.size=6MiB",
                   "--checkpoint-every", "2steps", *extra, "--json", "-q", timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_checkpoint_write_rate_uses_the_real_window(target: Path, results: Path) -> None:
    """Clients reach a checkpoint at different instants: the aggregate write MiB/s is the bytes
    over first start to last durable, not over the longest single client's burst."""
    res = _train_with_checkpoints(target, results, "--set", "checkpoint.stall_model=per_client")
    ck = res["aggregate"]["checkpoint"]
    assert ck["completed"] >= 2
    drift = 0.0
    for k, p in enumerate(ck["checkpoints"]):
        bursts = [c["checkpoints"][k]["write"] for c in res["clients"]]
        start, end = min(b["start_s"] for b in bursts), max(b["end_s"] for b in bursts)
        drift = max(drift, max(b["start_s"] for b in bursts) - start)
        w = p["write"]
        assert w["last_done"]["seconds"] == pytest.approx(end - start, abs=1e-9)
        assert w["mib_s"] == pytest.approx(w["bytes"] / MiB / (end - start))
    assert drift > 0  # the clients did not start their bursts together
    windows = sum(p["write"]["last_done_s"] for p in ck["checkpoints"])
    assert ck["write_mib_s"] == pytest.approx(ck["write_bytes"] / MiB / windows)


def _au_with_stalls(c: dict) -> float:
    return c["compute_s"] / (c["compute_s"] + c["wait_s"] + c["checkpoint_stall_s"])


def test_synchronous_stall_model_is_applied_to_au_and_stall_figures(target: Path,
                                                                   results: Path) -> None:
    """By default every accelerator resumes only once the last shard is durable; its AU and the
    stall figures count that same wait."""
    res = _train_with_checkpoints(target, results)
    ck = res["aggregate"]["checkpoint"]
    assert ck["stall_model"] == "synchronous"
    for k, p in enumerate(ck["checkpoints"]):
        last_durable = p["write"]["end_s"]
        stalls = []
        for c in res["clients"]:
            r = c["checkpoints"][k]
            resumed = r["start_s"] + r["own_shard_s"] + r["wait_for_others_s"]
            assert resumed >= last_durable  # nobody resumed before every shard was durable
            # the emulator's fixed lead before a common release is stated, not a stall
            assert r["release_lead_s"] >= 0
            assert r["stall_s"] == pytest.approx(r["own_shard_s"] + r["wait_for_others_s"]
                                                 + r["retire_s"])
            stalls.append(r["stall_s"])
        assert p["stall_s"]["max"] == max(stalls)
        assert p["accelerator_s_lost"] == pytest.approx(sum(stalls))
    for c in res["clients"]:
        assert c["stall_model"] == "synchronous"
        assert c["checkpoint_stall_s"] == pytest.approx(sum(r["stall_s"]
                                                            for r in c["checkpoints"]))
        assert c["au"] == pytest.approx(_au_with_stalls(c))


def test_per_client_stall_model_waits_for_the_own_shard_only(target: Path,
                                                             results: Path) -> None:
    res = _train_with_checkpoints(target, results, "--set", "checkpoint.stall_model=per_client")
    assert res["aggregate"]["checkpoint"]["stall_model"] == "per_client"
    for c in res["clients"]:
        assert c["stall_model"] == "per_client"
        for r in c["checkpoints"]:
            assert r["wait_for_others_s"] == 0
            assert r["stall_s"] == pytest.approx(r["own_shard_s"] + r["retire_s"])
        assert c["au"] == pytest.approx(_au_with_stalls(c))


def test_synchronous_checkpoints_end_with_a_duration_bound_run(target: Path,
                                                               results: Path) -> None:
    """The deadline falls while some clients wait for the others' shards: every client still
    leaves, and the run ends with its result."""
    res = _train_with_checkpoints(target, results, "--duration", "2s", timeout=120)
    assert res["status"] == "ok"
    assert res["aggregate"]["checkpoint"]["completed"] >= 1
