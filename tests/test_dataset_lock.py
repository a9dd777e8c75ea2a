"""Two aiio commands on one dataset at once (overlapping cron jobs, two engineers).

Nothing locked a dataset: a second run found the first one's dataset without a manifest
("incomplete"), removed it while the first was writing it and generated its own. The first
then wrote a manifest saying "complete" over files that were gone, or failed with
FileNotFoundError, and the second with "Directory not empty"; later runs trusted the manifest.
Now a run holds a lock on the dataset: exclusive while it generates it, shared while it reads
it. Real commands, real files: no run here is timed."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from aiio.storage import dataset as ds
from aiio.storage.locks import FolderLock
from aiio.storage.target import Target
from aiio.workload import load_workload

from .conftest import (
    TINY_DATA,
    call_cli,
    client_processes,
    finish,
    run_cli,
    saved_result,
    tiny_workload,
    wait_for,
)

# One generator writes them in about 1.5 s on an idle machine: the first command is paused
# (SIGSTOP to its process group) once its first folder is there, and goes on only when the
# second has said it waits, so the second always comes while the first generates, however
# loaded the machine (10,000 files, 14 s and 10 s of CPU a test, only made that likely). Four
# folders: the pause comes in the first, with three more to write.
FILES = 1_000
BIG_DATA = ("--set", f"dataset.num_files={FILES}", "--set", "dataset.sample_size=4KiB",
            "--set", "dataset.sample_size_stdev=1KiB", "--set", "dataset.files_per_dir=250")
WAITING = "waiting for another aiio run"


def pause_generating(first: subprocess.Popen, target: Path) -> None:
    """Once the first command generates (its first folder is there), stop it and its
    generators where they are, holding the dataset's lock."""
    folder = target / "aiio" / "datasets" / "demo"
    wait_for(first, lambda: (folder / "d00000").is_dir(), "the first generation")
    os.killpg(first.pid, signal.SIGSTOP)
    assert first.poll() is None, "the first generation ended before it could be paused"
    assert not (folder / "manifest.json").exists(), "the first generation had ended"


def waits_then_resume(first: subprocess.Popen, second: subprocess.Popen, log: Path) -> None:
    """Once the second command says it waits, let the paused first one go on."""
    try:
        wait_for(second, lambda: WAITING in log.read_text(), "the second command's wait")
    finally:
        os.killpg(first.pid, signal.SIGCONT)


def big_workload():
    return load_workload("demo", [("dataset", "num_files", FILES),
                                  ("dataset", "sample_size", "4KiB"),
                                  ("dataset", "sample_size_stdev", "1KiB"),
                                  ("dataset", "files_per_dir", 250)])


def assert_complete(target: Path, w) -> None:
    """A complete, matching manifest, and every file it indexes there at its size."""
    data, why = ds.check(Target(target), w)
    assert data is not None, why
    sizes = data.index()["file_sizes"]
    on_disk = np.array([Path(data.path(i)).stat().st_size if Path(data.path(i)).exists()
                        else -1 for i in range(data.num_files)])
    missing = int((on_disk < 0).sum())
    assert missing == 0, f"{missing} of {data.num_files} files missing"
    assert (on_disk == sizes).all()
    assert len(list(data.folder.glob("d*/f*"))) == data.num_files


@pytest.mark.parametrize("second_args", [
    ("datagen",),
    ("run", "--no-report", "--no-history", "--clients", "2", "--duration", "2s"),
], ids=["datagen", "run"])
def test_a_second_command_waits_for_the_generation_and_reuses_its_dataset(
        target, tmp_path, start, second_args):
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    first = start(logs[0], "datagen", "-t", str(target), "--workers", "1", *BIG_DATA)
    pause_generating(first, target)
    results = ("--results", str(tmp_path / "results")) if second_args[0] == "run" else ()
    second = start(logs[1], *second_args, "-t", str(target), *results, *BIG_DATA)
    waits_then_resume(first, second, logs[1])
    code2, said2 = finish(second, logs[1])
    code1, said1 = finish(first, logs[0])
    assert (code1, code2) == (0, 0), said1 + said2
    assert "Traceback" not in said1 + said2
    assert said2.count(WAITING) == 1, said2
    assert "generating dataset demo:" not in said2, said2  # made once, by the first
    if second_args[0] == "datagen":
        assert "already present and matching" in said2, said2
    else:
        assert saved_result(tmp_path / "results")["status"] == "ok"
    assert_complete(target, big_workload())


