"""The accelerator loop waits for its next batch without polling: one wake-up per batch, per
stop and per deadline. Twenty wake-ups a second per client cost nothing at 2 clients and both
cores of the client host at 1,024, where every client then read at a tenth of its share."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from types import SimpleNamespace

from aiio.engines.timing import NEVER, Deadline
from aiio.phases import train
from aiio.run.clients import ClientContext, _Shared


class CountingQueue(queue.Queue):
    """A queue that counts how often the loop asked it for an item."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0

    def get(self, block: bool = True, timeout: float | None = None):
        self.gets += 1
        return super().get(block, timeout)


def _loader_and_ctx():
    loader = SimpleNamespace(ready=CountingQueue(), errors=[], threads=[None], finished=0)
    stop = threading.Event()
    return loader, SimpleNamespace(stop=stop, wait_for_stop=stop.wait)


def test_a_slow_batch_is_one_wake_up():
    loader, ctx = _loader_and_ctx()
    timer = threading.Timer(1.0, loader.ready.put, args=[("batch", 1)])
    timer.start()
    assert train._next_ready(loader, ctx, NEVER) == ("batch", 1)
    assert loader.ready.gets == 1


def test_a_stop_wakes_the_waiting_loop():
    loader, ctx = _loader_and_ctx()
    train.wake_on_stop(ctx, loader)
    threading.Timer(0.5, ctx.stop.set).start()
    assert train._next_ready(loader, ctx, NEVER) is None
    assert loader.ready.gets == 1


def test_a_stop_watcher_that_fails_ends_the_loop_with_its_error():
    # A bare thread's exception is only printed: the watcher's must reach the client's
    # errors, or a stop would never wake the loop and the client would not say why.
    shared = _Shared(mp.get_context("fork"), 1)
    os.close(shared.halt_r)  # its read fails: EBADF
    ctx = ClientContext(0, 1, None, shared, 0)
    loader, _ = _loader_and_ctx()
    try:
        train.wake_on_stop(ctx, loader)
        # no batch comes: the loop ends at once with the error, not at the deadline
        assert train._next_ready(loader, ctx, Deadline(time.monotonic_ns() + 5 * 10**9)) \
            is None
        assert [type(e) for e in loader.errors] == [OSError]
    finally:
        shared.halt_r = os.open(os.devnull, os.O_RDONLY)  # for close() to close
        shared.close()


def test_the_deadline_ends_the_wait():
    loader, ctx = _loader_and_ctx()
    deadline = Deadline(time.monotonic_ns() + 300_000_000)
    assert train._next_ready(loader, ctx, deadline) is None
    assert loader.ready.gets == 1 and time.monotonic_ns() >= deadline.at_ns


def _wait_then_exit(shared) -> None:
    os.close(shared.halt_w)  # as a client does: only the parent holds the write end
    ClientContext(0, 2, None, shared).wait_for_stop()
    os._exit(0)


def test_a_stop_reaches_the_clients_when_one_died_waiting_for_it():
    """A client killed while it waits for the stop must not keep the stop from the others
    (multiprocessing's Event.set() waits for every sleeper to wake: a dead one hung the run)."""
    ctx = mp.get_context("fork")
    shared = _Shared(ctx, 2)
    doomed, waiter = (ctx.Process(target=_wait_then_exit, args=(shared,)) for _ in range(2))
    doomed.start()
    waiter.start()
    time.sleep(0.5)  # both are blocked in wait_for_stop
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.join(10)
    halting = threading.Thread(target=shared.halt, daemon=True)
    halting.start()
    halting.join(10)
    waiter.join(10)
    assert not halting.is_alive() and waiter.exitcode == 0
    shared.close()
