"""Queue depth: N reads in flight from one thread through io_uring.

The synchronous engine keeps one read in flight per thread; fio's io_uring and libaio engines
keep `iodepth` per job. `DepthReader` does the same from one thread: a ring of `depth` slots,
each with its own page-aligned part of one buffer, refilled as completions arrive. The ring
and its loop are aiio.engines.ringloop's: set up through the kernel's own calls and driven by code
numba compiles (the optional `fast` extra: `pip install 'aiio[fast]'`). Where numba or the
kernel's io_uring is missing, `require()` says so in one line before a run starts.

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

from aiio.engines import ringloop
from aiio.engines.ringloop import (
    BROKEN,
    DONE,
    ENTER_ERRNO,
    EXPIRED,
    FAILED,
    FAILED_AT,
    FINISHED,
    HALT,
    INFLIGHT,
    NEXT,
    NFREE,
    STATE,
    UNSUBMITTED,
)
from aiio.engines.seam import OpLog, ReadFailed, address_of, aligned_buffer
from aiio.errors import ConfigError
from aiio.workload import MAX_READ

SLICE_NS = 10_000_000  # the loop comes back this often: a stop, a signal's handler


def unavailable(depth: int, instead: str = "use iodepth 1") -> str | None:
    """Why a ring of `depth` entries cannot be had here (one line, ending in what to do
    `instead`), or None when it can. Compiles the ring's loop (in the parent, before any
    client forks)."""
    if ringloop.load() is None:
        return f"io_uring needs the compiled loop: {ringloop.why()} (or {instead})"
    try:
        ringloop.Ring(depth).close()
    except OSError as exc:
        why = {errno.ENOSYS: "this kernel has no io_uring",
               errno.EPERM: "io_uring is not permitted here (kernel.io_uring_disabled or a "
                            "seccomp profile)"}.get(exc.errno, f"io_uring setup failed: {exc}")
        return f"{why} ({instead})"
    return None


def require(depth: int, key: str) -> None:
    """Refuse, in one line, a depth above 1 that this machine cannot run."""
    if depth > 1 and (why := unavailable(depth)):
        raise ConfigError(f"{key} = {depth}: {why}")


class DepthReader:
    """Reads blocks at `depth` in flight through one io_uring, timing every request."""

    def __init__(self, depth: int, block_size: int, log: OpLog,
                 counter: Any = None) -> None:
        if block_size > MAX_READ:  # the entry's length would spill into its flags
            raise ValueError(f"block of {block_size} B: one read moves at most 2 GiB - 4 KiB")
        self.depth = depth
        self.block_size = block_size
        self.log = log
        self.counter = counter
        self.stop: threading.Event | None = None
        # --verify: called with (buffer, bytes, file offset) after each read; timed as "verify"
        self.check: Any = None
        self.expired = False  # a deadline passed: read_blocks issued nothing more
        # compiled before the fork where require() ran (a client); here where it did not
        self.loop = ringloop.loaded() or ringloop.load()
        if self.loop is None:
            raise ConfigError(f"io_uring needs the compiled loop: {ringloop.why()}")
        # made by the first read, in the thread that reads: the ring takes only its maker's
        # submissions (SINGLE_ISSUER, as fio's)
        self.ring: ringloop.Ring | None = None
        self.buf = aligned_buffer(depth * block_size)
        self.closed = False
        # one view per slot, released at close: a check's frame kept by a traceback holds
        # its slot's view, and the buffer cannot be unmapped while a view holds it
        self.views = [memoryview(self.buf)[i * block_size:(i + 1) * block_size]
                      for i in range(depth)]
        self.address = address_of(self.buf)
        self.state = np.zeros(STATE, np.int64)
        self.state[NFREE] = depth
        self.free = np.arange(depth, dtype=np.int64)  # free slots' numbers, a stack
        self.issued = np.zeros(depth, np.int64)  # when each slot's request was issued
        self.where = np.zeros(depth, np.int64)   # the file offset each slot is reading

    @property
    def loop_label(self) -> str:
        """Which loop timed the reads, as a result says it."""
        return f"io_uring (depth {self.depth}), {self.loop.label}"

    def read_blocks(self, fd: int, offsets: Any, deadline_ns: int = 0) -> int:
        """Read one block at each offset, `depth` at a time; returns bytes transferred.

        With a deadline, no request is issued after it (those in flight complete and count).
        The compiled loop comes back to look at the stop every SLICE_NS, after every reap
        while a check follows each read (the slot's buffer is refilled by the next call), and
        when a signal interrupts its wait (Python runs the handler here).
        """
        if self.closed:  # the compiled loop would write into unmapped areas
            raise ValueError("read_blocks of a closed DepthReader")
        if self.ring is None:
            self.ring = ringloop.Ring(self.depth)
        self._wait_out()
        offs = np.ascontiguousarray(offsets, np.int64)
        out = np.empty((4, len(offs)), np.int64)  # latency, end, bytes and slot of each
        st, checked, told, tell_at = self.state, 0, 0, 0
        st[NEXT] = st[DONE] = st[EXPIRED] = st[FAILED] = 0
        try:
            while True:
                now = time.monotonic_ns()
                if now >= tell_at:  # every SLICE_NS, also under a check (back after each reap)
                    told, tell_at = self._tell(out, told), now + SLICE_NS
                until = 0 if self.check is not None else now + SLICE_NS
                status = self._call(fd, offs, out, until, deadline_ns)
                if self.check is not None:
                    checked = self._check_new(out, checked)
                if status == FINISHED:
                    break
                if self.stop is not None and self.stop.is_set():
                    st[HALT] = 1
        except BaseException:
            self._drain(out)
            raise
        finally:  # on an error too: the requests that completed keep their counts
            done = self._record(out[:, :st[DONE]])
            self._tell(out, told)
            st[HALT] = 0
        self.expired = self.expired or bool(st[EXPIRED])
        if st[FAILED]:
            raise ReadFailed(int(st[FAILED]), int(st[FAILED_AT]))
        return done

    def _call(self, fd: int, offs: np.ndarray, out: np.ndarray, until_ns: int,
              deadline_ns: int) -> int:
        """One call of the compiled loop; a ring the kernel broke is an error."""
        status = self.loop.run(self.ring.layout, self.state, fd, self.address, self.block_size,
                               offs, self.free, self.issued, self.where, out[0], out[1], out[2],
                               out[3], until_ns, deadline_ns)
        if status == BROKEN:
            err = int(self.state[ENTER_ERRNO])
            raise OSError(err, f"io_uring_enter: {errno.errorcode.get(err, err)}")
        return status

    def _tell(self, out: np.ndarray, told: int) -> int:
        """Give the live counter the bytes of the completions since `told` (a call of many
        offsets on slow storage lasts minutes); returns how many completions it has heard of."""
        k = int(self.state[DONE])
        if self.counter and k > told:
            self.counter(int(out[2, told:k].sum()))
        return k

    def _record(self, out: np.ndarray) -> int:
        """Hand the completions to the log in one batch; returns their bytes."""
        self.log.add_many("read", out[0], out[1], out[2])
        return int(out[2].sum())

    def _check_new(self, out: np.ndarray, checked: int) -> int:
        """Check the reads completed since `checked`, each in its slot's buffer before the
        next call refills it; returns how many are checked."""
        for k in range(checked, int(self.state[DONE])):
            n, slot = int(out[2, k]), int(out[3, k])
            if n:
                c0 = time.monotonic_ns()
                # the slot's offset: `where` keeps it until the next call refills the slot
                self.check(self.views[slot], n, int(self.where[slot]))
                c1 = time.monotonic_ns()
                self.log.add_many("verify", array("q", [c1 - c0]), array("q", [c1]),
                                  array("q", [0]))
        return int(self.state[DONE])

    def _drain(self, out: np.ndarray) -> None:
        """Wait until the kernel is done with every request still in flight into our buffer;
        their completions go on in `out` (room for one per offset of the call)."""
        if self.ring is None or self.ring.fd < 0:
            return
        st = self.state
        st[HALT] = 1
        while st[INFLIGHT] or st[UNSUBMITTED]:
            if self._call(-1, np.empty(0, np.int64), out, 0, 0) == FINISHED:
                break

    def _wait_out(self) -> None:
        """Wait out the requests an interrupted drain left in flight, uncounted: their
        call's output arrays are gone, and a call has room only for its own requests."""
        st = self.state
        if st[INFLIGHT] or st[UNSUBMITTED]:
            st[DONE] = 0
            self._drain(np.empty((4, self.depth), np.int64))  # room for every slot
            st[HALT] = 0

    def close(self) -> None:
        self._wait_out()
        self.closed = True
        if self.ring is not None:
            self.ring.close()
        for v in self.views:
            v.release()
        self.buf.close()


class OneInFlight(DepthReader):
    """The ring at depth 1 as the random mix's reader (the io_uring engine's at iodepth 1, as
    fio's io_uring engine goes through its ring at iodepth=1): each read submitted and reaped
    by one io_uring_enter, never a pread. It answers the mix's calls of psync's Reader
    (`read_run` for a run of reads, `read_block` for one), each read timed by the ring's
    loop as at any depth and logged as its call returns."""

    fast = True  # runs of reads go to the compiled loop, as psync's compiled pread loop

    def __init__(self, block_size: int, log: OpLog, counter: Any = None) -> None:
        super().__init__(1, block_size, log, counter)

    def read_run(self, fd: int, offsets: np.ndarray, size: int,
                 until_ns: int = 2**63 - 1, record: bool = True) -> int:
        """Read a block at each offset, none issued once `until_ns` has passed (the instant
        the mix looks at its deadline and stop next); how many were read."""
        if size != self.block_size:
            raise ValueError(f"a ring of {self.block_size}-byte slots reads no {size} bytes")
        self.read_blocks(fd, offsets, until_ns)
        self.expired = False  # the mix's own look, not a deadline of the ring's
        return int(self.state[DONE])

    def read_block(self, fd: int, offset: int) -> int:
        return self.read_blocks(fd, np.array([offset], np.int64))

    def record_runs(self) -> int:
        """Nothing waits: each call's reads went to the log as it returned."""
        return 0
