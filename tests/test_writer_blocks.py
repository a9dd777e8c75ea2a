"""The Writer, the self-describing blocks behind --verify, and checkpoint bursts on real files."""

from __future__ import annotations

import errno
import os
import struct
import threading
import time
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from aiio.cache_methods import METHOD_FADVISE, choose_method
from aiio.engines import blocks
from aiio.engines.posix import PosixEngine
from aiio.engines.seam import OpLog, Reader, Writer, io_failure
from aiio.errors import RunFailed
from aiio.phases import shards
from aiio.phases.rundata import split_sizes
from aiio.phases.shards import CheckpointPlan
from aiio.stats import ByteSeries
from aiio.storage.target import Target, probe


def _method(folder: Path) -> str:
    return choose_method(probe(Target(folder)).o_direct)


def _read_back(path: Path, tag: int, method: str, size: int = 1 << 20) -> blocks.Verifier:
    ver = blocks.Verifier()
    rd = Reader(method, size, OpLog(0))
    rd.check = lambda view, n, pos: ver.check(view, n, str(path), tag, pos)
    assert rd.read_file(str(path)) == path.stat().st_size
    rd.close()
    return ver


@pytest.mark.parametrize("size", [4096, 3 * 1024 * 1024, 3 * 1024 * 1024 + 5000, 100])
def test_writer_writes_exact_sizes_with_fsync(tmp_path: Path, size: int) -> None:
    method = _method(tmp_path)
    log = OpLog(0)
    wr = Writer(method, 1 << 20, log, seed=1, checksum=True)
    path = tmp_path / "aiio" / "f.bin"
    assert wr.write_file(str(path), size, tag=7) == size
    wr.close()
    assert path.stat().st_size == size
    log.flush()
    assert log.hist["fsync"].count == 1
    assert log.hist["create"].count == 1
    assert log.nbytes == size  # bytes the system calls returned
    assert _read_back(path, 7, method).mismatches == 0


def test_blocks_are_unique_and_incompressible(tmp_path: Path) -> None:
    wr = Writer(METHOD_FADVISE, 1 << 20, OpLog(0), seed=3)
    path = tmp_path / "u.bin"
    wr.write_file(str(path), 2 << 20, tag=11)
    wr.close()
    data = path.read_bytes()
    chunks = {data[i:i + 4096] for i in range(0, len(data), 4096)}
    assert len(chunks) == len(data) // 4096
    assert len(zlib.compress(data, 6)) > 0.99 * len(data)


def test_verify_names_file_and_offset_of_a_flipped_byte(tmp_path: Path) -> None:
    method = _method(tmp_path)
    wr = Writer(method, 1 << 20, OpLog(0), seed=5, checksum=True)
    path = tmp_path / "v.bin"
    wr.write_file(str(path), (2 << 20) + 8192, tag=99)
    wr.close()
    with open(path, "r+b") as fh:
        fh.seek((1 << 20) + 4096 + 1000)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0x01]))
    ver = _read_back(path, 99, method)
    assert ver.mismatches == 1
    assert ver.corrupt == [{"file": str(path), "offset": (1 << 20) + 4096,
                            "problem": "checksum mismatch"}]
    # Read as another file (wrong tag): every block is reported misplaced, not corrupt.
    other = _read_back(path, 98, method)
    assert other.mismatches == other.blocks and "misplaced" in other.corrupt[0]["problem"]


def test_fsync_error_is_raised_with_the_path() -> None:
    r, w = os.pipe()  # fsync on a pipe fails (EINVAL): the error must reach the caller
    try:
        wr = Writer(METHOD_FADVISE, 4096, OpLog(0))
        with pytest.raises(RunFailed, match="fsync of /some/shard failed"):
            wr.fsync(w, "/some/shard")
        wr.close()
    finally:
        os.close(r)
        os.close(w)


def test_split_sizes_add_up_and_stay_aligned() -> None:
    for total, slots in [(112_000_000, 8), (4096 * 7 + 3, 3), (10, 4), (1 << 30, 64)]:
        sizes = split_sizes(total, slots)
        assert sum(sizes) == total and len(sizes) == slots
        assert all(s % 4096 == 0 for s in sizes[:-1])


def _plan(folder: Path, total: int, clients: int, files: int, method: str) -> CheckpointPlan:
    return CheckpointPlan(str(folder), total, total, 1.0, "checkpoint.size", clients, files,
                          2, 1 << 20, method, seed=4, checksum=True)


def test_checkpoint_burst_durable_then_restore_finds_flip(tmp_path: Path) -> None:
    """A write burst leaves every file at its size with one fsync each; a byte flipped on
    disk between the write and the restore is reported with its file and offset."""
    method = _method(tmp_path)
    plan = _plan(tmp_path / "ck", 9 * (1 << 20) + 123, clients=2, files=3, method=method)
    eng = PosixEngine(method)
    ctx = SimpleNamespace(index=1, add_bytes=lambda n: None, stop=threading.Event(), engine=eng)
    writers = shards.make_writers(plan, ctx)
    fig = shards.write_burst(plan, 0, 1, writers, 0, 0, eng).to_dict()  # as saved
    sizes = plan.sizes(1)
    assert [os.path.getsize(plan.path(0, 1, f)) for f in range(3)] == sizes
    assert fig["bytes"] == sum(sizes) and fig["files"] == 3
    assert fig["histograms"]["fsync"]["count"] == 3
    victim = plan.path(0, 1, 2)
    with open(victim, "r+b") as fh:
        fh.seek(12345)
        b = fh.read(1)
        fh.seek(12345)
        fh.write(bytes([b[0] ^ 0xFF]))
    readers = shards.make_readers(plan, ctx)
    back = shards.read_burst(plan, 0, 1, readers, 0, 0, eng).to_dict()
    assert back["bytes"] == sum(sizes)  # every byte read back
    assert back["verify"]["mismatches"] == 1
    assert back["verify"]["corrupt"][0]["file"] == victim
    assert back["verify"]["corrupt"][0]["offset"] == 12288
    for io in writers + readers:
        io.close()
    assert shards.retire(plan, 0, 1, OpLog(0), eng) == 3


