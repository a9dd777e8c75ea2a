"""Checkpoints during training, and the whole lifecycle (prep, train with checkpoints, load)
in one run and one result."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import TINY_ARGS, run_cli

CKPT = ("--set", "checkpoint.size=4MiB")


def test_checkpoints_during_training_cost_au_and_read_bandwidth(target: Path,
                                                                results: Path) -> None:
    proc = run_cli("run", "--phase", "train", "-t", str(target), "--results", str(results),
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
    proc = run_cli("run", "--phase", "train", "-t", str(target), "--results", str(results),
                   *TINY_ARGS, *CKPT, "--checkpoint-every", "4steps", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    for c in res["clients"]:
        assert len(c["checkpoints"]) == c["steps"] // 4
    bad = run_cli("run", "--phase", "train", "-t", str(target), *TINY_ARGS, *CKPT,
                  "--checkpoint-every", "4 hours")
    assert bad.returncode == 2 and "expected N, Nepochs or Nsteps" in bad.stderr


def test_all_phases_in_one_run_and_one_result(target: Path, results: Path) -> None:
    proc = run_cli("run", "--phase", "all", "-t", str(target), "--results", str(results),
                   *TINY_ARGS, *CKPT, "--set", "load.size=2MiB", "--set",
                   "prep.shard_size=256KiB", "--verify")
    assert proc.returncode == 0, proc.stderr
    for title in ("prep:", "train:", "checkpoints during training", "load:", "verify"):
        assert title in proc.stdout
    found = sorted(results.glob("*/result.json"))
    assert len(found) == 1
    res = json.loads(found[0].read_text())
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
    assert kept == [".aiio-owned", "datasets", "models"]
