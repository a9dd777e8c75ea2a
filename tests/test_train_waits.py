"""The accelerator loop waits for its next batch without polling: one wake-up per batch, per
stop and per deadline. Twenty wake-ups a second per client cost nothing at 2 clients and both
cores of the client host at 1,024, where every client then read at a tenth of its share."""

from __future__ import annotations

import queue
import threading
import time
from types import SimpleNamespace

from aiio.phases import train


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
    return loader, SimpleNamespace(stop=threading.Event())


def test_a_slow_batch_is_one_wake_up():
    loader, ctx = _loader_and_ctx()
    timer = threading.Timer(1.0, loader.ready.put, args=[("batch", 1)])
    timer.start()
    assert train._next_ready(loader, ctx, None) == ("batch", 1)
    assert loader.ready.gets == 1


def test_a_stop_wakes_the_waiting_loop():
    loader, ctx = _loader_and_ctx()
    train.wake_on_stop(ctx.stop, loader.ready)
    threading.Timer(0.5, ctx.stop.set).start()
    assert train._next_ready(loader, ctx, None) is None
    assert loader.ready.gets == 1


def test_the_deadline_ends_the_wait():
    loader, ctx = _loader_and_ctx()
    deadline = time.monotonic_ns() + 300_000_000
    assert train._next_ready(loader, ctx, deadline) is None
    assert loader.ready.gets == 1 and time.monotonic_ns() >= deadline
