"""The I/O engine: page-aligned buffers, cache-defeating opens, and timed read/write loops.

The one measurement seam. Every read, write and metadata call (open, create, stat, list,
unlink, mkdir, fsync, folder fsync) is timed here on the monotonic clock; its latency and its
completion time and byte count go to the calling thread's `OpLog`, which the client merges
into mergeable histograms and per-interval byte series. Bytes are what the system calls
returned, never a nominal size. Phases never read a clock: they call the metadata functions
below, or time anything else (an object-storage request) with `OpLog.timed`; `aiio.engines.timing`
takes the edges of their windows, their deadlines and the accelerator's steps on `now_ns`.
`Reader.read_blocks` and `Reader.read_run` may hand their calls to the compiled loop of
`aiio.engines.compiled`, which takes the same two readings per call on the same clock in machine
code.

The null method (`METHOD_NULL`) does all of this bookkeeping but replaces each read and write
system call by a function that returns the length asked for, so aiio's own cost per operation
can be measured: nothing it reports is the storage's.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import mmap
import os
import threading
import time
from array import array
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aiio.cache_methods import METHOD_DIRECT, METHOD_FADVISE, METHOD_NONE, METHOD_NULL
from aiio.engines import blocks, compiled
from aiio.errors import RunFailed
from aiio.stats import ByteSeries, Histogram

O_DIRECT = getattr(os, "O_DIRECT", 0)
DIRECT_ALIGN = 4096  # align offsets and lengths to 4 KiB: safe on 512e and 4Kn devices
FLUSH_EVERY = 8192   # ops buffered per thread before they are folded into the histogram

now_ns = time.monotonic_ns  # the one clock: op timings, window edges and deadlines


def aligned_buffer(size: int) -> mmap.mmap:
    """An anonymous mapping: page-aligned, as O_DIRECT requires, and faulted in now.

    Populated at creation, so the first timed call does not pay a page fault per 4 KiB of
    aiio's own buffer (256 per MiB) and count it as the storage's latency.
    """
    flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0)
    return mmap.mmap(-1, max(size, mmap.PAGESIZE), flags=flags)


# The one-at-a-time records' arrays hold unsigned 64-bit ints (every latency, completion time
# and byte count is one): an append of "L" converts its int directly, where one of a signed
# type ("q") parses it as a format is parsed, about twice the time (Python 3.11). "Q" would
# convert large ints through bytes; "L" is 64 bits wide on every 64-bit Linux.
RECORD_TYPE = "L" if array("L").itemsize == 8 else "q"


def _records() -> array:
    """An empty array of one kind of one-at-a-time record."""
    return array(RECORD_TYPE)


def align_down(value: int, align: int = DIRECT_ALIGN) -> int:
    return value - value % align


def align_up(value: int, align: int = DIRECT_ALIGN) -> int:
    return -(-value // align) * align


@dataclass
class OpLog:
    """One thread's record of its operations, folded into histograms in batches.

    `timed(op)` is the way to time and record one call. The engine's own hot loops, which
    already hold their clock readings, record with `add_timed` and `add_many`.
    """

    start_ns: int
    series: ByteSeries = field(default_factory=ByteSeries)
    hist: dict[str, Histogram] = field(default_factory=dict)
    # One operation at a time (`add_timed`) goes to arrays: 8 bytes an entry where a list
    # holds 40 (a pointer and an int object), and up to FLUSH_EVERY entries wait for a
    # flush in each loader thread of each of up to 1,024 clients. An array's append costs
    # more than a list's (RECORD_TYPE above: unsigned, it converts its int directly).
    _lat: defaultdict[str, array] = field(default_factory=lambda: defaultdict(_records))
    _end: array = field(default_factory=_records)
    _bytes: array = field(default_factory=_records)
    # Batches (`add_many`) stay int64 arrays: (op, latencies, completion times, bytes).
    _batches: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=list)
    _batched: int = 0
    ops: int = 0
    nbytes: int = 0

    def timed(self, op: str, nbytes: int = 0, ops: int = 1) -> Timed:
        """`with log.timed("stat"): os.stat(path)`: the call inside is timed and recorded
        as `op` when it returns; one that raises is not recorded (it did not happen).
        `ops`: the operations it counts as; 0 for a part of one (a GET's time to first byte
        or body chunk: on a bucket an operation is a request)."""
        return Timed(self, op, nbytes, ops)

    def add_timed(self, op: str, t0: int, t1: int, nbytes: int, ops: int = 1) -> None:
        """Record one operation that started at t0 and ended at t1 (`now_ns` readings)."""
        lat = self._lat[op]
        lat.append(t1 - t0)  # a negative one (a caller's bug) is refused: OverflowError
        if nbytes:
            try:
                self._bytes.append(nbytes)
            except OverflowError:
                # so is a negative byte count, whole: the series' times and bytes stay in step
                del lat[-1]
                raise
            self._end.append(t1)
            self.nbytes += nbytes
        self.ops += ops
        if len(lat) >= FLUSH_EVERY:
            self.flush()

    def add_pair(self, first: str, second: str, t0: int, t1: int, t2: int,
                 nbytes: int) -> None:
        """Record two calls made back to back, as two `add_timed` would: `first` from t0 to
        t1 moving no bytes, `second` from t1 to t2 moving `nbytes` (one reading ends the
        first and starts the second). One call where a sample's open and read cost two."""
        a, b = self._lat[first], self._lat[second]
        a.append(t1 - t0)  # a negative one (a caller's bug) is refused: OverflowError
        try:
            b.append(t2 - t1)
            if nbytes:
                self._bytes.append(nbytes)
                self._end.append(t2)
                self.nbytes += nbytes
        except OverflowError:  # refused whole: the parts already kept go
            del a[-1]
            if t2 >= t1:  # the second's latency was kept; its byte count was refused
                del b[-1]
            raise
        self.ops += 2
        if len(a) >= FLUSH_EVERY or len(b) >= FLUSH_EVERY:
            self.flush()

    def add_many(self, op: str, lat: Any, ends: Any, sizes: Any) -> None:
        """Record a batch of operations: their latencies, completion times (`now_ns`
        readings) and bytes, in one call where a hot loop cannot afford one call per
        operation. Each is a sequence of ints (an int64 array, copied here)."""
        batch = (op, *(np.array(x, np.int64) for x in (lat, ends, sizes)))
        self._batches.append(batch)
        n = len(batch[1])
        self.ops += n
        self.nbytes += int(batch[3].sum())
        self._batched += n
        if self._batched >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Fold what is buffered into the histograms and the byte series."""
        lats: dict[str, list[np.ndarray]] = {}
        ends: list[np.ndarray] = []
        sizes: list[np.ndarray] = []
        for op, lat in self._lat.items():
            if lat:
                lats.setdefault(op, []).append(np.array(lat, np.int64))
                del lat[:]
        if self._end:
            ends.append(np.array(self._end, np.int64))
            sizes.append(np.array(self._bytes, np.int64))
            del self._end[:]
            del self._bytes[:]
        for op, lat, end, size in self._batches:
            lats.setdefault(op, []).append(lat)
            ends.append(end)
            sizes.append(size)
        self._batches.clear()
        self._batched = 0
        for op, parts in lats.items():
            self.hist.setdefault(op, Histogram()).record_many(np.concatenate(parts))
        if ends:
            times = (np.concatenate(ends) - self.start_ns) / 1e9
            self.series.add_many(times, np.concatenate(sizes))


class Timed:
    """One call being timed by `OpLog.timed`; set `nbytes` inside the block when the call's
    result says how many bytes it moved, or `cancel()` when it turned out to be no operation
    (a read at the end of a stream). `t0` and `end_ns` are its two clock readings;
    `exclude(ns)` leaves work done inside the block, but not by the call, out of its time."""

    __slots__ = ("log", "op", "nbytes", "ops", "t0", "end_ns", "_keep", "_excluded")

    def __init__(self, log: OpLog, op: str, nbytes: int, ops: int = 1) -> None:
        self.log, self.op, self.nbytes, self.ops = log, op, nbytes, ops
        self.t0 = self.end_ns = self._excluded = 0
        self._keep = True

    def cancel(self) -> None:
        self._keep = False

    def exclude(self, ns: int) -> None:
        """Leave `ns` out of the recorded time (--verify's checks between a GET's chunks)."""
        self._excluded += ns

    @property
    def spent_ns(self) -> int:
        """The time recorded for the block (once it has ended)."""
        return self.end_ns - self.t0 - self._excluded

    def __enter__(self) -> Timed:
        self.t0 = now_ns()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.end_ns = now_ns()  # first: what follows is bookkeeping, not the call
        if exc_type is None and self._keep:
            self.log.add_timed(self.op, self.t0 + self._excluded, self.end_ns, self.nbytes,
                               self.ops)


def merge_logs(logs: list[OpLog]) -> tuple[dict[str, Histogram], ByteSeries, int, int]:
    """Fold several threads' logs into one set of histograms and one byte series."""
    hist: dict[str, Histogram] = {}
    series = ByteSeries()
    ops = nbytes = 0
    for log in logs:
        log.flush()
        for op, h in log.hist.items():
            hist.setdefault(op, Histogram()).merge(h)
        series.merge(log.series)
        ops += log.ops
        nbytes += log.nbytes
    return hist, series, ops, nbytes