def test_a_run_that_only_reads_does_not_wait_and_a_regeneration_waits_for_readers(
        target, tmp_path, start):
    """Two runs reading one complete dataset both hold the shared lock; `datagen --force`
    needs it alone, so it waits until no run reads it, then generates it again."""
    assert run_cli("datagen", "-t", str(target), *TINY_DATA).returncode == 0
    logs = [tmp_path / "reading.log", tmp_path / "forced.log"]
    reading = start(logs[0], "run", "-t", str(target), "--results", str(tmp_path / "a"),
                    "--no-report", "--no-history", *TINY_DATA, "--clients", "2",
                    "--duration", "120s")  # until stopped below: 8 s ran out under load once
    wait_for(reading, lambda: client_processes(reading.pid), "the first run's clients")
    refused = call_cli("clean", "-t", str(target))  # it removed the data the run was reading
    assert refused.returncode == 2 and "another aiio run uses dataset demo" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    forced = start(logs[1], "datagen", "-t", str(target), "--force", *TINY_DATA)
    wait_for(forced, lambda: WAITING in logs[1].read_text(), "the regeneration's wait")
    assert reading.poll() is None  # it waits for the run that reads
    other = run_cli("run", "-t", str(target), "--results", str(tmp_path / "b"), "--no-report",
                    "--no-history", *TINY_DATA, "--clients", "2", "--epochs", "1")
    assert other.returncode == 0, other.stdout + other.stderr
    assert WAITING not in other.stdout + other.stderr
    assert reading.poll() is None  # the reading run still held the dataset all along
    os.killpg(reading.pid, signal.SIGINT)  # its Ctrl-C lets the regeneration go
    code, said = finish(reading, logs[0])
    assert code == 130 and WAITING not in said, said
    code, said = finish(forced, logs[1])
    assert code == 0, said
    assert said.count(WAITING) == 1, said
    assert_complete(target, tiny_workload())


def test_the_lock_file_stays_in_aiios_folder_and_goes_with_aiio_clean(target):
    assert run_cli("datagen", "-t", str(target), *TINY_DATA).returncode == 0
    locks = sorted(target.rglob("*.lock"))
    # the dataset's beside its folder, the target's run lock beside the ownership marker
    assert locks == [target / "aiio" / ".runs.lock",
                     target / "aiio" / "datasets" / ".demo.lock"], locks
    assert [p.name for p in target.iterdir()] == ["aiio"]
    proc = run_cli("clean", "-t", str(target))
    assert proc.returncode == 0, proc.stderr
    assert list(target.iterdir()) == []


