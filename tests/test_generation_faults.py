"""A dataset generator process that dies, or a Ctrl-C, while a run generates its dataset.

The generator processes were a multiprocessing.Pool: a worker killed (SIGKILL, the OOM killer,
a SIGTERM) lost its task, and the run waited for it forever (the pool's imap), or its
terminate blocked on the task queue's lock that the dead worker held. The run must instead
say which generator died, remove the partial dataset and end, leaving no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from .conftest import REPO, saved_result
from .mpi import left_behind

# Many small files: generation lasts far longer than the moment the test needs to hit it.
BIG_DATA = ("--set", "dataset.num_files=50000", "--set", "dataset.sample_size=4KiB",
            "--set", "dataset.sample_size_stdev=1KiB", "--set", "dataset.files_per_dir=1000")
HANG_GUARD_S = 60  # a guard against a hang, not a timing


def start_generating(target: Path, results: Path, history: bool = False) -> subprocess.Popen:
    """`aiio run` whose dataset generation has started writing files."""
    cmd = [sys.executable, "-m", "aiio", "run", "--target", str(target), "--results",
           str(results), "--quiet", "--no-report", *(() if history else ("--no-history",)),
           *BIG_DATA,
           "--clients", "2", "--epochs", "1"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    folder = target / "aiio" / "datasets" / "demo" / "d00000"
    deadline = time.monotonic() + HANG_GUARD_S
    while not (folder.is_dir() and generators(proc)):
        if proc.poll() is not None or time.monotonic() > deadline:
            end(proc, [])
            raise AssertionError(f"generation never started: {proc.communicate()}")
        time.sleep(0.05)
    return proc


def generators(proc: subprocess.Popen) -> list[psutil.Process]:
    """The run's child processes while it generates: its generator processes."""
    try:
        return psutil.Process(proc.pid).children()
    except psutil.NoSuchProcess:
        return []


