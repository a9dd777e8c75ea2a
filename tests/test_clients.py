"""The client process model: a common start that costs no CPU while clients wait, many clients
within the open-file limit, and every client's timers precise enough for emulated compute."""

from __future__ import annotations

import resource
import time

import pytest

from aiio.run.clients import ClientContext, run_clients


def _wakeups_while_waiting(ctx: ClientContext) -> dict:
    """Voluntary context switches of this client between ready and the common start."""
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
    start = ctx.ready_and_wait()
    return {"switches": resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - before,
            "start": start, "woke": time.monotonic_ns()}


def test_waiting_clients_sleep_until_the_start_instead_of_polling():
    # The parent holds the start back for a second; a client that polls the start flag wakes
    # hundreds of times in that second, and with hundreds of clients those wake-ups take the
    # CPUs the parent needs to start the rest.
    results, start = run_clients(4, _wakeups_while_waiting, None,
                                 on_ready=lambda: time.sleep(1.0))
    assert [r["start"] for r in results] == [start] * 4  # one common start instant
    assert all(r["woke"] >= start for r in results)      # nobody starts early
    assert max(r["switches"] for r in results) <= 10, results


def _pid(ctx: ClientContext) -> dict:
    import os
    ctx.ready_and_wait()
    return {"pid": os.getpid(), "index": ctx.index}


def test_more_clients_than_the_soft_open_file_limit():
    # Each client process holds a few descriptors in the parent; 1,024 clients exceed the
    # common soft limit of 1,024 while the hard limit allows far more.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 512:
        pytest.skip(f"the hard open-file limit ({hard}) is too low for this test")
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    try:
        results, _ = run_clients(80, _pid, None)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert [r["index"] for r in results] == list(range(80))
    assert len({r["pid"] for r in results}) == 80


def _thread_timer_slack() -> int:
    """This thread's timer slack in ns (prctl PR_GET_TIMERSLACK)."""
    import ctypes
    return ctypes.CDLL(None, use_errno=True).prctl(30, 0, 0, 0, 0)


def _timer_slack(ctx: ClientContext) -> dict:
    import threading
    seen = {}
    th = threading.Thread(target=lambda: seen.update(loader=_thread_timer_slack()))
    th.start()
    th.join()
    seen["main"] = _thread_timer_slack()
    ctx.ready_and_wait()
    return seen


def test_clients_sleep_without_timer_slack():
    # Linux lets a sleep end up to 50 us late by default: 1.4 % of cosmoflow's 3.5 ms compute.
    results, _ = run_clients(2, _timer_slack, None)
    for r in results:
        assert r == {"main": 1, "loader": 1}, r


def test_hundreds_of_clients_share_one_start_and_all_report():
    results, start = run_clients(200, _wakeups_while_waiting, None)
    assert len(results) == 200
    assert {r["start"] for r in results} == {start}
    assert all(r["woke"] >= start for r in results)


class _Priority:
    """Pickles into the priority of the thread that pickles it: the queue's sender thread,
    which sends a client's result after the client has measured."""

    def __reduce__(self):
        import os
        with open("/proc/self/autogroup") as fh:
            session = int(fh.read().split()[-1])
        return dict, ({"nice": os.getpriority(os.PRIO_PROCESS, 0), "session": session},)


def _measured(ctx: ClientContext) -> dict:
    import os
    ctx.ready_and_wait()
    return {"while_measuring": os.getpriority(os.PRIO_PROCESS, 0), "sending": _Priority()}


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/autogroup"),
                    reason="no autogroup scheduling on this kernel")
def test_a_client_that_has_measured_steps_back_for_those_still_measuring():
    # Sending a result and exiting is no part of any measurement; at normal priority hundreds
    # of finished clients took CPU from the last ones still reading. Each client runs in a
    # session of its own, and sessions share the CPUs whatever the nice values inside them,
    # so the session's priority is lowered too.
    results, _ = run_clients(3, _measured, None)
    for r in results:
        assert r["while_measuring"] < 19, r  # lowered only once measured
        assert r["sending"] == {"nice": 19, "session": 19}, r


def test_a_client_that_cannot_be_forked_ends_the_run_at_once_naming_it(monkeypatch):
    # fork() fails with EAGAIN or ENOMEM when the host's process or memory limits are reached
    # part way through hundreds of clients. The run must end with its cause and the clients
    # already started must be stopped, not waited for one by one at the start gate, and the
    # clients never started must not be taken for processes (a pid of 0 would make waitpid
    # and kill act on the whole process group).
    import os

    from aiio.errors import RunFailed
    from aiio.run.clients import RunAborted

    real_fork, forks = os.fork, []

    def fork() -> int:
        if len(forks) == 3:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    with pytest.raises(RunAborted) as info:
        run_clients(6, _pid, None)
    assert info.value.cause is RunFailed
    assert str(info.value).startswith("could not start client 3: ")
    assert "Resource temporarily unavailable" in str(info.value)
    for pid in forks:  # every started client was reaped by the run
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)



_CTRL_C_AFTER_FORK = """
import os, signal
from aiio.run.clients import run_clients

def ctrl_c():  # a Ctrl-C that reaches a client just after its fork, before its set-up
    os.kill(os.getpid(), signal.SIGINT)

def client(ctx):
    ctx.ready_and_wait()
    return {"index": ctx.index}

os.register_at_fork(after_in_child=ctrl_c)
print([r["index"] for r in run_clients(3, client, None)[0]])
"""


