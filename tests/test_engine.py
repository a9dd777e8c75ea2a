"""The I/O engine on real files: bytes counted are bytes transferred, every call is timed."""

from __future__ import annotations

import os

import pytest

from aiio.engine import METHOD_DIRECT, METHOD_FADVISE, OpLog, Reader, align_up, merge_logs
from aiio.target import probe_direct_io


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
    assert ops == 5


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
