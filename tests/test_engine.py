"""The I/O engine on real files: bytes counted are bytes transferred, every call is timed."""

from __future__ import annotations

import errno
import mmap
import os
import resource
import threading

import pytest

from aiio.engines.seam import (
    FLUSH_EVERY,
    METHOD_DIRECT,
    METHOD_FADVISE,
    METHOD_NONE,
    METHOD_NULL,
    OpLog,
    Reader,
    align_up,
    merge_logs,
    now_ns,
)
from aiio.storage.target import probe_direct_io
from tests.faultfs import faultfs
from tests.oracle.mount import can_mount_fuse


def _file(folder, size: int) -> str:
    path = folder / "data.bin"
    path.write_bytes(os.urandom(size))
    return str(path)


def _method(folder) -> str:
    return METHOD_DIRECT if probe_direct_io(folder)[0] else METHOD_FADVISE


def test_read_file_counts_every_byte_and_call(tmp_path):
    size = 3 * 2**20 + 12345
    path = _file(tmp_path, size)
    log = OpLog(start_ns=0)
    reader = Reader(_method(tmp_path), 2**20, log)
    got = reader.read_file(path)
    hist, series, ops, nbytes = merge_logs([log])
    if reader.method == METHOD_DIRECT:
        assert got == size  # the short read at the end stops at end of file
    assert nbytes == got and series.total == got
    assert hist["read"].count == 4 and hist["open"].count == 1
    assert hist["stat"].count == 1  # the fstat that finds the file's length is timed too
    assert ops == 6


def test_ranges_of_changing_lengths_read_the_files_bytes(tmp_path):
    """read_range keeps the buffer list of the last length it read: ranges of other lengths
    in between still read exactly their bytes, each call timed, and the reader closes."""
    data = os.urandom(256 * 1024)
    (tmp_path / "data.bin").write_bytes(data)
    log, seen = OpLog(start_ns=0), []
    reader = Reader(_method(tmp_path), 64 * 1024, log)
    reader.check = lambda view, n, pos: seen.append(bytes(view[:n]) == data[pos:pos + n])
    fd = reader.open(str(tmp_path / "data.bin"))
    try:
        ranges = [(0, 128 * 1024), (8192, 4096), (0, 128 * 1024), (12288, 100), (4096, 8192)]
        got = [reader.read_range(fd, off, n) for off, n in ranges]
    finally:
        os.close(fd)
    reader.close()
    hist, _, _, nbytes = merge_logs([log])
    if reader.method == METHOD_DIRECT:  # the 100-byte range is widened to its 4 KiB block
        assert got == [128 * 1024, 4096, 128 * 1024, 4096, 8192]
    assert nbytes == sum(got) and all(seen) and len(seen) == hist["read"].count == 7


def test_direct_range_is_widened_to_blocks(tmp_path):
    if not probe_direct_io(tmp_path)[0]:
        pytest.skip("this filesystem refuses O_DIRECT")
    path = _file(tmp_path, 64 * 1024)
    reader = Reader(METHOD_DIRECT, 2**20, OpLog(start_ns=0))
    fd = reader.open(path)
    try:
        got = reader.read_range(fd, 5000, 100)  # inside block 1: one 4 KiB block moves
    finally:
        os.close(fd)
    assert got == 4096 == align_up(5100) - 4096


def test_read_blocks_times_each_block(tmp_path):
    path = _file(tmp_path, 1 << 20)
    log = OpLog(start_ns=0)
    reader = Reader(_method(tmp_path), 4096, log)
    fd = reader.open(path)
    try:
        offsets = [(i * 7919 % 256) * 4096 for i in range(1000)]
        got = reader.read_blocks(fd, offsets, 4096)
    finally:
        os.close(fd)
    hist, _, _, nbytes = merge_logs([log])
    assert got == nbytes == 1000 * 4096
    assert hist["read"].count == 1000 and hist["read"].min > 0


def test_read_blocks_short_read_counts_the_bytes_returned(tmp_path):
    """A block that runs past the end of the file moves fewer bytes: those are what count."""
    size = 10 * 4096 + 1000
    path = _file(tmp_path, size)
    log = OpLog(start_ns=0)
    reader = Reader(METHOD_FADVISE, 4096, log)  # buffered: a 1,000-byte tail read is legal
    fd = reader.open(path)
    try:
        got = reader.read_blocks(fd, [0, 10 * 4096, 4096, 11 * 4096], 4096)
        got += reader.read_blocks(fd, [10 * 4096], 4096)  # the tail, last in the buffer
        tail = bytes(reader.view[:1000])
    finally:
        os.close(fd)
    hist, series, ops, nbytes = merge_logs([log])
    assert got == nbytes == series.total == 4096 + 1000 + 4096 + 0 + 1000
    assert hist["read"].count == 5  # the read at end of file is a call too, and timed
    with open(path, "rb") as fh:
        fh.seek(10 * 4096)
        assert fh.read() == tail


