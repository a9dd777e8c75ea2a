"""Windows, deadlines, the accelerator's steps and stop polling, on the engine's one clock.

Phases never read a clock: the engine times every call, and this module takes every other
instant a phase needs, under a name that says what the instant is. A client's window runs from
the common start (or a burst's release) to `Window.close()`; `lap()` marks an instant inside
one (a checkpoint stall's parts); a duration-bound run stops at its `Deadline`; the train
phase's accelerator takes its wait and compute instants from a `StepClock`. All of them read
`engine.now_ns`, so every figure of a run sits on one timeline. A client's CPU time
(`cpu_seconds`) is the one other clock a phase reads, through here too.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from aiio.engines.seam import now_ns


class Deadline:
    """The instant a duration-bound run stops (`at_ns`, `engine.now_ns` nanoseconds)."""

    __slots__ = ("at_ns",)

    def __init__(self, at_ns: int) -> None:
        self.at_ns = at_ns

    def passed(self) -> bool:
        """Whether the clock has reached the deadline (one clock reading)."""
        return now_ns() >= self.at_ns

    def remaining_s(self) -> float | None:
        """Seconds left, 0 once passed: a blocking wait's timeout (None: wait without one)."""
        return max(0.0, (self.at_ns - now_ns()) / 1e9)


class _Never(Deadline):
    """No deadline (an epoch-bound run): never passed, and it reads no clock to say so."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(0)

    def passed(self) -> bool:
        return False

    def remaining_s(self) -> float | None:
        return None


NEVER = _Never()


class Window:
    """A span on the engine's clock: from an instant handed down (the clients' common start, a
    burst's release) or, without one, from now, to `close()`."""

    __slots__ = ("start_ns", "end_ns")

    def __init__(self, start_ns: int | None = None) -> None:
        self.start_ns = now_ns() if start_ns is None else start_ns
        self.end_ns = 0

    def lap(self) -> int:
        """An instant inside the window (now), which it keeps running past."""
        return now_ns()

    def close(self) -> int:
        """End the window now; returns its end instant."""
        self.end_ns = now_ns()
        return self.end_ns

    @property
    def elapsed_ns(self) -> int:
        """Its length once closed."""
        return self.end_ns - self.start_ns

    @property
    def elapsed_s(self) -> float:
        return self.elapsed_ns / 1e9

    def since_start_s(self, instant_ns: int) -> float:
        """Seconds from the window's start to an instant (a lap, another window's edge)."""
        return (instant_ns - self.start_ns) / 1e9

    def deadline(self, seconds: float) -> Deadline:
        """The deadline `seconds` after the window's start."""
        return Deadline(self.start_ns + int(seconds * 1e9))


class StepClock:
    """The emulated accelerator's step instants: when it began waiting for a batch, when it got
    it, when its emulated compute ended. It times the accelerator, not the storage, on the same
    clock as the loaders' bytes, so utilization and consumed bytes share their timeline."""

    __slots__ = ("start_ns", "wait_ns", "got_ns", "done_ns")

    def __init__(self, start_ns: int) -> None:
        self.start_ns = start_ns
        self.wait_ns = self.got_ns = self.done_ns = start_ns

    def wait(self) -> None:
        """The accelerator begins waiting for a batch (the first wait at the common start)."""
        self.wait_ns = max(now_ns(), self.start_ns)

    def compute(self, seconds: float) -> None:
        """It got its batch: emulate `seconds` of compute by sleeping."""
        self.got_ns = now_ns()
        time.sleep(seconds)
        self.done_ns = now_ns()

    def spans(self) -> tuple[float, float, float]:
        """The step's three instants, in seconds since the run's start."""
        s = self.start_ns
        return (self.wait_ns - s) / 1e9, (self.got_ns - s) / 1e9, (self.done_ns - s) / 1e9


def edge_ns() -> int:
    """An instant on the one clock for an edge of a phase's own span that no window holds: a
    loader thread's batch begun (its bytes spread from there), its loaders running dry."""
    return now_ns()


def cpu_seconds() -> float:
    """This process's CPU time so far (user + system, every thread), in seconds.

    CLOCK_PROCESS_CPUTIME_ID, to the nanosecond: `os.times()` counts clock ticks (10 ms on
    Linux), so a client that spent 7 ms of CPU in its window read 0.
    """
    return time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID)


def thread_cpu_seconds() -> float:
    """The calling thread's CPU time so far (user + system), in seconds: the share of a
    client's CPU one of its threads (a merge beside the queries) spent."""
    return time.thread_time()


class ClientCpu:
    """A client's CPU time over its window. Alone in its process: the process's CPU clock,
    which counts every thread of it. Sharing its process with other clients (threads of one
    process, aiio.run.clients): its own thread's CPU clock plus what each thread it started
    spent (`add`, from that thread's own clock), so a client is never charged its siblings'
    work. `process_seconds` is the whole process's, whose one interpreter they share."""

    _current = threading.local()

    def __init__(self, alone: bool) -> None:
        self.alone = alone
        self._lock = threading.Lock()
        self._others = 0.0
        self._own0 = thread_cpu_seconds()
        self._process0 = cpu_seconds()
        ClientCpu._current.meter = self

    @staticmethod
    def current() -> ClientCpu | None:
        """The meter of the client whose thread calls (None outside a metered client): a
        thread started for the client's work adds its CPU to it."""
        return getattr(ClientCpu._current, "meter", None)

    def add(self, seconds: float) -> None:
        """CPU time another thread of this client spent (its `thread_cpu_seconds` delta)."""
        with self._lock:
            self._others += seconds

    def seconds(self) -> float:
        if self.alone:
            return cpu_seconds() - self._process0
        with self._lock:
            return thread_cpu_seconds() - self._own0 + self._others

    def process_seconds(self) -> float:
        return cpu_seconds() - self._process0

    def close(self) -> None:
        """The calling thread meters no client any more."""
        if ClientCpu.current() is self:
            ClientCpu._current.meter = None


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


NO_DEADLINE_NS = 2**63 - 1  # beyond any clock reading


class DeadlineOrStop:
    """A deadline that also ends at a client's stop, at one clock reading a call, as
    `Deadline.passed`: the stop event is looked at when the clock reaches the next look
    (every `every_s`) or the deadline, whichever is first, so a hot loop that asks after
    every call sees a stop within `every_s` of it, at no cost per call over the deadline's."""

    __slots__ = ("at_ns", "deadline_ns", "event", "every_ns")

    def __init__(self, deadline: Deadline, event: Any, every_s: float = 0.02) -> None:
        self.deadline_ns = NO_DEADLINE_NS if isinstance(deadline, _Never) else deadline.at_ns
        self.event, self.every_ns = event, int(every_s * 1e9)
        self.at_ns = 0  # the first call looks at the stop

    def passed(self) -> bool:
        """Whether the deadline has passed or the stop is set (sticky: both stay so)."""
        now = now_ns()
        if now < self.at_ns:
            return False
        if now >= self.deadline_ns or self.event.is_set():
            return True
        self.at_ns = min(self.deadline_ns, now + self.every_ns)
        return False
