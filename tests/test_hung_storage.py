"""Ctrl-C or SIGTERM while the storage has stopped answering, with one read in flight per
thread (the psync loop) and with eight (the io_uring ring at depth): the two loops must end
alike. The storage is a real FUSE filesystem (tests/faultfs.py) whose reads stop answering.

The kernel cannot take back a FUSE request the daemon has been handed: the clients' threads
wait in it through any signal, SIGKILL too (their processes stay zombies until the storage
answers or the mount is aborted), and removing the run's files waits on the same storage.
The result must say why the run ended while that wait lasts (it stayed "running", and a
mount taken down then replaced the interruption's message with ENOTCONN); once the storage
answers again the run ends with its one line and exit code, and its files go."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from aiio.engines import depth
from tests.faultfs import FaultMount, events, faultfs
from tests.oracle.mount import can_mount_fuse

from .conftest import REPO
from .mpi import end_job, mpi_start, needs_mpi, ranks_of, tree_pids

REASON = can_mount_fuse()
HANG_GUARD_S = 120  # a guard against a hang, not a timing
CASES = [(1, signal.SIGINT, 130, "interrupted", "interrupted by the user"),
         (8, signal.SIGINT, 130, "interrupted", "interrupted by the user"),
         (1, signal.SIGTERM, 1, "failed", "SIGTERM"),
         (8, signal.SIGTERM, 1, "failed", "SIGTERM")]


def _until(ready, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not ready():
        assert time.monotonic() < deadline, f"{what} never came"
        time.sleep(0.05)


def _status(results: Path) -> str | None:
    found = list(results.glob("*/result.json"))
    return json.loads(found[0].read_text())["status"] if found else None


@contextlib.contextmanager
def _randrw(fs: FaultMount, results: Path, stderr: IO[str],
            *sets: str) -> Iterator[subprocess.Popen]:
    """Two randrw clients reading their files on the mount for good; ended if the test ends
    first, the storage let answer so that they can."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiio", "run", "--phase", "randrw", "--target", str(fs.mount),
         "--results", str(results), "--clients", "2", "--duration", "600s",
         "--set", "prep.read_share=1.0", "--set", "prep.file_size=16MiB", *sets,
         "--quiet", "--no-report", "--no-history"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr, text=True, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            fs.release()
            proc.kill()
            proc.wait()


@pytest.mark.long
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("iodepth, sig, code, status, said", CASES,
                         ids=["psync-ctrl-c", "depth-ctrl-c", "psync-sigterm", "depth-sigterm"])
def test_a_signal_on_storage_that_stopped_answering(tmp_path: Path, iodepth: int, sig: int,
                                                    code: int, status: str, said: str) -> None:
    if iodepth > 1 and (why := depth.unavailable(iodepth)):
        pytest.skip(why)
    results, log = tmp_path / "results", tmp_path / "stderr"
    with faultfs(tmp_path, "hang", after=200) as fs, open(log, "w") as stderr:
        with _randrw(fs, results, stderr, "--set", "prep.threads=2",
                     "--set", f"prep.iodepth={iodepth}") as proc:
            _until(lambda: any(e[0] == "hung" for e in events(fs.log)), "the hang")
            if sig == signal.SIGINT:
                os.killpg(proc.pid, sig)  # as a terminal's Ctrl-C: the whole group
            else:
                proc.send_signal(sig)
            # the clients are stuck in the kernel and removing the run's files waits too: the
            # saved result already says why the run ended, and the console says it waits
            _until(lambda: _status(results) != "running" and log.read_text().strip(),
                   "a result saying why the run ended, and a line saying so")
            assert _status(results) == status
            assert proc.poll() is None  # still waiting on the storage
            _says_the_storage_did_not_answer(log.read_text(), results, fs.mount)
            fs.release()  # the storage answers again (each held read with EIO)
            proc.wait(timeout=HANG_GUARD_S)
        left = sorted(str(p.relative_to(fs.backing)) for p in fs.backing.glob("aiio/prep/*"))
    err = log.read_text()
    assert proc.returncode == code, err
    lines = err.strip().splitlines()  # the line said while it waited, then the run's own
    assert len(lines) == 2 and "Traceback" not in err, err
    assert said in lines[1] and "partial result saved" in lines[1], err
    assert "not all removed" not in err, err
    (saved,) = [json.loads(p.read_text()) for p in results.glob("*/result.json")]
    assert saved["status"] == status and said in saved["error"]
    # no client could send its figures: each is stuck in a read the storage never answered
    assert saved["clients"] == [] and "stuck in the kernel" in saved["error"], saved["error"]
    assert left == [], "the run's folder stayed"


