"""Queue depth: N reads in flight from one thread through io_uring.

The synchronous engine keeps one read in flight per thread; fio's io_uring and libaio engines
keep `iodepth` per job. `DepthReader` does the same from one thread: a ring of `depth` slots,
each with its own page-aligned buffer, refilled as completions arrive. The ring comes from the
optional `uring-api` package (a compiled wheel on PyPI: `pip install 'aiio[uring]'`); where it
or the kernel's io_uring is missing, `require()` says so in one line before a run starts.

Timing, the same histograms as every other read: a request's latency runs from just before it
is prepared for the ring to the moment its completion is reaped (fio's `lat`: issue to
completion seen). One clock reading stamps every request prepared in a refill, and one every
completion reaped by the same wait, as fio stamps a reap batch once.
"""

from __future__ import annotations

import errno
import threading
import time
from array import array
from typing import Any

import numpy as np

from aiio.engine import OpLog, ReadFailed, aligned_buffer
from aiio.errors import ConfigError


def _binding() -> Any:
    try:
        import uring_api
    except ImportError:
        return None
    return uring_api


def unavailable(depth: int) -> str | None:
    """Why a ring of `depth` entries cannot be had here (one line), or None when it can."""
    uring_api = _binding()
    if uring_api is None:
        return ("io_uring needs the optional uring-api package: pip install 'aiio[uring]' "
                "(or use iodepth 1)")
    try:
        ring = uring_api.Ring(entries=depth)
    except OSError as exc:
        why = {errno.ENOSYS: "this kernel has no io_uring",
               errno.EPERM: "io_uring is not permitted here (kernel.io_uring_disabled or a "
                            "seccomp profile)"}.get(exc.errno, f"io_uring setup failed: {exc}")
        return f"{why} (use iodepth 1)"
    ring.close()
    return None


def require(depth: int, key: str) -> None:
    """Refuse, in one line, a depth above 1 that this machine cannot run."""
    if depth > 1 and (why := unavailable(depth)):
        raise ConfigError(f"{key} = {depth}: {why}")


def _ring(uring_api: Any, depth: int) -> tuple[Any, int]:
    """A ring of `depth` entries whose completions wait for the reader to enter the kernel.

    On tmpfs (and any file that cannot read without blocking) io_uring hands each read to its
    kernel workers. Without COOP_TASKRUN every worker completion interrupts the reading thread
    (an IPI, then a task-work run on its way back to user space): at 4 KiB, depth 16, on
    tmpfs, in the runs where it struck, the reader's CPU per read was about 5 us; with the
    flag it stayed at 1.5 to 2.0 us (docs/PERFORMANCE.md). With it the completions are
    posted when the reader enters the kernel to wait, where it reaps them; fio's io_uring
    engine sets the same flag. Kernels before 5.19 refuse it.
    """
    coop = uring_api.IORING_SETUP_COOP_TASKRUN
    try:
        return uring_api.Ring(entries=depth, flags=coop, auto_submit=False), coop
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    return uring_api.Ring(entries=depth, auto_submit=False), 0


class DepthReader:
    """Reads blocks at `depth` in flight through one io_uring, timing every request."""

    def __init__(self, depth: int, block_size: int, log: OpLog,
                 counter: Any = None) -> None:
        import uring_api  # present: require() ran before any client started
        self.depth = depth
        self.block_size = block_size
        self.log = log
        self.counter = counter
        self.stop: threading.Event | None = None
        # --verify: called with (buffer, bytes, file offset) after each read; timed as "verify"
        self.check: Any = None
        self.expired = False  # a deadline passed: read_blocks issued nothing more
        self.ring, self.setup_flags = _ring(uring_api, depth)
        self.bufs = [aligned_buffer(block_size) for _ in range(depth)]
        self.views = [memoryview(b) for b in self.bufs]

    def read_blocks(self, fd: int, offsets: list[int], deadline_ns: int = 0) -> int:
        """Read one block at each offset, `depth` at a time; returns bytes transferred.

        With a deadline, no request is issued after it (those in flight complete and count).
        Per completion: two property reads, three list appends (about a quarter of an array
        append's time: an array parses each int as it goes; the lists become arrays once per
        call) and its slot noted free for the refill.
        """
        pending, wait, now = iter(offsets), self.ring.wait, time.monotonic_ns
        issued = [0] * self.depth      # when each slot's request was issued (monotonic ns)
        where = [0] * self.depth       # the file offset each slot is reading
        lat: list[int] = []
        ends: list[int] = []
        sizes: list[int] = []
        lat_add, end_add, size_add = lat.append, ends.append, sizes.append
        inflight = self._issue(fd, pending, range(self.depth), issued, where, deadline_ns)
        failure, check = None, self.check
        try:
            while inflight:
                reaped = wait() or ()
                t = now()
                free: list[int] = []
                for c in reaped:
                    slot, n = c.user_data, c.res
                    free.append(slot)
                    if n < 0:
                        failure = failure or ReadFailed(-n, where[slot])
                        continue
                    lat_add(t - issued[slot])
                    end_add(t)
                    size_add(n)
                    if check is not None and n:
                        self._check(slot, n, where[slot])
                inflight -= len(free)
                if failure is None and not (self.stop is not None and self.stop.is_set()):
                    inflight += self._issue(fd, pending, free, issued, where, deadline_ns)
        except BaseException:
            reaped = c = None  # completions hold our buffers: the traceback must not keep them
            self._drain()
            raise
        finally:  # on an error too: the requests that completed keep their counts
            done = self._record(lat, ends, sizes)
        if self.counter:
            self.counter(done)
        if failure is not None:  # raised only once nothing is in flight into our buffers
            del reaped, c  # completions hold our buffers: the traceback must not keep them
            raise failure
        return done

    def _record(self, lat: list[int], ends: list[int], sizes: list[int]) -> int:
        """Hand the completions to the log in one batch; returns their bytes. `sizes` is
        appended last: an interrupt between a completion's appends leaves it uncounted."""
        k = len(sizes)
        b = np.fromiter(sizes, np.int64, k)
        self.log.add_many("read", np.fromiter(lat, np.int64, k),
                          np.fromiter(ends, np.int64, k), b)
        return int(b.sum())

    def _check(self, slot: int, n: int, offset: int) -> None:
        c0 = time.monotonic_ns()
        self.check(self.views[slot], n, offset)
        c1 = time.monotonic_ns()
        self.log.add_many("verify", array("q", [c1 - c0]), array("q", [c1]), array("q", [0]))

    def _issue(self, fd: int, pending: Any, slots: Any, issued: list[int], where: list[int],
               deadline_ns: int) -> int:
        """Prepare the next offsets into the free slots and submit them; returns how many."""
        t = time.monotonic_ns()
        if deadline_ns and t >= deadline_ns:
            self.expired = True
            return 0
        prepare, views, count = self.ring.prepare_read, self.views, 0
        # slots first: when the slots run out, no offset is drawn and lost
        for slot, off in zip(slots, pending, strict=False):
            prepare(fd, views[slot], off, slot)
            issued[slot] = t
            where[slot] = off
            count += 1
        if count:
            self.ring.submit()
        return count

    def _drain(self) -> None:
        """Wait until the kernel is done with every request still in flight into our buffers."""
        while self.ring.pending_count():
            self.ring.wait()

    def close(self) -> None:
        self._drain()
        self.ring.close()
        for v in self.views:
            v.release()
        for b in self.bufs:
            b.close()
