"""Ctrl-C on the MPI launcher (or a batch system cancelling the job): the launcher sends every
rank SIGTERM, then SIGKILL after a grace (Open MPI 4.1: 1 s, odls_base_sigkill_timeout; Slurm:
KillWait, 30 s). Rank 0 killed its clients at once and saved a partial result holding no
client at all, though they had measured for seconds. It now gives them a bounded time to send
what they measured (AIIO_TERM_DRAIN_S, 0.5 s by default) before it saves."""

from __future__ import annotations

import signal

import pytest

from aiio import result

from .conftest import TINY_DATA
from .mpi import (
    kill_all,
    left_behind,
    mpi_run,
    mpi_start,
    needs_mpi,
    ranks_of,
    tree_pids,
    wait_measuring,
)


@needs_mpi
def test_sigterm_to_every_rank_keeps_what_every_client_measured(target, results):
    """As a batch system cancels a job: SIGTERM to every rank, SIGKILL only after a grace
    (Slurm's KillWait). Sent here by the test itself, so no SIGKILL follows: the test is about
    what is kept, whatever the machine's load, not about a launcher's timing."""
    proc = mpi_start(2, "run", "--target", str(target), "--results", str(results), *TINY_DATA,
                     "--batch-size", "2", "--clients", "4", "--duration", "60s", "-q",
                     "--no-report", env={"AIIO_TERM_DRAIN_S": "10"})
    pids = []
    try:
        wait_measuring(proc, 4)
        pids = tree_pids(proc)
        for rank in ranks_of(proc).values():
            rank.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        left = left_behind(pids)
    finally:
        kill_all(pids)
    assert not left
    (path,) = results.glob("*/result.json")
    saved = result.load(path)
    assert saved.status == "interrupted" and "launcher" in saved["error"], saved["error"]
    kept = {c["client"]: c for c in saved["clients"]}
    assert sorted(kept) == [0, 1, 2, 3], err  # every rank drains its clients and replies
    assert all(c["bytes"] > 0 and c["elapsed_s"] > 1.0 for c in kept.values())


@needs_mpi
@pytest.mark.parametrize("name", ["AIIO_TERM_DRAIN_S", "AIIO_MPI_SILENCE_S"])
@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf"])
def test_a_bad_number_of_seconds_is_one_line_before_the_run(target, results, name, value):
    """inf passed as 'a number of seconds, 0 or more' and made the wait after a SIGTERM (or
    for a silent rank) one without an end."""
    done = mpi_run(2, "run", "--target", str(target), "--results", str(results), *TINY_DATA,
                   "--clients", "2", "--duration", "1s", "-q", "--no-report", "--no-history",
                   env={name: value}, timeout=120)
    said = [line for line in done.stderr.splitlines() if line.startswith("aiio:")]
    assert done.returncode == 2, done.stdout + done.stderr
    assert said and all(f"{name} must be a number of seconds" in line for line in said), said
    assert "Traceback" not in done.stderr
    assert not list(results.glob("*/result.json"))