def _says_the_storage_did_not_answer(err: str, results: Path, mount: Path) -> None:
    """One line, while the run waits on the storage: what was saved, what may stay on the
    target and how to remove it."""
    (line,) = err.strip().splitlines()
    (folder,) = results.iterdir()
    for words in ("did not answer", "2 clients", str(folder), str(mount / "aiio"),
                  f"aiio clean --target {mount}"):
        assert words in line, line


@pytest.mark.long
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_a_mount_taken_down_under_a_stopped_run_keeps_the_runs_own_ending(tmp_path: Path):
    """The storage never answers again; the admin takes the mount down (its daemon ends, the
    kernel aborts every request: ENOTCONN). Removing the run's files then fails, and so did
    letting go of its lock's file on that mount: the message was ENOTCONN, exit 1, and the
    result stayed "running". The run's own ending stays, the removal's failure beside it."""
    results = tmp_path / "results"
    with faultfs(tmp_path, "hang", after=200) as fs:
        proc = subprocess.Popen(
            [sys.executable, "-m", "aiio", "run", "--phase", "randrw", "--target",
             str(fs.mount), "--results", str(results), "--clients", "1", "--duration", "600s",
             "--set", "prep.read_share=1.0", "--set", "prep.file_size=16MiB", "--quiet",
             "--no-report", "--no-history"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        try:
            _until(lambda: any(e[0] == "hung" for e in events(fs.log)), "the hang")
            os.killpg(proc.pid, signal.SIGINT)
            _until(lambda: _status(results) != "running", "a result saying why the run ended")
        except BaseException:
            fs.release()
            proc.kill()
            raise
    _, err = proc.communicate(timeout=HANG_GUARD_S)  # the mount is gone
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()  # the line said while it waited, then the run's own
    assert len(lines) == 2 and "did not answer" in lines[0] and "Traceback" not in err, err
    assert lines[1].startswith("aiio: interrupted by the user"), err
    assert "not all removed" in lines[1], err
    (saved,) = [json.loads(p.read_text()) for p in results.glob("*/result.json")]
    assert saved["status"] == "interrupted" and "not all removed" in saved["error"]


@pytest.mark.long
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_the_clients_the_storage_still_answers_keep_their_figures(tmp_path: Path) -> None:
    """Only client 0's file stops answering: at the SIGTERM client 1 sends what it measured
    up to the stop, and the result keeps it beside the line naming client 0 as stuck."""
    results, log = tmp_path / "results", tmp_path / "stderr"
    with faultfs(tmp_path, "hang", after=200, name="randrw-00000") as fs, \
            open(log, "w") as stderr:
        with _randrw(fs, results, stderr) as proc:
            _until(lambda: any(e[0] == "hung" for e in events(fs.log)), "the hang")
            proc.send_signal(signal.SIGTERM)
            _until(lambda: _status(results) != "running" and log.read_text().strip(),
                   "a result saying why the run ended, and a line saying so")
            (saved,) = [json.loads(p.read_text()) for p in results.glob("*/result.json")]
            fs.release()
            proc.wait(timeout=HANG_GUARD_S)
    err = log.read_text()
    assert proc.returncode == 1, err
    assert "client 0 stuck in the kernel" in err.splitlines()[0], err
    assert "client 0 sent no figures: stuck in the kernel" in saved["error"], saved["error"]
    (kept,) = saved["clients"]
    assert kept["client"] == 1 and kept["read"]["bytes"] > 0, kept


@pytest.mark.long
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@needs_mpi
def test_stuck_clients_of_every_rank_are_named(tmp_path: Path) -> None:
    """Two ranks, one client each, on a mount that stops answering; Ctrl-C at rank 0. Each
    rank's client is stuck in the kernel; the result named only rank 0's (client 0): rank 1
    reaped its own and said nothing of them."""
    results = tmp_path / "results"
    with faultfs(tmp_path, "hang", after=200) as fs:
        proc = mpi_start(2, "run", "--phase", "randrw", "--target", str(fs.mount), "--results",
                         str(results), "--clients", "2", "--duration", "600s",
                         "--set", "prep.read_share=1.0", "--set", "prep.file_size=16MiB",
                         "--set", "prep.threads=1", "--quiet", "--no-report", "--no-history")
        pids: list[int] = []
        try:
            _until(lambda: any(e[0] == "hung" for e in events(fs.log)), "the hang")
            pids = tree_pids(proc)
            ranks_of(proc)[0].send_signal(signal.SIGINT)  # rank 0 stops every host
            _until(lambda: _status(results) not in (None, "running"),
                   "a result saying why the run ended")
            (saved,) = [json.loads(p.read_text()) for p in results.glob("*/result.json")]
        finally:
            fs.release()
            end_job(proc, pids)
    assert saved["status"] == "interrupted", saved["error"]
    assert "2 clients (0, 1) sent no figures: stuck in the kernel" in saved["error"], \
        saved["error"]
