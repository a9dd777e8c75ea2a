"""Faults during a run: a client killed, Ctrl-C. Each ends with a message, an exit code and a
partial result on disk."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil

from aiio.results.history import History

from .conftest import REPO, TINY_ARGS, client_processes


def _start(target, results, *extra: str, report: bool = False) -> subprocess.Popen:
    """A tiny 30 s run; without its page unless asked (one test reads a failed run's)."""
    cmd = [sys.executable, "-m", "aiio", "run", "--target", str(target), "--results",
           str(results), "--quiet", *(() if report else ("--no-report",)), *TINY_ARGS,
           "--duration", "30s", *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _clients(proc: subprocess.Popen, want: int, timeout: float = 60) -> list[psutil.Process]:
    """Wait until the run's client processes exist and the run has started measuring."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = client_processes(proc.pid)
        if len(kids) >= want:
            time.sleep(1.0)  # let them get past the synchronized start
            return kids
        time.sleep(0.1)
    raise AssertionError("clients never started")


def _saved(results) -> dict:
    (folder,) = [p for p in results.iterdir() if p.is_dir()]  # not the history database
    return json.loads((folder / "result.json").read_text())


def test_killed_client_fails_the_run_naming_it(target, results):
    proc = _start(target, results, report=True)
    kids = _clients(proc, 2)
    kids[0].kill()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "client" in err and "SIGKILL" in err and "partial result saved" in err
    res = _saved(results)
    assert res["status"] == "failed" and "SIGKILL" in res["error"]
    # the failed run's page, drawn from what it saved: the one real failed run whose page a
    # test reads (test_report.py's failed result is made by hand)
    assert "report.html not written" not in err
    (folder,) = [p for p in results.iterdir() if p.is_dir()]
    page = (folder / "report.html").read_text()
    assert "did not finish: it was failed" in page and "SIGKILL" in page
    assert "could not be drawn" not in page


def test_ctrl_c_saves_interrupted_result(target, results):
    proc = _start(target, results)
    _clients(proc, 2)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    res = _saved(results)
    assert res["status"] == "interrupted"
    # the clients measured until they were stopped, and their figures were kept
    assert len(res["clients"]) == 2 and all(c["bytes"] > 0 for c in res["clients"])
    # and the history keeps it, as interrupted and not passing
    with History(results / "history.sqlite") as h:
        (rec,) = h.records()
    assert (rec.status, rec.passed, rec.result_id) == ("interrupted", False, res["id"])


def test_sigterm_saves_a_failed_result_not_a_running_one(target, results):
    # a scheduler (cron timeout, systemd stop, Slurm) ends a run with SIGTERM, not Ctrl-C
    proc = _start(target, results)
    _clients(proc, 2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "SIGTERM" in err
    res = _saved(results)
    assert res["status"] == "failed" and "SIGTERM" in res["error"]
    assert len(res["clients"]) == 2 and all(c["bytes"] > 0 for c in res["clients"])
