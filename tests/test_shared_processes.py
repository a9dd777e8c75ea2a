"""Clients as threads of shared processes: past `run.client_processes` processes a host's
training clients share them, and every client still has its own start, figures, CPU time and
failure, as a process of its own would."""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from aiio.errors import AiioError, RunFailed
from aiio.honesty import run_warnings
from aiio.run.clients import ClientContext, RunAborted, run_clients, spread

from .conftest import TINY_DATA, call_cli
from .mpi import mpi_run, needs_mpi

# Runs of a second: batches of 128 KiB, so that the headline is measurable however slowly a
# busy machine feeds them (the demo's 1 MiB batches over 9 MiB read were refused, rightly).
SMALL_BATCHES = (*TINY_DATA, "--batch-size", "2")

TINY = (*TINY_DATA, "--batch-size", "2")


def _where(ctx: ClientContext) -> dict:
    start = ctx.ready_and_wait()
    return {"index": ctx.index, "pid": os.getpid(), "thread": threading.get_ident(),
            "shares": ctx.shares_process, "start": start,
            "name": Path("/proc/self/comm").read_text().strip()}


def test_clients_past_the_cap_run_as_threads_of_shared_processes():
    results, start = run_clients(7, _where, None, processes=3)
    assert [r["index"] for r in results] == list(range(7))
    assert [r["start"] for r in results] == [start] * 7  # one common start instant
    by_pid: dict[int, list[dict]] = {}
    for r in results:
        by_pid.setdefault(r["pid"], []).append(r)
    groups = sorted([r["index"] for r in rs] for rs in by_pid.values())
    assert groups == [[0, 1, 2], [3, 4], [5, 6]]  # spread evenly, never one left alone
    assert [r["shares"] for r in results] == [3, 3, 3, 2, 2, 2, 2]
    assert len({(r["pid"], r["thread"]) for r in results}) == 7  # a thread each
    assert {r["name"] for r in results} == {"aiio-client-0-2", "aiio-client-3-4",
                                            "aiio-client-5-6"}


@pytest.mark.parametrize("n, processes", [(257, 256), (1024, 256), (514, 256), (7, 3),
                                          (3, 5), (1, 1), (5, 1)])
def test_clients_are_spread_over_the_processes_as_evenly_as_they_go(n: int,
                                                                     processes: int) -> None:
    # A process is a session of its own, and the kernel shares the CPUs between sessions: a
    # client alone beside pairs got twice the CPU of each of theirs when the CPUs were short.
    sizes = [b - a for a, b in spread(n, processes)]
    assert sum(sizes) == n and len(sizes) == min(n, processes)
    assert max(sizes) - min(sizes) <= 1, sizes
    assert [a for a, _ in spread(n, processes)] == [0, *itertools.accumulate(sizes)][:-1]


def test_a_rank_with_no_client_runs_no_process():
    # A 1-client point across 3 MPI ranks leaves ranks 1 and 2 none: they were given one
    # process holding no client, which failed the sweep with an IndexError on rank 1.
    assert spread(0, 0) == [] and spread(0, 256) == []
    assert run_clients(0, _where, None, processes=0)[0] == []


def test_one_client_a_process_by_default():
    results, _ = run_clients(3, _where, None)
    assert len({r["pid"] for r in results}) == 3 and {r["shares"] for r in results} == {1}


def _fails_or_waits(ctx: ClientContext) -> dict:
    """Client 4 fails once started; the others measure until told to stop."""
    ctx.ready_and_wait()
    if ctx.index == 4:
        raise AiioError("the storage went away")
    ctx.wait_for_stop()
    return {"index": ctx.index, "pid": os.getpid()}


def test_a_failed_client_ends_the_run_naming_it_and_its_siblings_send_what_they_have():
    # A failure in one thread must not take the process's other clients' figures with it.
    with pytest.raises(RunAborted) as info:
        run_clients(6, _fails_or_waits, None, processes=2)
    assert info.value.cause is RunFailed
    assert str(info.value) == "client 4 failed: the storage went away"
    got = info.value.results
    assert sorted(got) == [0, 1, 2, 3, 5], got  # client 4's siblings (3 and 5) too
    assert got[3]["pid"] == got[5]["pid"] != got[0]["pid"]


