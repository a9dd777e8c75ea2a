"""Every phase sweeps: checkpoint, load and prep over client counts, each point's phase figures
against clients, and no sweep result left "running" once the process has exited."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiio.results import result

from .conftest import REPO, call_cli, client_processes, run_cli

DATA = ("--set", "dataset.num_files=24", "--set", "dataset.sample_size=64KiB",
        "--set", "dataset.sample_size_stdev=0", "--no-charts", "--no-history", "--no-report")
SMALL = (*DATA, "--set", "checkpoint.size=8MiB", "--set", "load.size=8MiB", "-q")


def _sweep(tmp_path: Path, phase: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    proc = run_cli("scale", "--no-report",
                   "--phase", phase, "--clients", "1,2", "--target", str(target),
                   "--results", str(results), *SMALL, *extra)
    folders = list(results.glob("*-scale-*"))
    assert len(folders) == 1, (proc.stderr, folders)
    return proc, result.load(folders[0])


@pytest.mark.parametrize("phase, extra", [
    ("checkpoint", "persist_s"), ("load", "ready_s"), ("prep", "samples_per_s")])
def test_every_phase_sweeps_with_its_own_figures(tmp_path, phase, extra):
    proc, saved = _sweep(tmp_path, phase)
    assert proc.returncode == 0, proc.stderr
    assert saved["status"] == "ok"
    assert [r["clients"] for r in saved["table"]] == [1, 2]
    for row in saved["table"]:
        assert row["aggregate_mib_s"] > 0 and row["figures"][extra]["mean"] > 0, row
    assert saved["verdict"]["shape"] != "insufficient"
    assert saved["verdict"]["basis"].startswith("aggregate")
    # the table names the phase's own figure against clients
    title = {"persist_s": "persist s", "ready_s": "all ready s", "samples_per_s": "samples/s"}
    assert title[extra] in proc.stdout


def test_checkpoint_sweep_judges_the_write_rate(tmp_path):
    _, saved = _sweep(tmp_path, "checkpoint")
    for row, point in zip(saved["table"], saved["points"], strict=True):
        agg = point["result"]["aggregate"]
        assert row["aggregate_mib_s"] == pytest.approx(agg["write_mib_s"])
        assert row["figures"]["persist_s"]["mean"] == pytest.approx(
            agg["persist_last_done_s"]["mean"])
    assert "time to persist" in saved["verdict"]["basis"]


def test_checkpoint_sweep_shows_write_latency(tmp_path):
    proc, _ = _sweep(tmp_path, "checkpoint")
    per_client = proc.stdout[proc.stdout.index("per client"):]
    assert "write" in per_client and "create" not in per_client


def test_prep_sweep_judges_reads_plus_writes(tmp_path):
    _, saved = _sweep(tmp_path, "prep")
    for row, point in zip(saved["table"], saved["points"], strict=True):
        agg = point["result"]["aggregate"]
        both = agg["read"]["first_done"]["mib_s"] + agg["write"]["first_done"]["mib_s"]
        assert row["aggregate_mib_s"] == pytest.approx(both)


def test_bad_input_the_phase_finds_is_refused_before_the_sweep_starts(tmp_path):
    # an unaligned shard size is refused by the phase's own checks: one line, exit 2, and no
    # sweep result at all (none can stay "running")
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    proc = call_cli("scale", "--phase", "prep", "--clients", "1,2", "--target", str(target),
                    "--results", str(results), *SMALL, "--set", "prep.shard_size=1000001")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "prep.shard_size" in lines[0] and "Traceback" not in lines[0]
    assert not results.exists()


def test_ctrl_c_during_a_checkpoint_sweep_leaves_no_running_result(tmp_path):
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiio", "scale", "--phase", "checkpoint", "--clients", "1,2,4",
         "--target", str(target), "--results", str(results), "-q", *DATA,
         "--set", "checkpoint.size=64MiB", "--set", "checkpoint.count=8"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not client_processes(proc.pid) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    for path in results.glob("*/result.json"):
        assert json.loads(path.read_text())["status"] != "running", path


def test_checkpoint_sweep_chart_names_the_figure_it_plots(tmp_path):
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    proc = run_cli("scale", "--no-report", "--phase", "checkpoint", "--clients", "1,2", "--target",
                   str(target), "--results", str(results), *[a for a in SMALL
                                                            if a != "--no-charts"])
    assert proc.returncode == 0, proc.stderr
    [folder] = list(results.glob("*-scale-*"))
    svg = (folder / "aggregate.svg").read_text()
    assert "measured (write, over the time to persist)" in svg and "(first done)" not in svg


def test_lifecycle_sweep_reads_au_from_its_train_stage(tmp_path):
    """A lifecycle run keeps AU under its train stage: the sweep's table and verdict read it
    there, so compute-paced points are demand-bound, never linear scaling of the storage."""
    proc, saved = _sweep(tmp_path, "all", "--set", "train.epochs=1",
                         "--set", "train.compute_time.h100=0.05")
    assert proc.returncode == 0, proc.stderr
    for row, point in zip(saved["table"], saved["points"], strict=True):
        train = point["result"]["aggregate"]["train"]
        assert row["au_min"] == pytest.approx(train["au_min"]), row
        assert row["au_goal"] == train["au_goal"]
    # paced by the runs' own AU rule (MLPerf's mean by default), as the verdict judges it
    paced = [row["clients"] for row, point in zip(saved["table"], saved["points"], strict=True)
             if result.AuFigures.of(point["result"]["aggregate"]["train"]).paced_by_compute]
    verdict = saved["verdict"]
    if paced == [1, 2]:  # 50 ms of compute per step of 2 x 64 KiB: the usual case
        assert verdict["shape"] == "demand_bound", verdict
        assert "scales linearly" not in " ".join(verdict["statements"])
    assert verdict["demand_bound_up_to"] == (paced[-1] if paced and paced[0] == 1 else None)


@pytest.mark.parametrize("phase", ["checkpoint", "train", "load"])
def test_a_sweep_on_a_local_folder_says_its_placement_is_not_known(tmp_path, phase):
    # a local filesystem does not say which server holds a file: each point and the verdict
    # say so, and claim no collision
    proc, saved = _sweep(tmp_path, phase)
    assert proc.returncode == 0, proc.stderr
    for point in saved["points"]:
        placed = point["result"]["aggregate"]["placement"]
        assert placed["source"] is None and "does not say" in placed["reason"]
        assert all("placement" not in c for c in point["result"]["clients"])
    verdict = saved["verdict"]
    assert verdict["placement"]["source"] is None and verdict["placement"]["collided_at"] == []
    assert any(s.startswith("placement not known") for s in verdict["statements"])