def test_writer_reports_a_full_filesystem_as_such() -> None:
    err = io_failure(OSError(errno.ENOSPC, "No space left on device"), "writing", "/t/x", 4096)
    assert isinstance(err, RunFailed)
    assert str(err) == "the filesystem filled up (ENOSPC) writing /t/x at offset 4096"



def test_bytes_count_when_the_fsync_returns(tmp_path: Path) -> None:
    """With count_at_fsync every byte of a file enters the series at its fsync's return, none
    at the writes' (those may still sit in a cache); the writes are still timed one by one."""
    start = time.monotonic_ns()
    log = OpLog(start, series=ByteSeries(bucket_s=1e-6))
    wr = Writer(METHOD_FADVISE, 1 << 20, log, seed=2, count_at_fsync=True)
    size = 8 * (1 << 20)
    assert wr.write_file(str(tmp_path / "d.bin"), size, tag=3) == size
    wr.close()
    log.flush()
    synced = (wr.synced_ns - start) / 1e9
    assert log.hist["write"].count == 8 and log.nbytes == size
    assert log.series.total == size
    assert log.series.bytes_before(synced - 2e-6) == 0  # nothing before the fsync returned
    assert log.series.bytes_before(synced + 2e-6) == size


def test_checkpoint_burst_fsyncs_its_folders_and_times_each_file_durable(tmp_path: Path) -> None:
    """A shard is persisted after its files' fsyncs and the fsync of the folders naming them;
    each file's durable instant is kept, inside the burst, on the run's clock."""
    plan = _plan(tmp_path / "ck", 6 * (1 << 20), clients=2, files=3, method=METHOD_FADVISE)
    eng = PosixEngine(METHOD_FADVISE)
    ctx = SimpleNamespace(index=0, add_bytes=lambda n: None, stop=threading.Event(), engine=eng)
    writers = shards.make_writers(plan, ctx)
    os.makedirs(plan.folder)
    run_ns = time.monotonic_ns()
    fig = shards.write_burst(plan, 0, 0, writers, run_ns, run_ns, eng).to_dict()
    for wr in writers:
        wr.close()
    assert fig["histograms"]["dir_fsync"]["count"] == 2  # ckpt-0, and the run's folder
    assert fig["dir_fsync_s"] > 0 and fig["dir_fsync_latency"]["count"] == 2
    assert sorted(n for _, n in fig["durable"]) == sorted(plan.sizes(0))
    assert all(fig["start_s"] <= t <= fig["end_s"] for t, _ in fig["durable"])


@pytest.mark.parametrize("size", [3 * 1024 * 1024, 2 * 1024 * 1024 + 4096 + 100])
def test_each_block_written_is_its_header_and_the_keyed_random_payload(tmp_path: Path,
                                                                       size: int) -> None:
    """What the writer's keying must give, computed block by block apart from it: the header
    (no checksum, the magic, the file's tag, the block's offset), then the writer's random
    payload at that place of its buffer XORed with the block's key, whatever way the writer
    gets there."""
    transfer, tag = 1 << 20, 77
    wr = Writer(METHOD_FADVISE, transfer, OpLog(0), seed=6)
    base = np.random.Generator(np.random.PCG64(6)).integers(
        0, 2**64, size=transfer // 8, dtype=np.uint64).reshape(-1, blocks.BLOCK // 8)
    path = tmp_path / "k.bin"
    wr.write_file(str(path), size, tag)
    wr.close()
    data = path.read_bytes()
    assert len(data) == size
    full = size // blocks.BLOCK
    keys = blocks.block_keys(tag, 0, full + 1)
    for i in range(full + 1):
        block = data[i * blocks.BLOCK:(i + 1) * blocks.BLOCK]
        if len(block) < blocks.HEADER:
            continue
        want = base[i % len(base)].copy()
        want[3:] ^= keys[i]
        want[0] = blocks.MAGIC << 32
        want[1], want[2] = tag, i * blocks.BLOCK
        assert block == want.tobytes()[:len(block)], i


@pytest.mark.parametrize("checksum", [False, True])
@pytest.mark.parametrize("tail", [1, 8, 23])
@pytest.mark.parametrize("full", [2, 200])  # stamp()'s two ways: block by block, and numpy
def test_a_tail_shorter_than_a_header_is_the_start_of_its_header_whatever_came_before(
        checksum: bool, tail: int, full: int) -> None:
    """A file's last few bytes, too few for a header, hold its first bytes (no checksum, the
    magic, the tag, the offset), the same from a fresh buffer as from one that wrote other
    files first: not what the buffer held, keyed or not."""
    transfer, tag, pos = 1 << 20, 0xA5A5, 3 << 20
    nbytes = full * blocks.BLOCK + tail
    want = struct.pack("<IIQQ", 0, blocks.MAGIC, tag, pos + full * blocks.BLOCK)[:tail]
    for history in ([], [(transfer, 5, 0), (transfer, 5, transfer), (5000, 6, 0)]):
        buf = memoryview(bytearray(np.random.Generator(np.random.PCG64(3)).bytes(transfer)))
        st = blocks.Stamper(buf, checksum)
        for n, t, p in history:
            st.stamp(n, t, p)
        st.stamp(nbytes, tag, pos)
        assert bytes(buf[nbytes - tail:nbytes]) == want, history