def test_read_blocks_error_keeps_the_calls_made_before_it(tmp_path):
    """A call that raises is no operation; every call before it keeps its time and bytes."""
    path = _file(tmp_path, 64 * 1024)
    log = OpLog(start_ns=0)
    reader = Reader(_method(tmp_path), 4096, log)
    fd = reader.open(path)
    try:
        with pytest.raises(OSError):
            reader.read_blocks(fd, [0, 4096, 8192, -4096, 12288], 4096)  # EINVAL at the 4th
    finally:
        os.close(fd)
    hist, series, ops, nbytes = merge_logs([log])
    assert hist["read"].count == 3 and nbytes == series.total == 3 * 4096
    assert ops == 4  # and the open


def test_read_blocks_latencies_lie_inside_the_batch(tmp_path):
    """Each call's time runs between clock readings taken inside the batch: every completion
    time falls within it, every latency is positive, and back to back they never overlap, so
    together they take no more than the batch's own time."""
    path = _file(tmp_path, 1 << 20)
    log = OpLog(start_ns=0)
    reader = Reader(_method(tmp_path), 4096, log)
    fd = reader.open(path)
    try:
        before = now_ns()
        reader.read_blocks(fd, [(i * 7919 % 256) * 4096 for i in range(2000)], 4096)
        after = now_ns()
    finally:
        os.close(fd)
    ((op, lat, ends, _),) = log._batches  # the batch read_blocks recorded
    lat, ends = lat.tolist(), ends.tolist()
    assert op == "read"
    assert len(lat) == len(ends) == 2000 and min(lat) > 0
    assert before <= ends[0] - lat[0] and ends[-1] <= after
    assert all(b - a >= lb for a, b, lb in zip(ends, ends[1:], lat[1:], strict=False))


def test_read_blocks_across_flushes_times_every_call(tmp_path):
    """More calls than one flush holds: every call is in the histogram, every byte in the
    series, and the bytes land in the buffer."""
    path = _file(tmp_path, 1 << 20)
    log = OpLog(start_ns=0)
    reader = Reader(_method(tmp_path), 4096, log)
    offsets = [(i * 7919 % 256) * 4096 for i in range(3 * FLUSH_EVERY + 17)]
    fd = reader.open(path)
    try:
        got = 0
        for i in range(0, len(offsets), 5000):
            got += reader.read_blocks(fd, offsets[i:i + 5000], 4096)
        last = bytes(reader.view[:4096])
    finally:
        os.close(fd)
    hist, series, ops, nbytes = merge_logs([log])
    assert got == nbytes == series.total == len(offsets) * 4096
    assert hist["read"].count == ops - 1 == len(offsets)  # and the one open
    with open(path, "rb") as fh:
        fh.seek(offsets[-1])
        assert fh.read(4096) == last


def test_reader_buffer_is_faulted_in_before_the_first_timed_read(tmp_path):
    """The buffer's pages are touched when the reader is made, not inside the first timed call:
    first-touch page faults would be aiio's own cost counted as storage latency."""
    size = 4 * 2**20
    path = _file(tmp_path, size)
    reader = Reader(_method(tmp_path), size, OpLog(start_ns=0))
    fd = reader.open(path)
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        assert reader.read_range(fd, 0, size) == size
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    finally:
        os.close(fd)
        reader.close()
    assert faults < size // mmap.PAGESIZE // 4  # 1,024 pages: untouched, each would fault


class _Intervals(OpLog):
    """An op log that also keeps each recorded call's (op, start, end, bytes), in order."""

    def __init__(self) -> None:
        super().__init__(start_ns=0)
        self.seen: list[tuple[str, int, int, int]] = []

    def add_timed(self, op: str, t0: int, t1: int, nbytes: int) -> None:
        self.seen.append((op, t0, t1, nbytes))
        super().add_timed(op, t0, t1, nbytes)

    def add_pair(self, first: str, second: str, t0: int, t1: int, t2: int,
                 nbytes: int) -> None:
        self.seen += [(first, t0, t1, 0), (second, t1, t2, nbytes)]
        super().add_pair(first, second, t0, t1, t2, nbytes)


def test_a_sample_read_in_one_call_starts_where_its_open_ends(tmp_path):
    """A range that fits one transfer is opened and read back to back: the clock reading that
    ends the open starts the read (nothing of aiio's runs between them), both lie inside the
    caller's readings, and the bytes and counts are the call's."""
    path = _file(tmp_path, 128 * 1024)
    log, seen = _Intervals(), []
    reader = Reader(_method(tmp_path), 2**20, log, counter=seen.append)
    try:
        before = now_ns()
        got = reader.read_file(path, 0, 128 * 1024)
        after = now_ns()
    finally:
        reader.close()
    (op_a, a0, a1, _), (op_b, b0, b1, nbytes) = log.seen
    assert (op_a, op_b) == ("open", "read") and a1 == b0
    assert before <= a0 < a1 < b1 <= after
    assert got == nbytes == 128 * 1024 and seen == [got]
    hist, series, ops, total = merge_logs([log])
    assert {op: h.count for op, h in hist.items()} == {"open": 1, "read": 1}
    assert ops == 2 and total == series.total == got


