"""What a training client holds in memory. At 1,024 clients on one host every MiB a client
holds is a GiB of the run: a loader's read buffer is sized to the largest read it can be asked
for, and a loader thread that gets no batch holds none."""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest

from aiio.cache_methods import METHOD_DIRECT, METHOD_FADVISE, METHOD_NONE
from aiio.engines.posix import PosixEngine
from aiio.engines.seam import OpLog, Reader, align_up
from aiio.phases import train
from aiio.run import procsetup
from aiio.run.clients import ClientContext, run_clients
from aiio.storage import dataset as ds
from aiio.storage.target import Target
from aiio.units import MiB

from .conftest import REPO, TINY_ARGS, saved_result, tiny_workload

THREADS = 2


def _loader(target, clients: int = 1, method: str = METHOD_NONE, index: int = 0,
            **changes) -> tuple[train.Loader, ds.Dataset]:
    """Client `index`'s loader, of `clients`, over one epoch of the tiny dataset (24 samples);
    `changes`: to the tiny workload."""
    w = tiny_workload(train__read_threads=THREADS, **changes)  # 64 KiB samples, 1 MiB transfers
    data, _ = ds.ensure(Target(target), w)
    args = SimpleNamespace(workload=w, dataset=data, method=method, reader=None, placed=None)
    ctx = SimpleNamespace(add_bytes=lambda n: None, stop=threading.Event(),
                          engine=PosixEngine(method), index=index)
    batches = train.client_batches(data, "sample", 1, 0, clients, index, 1)
    return train.Loader(ctx, args, batches), data


def _finish(loader: train.Loader) -> int:
    """Run the loader to its end; returns the sample bytes it delivered."""
    loader.start(0)
    ended, app = 0, 0
    while ended < THREADS:
        item = loader.ready.get(timeout=30)
        if item is None:
            ended += 1
            continue
        app += item[1]
        loader.permits.release()
    for th in loader.threads:
        th.join(timeout=30)
    return app


@pytest.mark.parametrize("largest, want", [(0, MiB), (5000, 8192), (4096, 4096),
                                           (3 * MiB, MiB)])
def test_a_reader_buffer_is_the_transfer_size_or_the_largest_read_if_smaller(largest, want):
    reader = Reader(METHOD_DIRECT, MiB, OpLog(0), largest=largest)
    try:
        assert len(reader.buf) == want
        assert reader.transfer_size == MiB  # the calls keep their size: only the buffer shrinks
    finally:
        reader.close()


def test_a_loader_buffer_is_no_larger_than_the_largest_file_and_every_sample_is_read(target):
    loader, data = _loader(target)
    loader.prepare()
    largest = int(data.index()["file_sizes"].max())
    assert largest < MiB
    assert [len(r.buf) for r in loader.readers] == [align_up(largest)] * THREADS
    assert _finish(loader) == int(data.index()["sample_length"].sum())
    assert not loader.errors


@pytest.mark.parametrize("method", [METHOD_NONE, METHOD_DIRECT])
def test_each_loader_thread_reads_into_a_buffer_of_its_own(target, method):
    # Training never looks at the bytes it reads, and a client's threads once shared one
    # buffer: on btrfs an O_DIRECT read is checked in the reader's pages after it lands, and
    # another thread's read landing there meanwhile failed the check (EIO, and corruption
    # errors counted on a sound device: tests/test_o_direct_checksums.py); buffered copies
    # into one buffer from two CPUs cost 20 % more CPU a byte. A buffer a thread, as a real
    # loader has.
    loader, data = _loader(target, method=method)
    loader.prepare()
    assert len(loader.readers) == THREADS
    assert len({id(r.buf) for r in loader.readers}) == THREADS
    app = _finish(loader)
    if loader.errors and isinstance(loader.errors[0], OSError):
        pytest.skip(f"no O_DIRECT on the temp filesystem: {loader.errors[0]}")
    assert not loader.errors
    assert app == int(data.index()["sample_length"].sum())


