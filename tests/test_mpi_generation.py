"""Dataset generation across MPI ranks, when a generator dies or the job is ended.

A rank whose generation hung (a multiprocessing.Pool stuck on a dead worker) kept its
heartbeat going, so rank 0 waited for it for 55 minutes. Rank 0 also went on writing its own
share after another rank's had failed, and after its own failure or a SIGTERM waited without
end for the others to answer its clean-up call while they went on writing theirs."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from .conftest import TINY_DATA
from .mpi import end_job, left_behind, mpi_start, needs_mpi, ranks_of, tree_pids

# Each rank's share lasts minutes: far longer than the job may take to end once hit.
BIG_DATA = ("--set", "dataset.num_files=200000", "--set", "dataset.sample_size=4KiB",
            "--set", "dataset.sample_size_stdev=1KiB", "--set", "dataset.files_per_dir=1000")
HANG_GUARD_S = 40  # a guard against a hang, not a timing


def start_generating(target: Path, results: Path, env: dict | None = None,
                     module: str = "aiio", first: tuple[str, ...] = (),
                     data: tuple[str, ...] = BIG_DATA) -> subprocess.Popen:
    """A 2-rank `aiio run` whose ranks both generate their share of the dataset (each rank
    `python -m module *first ARGS`)."""
    proc = mpi_start(2, *first, "run", "--target", str(target), "--results", str(results),
                     *data, "--clients", "2", "--epochs", "1", "-q", "--no-report",
                     "--no-history", env=env, module=module)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the job ended early: {proc.communicate()}")
        ranks = ranks_of(proc)
        if len(ranks) == 2 and all(len(generators(r)) >= 1 for r in ranks.values()) and \
                (target / "aiio" / "datasets" / "demo").is_dir():
            time.sleep(0.5)  # both writing files
            return proc
        time.sleep(0.05)
    end_job(proc, [])
    raise AssertionError("generation never started on both ranks")


def generators(rank: psutil.Process) -> list[psutil.Process]:
    """A rank's child processes while it generates: its generator processes."""
    try:
        return rank.children()
    except psutil.NoSuchProcess:
        return []


def hit_and_wait(proc: subprocess.Popen, hit) -> tuple[str, list[int]]:
    """hit(ranks), then the launcher's stderr once the job ended, and the processes of the
    job still alive a moment later."""
    pids = tree_pids(proc)
    try:
        hit(ranks_of(proc))
        _, err = proc.communicate(timeout=HANG_GUARD_S)
        return err, left_behind(pids)
    finally:
        end_job(proc, pids)


def aiio_lines(err: str) -> list[str]:
    """aiio's lines in the launcher's stderr (where the launcher's own text may run into
    them: a line of aiio's once came after a space of Open MPI's)."""
    return [line for line in err.splitlines() if "aiio:" in line]


@needs_mpi
def test_a_killed_generator_on_rank_1_ends_the_job_naming_its_host(target, results):
    proc = start_generating(target, results)
    err, left = hit_and_wait(proc, lambda ranks: generators(ranks[1])[0].kill())
    assert proc.returncode != 0, err
    said = aiio_lines(err)
    assert said and "(rank 1): dataset generation failed" in said[0], err
    assert "killed by SIGKILL" in said[0] and "Traceback" not in err
    assert not (target / "aiio" / "datasets" / "demo").exists()
    assert not left


@needs_mpi
def test_sigterm_to_rank_0_during_generation_ends_the_job_and_removes_the_files(target, results):
    """`kill` of rank 0 alone (no launcher's SIGKILL follows): rank 1 must stop writing its
    share, and the partial dataset go, rather than rank 0 waiting for rank 1's whole share."""
    proc = start_generating(target, results)
    err, left = hit_and_wait(proc, lambda ranks: ranks[0].send_signal(signal.SIGTERM))
    assert proc.returncode != 0, err
    assert "SIGTERM" in err and "Traceback" not in err, err
    # rank 0 cannot tell who sent it: it said "the MPI launcher ended the run"
    assert "launcher ended" not in err, err
    assert not (target / "aiio" / "datasets" / "demo").exists()
    assert not left


def start_wedged(target: Path, results: Path, where: str, env: dict) -> subprocess.Popen:
    """start_generating, rank 1 hanging `where` (tests/wedged_rank.py)."""
    return start_generating(target, results, env, module="tests.wedged_rank", first=(where,))


@needs_mpi
@pytest.mark.long  # waits AIIO_MPI_SILENCE_S, 5 s, after the start: near 10 s under load
def test_a_rank_hung_in_its_share_while_beating_is_named_and_the_job_ended(target, results):
    """The 55-minute hang: rank 1's main thread stuck (its share reports as it goes, then
    never again) while its heartbeat thread beats on. A slow rank still reports: a stuck one
    does not."""
    proc = start_wedged(target, results, "generating", {"AIIO_MPI_SILENCE_S": "5"})
    err, left = hit_and_wait(proc, lambda ranks: None)
    assert proc.returncode != 0, err
    said = aiio_lines(err)
    assert said and "(rank 1) stopped answering" in said[0], err
    assert "Traceback" not in err
    assert not left