def test_a_ctrl_c_just_after_a_fork_is_the_parents_alone():
    # Ctrl-C reaches the whole process group, and a client is in the parent's group until it
    # sets itself up. One that took the signal in that window raised KeyboardInterrupt inside
    # the fork's after-fork hooks, printing a traceback under the run's one-line message.
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _CTRL_C_AFTER_FORK], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0, 1, 2]"
    assert "KeyboardInterrupt" not in done.stderr, done.stderr


def _stuck_watching_siblings(ctx: ClientContext) -> dict:
    """Never looks at the stop (a call that hangs); writes a byte to the watch pipe (fd in
    ctx.args) if it outlives a sibling killed by the parent."""
    import os
    import time
    ctx.ready_and_wait()
    parent = os.getppid()
    with open(f"/proc/{parent}/task/{parent}/children") as fh:
        siblings = [int(p) for p in fh.read().split() if int(p) != os.getpid()]
    while True:
        time.sleep(0.02)
        for pid in siblings:
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    dead = fh.read().rsplit(")", 1)[1].split()[0] in "ZX"
            except FileNotFoundError:
                dead = True
            if dead:
                os.write(ctx.args, b"x")
                return {}


@pytest.mark.long
def test_clients_that_ignore_the_stop_are_killed_together_not_one_by_one():
    # A client stuck in a call (storage that stopped answering) never sees the stop. The
    # parent waited 2 s for each in turn before killing it: 256 stuck clients held a Ctrl-C
    # for more than 8 minutes. Once the common grace has passed they are killed together, so
    # none outlives another.
    import os

    from aiio.run.clients import RunAborted

    watch_r, watch_w = os.pipe()

    def ctrl_c(*_):
        raise KeyboardInterrupt

    try:
        with pytest.raises(RunAborted):
            run_clients(4, _stuck_watching_siblings, watch_w, on_tick=ctrl_c, tick_s=0.3)
        os.set_blocking(watch_r, False)
        try:
            seen = os.read(watch_r, 64)
        except BlockingIOError:
            seen = b""
        assert seen == b"", "a stuck client outlived a killed sibling"
    finally:
        os.close(watch_r)
        os.close(watch_w)


_CTRL_C_WHILE_REAPING = """
import os, signal, time
from aiio.run.clients import RunAborted, run_clients

def client(ctx):  # sends its result, then stays (exiting slowly, as hundreds at nice 19)
    ctx.ready_and_wait()
    q = ctx._shared.messages
    q.put(("result", ctx.slot, {"index": ctx.index}))
    q.close()
    q.join_thread()
    if ctx.index == 0:
        time.sleep(0.5)  # the parent has every result by now and waits for the exits
        os.kill(os.getppid(), signal.SIGINT)
    time.sleep(60)

try:
    run_clients(3, client, None)
    print("finished")
except RunAborted as exc:
    print(exc.cause.__name__, sorted(exc.results))
"""


def test_a_ctrl_c_while_the_clients_exit_keeps_every_result():
    # Every result was in and the parent waited for the clients to exit: a Ctrl-C there left
    # run_clients as a bare KeyboardInterrupt, and the run was saved as interrupted "before
    # measuring", without its clients' figures.
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _CTRL_C_WHILE_REAPING], capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.strip() == "RunInterrupted [0, 1, 2]", done.stderr


def _killed_by_a_real_time_signal(ctx: ClientContext) -> dict:
    import os
    import signal
    ctx.ready_and_wait()
    if ctx.index == 1:
        os.kill(os.getpid(), signal.SIGRTMIN + 6)  # a job scheduler's, say: ends the process
    return {"index": ctx.index}


def test_a_client_killed_by_a_signal_without_a_name_is_named_by_its_number():
    # Python names only the classic signals and SIGRTMIN/SIGRTMAX: describing a client ended
    # by SIGRTMIN+6 raised ValueError in the parent, a traceback instead of the run's error.
    import signal

    from aiio.run.clients import RunAborted
    with pytest.raises(RunAborted, match=rf"client 1 \(pid \d+\) was killed by signal "
                                         rf"{int(signal.SIGRTMIN) + 6}"):
        run_clients(3, _killed_by_a_real_time_signal, None)


def _stop_before_the_start() -> None:
    """on_ready that stops the run as a Ctrl-C would: every client is ready, no start fixed."""
    raise KeyboardInterrupt


def test_clients_stopped_before_the_start_measure_from_the_stop_not_from_boot(target):
    # A Ctrl-C or SIGTERM while the clients got ready released them through the start gate
    # before any start instant was fixed: they read 0 ns as their start, and each train
    # client saved the host's uptime as its elapsed time (69,627 s for a run stopped in its
    # first seconds), which the report then drew as a day of empty buckets per client.
    from aiio.engines.posix import PosixEngine
    from aiio.phases.train import run_client
    from aiio.run.clients import RunAborted

    from .test_rehearsal import _train_args
    args = _train_args(target)
    t0 = time.monotonic()
    with pytest.raises(RunAborted) as aborted:
        run_clients(3, run_client, args, on_ready=_stop_before_the_start,
                    engine=PosixEngine(args.method))
    wall = time.monotonic() - t0
    results = aborted.value.results
    assert results, "the stopped clients sent their figures"
    for r in results.values():
        assert 0 <= r["elapsed_s"] <= wall, r["elapsed_s"]
        assert r["bytes"] == 0 and r["steps"] == 0