def _crashes(ctx: ClientContext) -> dict:
    ctx.ready_and_wait()
    if ctx.index == 1:
        raise ZeroDivisionError("division by zero")
    ctx.wait_for_stop()
    return {"index": ctx.index}


def test_a_crash_in_a_shared_process_is_named_as_in_a_process_of_its_own():
    with pytest.raises(RunAborted) as info:
        run_clients(2, _crashes, None, processes=1)
    assert str(info.value) == "client 1 failed: ZeroDivisionError: division by zero"
    assert list(info.value.results) == [0]


def _train(target: Path, results: Path, clients: int, processes: int) -> dict:
    got = call_cli("run", "-p", "train", "-t", str(target), "--results", str(results),
                   "--clients", str(clients), "--duration", "2s", "--json", "--quiet",
                   "--no-history", "--no-report", "--set", "train.read_threads=2",
                   "--set", f"run.client_processes={processes}")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def test_a_training_client_is_charged_its_own_threads_cpu_not_its_siblings(
        target: Path, results: Path) -> None:
    res = _train(target, results, 6, 2)
    clients = res["clients"]
    by_pid: dict[int, list[dict]] = {}
    for c in clients:
        by_pid.setdefault(c["pid"], []).append(c)
    assert sorted(len(cs) for cs in by_pid.values()) == [3, 3]
    for cs in by_pid.values():
        assert {c["process_clients"] for c in cs} == {3}
        process = max(c["process_cpu_s"] for c in cs)
        own = sum(c["cpu_s"] for c in cs)
        # each client its own threads' share; together nearly the process's (which also
        # ran its stop watchers and result queue), never more
        assert all(0 < c["cpu_s"] < process for c in cs), cs
        assert 0.7 * process <= own <= process * 1.02, (own, process)
        assert all(c["steps"] > 0 and c["bytes"] > 0 for c in cs)


def test_below_the_cap_a_client_has_a_process_of_its_own_and_its_result_is_as_before(
        target: Path, results: Path) -> None:
    res = _train(target, results, 3, 0)
    assert len({c["pid"] for c in res["clients"]}) == 3
    assert not [c for c in res["clients"] if "process_cpu_s" in c or "process_clients" in c]


def _client(n: int, cpu_s: float, process_cpu_s: float | None = None) -> dict:
    c = {"client": n, "elapsed_s": 10.0, "cpu_s": cpu_s}
    if process_cpu_s is not None:
        c.update(process_cpu_s=process_cpu_s, process_clients=2)
    return c


def test_clients_whose_shared_process_was_busy_are_warned_of_it() -> None:
    # no network interfaces in the monitor: the target's facts are not read
    clients = [_client(0, 3.0, 9.5), _client(1, 3.0, 9.5), _client(2, 3.0, 4.0),
               _client(3, 9.6)]
    got = run_warnings(None, {}, clients, 0)  # type: ignore[arg-type]
    said = [w["message"] for w in got if w["code"] == "client_process_busy"]
    assert len(said) == 2, said
    assert said[0].startswith("client(s) 3 used at least 90% of a core")
    assert said[1].startswith("client(s) 0, 1 shared a process that used at least 90%")


def _killed_together(ctx: ClientContext) -> dict:
    ctx.ready_and_wait()
    if ctx.index == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # the process, and every client in it
    ctx.wait_for_stop()
    return {"index": ctx.index}


def test_a_shared_process_killed_names_every_client_it_held():
    with pytest.raises(RunAborted) as info:
        run_clients(4, _killed_together, None, processes=2)
    said = str(info.value)
    assert said.startswith("clients 2 to 3 (pid ") and "one process) were killed by SIGKILL" \
        in said, said
    assert sorted(info.value.results) == [0, 1]