@needs_mpi
def test_a_rank_that_does_not_answer_once_the_run_fails_is_named_and_the_job_ended(
        target, results):
    """Rank 0's generator dies; rank 1 stops its share, then hangs removing the files: rank 0
    gives up on it after AIIO_MPI_ANSWER_S, names it and aborts the job, rather than wait in
    the clean-up for good."""
    proc = start_wedged(target, results, "discarding", {"AIIO_MPI_ANSWER_S": "2"})
    err, left = hit_and_wait(proc, lambda ranks: generators(ranks[0])[0].kill())
    assert proc.returncode != 0, err
    said = aiio_lines(err)
    assert any("(rank 0): dataset generation failed" in line or
               "dataset generation failed: generator process" in line for line in said), err
    assert any("(rank 1) did not answer within 2 s" in line for line in said), err
    assert "Traceback" not in err
    assert not left


@needs_mpi
def test_a_rank_that_hangs_in_a_quick_check_of_a_healthy_run_is_named_and_the_job_ended(
        target, results):
    """Rank 1 hangs checking that it sees the dataset rank 0 made (a stat on a hung network
    mount), its heartbeat beating on: rank 0 waited for its answer without end, the run
    healthy. A check is quick: it gets the 5 s it allows a late file and AIIO_MPI_ANSWER_S,
    then the rank is named."""
    proc = mpi_start(2, "verifying", "run", "--target", str(target), "--results", str(results),
                     *TINY_DATA, "--clients", "2", "--epochs", "1", "-q", "--no-report",
                     "--no-history", env={"AIIO_MPI_ANSWER_S": "2"}, module="tests.wedged_rank")
    deadline = time.monotonic() + 60
    while len(ranks_of(proc)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    err, left = hit_and_wait(proc, lambda ranks: None)
    assert proc.returncode != 0, err
    assert any("(rank 1) did not answer within 7 s" in line for line in aiio_lines(err)), err
    assert "Traceback" not in err
    assert not left


@needs_mpi
def test_a_rank_that_sees_another_dataset_fails_the_run_naming_it(target, results):
    """The target is not one shared filesystem at one path: rank 1 sees another dataset where
    rank 0 made its own. The run fails naming rank 1 and why, the files rank 0 made go."""
    proc = mpi_start(2, "elsewhere", "run", "--target", str(target), "--results", str(results),
                     *TINY_DATA, "--clients", "2", "--epochs", "1", "-q", "--no-report",
                     "--no-history", module="tests.wedged_rank")
    deadline = time.monotonic() + 60
    while len(ranks_of(proc)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    err, left = hit_and_wait(proc, lambda ranks: None)
    assert proc.returncode != 0, err
    said = aiio_lines(err)
    assert any("(rank 1): sees a different dataset" in line and "one shared filesystem" in line
               for line in said), err
    assert "Traceback" not in err
    assert not (target / "aiio" / "datasets" / "demo").exists()
    assert not left


@needs_mpi
def test_a_quick_check_that_a_network_filesystem_makes_slow_is_not_cut_short(target, results):
    """Rank 1 sees the dataset 3 s late, within the 5 s its check allows for it: with
    AIIO_MPI_ANSWER_S=1 the healthy run was ended as if rank 1 hung."""
    proc = mpi_start(2, "late", "run", "--target", str(target), "--results", str(results),
                     *TINY_DATA, "--clients", "2", "--epochs", "1", "-q", "--no-report",
                     "--no-history", env={"AIIO_MPI_ANSWER_S": "1"}, module="tests.wedged_rank")
    err, left = hit_and_wait(proc, lambda ranks: None)
    assert proc.returncode == 0, err
    assert not left


@needs_mpi
def test_sigterm_to_every_rank_during_generation_ends_the_job_and_removes_the_files(
        target, results):
    """As a batch system cancels the job (sent by the test itself, so no SIGKILL follows):
    the ranks that said the SIGTERM ends them are not waited for in the clean-up."""
    proc = start_generating(target, results)
    err, left = hit_and_wait(proc, lambda ranks: [r.send_signal(signal.SIGTERM)
                                                  for r in ranks.values()])
    assert proc.returncode != 0, err
    assert "SIGTERM" in err and "Traceback" not in err, err
    assert not (target / "aiio" / "datasets" / "demo").exists()
    assert not left


@needs_mpi
def test_sigterm_to_rank_1_alone_during_generation_names_it_and_removes_the_files(
        target, results):
    """`kill` of rank 1 alone: rank 1 removes its own files as it ends while rank 0 removes
    the folder; a file gone under rank 0's removal stopped it half way, and its "No such file
    or directory" replaced the message."""
    proc = start_generating(target, results)
    err, left = hit_and_wait(proc, lambda ranks: ranks[1].send_signal(signal.SIGTERM))
    assert proc.returncode != 0, err
    said = aiio_lines(err)
    assert said and "(rank 1)" in said[0] and "No such file" not in err, err
    assert "partial result saved" in said[0] and "Traceback" not in err, err
    assert not (target / "aiio" / "datasets" / "demo").exists()
    assert not left
