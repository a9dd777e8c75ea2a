"""Ctrl-C on the MPI launcher (or a batch system cancelling the job): the launcher sends every
rank SIGTERM, then SIGKILL after a grace (Open MPI 4.1: 1 s, odls_base_sigkill_timeout; Slurm:
KillWait, 30 s). Rank 0 killed its clients at once and saved a partial result holding no
client at all, though they had measured for seconds. It now gives them a bounded time to send
what they measured (AIIO_TERM_DRAIN_S, 0.5 s by default) before it saves."""

from __future__ import annotations

import signal

import pytest

from aiio.results import result

from .conftest import TINY_DATA
from .mpi import (
    end_job,
    left_behind,
    mpi_run,
    mpi_start,
    needs_mpi,
    ranks_of,
    tree_pids,
    wait_measuring,
)


def _sigterm_ranks(target, results, which: list[int] | None, duration: str, env: dict,
                   timeout: float) -> tuple[result.Result, str]:
    """Start a 2-rank run of 4 clients, SIGTERM the ranks `which` (None: all) once every client
    measures, and wait for the job's end; the saved result and the launcher's stderr."""
    proc = mpi_start(2, "run", "--target", str(target), "--results", str(results), *TINY_DATA,
                     "--batch-size", "2", "--clients", "4", "--duration", duration, "-q",
                     "--no-report", "--no-history", env=env)
    pids = []
    try:
        wait_measuring(proc, 4)
        pids = tree_pids(proc)
        ranks = ranks_of(proc)
        for r in sorted(ranks) if which is None else which:
            ranks[r].send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=timeout)  # a guard against a hang, not a timing
        left = left_behind(pids)
    finally:
        end_job(proc, pids)
    assert not left
    (path,) = results.glob("*/result.json")
    return result.load(path), err


@needs_mpi
def test_sigterm_to_every_rank_keeps_what_every_client_measured(target, results):
    """As a batch system cancels a job: SIGTERM to every rank, SIGKILL only after a grace
    (Slurm's KillWait). Sent here by the test itself, so no SIGKILL follows: the test is about
    what is kept, whatever the machine's load, not about a launcher's timing."""
    saved, err = _sigterm_ranks(target, results, None, "60s", {"AIIO_TERM_DRAIN_S": "10"}, 60)
    assert saved.status == "interrupted" and "launcher" in saved["error"], saved["error"]
    kept = {c["client"]: c for c in saved["clients"]}
    assert sorted(kept) == [0, 1, 2, 3], err  # every rank drains its clients and replies
    assert all(c["bytes"] > 0 and c["elapsed_s"] > 1.0 for c in kept.values())


@needs_mpi
def test_sigterm_to_rank_0_alone_stops_the_other_ranks(target, results):
    """`kill` of rank 0 alone (no launcher, so no SIGKILL follows): rank 0 saved at once and
    took the other rank for dead, but never told it to stop. Rank 0 then waited in MPI's
    finalize for the other rank, which ran on until rank 0 had been silent for
    AIIO_MPI_SILENCE_S (30 s; here 600, as long as the run)."""
    saved, err = _sigterm_ranks(target, results, [0], "600s", {"AIIO_MPI_SILENCE_S": "600"}, 120)
    assert saved.status in ("interrupted", "failed") and "SIGTERM" in saved["error"], err
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["AIIO_TERM_DRAIN_S", "AIIO_MPI_SILENCE_S", "AIIO_MPI_ANSWER_S"])
@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf"])
def test_a_bad_number_of_seconds_is_refused(monkeypatch, name, value):
    """inf passed as 'a number of seconds, 0 or more' and made the wait after a SIGTERM (or
    for a silent rank) one without an end."""
    from aiio.errors import ConfigError
    from aiio.run.comm import _seconds_from_env

    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=f"{name} must be a number of seconds"):
        _seconds_from_env(name, 1.0)


@needs_mpi
@pytest.mark.parametrize("name", ["AIIO_TERM_DRAIN_S", "AIIO_MPI_SILENCE_S"])
def test_a_bad_number_of_seconds_is_one_line_before_the_run(target, results, name):
    """Under the launcher, as every rank reads it (each of the refused values above takes
    the same path: one mpirun per variable)."""
    done = mpi_run(2, "run", "--target", str(target), "--results", str(results), *TINY_DATA,
                   "--clients", "2", "--duration", "1s", "-q", "--no-report", "--no-history",
                   env={name: "inf"}, timeout=120)
    said = [line for line in done.stderr.splitlines() if line.startswith("aiio:")]
    assert done.returncode == 2, done.stdout + done.stderr
    assert said and all(f"{name} must be a number of seconds" in line for line in said), said
    assert "Traceback" not in done.stderr
    assert not list(results.glob("*/result.json"))


@pytest.mark.parametrize("name", ["AIIO_MPI_SILENCE_S", "AIIO_MPI_ANSWER_S"])
def test_no_time_at_all_to_answer_is_refused(monkeypatch, name):
    """0 s gave no rank any time: a healthy rank that had just replied with its failure was
    called hung ('did not answer within 0 s') and the job aborted. 0 s of drain is a choice."""
    from aiio.errors import ConfigError
    from aiio.run.comm import _seconds_from_env

    monkeypatch.setenv(name, "0")
    with pytest.raises(ConfigError, match=f"{name} must be a number of seconds above 0"):
        _seconds_from_env(name, 1.0)
    monkeypatch.setenv("AIIO_TERM_DRAIN_S", "0")
    assert _seconds_from_env("AIIO_TERM_DRAIN_S", 1.0) == 0
