"""Queue depth through io_uring on real files (a tmpfs mount and ext4 on a loop device): every
request counted with the bytes it returned, every one timed, the data the one on disk."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from aiio.engines import ringloop
from aiio.engines.depth import DepthReader, ReadFailed, unavailable
from aiio.engines.ringloop import INFLIGHT, UNSUBMITTED
from aiio.engines.seam import O_DIRECT, OpLog, merge_logs

from .conftest import run_cli
from .storage import can_build_storage, small_tmpfs, throttled_disk

BLOCK = 4096


@pytest.fixture
def ring_here() -> None:
    """Skips, saying why, where a ring cannot be had. Asked when a test starts, not when the
    module is collected: the check compiles the ring's loop (about 1.7 s of CPU), and every
    pytest worker collects this module, most of them to run none of its tests."""
    if (why := unavailable(8)) is not None:
        pytest.skip(why)


needs_ring = pytest.mark.usefixtures("ring_here")


@pytest.fixture(params=["tmpfs", "loop"])
def folder(request, tmp_path: Path):
    """A folder on a real tmpfs mount or on ext4 on a loop device, both read with O_DIRECT."""
    if (why := can_build_storage()) is not None:
        pytest.skip(why)
    if request.param == "tmpfs":
        with small_tmpfs(tmp_path, 64) as mount:
            yield mount
    else:
        with throttled_disk(tmp_path, read_bps=10 * 2**30, size_mib=64) as disk:
            yield disk.mount


def _file(folder: Path, size: int) -> tuple[str, bytes]:
    data = os.urandom(size)
    path = folder / "blocks.bin"
    path.write_bytes(data)
    return str(path), data


def _reader(depth: int, log: OpLog, data: bytes, seen: list) -> DepthReader:
    reader = DepthReader(depth, BLOCK, log)

    def check(view, n, offset):  # the bytes in the slot's buffer are the file's bytes
        seen.append((offset, bytes(view[:n]) == data[offset:offset + n]))
    reader.check = check
    return reader


@needs_ring
@pytest.mark.parametrize("depth", [1, 8, 32])
def test_every_request_counted_timed_and_correct(folder: Path, depth: int) -> None:
    path, data = _file(folder, 256 * BLOCK)
    rng = random.Random(depth)
    offsets = [rng.randrange(256) * BLOCK for _ in range(1000)]  # repeats included
    log, seen = OpLog(0), []
    reader = _reader(depth, log, data, seen)
    fd = os.open(path, os.O_RDONLY | O_DIRECT)
    try:
        got = reader.read_blocks(fd, offsets)
    finally:
        os.close(fd)
        reader.close()
    hist, series, ops, nbytes = merge_logs([log])
    assert got == nbytes == 1000 * BLOCK
    assert hist["read"].count == 1000 and hist["read"].min > 0
    assert hist["verify"].count == 1000
    assert sorted(off for off, _ in seen) == sorted(offsets)
    assert all(ok for _, ok in seen)
    assert series.total == 1000 * BLOCK


@needs_ring
def test_the_ring_is_set_up_as_fios() -> None:
    """On tmpfs io_uring hands reads to its kernel workers; without COOP_TASKRUN each worker
    completion interrupts the reading thread (an IPI and a task-work run per request). With
    it, completions are posted when the reader next enters the kernel to wait; with
    DEFER_TASKRUN (kernel 6.1) only then, by the one thread that submits: fio's io_uring
    engine asks for both, in the same order of fallbacks."""
    ring = ringloop.Ring(4)
    try:
        assert ring.flags & ringloop.IORING_SETUP_COOP_TASKRUN
        assert ring.flags & ringloop.IORING_SETUP_DEFER_TASKRUN  # this machine's 6.x kernel
        assert ring.entries == 4
    finally:
        ring.close()


@needs_ring
def test_a_reader_made_before_anything_compiled_the_loop_reads(tmp_path: Path) -> None:
    """A program that makes a DepthReader without asking require() first (a fresh process):
    the loop is compiled then, not a NoneType error at the first read."""
    path, _ = _file(tmp_path, 4 * BLOCK)
    code = ("import os, sys\nfrom aiio.engines.depth import DepthReader\n"
            "from aiio.engines.seam import OpLog\n"
            "r = DepthReader(2, 4096, OpLog(0))\nfd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "print(r.read_blocks(fd, [0, 4096, 8192]))\nr.close()\n")
    proc = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(3 * BLOCK)


@needs_ring
@pytest.mark.parametrize("read_first", [True, False])
def test_a_closed_reader_refuses_to_read(tmp_path: Path, read_first: bool) -> None:
    """After close the ring's areas and the buffer are unmapped: the compiled loop would write
    its entries there (the process died of SIGSEGV) or the kernel would read into whatever
    is mapped at the buffer's old address. A closed reader says so instead."""
    path, _ = _file(tmp_path, 4 * BLOCK)
    reader = DepthReader(2, BLOCK, OpLog(0))
    fd = os.open(path, os.O_RDONLY)
    try:
        if read_first:
            assert reader.read_blocks(fd, [0, BLOCK]) == 2 * BLOCK
        reader.close()
        with pytest.raises(ValueError, match="closed"):
            reader.read_blocks(fd, [0, BLOCK])
        reader.close()  # twice is harmless
    finally:
        os.close(fd)


