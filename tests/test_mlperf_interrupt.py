"""Ctrl-C during `aiio mlperf`'s scored runs: the run in progress is saved as interrupted (as
any run's), and the summary of the runs already done is saved too, marked, never valid; the
target holds nothing but aiio's dataset."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO, TINY_DATA, client_processes


def _wait_for_third_run(proc: subprocess.Popen, results: Path, timeout: float = 120) -> None:
    """Until the warm-up and the first scored run are saved and the second one's clients
    read."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [p for p in results.glob("*-mlperf-*/runs/*/result.json")
                if json.loads(p.read_text() or "{}").get("status") == "ok"]
        if len(done) >= 2 and client_processes(proc.pid, recursive=True):
            return
        time.sleep(0.1)
    raise AssertionError("the second scored run never started")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 1)])
def test_ctrl_c_in_a_scored_run_saves_the_summary_of_the_runs_done(target: Path, results: Path,
                                                                   sig: int, code: int) -> None:
    """Ctrl-C, or SIGTERM outside MPI (a scheduler's stop, which aiio treats as Ctrl-C but
    for its exit code)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiio", "mlperf", "-t", str(target), "--results", str(results),
         "-q", *TINY_DATA, "--batch-size", "2", "--clients", "2", "--duration", "3s",
         "--runs", "3"],
        cwd=REPO, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "COLUMNS": "80"})
    try:
        _wait_for_third_run(proc, results)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C reaches every process
        else:
            os.kill(proc.pid, sig)  # a scheduler stops the job's process
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    (folder,) = results.glob("*-mlperf-*")
    assert str(folder / "mlperf.json") in err
    s = json.loads((folder / "mlperf.json").read_text())
    assert s["status"] == ("interrupted" if code == 130 else "failed")
    assert s["valid"] is False
    assert len(s["runs"]) == 1 and s["runs"][0]["status"] == "ok"
    assert any("after 1 of 3 scored run(s)" in m for m in s["marks"]), s["marks"]
    statuses = sorted(json.loads(p.read_text())["status"]
                      for p in folder.glob("runs/*/result.json"))
    assert statuses == sorted([s["status"], "ok", "ok"])  # the stopped run's own, as saved
    assert (folder / "report.html").exists()
    left = {p.relative_to(target).parts[:2] for p in target.rglob("*") if p.is_file()}
    assert left <= {("aiio", ".aiio-owned"), ("aiio", ".runs.lock"), ("aiio", "datasets")}, left
