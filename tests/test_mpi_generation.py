"""Dataset generation across MPI ranks, when a generator dies or the job is ended.

A rank whose generation hung (a multiprocessing.Pool stuck on a dead worker) kept its
heartbeat going, so rank 0 waited for it for 55 minutes. Rank 0 also went on writing its own
share after another rank's had failed, and after its own failure or a SIGTERM waited without
end for the others to answer its clean-up call while they went on writing theirs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from .conftest import TINY_DATA
from .mpi import end_job, left_behind, mpi_start, needs_mpi, ranks_of, tree_pids
from .oracle.mount import Rates, can_mount_fuse, ratefs

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


# A FUSE write the daemon has taken cannot be cut short: a generator SIGKILLed in one ends
# only once it is answered, 2 s at most here (as on a throttled network mount), and the
# file it writes cannot be removed before that (the kernel holds the file's lock).
SLOW_WRITES = Rates(write_stream=2048)
# Few files: the throttled mount's backing store is a small tmpfs, and aiio checks the space.
SLOW_DATA = ("--set", "dataset.num_files=400", "--set", "dataset.sample_size=4KiB",
             "--set", "dataset.sample_size_stdev=0", "--set", "dataset.files_per_dir=100")


def dataset_files(target: Path) -> list[Path]:
    """The files the generation left in the dataset's folder (its lock file, beside the
    folder, is no file the generation wrote)."""
    return [p for p in (target / "aiio" / "datasets" / "demo").rglob("*") if p.is_file()]


def hit_slow_generators(tmp_path: Path, results: Path, hit) -> tuple[str, int, list[Path]]:
    """A 2-rank generation on the slow-writing mount, hit(proc, ranks) once every generator
    is done with files beyond the one it writes: the launcher's stderr, exit code, and the
    number of generators and the files that stayed once the job ended."""
    with ratefs(tmp_path, SLOW_WRITES, size_mib=256) as mount:
        proc = start_generating(mount, results, data=SLOW_DATA)
        generating = sum(len(generators(r)) for r in ranks_of(proc).values())
        deadline = time.monotonic() + HANG_GUARD_S
        while len(dataset_files(mount)) < 3 * generating and time.monotonic() < deadline:
            time.sleep(0.1)
        err, left = hit_and_wait(proc, lambda ranks: hit(proc, ranks))
        assert proc.returncode != 0, err
        assert "Traceback" not in err, err
        assert not left
        return err, generating, dataset_files(mount)


@needs_mpi
@pytest.mark.skipif(can_mount_fuse() is not None, reason=can_mount_fuse() or "")
def test_ctrl_c_while_generators_are_slow_to_die_removes_all_they_wrote(tmp_path, results):
    """Ctrl-C at the launcher (SIGINT to its process group): Open MPI SIGKILLs the ranks a
    quarter of a second after passing a SIGTERM on. Rank 0 waited for its generators, stuck
    in writes, to be reaped before removing anything, and every file written stayed. At
    most the one file each generator is still writing may stay (the next generation removes
    a folder without a manifest)."""
    _, generating, stayed = hit_slow_generators(
        tmp_path, results, lambda proc, ranks: os.killpg(proc.pid, signal.SIGINT))
    assert len(stayed) <= generating, (generating, stayed)


@needs_mpi
@pytest.mark.skipif(can_mount_fuse() is not None, reason=can_mount_fuse() or "")
def test_sigterm_to_rank_1_alone_while_its_generators_are_slow_to_die_names_it(
        tmp_path, results):
    """Rank 0 removes the folder while rank 1's killed generators still hold files open: on
    FUSE (as on NFS) a file removed while open is renamed to a hidden name until closed, so
    its folder is not empty. That clean-up error replaced the message naming rank 1."""
    err, generating, stayed = hit_slow_generators(
        tmp_path, results, lambda proc, ranks: ranks[1].send_signal(signal.SIGTERM))
    said = aiio_lines(err)
    assert said and "(rank 1)" in said[0] and "not empty" not in err, err
    assert len(stayed) <= generating, (generating, stayed)


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