@needs_ring
def test_the_ring_is_made_by_the_thread_that_reads(tmp_path: Path) -> None:
    """A ring with SINGLE_ISSUER takes submissions only from the thread that made it; a
    client makes its readers in one thread and may read in others."""
    path, data = _file(tmp_path, 16 * BLOCK)
    log, seen = OpLog(0), []
    reader = _reader(8, log, data, seen)
    got: list = []
    fd = os.open(path, os.O_RDONLY)
    try:
        t = threading.Thread(target=lambda: got.append(reader.read_blocks(fd, [0, BLOCK] * 8)))
        t.start()
        t.join()
    finally:
        os.close(fd)
        reader.close()
    assert got == [16 * BLOCK] and len(seen) == 16 and all(ok for _, ok in seen)


def _feeder(w: int, blocks: int, every_s: float) -> threading.Thread:
    """A thread (not started) that writes `blocks` blocks into a pipe, one every `every_s`."""
    def feed() -> None:
        for i in range(blocks):
            time.sleep(every_s)
            os.write(w, bytes([i]) * BLOCK)
    return threading.Thread(target=feed)


@needs_ring
def test_a_signal_during_a_wait_runs_its_handler_and_the_reads_go_on() -> None:
    """Reads of a pipe wait until a writer feeds it: meanwhile a timer's signal interrupts
    the compiled loop's wait; Python runs the handler and the loop carries on."""
    r, w = os.pipe()
    hits: list = []
    old = signal.signal(signal.SIGALRM, lambda *a: hits.append(1))
    reader = DepthReader(4, BLOCK, OpLog(0))
    feeder = _feeder(w, 8, 0.1)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
        feeder.start()
        got = reader.read_blocks(r, [0] * 8)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        feeder.join()
        reader.close()
        os.close(r)
        os.close(w)
    assert got == 8 * BLOCK and reader.log.ops == 8
    assert hits  # the handler ran while the loop waited


@needs_ring
def test_progress_is_counted_while_a_call_reads_not_only_at_its_end() -> None:
    """A call of 16,384 offsets on storage that does a few hundred reads a second lasts
    minutes: the live counter hears of its bytes as the loop comes back (every 10 ms), or
    the progress line shows nothing moving until the call ends. A pipe fed one block every
    5 ms is such storage."""
    r, w = os.pipe()
    calls: list[int] = []
    reader = DepthReader(4, BLOCK, OpLog(0), counter=calls.append)
    feeder = _feeder(w, 100, 0.005)
    try:
        feeder.start()
        got = reader.read_blocks(r, [0] * 100)
    finally:
        feeder.join()
        reader.close()
        os.close(r)
        os.close(w)
    assert got == sum(calls) == 100 * BLOCK
    assert len(calls) > 1  # told as the reads went, at least twice in 0.5 s or more


@needs_ring
def test_short_read_at_end_of_file_counts_what_it_returned(folder: Path) -> None:
    path, data = _file(folder, 10 * BLOCK + 100)
    log, seen = OpLog(0), []
    reader = _reader(4, log, data, seen)
    fd = os.open(path, os.O_RDONLY | O_DIRECT)
    try:
        got = reader.read_blocks(fd, [10 * BLOCK, 0, 9 * BLOCK])
    finally:
        os.close(fd)
        reader.close()
    hist, series, _, nbytes = merge_logs([log])
    assert got == nbytes == 2 * BLOCK + 100 == series.total
    assert hist["read"].count == 3
    assert all(ok for _, ok in seen)


@needs_ring
def test_no_request_is_issued_after_the_deadline(tmp_path: Path) -> None:
    path, _ = _file(tmp_path, 64 * BLOCK)
    log = OpLog(0)
    reader = DepthReader(4, BLOCK, log)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert reader.read_blocks(fd, [0] * 10, time.monotonic_ns() + 60 * 10**9) == 10 * BLOCK
        assert not reader.expired
        assert reader.read_blocks(fd, [0] * 10, time.monotonic_ns() - 1) == 0
        assert reader.expired
    finally:
        os.close(fd)
        reader.close()
    assert log.ops == 10