def end(proc: subprocess.Popen, pids: list[int]) -> None:
    """Kill whatever of the run is left (after a failed check too)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def hit_and_wait(proc: subprocess.Popen, hit) -> tuple[str, list[int]]:
    """hit(proc, generator processes), then the run's stderr once it ended, and the processes
    of its tree still alive a moment later."""
    pids = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    try:
        hit(proc, generators(proc))
        _, err = proc.communicate(timeout=HANG_GUARD_S)
        return err, left_behind(pids)
    finally:
        end(proc, pids)


def _killed_generator_fails_the_run(target: Path, results: Path, sig: signal.Signals) -> None:
    proc = start_generating(target, results)
    err, left = hit_and_wait(proc, lambda _proc, gens: gens[0].send_signal(sig))
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "Process " not in err, err
    said = [line for line in err.splitlines() if line.startswith("aiio:")]
    assert len(said) == 1, err
    assert "dataset generation failed" in said[0] and f"killed by {sig.name}" in said[0], err
    assert "partial files removed" in said[0]
    assert not (target / "aiio" / "datasets" / "demo").exists()
    assert not left
    res = saved_result(results)
    assert res["status"] == "failed" and f"killed by {sig.name}" in res["error"]


def test_a_sigkilled_generator_fails_the_run_and_removes_the_partial_dataset(target, results):
    _killed_generator_fails_the_run(target, results, signal.SIGKILL)


def test_a_sigtermed_generator_fails_the_run_and_removes_the_partial_dataset(target, results):
    _killed_generator_fails_the_run(target, results, signal.SIGTERM)


def test_ctrl_c_during_generation_ends_the_run_and_removes_the_partial_dataset(target, results):
    proc = start_generating(target, results, history=True)
    err, left = hit_and_wait(proc, lambda p, _gens: os.killpg(p.pid, signal.SIGINT))
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Process " not in err, err  # nothing from the generators
    assert [line for line in err.splitlines() if line.strip()] == \
        [next(line for line in err.splitlines() if line.startswith("aiio:"))], err
    assert not (target / "aiio" / "datasets" / "demo").exists()
    assert not left
    assert saved_result(results)["status"] == "interrupted"
    # saved, so recorded, as a run the Ctrl-C stopped while measuring is: it was saved and
    # left out of the history, and so were such runs of a table over users or rates
    from aiio.results.history import History
    with History(results / "history.sqlite") as h:
        assert [r.status for r in h.records()] == ["interrupted"]


def test_sigterm_during_generation_says_what_it_stopped(target, results):
    # it said "ended by SIGTERM; clients stopped" while no client had started
    proc = start_generating(target, results)
    err, left = hit_and_wait(proc, lambda p, _gens: p.send_signal(signal.SIGTERM))
    assert proc.returncode == 1, err
    (said,) = [line for line in err.splitlines() if line.startswith("aiio:")]
    assert "SIGTERM" in said and "clients" not in said, err
    assert not (target / "aiio" / "datasets" / "demo").exists()
    assert not left
    assert saved_result(results)["status"] == "failed"


def test_a_workers_oserror_is_raised_as_such_and_a_crash_names_the_worker(tmp_path):
    """What a generator raises reaches the parent: an OSError (a write error, ENOSPC) as an
    OSError with its file, which the run's message names; anything else as the worker's
    failure. The other workers are ended either way."""
    from aiio.run import forked

    def write(i: int) -> int:
        (tmp_path / "missing" / str(i)).write_text("x")
        return i

    with pytest.raises(FileNotFoundError) as exc:
        forked.run_sliced(write, range(8), 2, lambda _: None)
    assert str(tmp_path / "missing") in exc.value.filename
    with pytest.raises(forked.WorkerFailed, match=r"generator process \d \(pid \d+\) failed: "
                                                  "ZeroDivisionError"):
        forked.run_sliced(lambda i: 1 // 0, range(8), 2, lambda _: None, name="generator")
    assert not [p for p in psutil.Process().children() if p.name().startswith("aiio-gen")]
    got: list[int] = []
    forked.run_sliced(lambda i: i * i, range(10), 3, got.append, name="generator")
    assert sorted(got) == [i * i for i in range(10)]


@pytest.mark.parametrize("workers", ["0", "-3"])
def test_datagen_refuses_fewer_than_one_generator(tmp_path, workers):
    # -3 ran one generator without a word; 0 means none, not "the default"
    from .conftest import call_cli

    proc = call_cli("datagen", "-t", str(tmp_path), "--workers", workers)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--workers" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "aiio").exists()


def test_a_call_its_callback_ends_passes_on_every_item_done(tmp_path):
    """on_abandon hears of every item a worker did. Results that arrived in one read with
    the one whose callback raised (a Ctrl-C there) were taken out of the pipe and never
    counted: the items after them were never passed on, and their files stayed."""
    from aiio.run import forked

    def write(i: int) -> int:
        (tmp_path / str(i)).write_text("x")
        return i

    seen: list[int] = []

    def take(i: int) -> None:
        seen.append(i)
        if len(seen) == 1:
            time.sleep(1)  # the worker writes on meanwhile: the next read holds many results
        else:
            raise KeyboardInterrupt

    touched: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        forked.run_sliced(write, range(40), 1, take, name="generator",
                          on_abandon=lambda done, busy: touched.extend(done))
    made = {int(p.name) for p in tmp_path.iterdir()}
    assert len(seen) == 2 and len(made) > 2  # the case: results left in the read
    assert made <= set(touched), sorted(made - set(touched))


def test_the_item_a_killed_worker_was_on_is_passed_on_once_it_is_reaped(tmp_path):
    """The second sweep (once the workers are reaped) passes on the item each was on. The
    first took the results still in the pipe out of it without counting them, so the second
    counted fewer items done, and the item the worker was on when killed was never passed on:
    the file it was writing stayed."""
    from aiio.run import forked

    def write(i: int) -> int:
        (tmp_path / str(i)).write_text("x")
        if i == 3:
            time.sleep(HANG_GUARD_S)  # on item 3 until killed
        return i

    running: list = []
    forked._start(write, list(range(6)), 0, "generator", running)
    (w,) = running
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        while not (tmp_path / "3").exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # items 0 to 2 sent, their results in the pipe, unread
        first = forked._touched_items(running)
        os.kill(w.pid, signal.SIGKILL)
        while w.exitcode() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        second = forked._touched_items(running)
    finally:
        os.close(w.fd)
    assert first == ([0, 1, 2], [3]) and second == ([3], [])