def test_the_console_says_the_clients_shared_processes(target: Path, results: Path) -> None:
    got = call_cli("run", "-p", "train", "-t", str(target), "--results", str(results),
                   "--clients", "5", "--duration", "1s", "--no-history", "--no-report",
                   *SMALL_BATCHES, "--set", "run.client_processes=2", env={"COLUMNS": "80"})
    assert got.returncode == 0, got.stderr
    assert [line for line in got.stdout.splitlines()
            if "│ clients " in line and "5 in 2 processes, 3 at most │" in line], got.stdout


def test_a_run_whose_clients_shared_processes_starts_a_history_series_of_its_own() -> None:
    # The same command past 256 clients a host ran a process a client before and shares
    # processes now: a change in its figures must not read as the storage's.
    from aiio.results.history import key_of

    def run(per_process: int | None) -> dict:
        extra = {} if per_process is None else {"process_clients": per_process}
        return {"phase": "train", "target": {"path": "/mnt/nas"}, "method": "o_direct",
                "workload": {"workload": {"name": "demo"}, "train": {"batch_size": 2},
                             "run": {"clients": 1024, "seed": 1, "client_processes": 0}},
                "clients": [{"client": i, "pid": 100 + i // 4, **extra} for i in range(8)]}

    assert key_of(run(None)) != key_of(run(4)) != key_of(run(2))
    before = run(None)
    del before["workload"]["run"]["client_processes"]  # recorded before the key existed
    assert key_of(before) == key_of(run(None))  # a process a client: the series goes on


def test_native_readers_never_share_a_process() -> None:
    # h5py runs one HDF5 call at a time in a process: over a FUSE mount answering each read
    # after 5 ms, 8 native hdf5 clients read 19-20 MiB/s as 8 processes, 5.2 as 2 of 4.
    from types import SimpleNamespace

    from aiio.phases.train import PHASE
    from aiio.workload import load_workload

    for fmt in ("hdf5", "npz", "tfrecord"):
        w = load_workload("demo", [("dataset", "format", fmt), ("train", "reader", "native")])
        assert PHASE.client_processes(SimpleNamespace(workload=w), 1024) == 1024
    raw = load_workload("demo")
    assert PHASE.client_processes(SimpleNamespace(workload=raw), 1024) == 256
    assert PHASE.client_processes(SimpleNamespace(workload=raw), 100) == 100


def test_a_native_reader_run_keeps_a_process_a_client(target: Path, results: Path) -> None:
    # the run's own path to the process count (hosts.run_everywhere), not only the phase's
    got = call_cli("run", "-p", "train", "-t", str(target), "--results", str(results),
                   "--clients", "3", "--duration", "1s", "--json", "--quiet", "--no-history",
                   "--no-report", *SMALL_BATCHES, "--set", "train.reader=native",
                   "--set", "run.client_processes=1")
    assert got.returncode == 0, got.stderr
    clients = json.loads(got.stdout)["clients"]
    assert len({c["pid"] for c in clients}) == 3
    assert not [c for c in clients if "process_clients" in c]


@needs_mpi
def test_each_rank_spreads_its_own_share_over_its_processes(target: Path,
                                                            results: Path) -> None:
    # 7 clients over 2 ranks (4 and 3), at most 2 processes a rank: 2+2 and 2+1
    done = mpi_run(2, "run", "--target", str(target), "--results", str(results),
                   "--no-report", *TINY, "--clients", "7", "--epochs", "1", "--json",
                   "--set", "run.client_processes=2")
    assert done.returncode == 0, done.stderr
    clients = json.loads(done.stdout)["clients"]
    held: dict[tuple[int, int], list[int]] = {}
    for c in clients:
        held.setdefault((c["rank"], c["pid"]), []).append(c["client"])
    assert sorted(held.values()) == [[0, 1], [2, 3], [4, 5], [6]], held
    assert all(c["bytes"] > 0 for c in clients)
    assert [c.get("process_clients", 1) for c in clients] == [2, 2, 2, 2, 2, 2, 1]