def test_a_filesystem_without_locks_generates_with_a_one_line_warning(target, monkeypatch):
    """flock on a filesystem that has no locks (an NFS mount without a lock manager) fails
    with ENOLCK or EOPNOTSUPP: the run goes on, saying once what is not covered."""
    from aiio.storage import locks

    def no_locks(fd: int, how: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(locks.fcntl, "flock", no_locks)
    said: list[str] = []
    data, generated = ds.ensure(Target(target), tiny_workload(), note=said.append)
    assert generated and data.num_files == 24
    warned = [line for line in said if "cannot lock" in line]
    assert len(warned) == 1 and "\n" not in warned[0], said
    again, generated = ds.ensure(Target(target), tiny_workload(), note=said.append)
    assert not generated and again.num_files == 24


@pytest.mark.parametrize("command", [("run",), ("scale", "--clients", "1,2", "--no-charts")])
@pytest.mark.parametrize("sig, code, words", [(signal.SIGINT, 130, "aiio: interrupted"),
                                              (signal.SIGTERM, 1, "aiio: ended by SIGTERM")],
                         ids=["ctrl-c", "sigterm"])
def test_a_signal_ends_the_wait_and_leaves_the_other_runs_generation_alone(
        target, tmp_path, start, command, sig, code, words):
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    first = start(logs[0], "datagen", "-t", str(target), "--workers", "1", *BIG_DATA)
    pause_generating(first, target)
    second = start(logs[1], *command, "-t", str(target), "--results",
                   str(tmp_path / "results"), "--no-report", "--no-history", *BIG_DATA)
    try:
        wait_for(second, lambda: WAITING in logs[1].read_text(), "the second run's wait")
        os.killpg(second.pid, sig)
        code2, said2 = finish(second, logs[1])
    finally:
        os.killpg(first.pid, signal.SIGCONT)  # the first generates on from where it was
    # it never started its I/O: one line, its exit code and no result, as a refusal (a Ctrl-C
    # kept one saved "interrupted", a SIGTERM one saved "failed" and a sweep of no points:
    # runs in the history that had measured nothing)
    assert code2 == code and "Traceback" not in said2, said2
    assert said2.strip().splitlines()[-1].startswith(words), said2
    assert "no result" in said2.strip().splitlines()[-1], said2
    assert not list((tmp_path / "results").rglob("result.json"))
    code1, said1 = finish(first, logs[0])
    assert code1 == 0, said1
    assert_complete(target, big_workload())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a part as another user")
def test_another_users_lock_file_is_taken_shared_and_a_lock_none_can_make_is_warned_of():
    """Two engineers, two users: the one who did not generate the dataset can only read its
    lock file (0644) and cannot create one in its folder (0755). Reading the dataset must
    still work, under the shared lock where there is a lock file, with the one-line warning
    where there is none (as it read before the lock)."""
    folder = Path(tempfile.mkdtemp(prefix="aiio-test-lock-"))
    try:
        folder.chmod(0o755)
        (folder / ".made.lock").touch()
        (folder / ".made.lock").chmod(0o644)
        assert _as_nobody(folder / ".made.lock") == "shared"
        assert _as_nobody(folder / ".none.lock") == "warned"
    finally:
        shutil.rmtree(folder)


def _as_nobody(path: Path) -> str:
    """In a forked child running as user nobody: FolderLock(path).shared(), and what came of
    it ('shared', 'warned', or the error)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        said = "none"
        try:
            os.setgid(65534)
            os.setuid(65534)
            lock, notes = FolderLock(path, "dataset demo"), []
            lock.shared(notes.append)
            said = "shared" if lock.mode == fcntl.LOCK_SH else \
                "warned" if len(notes) == 1 and "cannot lock" in notes[0] else repr(notes)
        except BaseException as exc:  # reported to the parent, whatever it is
            said = repr(exc)
        finally:
            os.write(write, said.encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as got:
        said = got.read()
    os.waitpid(pid, 0)
    return said


def test_a_lock_file_planted_as_a_link_is_one_line_not_a_traceback(target: Path) -> None:
    """The lock's file is opened without following a link (a link planted in aiio's folder
    is refused, not followed): the refusal, an OSError, reached the user as a traceback."""
    first = run_cli("datagen", "--target", str(target), *TINY_DATA)
    assert first.returncode == 0, first.stderr
    lock = target / "aiio" / "datasets" / ".demo.lock"
    lock.unlink()
    lock.symlink_to(target / "elsewhere")
    proc = run_cli("datagen", "--target", str(target), *TINY_DATA, "--force")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("aiio: ") and ".demo.lock" in lines[-1], proc.stderr
    assert not (target / "elsewhere").exists()