def _null_transfer(fd: int, bufs: list[memoryview], offset: int) -> int:
    """The null method's read or write: no system call, every byte asked for "moved"."""
    return len(bufs[0])


class Reader:
    """Reads byte ranges of files into one thread's aligned buffer, timing every call."""

    def __init__(self, method: str, transfer_size: int, log: OpLog,
                 counter: callable | None = None, largest: int = 0,
                 buffer: mmap.mmap | None = None) -> None:
        """`largest`: the most bytes one range read will ask for (0: no bound); the buffer
        shrinks to it, widened to 4 KiB, when that is below the transfer size. The calls keep
        their size: a read never asks for more than its range, so none needs a larger buffer.
        At 1,024 clients each MiB of buffer a client holds is a GiB of the run. `buffer`: one
        made by the caller (`buffer_size`) and shared with other readers whose bytes nobody
        looks at; the reader then never closes it."""
        self.method = method
        self.transfer_size = transfer_size
        self._owns_buf = buffer is None
        self.buf = buffer if buffer is not None else aligned_buffer(
            buffer_size(transfer_size, largest))
        self.view = memoryview(self.buf)
        self.log = log
        self.counter = counter  # called with bytes after each read, for live progress
        self.stop: threading.Event | None = None
        # --verify: called with (buffer, bytes, file offset) after each read; timed as "verify"
        self.check: callable | None = None
        self._whole = [self.view]  # preadv's buffer list for reads of the whole buffer
        self.preadv = _null_transfer if method == METHOD_NULL else os.preadv
        self._direct = method == METHOD_DIRECT
        self._fadvise = method == METHOD_FADVISE
        # the most bytes read_file reads in one call: a transfer, within the buffer
        self._one_call = min(transfer_size, len(self.view))
        self._flags = os.O_RDONLY | (O_DIRECT if self._direct else 0)
        # preadv's buffer list for the last length read_range asked for: a file's samples
        # (or a folder of same-size files) ask for the same length call after call
        self._iov_len, self._iov = 0, [self.view[:0]]
        # The compiled loop of read_blocks and read_run, when the run compiled it before the
        # clients forked (aiio.engines.compiled); None: the Python loop.
        self.loop = compiled.loaded()
        self._address = 0  # the buffer's address, for the compiled loop's pread
        self._scratch = np.empty((3, 0), np.int64)  # its start, end and bytes of each call
        self._pending = 0  # calls in the scratch arrays not yet handed to the log

    @property
    def fast(self) -> bool:
        """Whether read_blocks goes through the compiled loop: it is there, no check
        follows each read and the reads are real."""
        return self.loop is not None and self.check is None and self.method != METHOD_NULL

    @property
    def loop_label(self) -> str:
        """Which loop times read_blocks' calls, as a result says it."""
        if self.fast:
            return self.loop.label
        if self.method == METHOD_NULL:
            return "python (null method)"
        if self.check is not None:
            return "python (--verify checks every read)"
        return f"python ({compiled.why()})"

    def open(self, path: str) -> int:
        """Open for reading, the page cache defeated as the method says; timed as "open".

        Timed inline rather than with `OpLog.timed` (the same two clock readings and record,
        and a call that raises is not recorded either): prep opens one file per sample, and
        the context manager's object and calls cost 0.4 to 0.9 us more a file.
        """
        t0 = now_ns()
        fd = os.open(path, self._flags)
        if self._fadvise:
            # Drop whatever the page cache holds of this file so the reads reach the storage.
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except BaseException:  # the caller never sees the descriptor: close it here
                os.close(fd)
                raise
        self.log.add_timed("open", t0, now_ns(), 0)
        return fd

    def _buffers(self, want: int) -> None:
        """Make `_iov` preadv's one-buffer list for a read of `want` bytes into the buffer's
        start."""
        self._iov[0].release()
        self._iov_len, self._iov = want, [self.view[:want]]

    def read_range(self, fd: int, offset: int, length: int) -> int:
        """Read [offset, offset+length) in transfer-size calls; returns bytes transferred.

        With O_DIRECT the range is widened to 4 KiB boundaries, and the widened bytes count:
        the storage really moved them.
        """
        # align_up and align_down written out, and `_buffers` called only when the length
        # changes: prep reads one range per small file, and each call costs about as much
        # as the arithmetic it wraps
        direct = self._direct
        if direct:
            end = -(-(offset + length) // DIRECT_ALIGN) * DIRECT_ALIGN
            offset -= offset % DIRECT_ALIGN
        else:
            end = offset + length
        done = 0
        view, size, log, counter, preadv = (self.view, self.transfer_size, self.log,
                                            self.counter, self.preadv)
        if (end - offset if end - offset < size else size) > len(view):
            # a slice would shorten the call silently
            raise ValueError(f"a read of {end - offset} bytes does not fit the reader's "
                             f"{len(view)}-byte buffer (its `largest` is wrong)")
        pos = offset
        while pos < end:
            want = end - pos if end - pos < size else size
            if direct and want % DIRECT_ALIGN:
                want = align_up(want)
            if want != self._iov_len:
                self._buffers(want)
            bufs = self._iov
            t0 = now_ns()
            n = preadv(fd, bufs, pos)
            if n <= 0:
                break  # at end of file: no transfer, so no operation to count
            log.add_timed("read", t0, now_ns(), n)
            if counter:
                counter(n)
            if self.check is not None:
                with log.timed("verify"):
                    self.check(view, n, pos)
            done += n
            pos += n
            if n < want or (self.stop is not None and self.stop.is_set()):
                break  # a short read is the end of the file
        return done

    def read_at(self, fd: int, offset: int, length: int) -> memoryview:
        """Read [offset, offset+length) as `read_range` does, in one call when the length is
        at most a transfer; the bytes read, held in the reader's buffer until its next read
        (a search parses the neighbour ids it read)."""
        if length > self.transfer_size:
            raise ValueError(f"read_at of {length} bytes: more than one transfer "
                             f"({self.transfer_size} bytes)")
        return self.view[:self.read_range(fd, offset, length)]

    def close_file(self, fd: int) -> None:
        """Close a file `open` opened."""
        os.close(fd)

    def read_block(self, fd: int, offset: int) -> int:
        """One transfer-size block at a block-aligned offset, timed (and checked when there is
        a check): the random mix's read, without `read_range`'s widening and loop."""
        log = self.log
        t0 = now_ns()
        n = self.preadv(fd, self._whole, offset)
        log.add_timed("read", t0, now_ns(), n)
        if self.check is not None and n:
            with log.timed("verify"):
                self.check(self.view, n, offset)
        return n

    def read_blocks(self, fd: int, offsets: Any, size: int) -> int:
        """Read one `size`-byte block at each offset (random small I/O); returns bytes.

        Through the compiled loop when the reader has it (`fast`, `read_run`), else the
        Python loop: per call two clock readings, the `preadv`, two appends to one list and
        one compare. The readings become arrays once per batch (an array's append parses
        each int as it goes: about four times a list's). The calls go to the log in one
        batch at the end, each counted as `size` bytes but those that returned less (end of
        file), so the byte series stays exact. A failed call raises `ReadFailed` with its
        offset; the calls before it keep their times and bytes.
        """
        if self.fast:
            try:
                self.read_run(fd, np.ascontiguousarray(offsets, np.int64), size, record=False)
            finally:  # as the Python loop's: the calls made so far, on an exception too
                done = self.record_runs()
        else:
            done = self._read_blocks_python(fd, offsets, size)
        if self.counter:
            self.counter(done)
        return done

    def _read_blocks_python(self, fd: int, offsets: Any, size: int) -> int:
        bufs = [self.view[:size]]
        stamps: list[int] = []  # each call's start and end reading, in turn
        stamp, preadv, now = stamps.append, self.preadv, now_ns
        short: list[tuple[int, int]] = []  # (call index, bytes) of calls that moved < size
        off = 0
        try:
            for off in offsets:
                stamp(now())
                n = preadv(fd, bufs, off)
                stamp(now())
                if n != size:
                    short.append((len(stamps) // 2 - 1, n))
        except OSError as exc:
            raise ReadFailed(exc.errno, off) from exc
        finally:  # on an error too: the calls made so far keep their times and byte counts
            bufs[0].release()  # a traceback keeps this frame: its slice would pin the buffer
            done = self._record_blocks(stamps, size, short)
        return done

    def _record_blocks(self, stamps: list[int], size: int,
                       short: list[tuple[int, int]]) -> int:
        """Hand the Python loop's calls to the log in one batch; returns their bytes. A call
        that raised has a start and no end: it is no operation."""
        if len(stamps) % 2:
            del stamps[-1]
        t = np.array(stamps, np.int64).reshape(-1, 2)
        ends = t[:, 1].copy()
        sizes = np.full(len(ends), size, np.int64)
        for i, n in short:
            sizes[i] = n
        self.log.add_many("read", ends - t[:, 0], ends, sizes)
        return int(sizes.sum())

    def read_run(self, fd: int, offsets: np.ndarray, size: int,
                 until_ns: int = 2**63 - 1, record: bool = True) -> int:
        """Read one `size`-byte block at each offset (a contiguous int64 array: the loop's
        one signature) through the compiled loop, and no more after the first call that ends
        at or past `until_ns` (the instant its caller must next look at a deadline or a
        stop); returns how many calls it made.

        Each call's readings and bytes wait in the reader until `record_runs` hands them to
        the log as one batch, as the Python loop's go: at once, or with `record` False when
        the caller's next run follows soon (the random mix records once per batch of I/O:
        the log's batch costs about 5 us, a short run's reads about 1.5 us each). A failed
        call is no operation: those before it are recorded and `ReadFailed` is raised.
        """
        if size > len(self.buf):  # machine code would write past the buffer's end
            raise ValueError(f"a read of {size} bytes does not fit the reader's "
                             f"{len(self.buf)}-byte buffer")
        first, n = self._pending, len(offsets)
        if self._scratch.shape[1] < first + n:
            # zeros, not garbage: a call's start there is told from this run's by its reading
            grown = np.zeros((3, max(first + n, 2 * self._scratch.shape[1])), np.int64)
            grown[:, :first] = self._scratch[:, :first]
            self._scratch = grown
        if not self._address:
            self._address = address_of(self.buf)
        starts, ends, got = self._scratch[:, first:first + n]
        since = now_ns()  # every call of this run starts after it, every older one before
        try:
            made = self.loop.run(fd, self._address, size, offsets, starts, ends, got, until_ns)
            while made and got[made - 1] == -errno.EINTR:
                self._pending = first + made - 1
                made = self._resume(fd, size, offsets, first, made - 1, until_ns)
        except BaseException:
            # A signal's handler that raises runs right after the loop returns (CPython runs
            # handlers as a call returns), before its count is kept: the calls it made are
            # those that started after `since`, but a last one that failed (interrupted).
            made = int(np.count_nonzero(starts >= since))
            self._pending = first + (made - 1 if made and got[made - 1] < 0 else made)
            raise
        if made and got[made - 1] < 0:  # a failed call: the calls before it count
            self._pending += made - 1
            self.record_runs()
            raise ReadFailed(-int(got[made - 1]), int(offsets[made - 1]))
        self._pending += made
        if record:
            self.record_runs()
        return made

    def _resume(self, fd: int, size: int, offsets: np.ndarray, first: int, at: int,
                until_ns: int) -> int:
        """Make again the call a signal interrupted (the run's `at`-th, at `first` + `at` in
        the scratch arrays) and those after it, as os.preadv does (PEP 475): back in Python
        the signal's handler has run (an exception it raises ends the run, the calls before
        it counted), and the call keeps its first start, so its time includes the wait the
        signal broke. Returns how many of the run's calls are made."""
        starts, ends, got = self._scratch[:, first + at:first + len(offsets)]
        start = int(starts[0])
        made = self.loop.run(fd, self._address, size, offsets[at:], starts, ends, got,
                             until_ns)
        starts[0] = start
        self._pending = first
        return at + made

    def record_runs(self) -> int:
        """Hand the compiled loop's calls not yet recorded to the log in one batch; returns
        their bytes."""
        k, self._pending = self._pending, 0
        if not k:
            return 0
        starts, ends, got = self._scratch[:, :k]
        self.log.add_many("read", ends - starts, ends, got)
        return int(got.sum())

    def read_file(self, path: str, offset: int = 0, length: int | None = None) -> int:
        """Open, read [offset, offset+length) as `read_range` does (to the end of the file,
        its length found by a timed fstat, when `length` is None), close; returns bytes
        transferred.

        A range of one transfer (prep's sample) is read here in one call, timed as `open`
        and `read_range` time theirs with one reading fewer and one record for both: the
        reading that ends the open starts the read, which is called right after it with
        nothing of aiio's between (both are recorded after the read). Written inline, not
        as a method of its own: prep reads one such range per sample, and each Python call
        costs about as much as the work it wraps.
        """
        if length is None or self.check is not None:
            return self._read_ranged(path, offset, length)
        if self._direct:  # align_up and align_down written out, as in read_range
            start = offset - offset % DIRECT_ALIGN
            want = -(-(offset + length) // DIRECT_ALIGN) * DIRECT_ALIGN - start
        else:
            start, want = offset, length
        if not 0 < want <= self._one_call:
            return self._read_ranged(path, offset, length)
        if want != self._iov_len:
            self._buffers(want)
        iov, preadv, log = self._iov, self.preadv, self.log
        t1 = 0
        t0 = now_ns()
        fd = os.open(path, self._flags)
        try:
            if self._fadvise:  # part of the open, as in `open`
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            t1 = now_ns()
            n = preadv(fd, iov, start)
            t2 = now_ns()
        except BaseException:
            if t1:  # the open happened; the read raised, so it did not
                log.add_timed("open", t0, t1, 0)
            raise
        else:  # recorded before the close, which may fail (a FUSE flush) after both happened
            if n <= 0:  # at end of file: no transfer, so no read to count
                log.add_timed("open", t0, t1, 0)
                return 0
            log.add_pair("open", "read", t0, t1, t2, n)
            if self.counter:
                self.counter(n)
            return n
        finally:
            os.close(fd)

    def _read_ranged(self, path: str, offset: int, length: int | None) -> int:
        """`read_file` of a range of several transfers, of the whole file, or with a check."""
        fd = self.open(path)
        try:
            if length is None:
                with self.log.timed("stat"):
                    length = os.fstat(fd).st_size - offset
            return self.read_range(fd, offset, length)
        finally:
            os.close(fd)

    def close(self) -> None:
        self._iov[0].release()
        self.view.release()
        if self._owns_buf:
            self.buf.close()


def address_of(buf: mmap.mmap) -> int:
    """A buffer's address, for a call made from compiled code. The ctypes view that finds
    it goes at once: while it lived, the mapping could not be closed."""
    view = ctypes.c_char.from_buffer(buf)
    try:
        return ctypes.addressof(view)
    finally:
        del view


class ReadFailed(OSError):
    """A read that failed, with the file offset it was reading."""

    def __init__(self, err: int, offset: int) -> None:
        super().__init__(err, os.strerror(err))
        self.offset = offset


def buffer_size(transfer_size: int, largest: int = 0) -> int:
    """A reader's buffer: the transfer size, or the largest range read (4 KiB-widened) when
    that is smaller."""
    return min(transfer_size, align_up(largest)) if largest else transfer_size


class Writer:
    """Writes files from one thread's aligned buffer, timing every call (and fsync on its own).

    The buffer holds random payload drawn once from the seed; before each call the 4 KiB block
    headers (`aiio.engines.blocks`) are stamped in place, so every block written is unique, and with
    `checksum` each block carries its crc32c (that work is timed as the "checksum" op). With
    O_DIRECT a file's unaligned tail is written after dropping O_DIRECT from the descriptor.

    With `count_at_fsync` a file's bytes enter the byte series when its fsync returns, not when
    each write returns: bytes still in a cache are not yet persisted (checkpoints count those).
    """

    def __init__(self, method: str, transfer_size: int, log: OpLog,
                 counter: callable | None = None, seed: int = 0, checksum: bool = False,
                 count_at_fsync: bool = False) -> None:
        self.direct = method == METHOD_DIRECT
        self.null = method == METHOD_NULL
        self.pwritev = _null_transfer if self.null else os.pwritev
        self.transfer_size = transfer_size
        self.buf = aligned_buffer(transfer_size)
        self.view = memoryview(self.buf)
        rng = np.random.Generator(np.random.PCG64(seed))
        words = rng.integers(0, 2**64, size=len(self.buf) // 8, dtype=np.uint64)
        self.view[:] = words.view(np.uint8)
        self.log = log
        self.counter = counter
        self.checksum = checksum
        self.stamper = blocks.Stamper(self.view, checksum)
        self.stop: threading.Event | None = None
        self.count_at_fsync = count_at_fsync
        self.synced_ns = 0  # when the last fsync returned (monotonic ns)
        self._buffered: set[int] = set()  # descriptors whose O_DIRECT was dropped for a tail

    def create(self, path: str) -> int:
        """Create (or truncate) a file for writing; timed as "create"."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (O_DIRECT if self.direct else 0)
        try:
            with self.log.timed("create"):
                fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise io_failure(exc, "creating", path) from exc
        self._buffered.discard(fd)
        return fd

    def write_range(self, fd: int, path: str, offset: int, length: int, tag: int) -> int:
        """Write [offset, offset+length) in transfer-size calls; returns bytes written."""
        view, size, log, counter, pwritev = (self.view, self.transfer_size, self.log,
                                             self.counter, self.pwritev)
        pos, end, done = offset, offset + length, 0
        while pos < end:
            want = min(size, end - pos)
            if self.direct and (want % DIRECT_ALIGN or pos % DIRECT_ALIGN) \
                    and fd not in self._buffered:
                self._drop_direct(fd)
            c0 = now_ns()
            self.stamper.stamp(want, tag, pos)
            if self.checksum:
                log.add_timed("checksum", c0, now_ns(), 0)
            part = view[:want]
            t0 = now_ns()
            try:
                n = pwritev(fd, [part], pos)
                t1 = now_ns()  # the call's end, before the release below
            except OSError as exc:
                raise io_failure(exc, "writing", path, pos) from exc
            finally:
                # an engine's own write call (Python) that raised keeps its frame, and this
                # slice, in the traceback: unreleased, it makes the writer's close fail
                # (BufferError) in the caller's cleanup, hiding the error
                part.release()
            log.add_timed("write", t0, t1, 0 if self.count_at_fsync else n)
            if counter:
                counter(n)
            done += n
            pos += n
            if n < want:
                # A short write to a regular file means the filesystem (or quota) is full.
                raise io_failure(OSError(errno.ENOSPC, f"short write ({n} of {want} bytes)"),
                                 "writing", path, pos)
            if self.stop is not None and self.stop.is_set():
                break
        return done

    def _drop_direct(self, fd: int) -> None:
        """O_DIRECT needs aligned lengths: the tail goes through the page cache (then fsync)."""
        self._buffered.add(fd)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~O_DIRECT)

    def fsync(self, fd: int, path: str, persisted: int = 0) -> None:
        """Make the file durable; timed as "fsync", carrying the `persisted` bytes it made
        durable. An error is raised, never swallowed."""
        self.synced_ns = fsync(self.log, fd, path, persisted)

    def fsync_dir(self, path: str) -> None:
        """Make a folder's entries durable (new files' names); timed as "dir_fsync"."""
        self.synced_ns = fsync_dir(self.log, path)

    def write_file(self, path: str, size: int, tag: int, sync: bool = True) -> int:
        """Create, write `size` bytes, fsync, drop the file's cached pages, close."""
        fd = self.create(path)
        try:
            done = self.write_range(fd, path, 0, size, tag)
            if self.null:
                # No byte was written: the file gets its length, so a read of it knows where
                # it ends (sparse; one call per file, not per write).
                with self.log.timed("truncate"):
                    os.ftruncate(fd, done)
            if sync:
                self.fsync(fd, path, done if self.count_at_fsync else 0)
                # Clean pages can be dropped now, so a later read starts cold.
                with self.log.timed("drop_cache"):
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return done

    def write_content(self, path: str, parts: Iterable[bytes]) -> int:
        """Create a file of the given bytes (each part one call, of at most a transfer),
        make it durable, drop its cached pages, close; returns bytes written."""
        fd = self.create(path)
        done = 0
        try:
            for data in parts:
                self.view[:len(data)] = data  # the aligned buffer O_DIRECT asks for
                if self.direct and len(data) % DIRECT_ALIGN and fd not in self._buffered:
                    self._drop_direct(fd)
                part = self.view[:len(data)]
                t0 = now_ns()
                try:
                    n = self.pwritev(fd, [part], done)
                    t1 = now_ns()
                except OSError as exc:
                    raise io_failure(exc, "writing", path, done) from exc
                finally:
                    part.release()  # as in write_range
                self.log.add_timed("write", t0, t1, n)
                if n < len(data):
                    raise io_failure(OSError(errno.ENOSPC, f"short write ({n} of "
                                             f"{len(data)} bytes)"), "writing", path, done)
                if self.counter:
                    self.counter(n)
                done += n
            self.fsync(fd, path)
            with self.log.timed("drop_cache"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return done

    def close_file(self, fd: int) -> None:
        """Close a file `create` opened (after its fsync)."""
        os.close(fd)

    def close(self) -> None:
        self.stamper = None  # its numpy views hold the buffer
        self.view.release()
        self.buf.close()


# --- metadata calls, each timed as its own operation ------------------------------------------

def stat(log: OpLog, path: str) -> os.stat_result:
    """stat a path, timed as "stat" (inline, as `Reader.open`: prep stats every sample)."""
    t0 = now_ns()
    result = os.stat(path)
    log.add_timed("stat", t0, now_ns(), 0)
    return result


def listdir(log: OpLog, path: str) -> list[str]:
    with log.timed("list"):
        return os.listdir(path)


def unlink(log: OpLog, path: str) -> None:
    """Delete a file; a missing one raises FileNotFoundError and is not counted."""
    with log.timed("unlink"):
        os.unlink(path)


def makedirs(log: OpLog, path: str) -> None:
    """Create a folder (and its parents) when missing; timed as "mkdir"."""
    with log.timed("mkdir"):
        os.makedirs(path, exist_ok=True)


def drop_cached(log: OpLog, path: str) -> None:
    """Drop a file's cached pages before a library reads it; timed as "open" (open, advise,
    close), as the cache-defeating open of a Reader is."""
    with log.timed("open"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def fsync(log: OpLog, fd: int, path: str, persisted: int = 0) -> int:
    """fsync a file, timed as "fsync" carrying the `persisted` bytes; returns when it
    returned (`now_ns`). An error is raised, never swallowed."""
    try:
        with log.timed("fsync", persisted) as op:
            os.fsync(fd)
    except OSError as exc:
        raise io_failure(exc, "fsync of", path) from exc
    return op.end_ns


def fsync_dir(log: OpLog, path: str) -> int:
    """Make a folder's entries durable (new files' names); timed as "dir_fsync"; returns
    when it returned."""
    try:
        with log.timed("dir_fsync") as op:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    except OSError as exc:
        raise io_failure(exc, "fsync of the folder", path) from exc
    return op.end_ns


def io_failure(exc: OSError, action: str, path: str, offset: int | None = None) -> RunFailed:
    """One clear line for an I/O error: ENOSPC says the filesystem filled up."""
    where = f"{path}" + (f" at offset {offset}" if offset is not None else "")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return RunFailed(f"the filesystem filled up ({errno.errorcode[exc.errno]}) {action} "
                         f"{where}")
    return RunFailed(f"{action} {where} failed: {exc.strerror or exc}")


def thread_read_bytes() -> int:
    """Bytes this thread has read through system calls (rchar), for library-driven reads."""
    try:
        with open("/proc/thread-self/io", "rb") as fh:
            for line in fh:
                if line.startswith(b"rchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def setup_method(method: str) -> str:
    """The method for files written before a run measures (weights, randrw files): never
    null, since those files are kept or read and must hold their data."""
    return METHOD_NONE if method == METHOD_NULL else method


def null_read_ns(ops: int, size: int = 4096) -> float:
    """aiio's own cost of one read, in ns: `ops` reads of `size` bytes through the loop every
    file read goes through (`Reader.read_range`: two clock readings, the call, the log) with
    the null method, so no system call; wall time over ops, the folding of the latencies
    into histograms included."""
    log = OpLog(start_ns=now_ns())
    reader = Reader(METHOD_NULL, size, log)
    try:
        t0 = now_ns()
        reader.read_range(-1, 0, ops * size)  # the null method never touches the descriptor
        log.flush()
        return (now_ns() - t0) / ops
    finally:
        reader.close()
