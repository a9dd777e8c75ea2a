"""A sweep killed with SIGKILL cannot save anything; its result.json stays at "running". The
result names the process that wrote it (pid, host, boot id, process start), so the next reader
sees that process is gone and shows the sweep as interrupted, never running forever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from aiio.results import result

from .conftest import REPO, TINY_DATA, call_cli, client_processes


def _wait_for(path: Path, ready, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            doc = json.loads(path.read_text())
            if ready(doc):
                return doc
        except (OSError, ValueError):
            pass  # not written yet
        time.sleep(0.1)
    raise AssertionError(f"{path} never got ready")


def test_a_sigkilled_sweep_reads_as_interrupted_process_gone(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    results = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiio", "scale", "--phase", "train", "--target",
         str(tmp_path / "t"), "--results", str(results), "--clients", "1,2", "--duration",
         "60s", *TINY_DATA, "--no-charts", "--no-history", "--quiet"],
        cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not list(results.glob("*-scale-*/result.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
        (path,) = results.glob("*-scale-*/result.json")
        doc = _wait_for(path, lambda d: d.get("status") == "running")
        while not client_processes(proc.pid, recursive=True) and time.monotonic() < deadline:
            time.sleep(0.05)  # killed while its first point's clients read
        assert client_processes(proc.pid, recursive=True)
        assert doc["writer"]["pid"] == proc.pid
        # while its writer lives, it is running
        assert result.load(path).status == "running"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its clients: nothing can run
        proc.wait(timeout=60)
    assert json.loads(path.read_text())["status"] == "running"  # as SIGKILL left it
    loaded = result.load(path)
    assert loaded.status == "interrupted" and loaded.notices == ()  # its counts not blamed
    assert "process gone" in loaded["error"] and str(proc.pid) in loaded["error"]
    out = call_cli("report", str(path.parent))
    assert out.returncode == 0, out.stderr
    page = (path.parent / "report.html").read_text()
    assert "interrupted" in page and "process gone" in page


def test_a_sigkilled_run_leaves_a_result_that_reads_as_interrupted(tmp_path: Path) -> None:
    """A single run saves its result as "running" before its clients start, so a SIGKILL (an
    OOM kill, a batch system's hard limit, Open MPI's launcher 250 ms after its SIGTERM) still
    leaves a result naming what was asked, which the next reader shows as interrupted."""
    (tmp_path / "t").mkdir()
    results = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiio", "run", "--phase", "train", "--target",
         str(tmp_path / "t"), "--results", str(results), "--duration", "60s", *TINY_DATA,
         "--clients", "2", "--no-history", "--quiet"],
        cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not client_processes(proc.pid, recursive=True) and time.monotonic() < deadline:
            time.sleep(0.05)  # killed while its clients read
        assert client_processes(proc.pid, recursive=True)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    (path,) = results.glob("*-train-*/result.json")
    doc = json.loads(path.read_text())
    assert doc["status"] == "running" and doc["clients_requested"] == 2
    loaded = result.load(path)
    assert loaded.status == "interrupted" and "process gone" in loaded["error"]
    assert loaded.notices == ()  # fewer clients reported than asked: no damaged count


def test_a_writer_that_exited_but_is_not_yet_reaped_is_gone() -> None:
    # a killed MPI rank lingers as a zombie until its launcher reaps it: its pid and start
    # time still match the result's mark, and the result read as "running" (seen once, under
    # load, in tests/test_mpi.py's killed rank)
    from aiio.run import owner

    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.01)
        mark = {**owner.mark(), "pid": pid, "process_started": psutil.Process(pid).create_time()}
        assert owner.gone(mark) == f"pid {pid} on host {mark['host']} has ended"
    finally:
        os.waitpid(pid, 0)


def test_a_writer_whose_first_thread_ended_while_another_runs_is_not_gone() -> None:
    # the first thread of a process ended by itself (pthread_exit) shows as a zombie while the
    # process's other threads run on: the process lives, and its scratch folder must stay
    import ctypes
    import threading

    from aiio.run import owner

    pid = os.fork()
    if pid == 0:
        threading.Thread(target=lambda: (time.sleep(30), os._exit(0))).start()
        ctypes.CDLL(None).pthread_exit(None)
    try:
        while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.01)
        mark = {**owner.mark(), "pid": pid, "process_started": psutil.Process(pid).create_time()}
        assert owner.gone(mark) is None
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