def test_a_native_loader_thread_holds_a_page_not_a_read_buffer(target):
    # With --reader native the format's library reads each sample into buffers of its own;
    # the loader's raw reader keeps only its op log. A buffer the size of the largest file
    # was 644 KiB a demo thread that nothing ever wrote.
    loader, data = _loader(target, method=METHOD_FADVISE, train__reader="native")
    loader.prepare()
    assert loader.readers and all(len(r.buf) == mmap.PAGESIZE for r in loader.readers)
    assert _finish(loader) == int(data.index()["sample_length"].sum())
    assert not loader.errors


def test_a_loader_buffer_holds_a_widened_o_direct_read_of_the_largest_file(target):
    # Under O_DIRECT a range widens to 4 KiB boundaries; inside a file it stays inside the
    # file's size rounded up, which is the buffer's size.
    loader, data = _loader(target, method=METHOD_DIRECT)
    loader.prepare()
    app = _finish(loader)
    if loader.errors and isinstance(loader.errors[0], OSError):
        pytest.skip(f"no O_DIRECT on the temp filesystem: {loader.errors[0]}")
    assert not loader.errors
    assert app == int(data.index()["sample_length"].sum())


def test_a_loader_thread_without_a_batch_holds_no_buffer(target):
    # 48 clients for 24 samples: client 0 has none (half the clients of a 1,024-client run
    # of the demo's 512 samples are in that case)
    loader, _ = _loader(target, clients=48)
    loader.prepare()
    assert loader.readers == []
    assert _finish(loader) == 0
    assert not loader.errors


def test_only_the_loader_threads_that_got_a_batch_hold_a_buffer(target):
    loader, _ = _loader(target, clients=24)  # one sample, one batch: one of the two threads
    loader.prepare()
    assert len(loader.readers) == 1
    assert _finish(loader) > 0
    assert not loader.errors


def test_a_read_larger_than_a_shrunk_buffer_is_refused_not_shortened(tmp_path):
    # A slice of the buffer would quietly cut the call short and end the range early.
    path = tmp_path / "f"
    path.write_bytes(b"x" * 16384)
    reader = Reader(METHOD_NONE, MiB, OpLog(0), largest=4096)
    try:
        with pytest.raises(ValueError, match="does not fit"):
            reader.read_file(str(path), 0, 8192)
        assert reader.read_file(str(path), 0, 4096) == 4096
    finally:
        reader.close()


def _private_kib() -> int:
    """This process's pages that no other process shares (KiB)."""
    with open("/proc/self/smaps_rollup") as fh:
        fields = dict(line.split(":", 1) for line in fh if line.startswith("Private"))
    return sum(int(v.split()[0]) for v in fields.values())