def test_a_read_that_fails_after_its_open_counts_the_open_alone(tmp_path):
    """The open happened and is counted; the read raised and is not; the file is closed."""
    log = OpLog(start_ns=0)
    reader = Reader(METHOD_NONE, 2**20, log)
    fds = len(os.listdir("/proc/self/fd"))
    try:
        with pytest.raises(IsADirectoryError):
            reader.read_file(str(tmp_path), 0, 4096)  # a folder opens, and refuses the read
    finally:
        reader.close()
    assert len(os.listdir("/proc/self/fd")) == fds
    hist, _, ops, nbytes = merge_logs([log])
    assert {op: h.count for op, h in hist.items()} == {"open": 1} and ops == 1
    assert nbytes == 0


@pytest.mark.parametrize("method", [METHOD_NONE, METHOD_FADVISE, METHOD_NULL])
def test_a_file_shorter_than_its_range_counts_what_it_returned(tmp_path, method):
    """A sample that shrank after its stat: the read returns what the file holds (the null
    method: what it asked for), and an empty file makes no read at all, only its open."""
    path = _file(tmp_path, 5000)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    log = OpLog(start_ns=0)
    reader = Reader(method, 2**20, log)
    try:
        got = reader.read_file(path, 0, 8192)
        none = reader.read_file(str(empty), 0, 8192)
        tail = bytes(reader.view[:5000])
    finally:
        reader.close()
    assert got == (8192 if method == METHOD_NULL else 5000)
    assert none == (8192 if method == METHOD_NULL else 0)
    if method != METHOD_NULL:
        assert tail == open(path, "rb").read()
    hist, _, _, nbytes = merge_logs([log])
    assert hist["open"].count == 2 and nbytes == got + none
    assert hist["read"].count == (2 if method == METHOD_NULL else 1)


@pytest.mark.skipif(can_mount_fuse() is not None, reason=can_mount_fuse() or "")
@pytest.mark.parametrize("length", [64 * 1024, 3 * 2**20])
def test_a_close_that_fails_after_the_read_keeps_the_open_and_the_reads(tmp_path, length):
    """Storage that reports an error only at the close (a FUSE flush): the open and the reads
    happened and moved their bytes before it, so they are counted, whether the range is one
    transfer or several; the error still reaches the caller."""
    log, seen = OpLog(start_ns=0), []
    with faultfs(tmp_path, "close", after=0, name="sample") as fs:
        (fs.backing / "sample.bin").write_bytes(os.urandom(length))  # not closed through it
        path = fs.mount / "sample.bin"
        reader = Reader(METHOD_NONE, 2**20, log, counter=seen.append)
        try:
            with pytest.raises(OSError) as raised:
                reader.read_file(str(path), 0, length)
        finally:
            reader.close()
    assert raised.value.errno == errno.EIO
    hist, series, ops, nbytes = merge_logs([log])
    reads = -(-length // 2**20)
    assert {op: h.count for op, h in hist.items()} == {"open": 1, "read": reads}
    assert ops == 1 + reads and nbytes == series.total == sum(seen) == length


@pytest.mark.parametrize("record", [
    ("add_timed", "read", 2_000, 1_000, 4096),               # ends before it starts
    ("add_timed", "read", 1_000, 2_000, -1),                 # moved fewer than 0 bytes
    ("add_pair", "open", "read", 1_000, 3_000, 2_000, 4096),  # the second ends first
    ("add_pair", "open", "read", 3_000, 1_000, 2_000, 4096),  # the first ends first
    ("add_pair", "open", "read", 1_000, 2_000, 3_000, -1),
])
def test_a_refused_record_leaves_the_log_as_it_was(record):
    """A record a caller got wrong is refused whole: no part of it is counted, and the
    records after it fold as they would have without it."""
    log = OpLog(start_ns=0)
    log.add_timed("stat", 0, 500, 0)
    method, *args = record
    with pytest.raises((ValueError, OverflowError)):
        getattr(log, method)(*args)
        log.flush()
    log.add_pair("open", "read", 1_000, 2_000, 3_000, 4096)
    hist, series, ops, nbytes = merge_logs([log])
    assert {op: h.count for op, h in hist.items()} == {"stat": 1, "open": 1, "read": 1}
    assert ops == 3 and nbytes == series.total == 4096


def test_an_open_whose_cache_drop_fails_closes_its_descriptor(tmp_path):
    # fadvise on a pipe fails (ESPIPE) after the open succeeded: the descriptor stayed open,
    # one a sample for as long as the client ran
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)))
    writer.start()
    reader = Reader(METHOD_FADVISE, 4096, OpLog(0))
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(OSError):
        reader.open(str(fifo))
    writer.join()
    reader.close()
    assert len(os.listdir("/proc/self/fd")) == before