@needs_ring
def test_a_failed_request_raises_after_the_ring_drains(tmp_path: Path) -> None:
    path, _ = _file(tmp_path, 4 * BLOCK)
    log = OpLog(0)
    reader = DepthReader(4, BLOCK, log)
    fd = os.open(path, os.O_WRONLY)  # reads of a write-only descriptor fail with EBADF
    try:
        with pytest.raises(ReadFailed) as info:
            reader.read_blocks(fd, [0, BLOCK, 2 * BLOCK])
    finally:
        os.close(fd)
        reader.close()
    assert info.value.offset in (0, BLOCK, 2 * BLOCK)
    assert log.ops == 0 and log.nbytes == 0


@needs_ring
def test_an_error_mid_flight_propagates_and_close_is_clean(tmp_path: Path) -> None:
    """A check that raises while requests are in flight: its error reaches the caller, and
    closing waits for the kernel to finish with the buffers instead of failing."""
    path, _ = _file(tmp_path, 64 * BLOCK)
    reader = DepthReader(8, BLOCK, OpLog(0))

    def check(view, n, offset):
        raise ValueError("bad block")
    reader.check = check
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(ValueError, match="bad block") as info:
            reader.read_blocks(fd, [i * BLOCK for i in range(64)])
        reader.close()  # with the error and its traceback still held, as a client holds it
    finally:
        os.close(fd)
    assert reader.ring.fd == -1 and reader.state[INFLIGHT] == reader.state[UNSUBMITTED] == 0
    assert info.value.args == ("bad block",)


class _Interrupt(Exception):
    """What a signal handler raised."""


@needs_ring
def test_requests_an_interrupted_drain_left_in_flight_stay_out_of_the_next_call(
        tmp_path: Path) -> None:
    """Four reads of an empty pipe wait; a signal's handler raises during the wait and again
    during the drain that follows, so the four are still in flight when the error leaves.
    The next call, of one block, has room for one completion: the four, completed
    meanwhile, must be waited out, not written past the end of its arrays."""
    path, data = _file(tmp_path, 4 * BLOCK)
    r, w = os.pipe()

    def interrupt(*_: object) -> None:
        raise _Interrupt
    old = signal.signal(signal.SIGALRM, interrupt)
    reader = DepthReader(4, BLOCK, OpLog(0))
    fd = os.open(path, os.O_RDONLY)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)
        with pytest.raises(_Interrupt):
            reader.read_blocks(r, [0] * 4)
        signal.setitimer(signal.ITIMER_REAL, 0)
        assert reader.state[INFLIGHT] == 4
        os.write(w, bytes(4 * BLOCK))  # the four complete
        log, seen = OpLog(0), []
        reader.log = log
        reader.check = lambda view, n, off: seen.append((off, bytes(view[:n]) == data[off:off + n]))
        got = reader.read_blocks(fd, [BLOCK])
        assert reader.state[INFLIGHT] == reader.state[UNSUBMITTED] == 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        os.close(w)
        reader.close()
        os.close(fd)
        os.close(r)
    assert got == BLOCK == log.nbytes
    assert seen == [(BLOCK, True)]  # the one completion counted is the file's block


def _randrw(target: Path, results: Path, *sets: str) -> tuple[int, dict | str]:
    args = ["run", "--phase", "prep", "-t", str(target), "--results", str(results),
            "--set", "prep.mode=randrw", "--set", "prep.file_size=4MiB",
            "--set", "prep.read_share=1", "--set", "prep.duration=500ms"]
    for s in sets:
        args += ["--set", s]
    proc = run_cli(*args, "--json", "-q", "--no-report")
    return proc.returncode, json.loads(proc.stdout) if proc.returncode == 0 else proc.stderr


@needs_ring
def test_randrw_reads_at_depth_count_every_read_and_byte(folder: Path, tmp_path: Path) -> None:
    rc, out = _randrw(folder, tmp_path / "reports", "prep.iodepth=16", "prep.threads=2",
                      "run.clients=2")
    assert rc == 0, out
    agg = out["aggregate"]
    reads = agg["read"]["latency"]["read"]["count"]
    assert reads > 0 and agg["write"]["ops"] == 0
    assert agg["read_bytes"] == BLOCK * reads == agg["bytes"]
    assert sum(c["read"]["bytes"] for c in out["clients"]) == agg["read_bytes"]
    assert all(c["read"]["histograms"]["read"]["count"] > 0 for c in out["clients"])
    assert out["workload"]["prep"]["iodepth"] == 16
    assert agg["read_loop"].startswith("io_uring (depth 16), compiled (numba ")


