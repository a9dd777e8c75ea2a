"""The loader's start: the first-touch work before the common start, no read before it.

With 1,024 clients every piece of per-client work left between the start instant and the first
read is done by all of them at once on a few CPUs, inside the measured window: on the per-stream
oracle each client's first file took about twice its second (docs/PERFORMANCE.md)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from aiio.cache_methods import METHOD_NONE
from aiio.engines.seam import Reader
from aiio.phases import train
from aiio.storage import dataset as ds
from aiio.storage.target import Target

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
                           reader=recorded.reader, placed=None)
    ctx = SimpleNamespace(add_bytes=lambda n: None, stop=threading.Event(), index=0)
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


def test_batches_read_whole_but_not_taken_are_held_too(target):
    # What a client's loaders hold when its window closes is in no consumed figure: the
    # batches they are still reading, and those read whole and waiting in the queue (each
    # thread reads ahead up to its permits). Only the first were counted: a storage-paced run
    # of 16 MiB batches with 0.3 s of compute (AU 38 %) on a 40 MiB/s disk, cut with a
    # batch queued on each client, read 35.0 MiB/s "ok", its held bytes 3.7 % of the fed.
    recorded = _Recorded()
    loader = _loader(target, recorded)
    loader.prepare()
    loader.start(time.monotonic_ns())
    permits = loader.args.workload.train.read_threads * loader.args.workload.train.prefetch
    deadline = time.monotonic() + 30
    while loader.ready.qsize() < permits or any(f is not None for f in loader.reading_from):
        assert time.monotonic() < deadline and not loader.errors
        time.sleep(0.01)
    queued = sum(item[1] for item in list(loader.ready.queue) if item is not None)
    assert queued > 0
    assert loader.partly_read() == (0, queued)  # none part way, every queued batch whole
    loader.stop.set()
    for _ in loader.threads:
        loader.permits.release()
    for th in loader.threads:
        th.join(timeout=30)


def test_a_queued_batch_is_missed_only_by_a_client_that_waited_for_data():
    """A queued batch counts against the headline where the client's measured steps show it
    waiting for data (AU measured, under 95 %); with no AU measured (every step an epoch's
    first, as at the largest count of a find-max search) it is read-ahead, and counting it
    stopped the search with 'cannot be measured' at a point it should call unmeasurable AU."""
    from aiio.phases.train import waited_for_data

    assert waited_for_data({"au": 0.38})
    assert not waited_for_data({"au": 0.99})
    assert not waited_for_data({"au": None})


def test_the_loaders_finished_when_the_last_batch_was_read_not_when_a_thread_noticed(target):
    # A loader thread learns there is nothing left only when a permit frees it to ask, that
    # is once the accelerator takes a batch: on a busy machine that came after the checkpoint
    # that followed the last step, so the checkpoint showed a 100 % read dip of reads that had
    # ended. The dataset is read when its last byte arrived.
    import itertools

    recorded = _Recorded()
    w = tiny_workload(dataset__format="raw", train__read_threads=THREADS)
    permits = w.train.read_threads * w.train.prefetch
    data, _ = ds.ensure(Target(target), w)
    args = SimpleNamespace(workload=w, dataset=data, method=METHOD_NONE,
                           reader=recorded.reader, placed=None)
    ctx = SimpleNamespace(add_bytes=lambda n: None, stop=threading.Event(), index=0)
    loader = train.Loader(ctx, args, itertools.islice(recorded.batches(data), permits))
    loader.prepare()
    loader.start(time.monotonic_ns())
    deadline = time.monotonic() + 30
    while loader.ready.qsize() < permits or any(f is not None for f in loader.reading_from):
        assert time.monotonic() < deadline and not loader.errors
        time.sleep(0.01)
    read_by = time.monotonic_ns()  # every batch read, none taken: the threads wait for permits
    time.sleep(0.2)
    ends = 0
    while ends < THREADS:
        item = loader.ready.get(timeout=30)
        if item is None:
            ends += 1
        else:
            loader.permits.release()
    for th in loader.threads:
        th.join(timeout=30)
    assert not loader.errors
    done = loader.done_s()
    assert done is not None and loader.start_ns + done * 1e9 <= read_by
