"""`aiio clean` while a run uses the target: refused in one line, the run's files untouched.

Clean refused only while a run held a dataset's lock; a checkpoint run's shards, a randrw
run's files and a load run's weights were removed under the run, which then failed or
reported bytes of files that were gone. Every run now holds the target's run lock (shared)
from its first write under TARGET/aiio to its end, and clean takes it alone or refuses. Real
runs in subprocesses, clean beside them; each run is held long by something other than the
machine's speed (a write throttle, a duration, a stagger), and nothing here is timed."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiio.storage.locks import FolderLock
from aiio.storage.target import RUN_LOCK, Target, remove_tree

from .conftest import REPO, call_cli, client_processes, run_cli, saved_result
from .storage import can_build_storage, small_tmpfs, throttled_disk

MiB = 2**20
HANG_GUARD_S = 240  # a guard against a hang, not a timing
RUN = ("--quiet", "--no-report", "--no-history")


@contextlib.contextmanager
def _started(cmd: list[str]) -> Iterator[subprocess.Popen]:
    """`cmd` in the background (killed if the test ends first)."""
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            env={**os.environ, "COLUMNS": "160"})
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def _clean_beside(proc: subprocess.Popen, target: Path, scratch: str,
                  refused_for: str = "another aiio run is using the target") -> None:
    """Once the run measures with its files there: clean is refused and they stay; the run
    ends ok; then clean removes everything."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not (client_processes(proc.pid) and list(target.glob(scratch))):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    files = sorted(target.glob(scratch))
    refused = call_cli("clean", "--target", str(target))
    assert proc.poll() is None, "the run ended before clean was tried: make it longer"
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert refused_for in refused.stderr, refused.stderr
    assert all(f.exists() for f in files), "clean removed the running run's files"
    _, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 0, err
    cleaned = call_cli("clean", "--target", str(target))
    assert cleaned.returncode == 0, cleaned.stderr
    assert not (target / "aiio").exists()


def _aiio(*args: str) -> list[str]:
    return [sys.executable, "-m", "aiio", *args]


def test_clean_beside_a_randrw_run(target: Path, results: Path) -> None:
    cmd = _aiio("run", "--phase", "randrw", "--target", str(target), "--results", str(results),
                "--clients", "2", "--duration", "6s", "--set", "prep.file_size=8MiB", *RUN)
    with _started(cmd) as proc:
        _clean_beside(proc, target, "aiio/prep/*/randrw-*.bin")
    assert saved_result(results)["status"] == "ok"


@pytest.mark.parametrize("reused", [False, True], ids=["writes-the-weights", "reuses-them"])
def test_clean_beside_a_load_run(target: Path, results: Path, reused: bool) -> None:
    load = ("run", "--phase", "load", "--target", str(target), "--set", "load.size=8MiB", *RUN)
    if reused:  # weights an earlier run wrote: this run only reads them
        assert run_cli(*load, "--results", str(results / "earlier")).returncode == 0
    # the second replica starts 6 s after the first: the run reads the weights that long
    cmd = _aiio(*load, "--results", str(results / "run"), "--clients", "2", "--stagger", "6s")
    with _started(cmd) as proc:
        _clean_beside(proc, target, "aiio/models/*/weights-*.bin",
                      "another aiio run uses model weights demo-")
    res = saved_result(results / "run")
    assert res["status"] == "ok" and res["aggregate"]["complete"] is True


@pytest.mark.skipif(can_build_storage() is not None, reason=can_build_storage() or "")
def test_clean_beside_a_checkpoint_run(tmp_path: Path) -> None:
    # 24 MiB written at 3 MiB/s: the shards are being written for about 8 s
    with small_tmpfs(tmp_path, 200) as ram, \
            throttled_disk(ram, 0, size_mib=160, write_bps=3 * MiB) as disk:
        results = tmp_path / "results"
        cmd = disk.command(*_aiio("run", "--phase", "checkpoint", "--target", str(disk.mount),
                                  "--results", str(results), "--clients", "2",
                                  "--set", "checkpoint.size=24MiB", *RUN))
        with _started(cmd) as proc:
            _clean_beside(proc, disk.mount, "aiio/checkpoints/*/*")
    assert saved_result(results)["status"] == "ok"


def test_a_run_that_waited_for_clean_holds_a_lock_that_counts(target: Path) -> None:
    """Clean holds the run lock alone while it removes TARGET/aiio, lock file and all. A run
    starting meanwhile waits for it, then must hold the lock file made afresh: the one clean
    removed locks nothing, and the next clean would remove the run's files."""
    Target(target).claim()
    cleaning = FolderLock(target / "aiio" / RUN_LOCK, "the target")
    assert cleaning.try_exclusive()
    run, said = Target(target), []
    run.note = said.append
    waiter = threading.Thread(target=run.hold)
    waiter.start()
    deadline = time.monotonic() + HANG_GUARD_S
    while not said and time.monotonic() < deadline:
        time.sleep(0.01)
    assert said and "waiting for aiio clean" in said[0], said
    remove_tree(target / "aiio", target / "aiio")
    cleaning.close()
    waiter.join(HANG_GUARD_S)
    assert not waiter.is_alive()
    assert Target(target).is_owned()  # made again, marker and all
    refused = call_cli("clean", "--target", str(target))
    assert refused.returncode == 2 and "is using the target" in refused.stderr, refused.stderr
    run.release()
    assert call_cli("clean", "--target", str(target)).returncode == 0


def test_without_locks_a_run_warns_once_and_clean_goes_on(target: Path, monkeypatch) -> None:
    """flock failing outright (an NFS mount without a lock manager: ENOLCK): as for a
    dataset's lock, the run goes on with one line saying what is not covered, and clean,
    which cannot tell, removes the folder."""
    from aiio.storage import locks

    def no_locks(fd: int, how: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(locks.fcntl, "flock", no_locks)
    run, said = Target(target), []
    run.note = said.append
    run.make_run_folder(run.root / "prep" / "run-1")
    run.subdir("prep")
    warned = [line for line in said if "cannot lock" in line]
    assert len(warned) == 1 and "\n" not in warned[0], said
    assert run.written
    assert call_cli("clean", "--target", str(target)).returncode == 0
    assert not (target / "aiio").exists()