@needs_ring
def test_randrw_at_depth_with_verify(target: Path, results: Path) -> None:
    args = ["run", "--phase", "prep", "-t", str(target), "--results", str(results),
            "--set", "prep.mode=randrw", "--set", "prep.file_size=4MiB",
            "--set", "prep.read_share=1", "--set", "prep.duration=500ms",
            "--set", "prep.iodepth=8", "--verify", "--json", "-q", "--no-report"]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    agg = json.loads(proc.stdout)["aggregate"]
    assert agg["verify"]["mismatches"] == 0
    assert agg["verify"]["blocks_checked"] == agg["read"]["latency"]["read"]["count"] > 0


@pytest.mark.parametrize("value, words", [("0", "at least 1"), ("-3", "at least 1"),
                                          ("5000", "at most 1024"), ("deep", "as int")])
def test_bad_iodepth_is_one_line(target: Path, results: Path, value: str, words: str) -> None:
    rc, err = _randrw(target, results, f"prep.iodepth={value}")
    assert rc == 2 and words in err and "[prep].iodepth" in err
    assert len(err.strip().splitlines()) == 1


def test_a_block_larger_than_one_read_is_refused_at_depth(target: Path, results: Path) -> None:
    """An io_uring entry's length is 32 bits and Linux moves at most 2 GiB - 4 KiB per read:
    a 4 GiB + 4 KiB block went to the kernel as 4 KiB with RWF_HIPRI set in the flags
    beside it (the read failed with EINVAL); a 2 GiB block would read short every time."""
    rc, err = _randrw(target, results, "prep.iodepth=2", "prep.block_size=4GiB",
                      "prep.file_size=4GiB")
    assert rc == 2 and "prep.block_size" in err and "2 GiB - 4 KiB" in err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="2 GiB - 4 KiB"):
        DepthReader(2, 2**32 + BLOCK, OpLog(0))


def test_depth_with_writes_is_refused_in_one_line(target: Path, results: Path) -> None:
    rc, err = _randrw(target, results, "prep.iodepth=4", "prep.read_share=0.7")
    assert rc == 2 and "prep.iodepth" in err and "read_share" in err
    assert len(err.strip().splitlines()) == 1


def test_missing_numba_is_one_line(target: Path, results: Path, tmp_path: Path) -> None:
    """As on a machine without the optional extra: numba's import fails."""
    shadow = tmp_path / "no-numba"
    shadow.mkdir()
    (shadow / "numba.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numba'\", name='numba')\n")
    proc = run_cli("run", "--no-report",
                   "--phase", "prep", "-t", str(target), "--results", str(results),
                   "--set", "prep.mode=randrw", "--set", "prep.file_size=4MiB",
                   "--set", "prep.read_share=1", "--set", "prep.iodepth=4", "-q",
                   env={"PYTHONPATH": str(shadow)})
    assert proc.returncode == 2, proc.stderr
    assert "aiio[fast]" in proc.stderr and "prep.iodepth = 4" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    # refused before anything starts: a wheel installed without the extra made the target's
    # aiio folder and saved a failed result (and its page) for input it could tell at once
    assert "partial result" not in proc.stderr
    assert not results.exists() and list(target.iterdir()) == []


class _CountingStop:
    """A client's stop event that counts how often it is looked at (the real one is a
    multiprocessing Event, whose is_set() takes a lock shared by every client)."""

    def __init__(self) -> None:
        self.looks = 0

    def is_set(self) -> bool:
        self.looks += 1
        return False


@needs_ring
def test_randrw_at_depth_looks_at_the_shared_stop_only_now_and_then(tmp_path: Path) -> None:
    from aiio.engines.posix import PosixEngine
    from aiio.engines.timing import Deadline
    from aiio.phases.randrw import RandrwArgs, _Mixer

    a = RandrwArgs(str(tmp_path), "none", 1, 1 << 20, BLOCK, 1.0, 0.3, 1, False, iodepth=16)
    Path(a.path(0)).write_bytes(os.urandom(a.file_size))
    mixer, stop = _Mixer(a, 0, 0, 1, PosixEngine(a.method)), _CountingStop()
    fd = os.open(a.path(0), os.O_RDONLY)
    try:
        t0 = time.monotonic_ns()
        mixer.run(fd, Deadline(t0 + 300_000_000), stop, lambda n: None)
        elapsed_s = (time.monotonic_ns() - t0) / 1e9
    finally:
        os.close(fd)
        mixer.close()
    reads = mixer.reader.log.ops
    assert reads > 1000
    assert stop.looks <= elapsed_s / 0.02 + 3  # PolledStop's period, not once per reap
