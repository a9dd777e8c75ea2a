"""Clients as threads of shared processes: past `run.client_processes` processes a host's
training clients share them, and every client still has its own start, figures, CPU time and
failure, as a process of its own would."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from aiio.errors import AiioError, RunFailed
from aiio.honesty import run_warnings
from aiio.run.clients import ClientContext, RunAborted, run_clients

from .conftest import call_cli


def _where(ctx: ClientContext) -> dict:
    start = ctx.ready_and_wait()
    return {"index": ctx.index, "pid": os.getpid(), "thread": threading.get_ident(),
            "shares": ctx.shares_process, "start": start,
            "name": Path("/proc/self/comm").read_text().strip()}


def test_clients_past_the_cap_run_as_threads_of_shared_processes():
    results, start = run_clients(7, _where, None, per_process=3)
    assert [r["index"] for r in results] == list(range(7))
    assert [r["start"] for r in results] == [start] * 7  # one common start instant
    by_pid: dict[int, list[dict]] = {}
    for r in results:
        by_pid.setdefault(r["pid"], []).append(r)
    groups = sorted([r["index"] for r in rs] for rs in by_pid.values())
    assert groups == [[0, 1, 2], [3, 4, 5], [6]]  # the last process holds what is left
    assert [r["shares"] for r in results] == [3] * 6 + [1]
    assert len({(r["pid"], r["thread"]) for r in results}) == 7  # a thread each
    assert {r["name"] for r in results} == {"aiio-client-0-2", "aiio-client-3-5",
                                            "aiio-client-6"}


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
        run_clients(6, _fails_or_waits, None, per_process=3)
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
        run_clients(2, _crashes, None, per_process=2)
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
