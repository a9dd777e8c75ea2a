"""Run a client's work items on its I/O threads, each thread with its own buffer and op log."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

from aiio import interrupts
from aiio.engines.seam import OpLog
from aiio.engines.timing import ClientCpu, Window, thread_cpu_seconds

_DONE = object()
# The longest the main thread waits for a worker without running a signal's handler. A
# process-directed signal (kill's or a scheduler's SIGTERM) may land on any thread; its Python
# handler runs only in the main thread, and a wait with no timeout is never interrupted by a
# signal another thread took: a SIGTERM during a dataset upload went unheard for minutes.
WAKE_S = 0.2


def join(th: threading.Thread) -> None:
    """Wait for a thread to end, waking every WAKE_S so that a signal's handler runs."""
    while th.is_alive():
        interrupts.pending()
        th.join(WAKE_S)
    interrupts.pending()


def result(future: Future) -> Any:
    """A future's result, waiting as `join` does. Also where a loop of short waits (an
    upload's PUTs) meets a signal a finalizer swallowed (aiio.interrupts): before each."""
    while True:
        interrupts.pending()
        try:
            return future.result(timeout=WAKE_S)
        except TimeoutError:
            continue


def run_parallel(items: Iterable[Any], workers: list[Any], work: Callable[[Any, Any], None],
                 start_ns: int | None = None) -> list[OpLog]:
    """Hand items to the workers (Readers or Writers, one thread each) as they free up.

    Every worker gets a fresh OpLog whose clock starts at start_ns (None: now, for the files a
    phase writes before it measures); the logs are returned. The first error in any thread
    stops the others and is raised here.
    """
    start_ns = Window(start_ns).start_ns
    for w in workers:
        w.log = OpLog(start_ns)
    source = iter(items)
    lock = threading.Lock()
    errors: list[BaseException] = []
    meter = ClientCpu.current()  # the calling client's: its writers' CPU is its own
    if meter is not None and meter.alone:
        meter = None  # alone in its process, the process's clock counts them already

    def body(worker: Any) -> None:
        try:
            while not errors:
                with lock:
                    item = next(source, _DONE)
                if item is _DONE:
                    return
                work(worker, item)
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)

    if len(workers) == 1:
        body(workers[0])  # no thread for the common single-writer case
    else:
        threads: list[threading.Thread] = []
        try:
            for w in workers:
                threads.append(threading.Thread(target=_metered, args=(body, w, meter),
                                                daemon=True))
                threads[-1].start()
            for th in threads:
                join(th)
        except BaseException as exc:  # Ctrl-C: the threads stop after their current item,
            errors.append(exc)        # and no caller may close their buffers before that
            for th in threads:
                join(th)
            raise
    if errors:
        raise errors[0]
    return [w.log for w in workers]


def _metered(body: Callable[[Any], None], worker: Any, meter: ClientCpu | None) -> None:
    """`body(worker)`, its thread's CPU time added to the client's meter."""
    cpu0 = thread_cpu_seconds()
    try:
        body(worker)
    finally:
        if meter is not None:
            meter.add(thread_cpu_seconds() - cpu0)