def _in_child(fn) -> bytes:
    """What `fn` returns (bytes) when run in a child forked from this process."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.write(w, fn())
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 64)
    os.close(r)
    os.waitpid(pid, 0)
    return got


def _bare_fork_private_kib() -> int:
    """What a child forked from this process holds of its own when it does nothing: the floor
    any forked client starts from, in this interpreter with this heap."""
    return int(_in_child(lambda: str(_private_kib()).encode()))


def _report_private(ctx: ClientContext) -> dict:
    got = _private_kib()
    ctx.ready_and_wait()
    return {"private_kib": got}


def _set_up_growth_kib() -> int:
    """The private pages a forked child gains setting itself up as a client does (its parent
    link, its name, its timers)."""
    def set_up() -> bytes:
        before = _private_kib()
        procsetup.die_with_parent(os.getppid())
        procsetup.set_process_name("aiio-test")
        procsetup.exact_timers()
        return str(_private_kib() - before).encode()
    return int(_in_child(set_up))


def test_a_client_sets_itself_up_in_few_pages_of_its_own():
    # prctl looked up by each client through ctypes and its name written through a text
    # file took 348 KiB of pages of its own (Dec 3 2026); looked up once in the parent and
    # written with os calls, 216 KiB. 1,024 clients pay it 1,024 times.
    assert min(_set_up_growth_kib() for _ in range(3)) <= 288


def test_a_client_names_itself_as_ps_shows_it():
    def named() -> bytes:
        procsetup.set_process_name("aiio-client-1023-and-more")
        with open("/proc/self/comm", "rb") as fh:
            return fh.read()
    assert _in_child(named) == b"aiio-client-102\n"  # Linux keeps 15 characters


def test_a_client_starts_with_little_more_memory_of_its_own_than_a_bare_fork():
    # Started as multiprocessing processes, clients held about 1.2 MiB of private pages more
    # than a plain fork at their first line of phase code (docs/PERFORMANCE.md, Density); a
    # 1,024-client run pays that 1,024 times. Now about 0.2 to 0.4 MiB more (0.45 before the
    # lighter set-up of Dec 3 2026); the bound sits between.
    bare = _bare_fork_private_kib()
    results, _ = run_clients(4, _report_private, None)
    worst = max(r["private_kib"] for r in results)
    assert worst <= bare + 768, (worst, bare)


# A bytes object of 463 bytes takes a 496-byte block of the small-object pools: a size few
# other objects have, so the parent's own objects do not fill the test's free blocks first.
HOLE_SIZE = 463
PER_PAGE = 4096 // 496


def _allocating_client(ctx: ClientContext) -> dict:
    """Makes 500 small objects of the free blocks' size; returns its private pages' growth.

    After the start: the parent gives the blocks back once every client is forked, and each
    page it writes so becomes this client's alone (its own copy is the parent's now), which
    made the growth measured before the start anything from 0.2 to 2.2 MiB from run to run."""
    ctx.ready_and_wait()
    before = _private_kib()
    made = [bytes([i % 256]) * HOLE_SIZE for i in range(500)]
    grown = _private_kib() - before
    return {"grown_kib": grown, "made": len(made)}


def _holes_then_one_client() -> None:
    """In a fresh interpreter: one free block on each of about 1,000 of its pages, then one
    client that makes 500 objects of that size; prints the client's figures."""
    keep = [bytes([i % 256]) * HOLE_SIZE for i in range(PER_PAGE * 1000)]
    del keep[::PER_PAGE]  # one free block per page
    results, _ = run_clients(1, _allocating_client, None)
    print(json.dumps(results[0]))
    assert keep


def test_a_clients_new_objects_do_not_land_in_free_blocks_of_the_parents_pages():
    # A client's new small objects went to the free blocks of the pools the parent had in
    # use: each block freed in the parent is a slot in a page the client shares, and filling
    # it copies the whole page into the client. Here one block is free on each of about 1,000
    # of the parent's pages: 500 new objects (248 KB) copied about 2 MB; in pages of their own
    # they take about 62. In a fresh interpreter, so that only the holes made here are in its
    # pools: in a test worker's, after hundreds of other tests, the client grew 1,696 KiB
    # once. Measured before the start, the growth also counted the pages the parent wrote as
    # it gave the blocks back (0.2 to 2.2 MiB from run to run): the client measures after it.
    code = ("from tests.test_density_memory import _holes_then_one_client\n"
            "_holes_then_one_client()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["made"] == 500
    assert got["grown_kib"] < 1024, got


def test_a_run_with_stderr_closed_runs(target, results):
    # The pool fill reads the interpreter's statistics off its stderr: started with stderr
    # closed (2>&-, as some service managers do), sys.stderr is None and fd 2 is no file, and
    # the run ended before its first client with status 1 and not a word anywhere.
    cmd = [sys.executable, "-m", "aiio", "run", "--target", str(target), "--results",
           str(results), *TINY_ARGS, "-q", "--no-report", "--no-history"]
    done = subprocess.run(["sh", "-c", 'exec "$@" 2>&-', "sh", *cmd], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
    assert saved_result(results)["status"] == "ok"

