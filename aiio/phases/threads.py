"""Run a client's work items on its I/O threads, each thread with its own buffer and op log."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from aiio.engine import OpLog, now_ns

_DONE = object()


class PolledStop:
    """A client's stop event, looked at no more than every `every_s`: a multiprocessing
    Event's is_set() takes a lock shared by every client process, too dear for every call."""

    def __init__(self, event: Any, every_s: float = 0.02) -> None:
        self.event, self.every_s = event, every_s
        self.every_ns = int(every_s * 1e9)
        self.next = 0
        self.flag = False

    def is_set(self) -> bool:
        if not self.flag:
            now = now_ns()
            if now >= self.next:
                self.next = now + self.every_ns
                self.flag = self.event.is_set()
        return self.flag


def run_parallel(items: Iterable[Any], workers: list[Any], work: Callable[[Any, Any], None],
                 start_ns: int) -> list[OpLog]:
    """Hand items to the workers (Readers or Writers, one thread each) as they free up.

    Every worker gets a fresh OpLog whose clock starts at start_ns; the logs are returned.
    The first error in any thread stops the others and is raised here.
    """
    for w in workers:
        w.log = OpLog(start_ns)
    source = iter(items)
    lock = threading.Lock()
    errors: list[BaseException] = []

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
                threads.append(threading.Thread(target=body, args=(w,), daemon=True))
                threads[-1].start()
            for th in threads:
                th.join()
        except BaseException as exc:  # Ctrl-C: the threads stop after their current item,
            errors.append(exc)        # and no caller may close their buffers before that
            for th in threads:
                th.join()
            raise
    if errors:
        raise errors[0]
    return [w.log for w in workers]
