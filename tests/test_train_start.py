"""The loader's start: the first-touch work before the common start, no read before it.

With 1,024 clients every piece of per-client work left between the start instant and the first
read is done by all of them at once on a few CPUs, inside the measured window: on the per-stream
oracle each client's first file took about twice its second (docs/PERFORMANCE.md)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from aiio import dataset as ds
from aiio.cache_methods import METHOD_NONE
from aiio.engine import Reader
from aiio.phases import train
from aiio.target import Target

from .conftest import tiny_workload

THREADS = 2


class _Recorded:
    """What the loader did when: batches drawn (the epoch's shuffle happens on the first) and
    files read, each with its monotonic time."""

    def __init__(self) -> None:
        self.drawn: list[int] = []
        self.reads: list[int] = []

    def batches(self, data: ds.Dataset):
        for batch in train.client_batches(data, "sample", 1, 0, 1, 0, 1):
            self.drawn.append(time.monotonic_ns())
            yield batch

    def reader(self, *args) -> Reader:
        recorded = self

        class Timed(Reader):
            def read_file(self, path, offset=0, length=None):
                recorded.reads.append(time.monotonic_ns())
                return super().read_file(path, offset, length)

        return Timed(*args)


def _loader(target, recorded: _Recorded) -> train.Loader:
    w = tiny_workload(dataset__format="raw", train__read_threads=THREADS)
    data, _ = ds.ensure(Target(target), w)
    args = SimpleNamespace(workload=w, dataset=data, method=METHOD_NONE,
                           reader=recorded.reader)
    ctx = SimpleNamespace(add_bytes=lambda n: None, stop=threading.Event())
    return train.Loader(ctx, args, recorded.batches(data))


def test_each_loader_thread_holds_its_first_batch_before_the_client_says_ready(target):
    recorded = _Recorded()
    loader = _loader(target, recorded)
    loader.prepare()
    assert len(recorded.drawn) == THREADS  # every thread's first batch, shuffle included
    assert recorded.reads == []            # and nothing read: the start has not come
    loader.stop.set()
    loader.go.set()
    for _ in loader.threads:
        loader.permits.release()


def test_loader_threads_wait_for_the_start_instant_themselves(target):
    # The client hands the instant over ahead of time and does not wake at it to pass it on.
    recorded = _Recorded()
    loader = _loader(target, recorded)
    loader.prepare()
    start_ns = time.monotonic_ns() + 300_000_000
    loader.start(start_ns)
    first = loader.ready.get(timeout=30)
    assert first is not None and not loader.errors
    assert recorded.reads and min(recorded.reads) >= start_ns
    loader.stop.set()
    for _ in loader.threads:
        loader.permits.release()
    for th in loader.threads:
        th.join(timeout=30)
