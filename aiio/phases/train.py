"""Training: every client streams its shard of the dataset through `read_threads` loader
threads into an emulated accelerator that computes a fixed time per batch (MLPerf Storage
semantics). Accelerator utilization (AU) = compute time / wall time, the first step each
client consumes in each epoch excluded as warm-up. Two byte figures stay apart: what the
storage delivered to the loaders (read-ahead included, O_DIRECT widening included) and what the
accelerators consumed (the samples of the batches they computed on: the headline).
"""

from __future__ import annotations

import _thread
import math
import mmap
import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from aiio import stats
from aiio.cache_methods import METHOD_DIRECT, METHOD_FADVISE, METHOD_NULL
from aiio.document import Where, dig
from aiio.engines.seam import (
    OpLog,
    Reader,
    align_down,
    align_up,
    io_failure,
    thread_read_bytes,
)
from aiio.engines.timing import (
    NEVER,
    ClientCpu,
    Deadline,
    StepClock,
    Window,
    edge_ns,
    thread_cpu_seconds,
)
from aiio.errors import ConfigError, RunFailed
from aiio.options import RunOptions
from aiio.phases import checkpoint, train_au, train_checkpoints
from aiio.phases.base import (
    OBJECT_CLIENT_BASE,
    ClientMemory,
    Phase,
    RunContext,
    client_identity,
    client_io_figures,
    ensure_dataset,
    io_aggregate,
)
from aiio.phases.train_steps import StepTotals
from aiio.results.layout import train_sections
from aiio.run.clients import ClientContext, sleep_until
from aiio.stats import ByteSeries
from aiio.storage import dataset as ds
from aiio.storage import formats
from aiio.storage.placement import Located, locate, recorded, tally
from aiio.units import MiB, mib_per_s
from aiio.workload import Workload

# Step records kept for timelines (totals never come from them), 544 B each in a client and
# in the parent: a run's clients share RUN_STEP_RECORDS, each keeping at least MIN_STEP_RECORDS
# and at most MAX_STEP_RECORDS; a full log thins to an even sample of the run (StepTotals).
MAX_STEP_RECORDS = 200_000
RUN_STEP_RECORDS = 1_000_000
MIN_STEP_RECORDS = 1_000
# One step's record: 261 B measured in the client (a list of six numbers, 200,000 of them
# built in CPython 3.11), and the same again in the parent once it holds the client's result.
STEP_RECORD_BYTES = 2 * 272
# A client's memory besides what `client_memory` counts (docs/PERFORMANCE.md, "Memory per
# client"; demo runs at 4, 64 and 256 clients, Dec 2 2026, under load): the largest client
# USS less its buffers, rounded up to 0.5 MiB. 4.65 MiB at 4 clients (4.36 at 64, 4.17 at
# 256) less its 1 MiB read buffer.
MEMORY_BASE = 4 * MiB
# With --reader native a client reads each sample through its format's library and holds it
# whole (counted as a buffer), measured the same way at 4 and 64 clients (the largest client
# less the loader's 1 MiB and two 640 KiB samples); a format not measured takes the largest.
NATIVE_MEMORY_BASES = {
    "npz": 6 * MiB,              # 8.09 MiB at 64 clients (8.07 at 4) - 2.25 MiB
    "hdf5": 8 * MiB,             # 9.80 MiB at 64 clients (9.52 at 4) - 2.25 MiB
    "tfrecord": 5.5 * MiB,       # 7.70 MiB at 4 clients (6.24 at 64) - 2.25 MiB
}
COMPUTE_OVERSHOOT = 1.02  # measured compute per step more than 2 % above the asked time warns


@dataclass
class Batch:
    """One batch of one client: which byte ranges of which files hold its samples."""

    epoch: int
    step: int
    files: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    first: np.ndarray   # first sample index inside its file, per range (native reader)
    samples: int


@dataclass
class TrainArgs:
    workload: Workload
    dataset: ds.Dataset
    method: str
    compute_s: float
    epochs: int | None       # None: run until duration
    duration_s: float
    checkpoint: Any = None   # a CheckpointPlan when checkpointing during training
    # Makes each loader thread's reader, (method, transfer_size, log, counter) -> reader;
    # None: the engine's (the rehearsal passes its own, which reads nothing).
    reader: Any = None
    # Where the dataset's files live (aiio.storage.placement); None: storage without folders
    placed: Located | None = None


def step_log_cap(clients: int) -> int:
    """The step records one of `clients` clients keeps: its share of the run's budget."""
    return min(MAX_STEP_RECORDS, max(MIN_STEP_RECORDS, RUN_STEP_RECORDS // max(1, clients)))


def step_log_bytes(w: Workload, clients: int) -> int:
    """The step records one of `clients` training clients can keep: its steps (its share of
    the epochs' batches, or the duration over the compute time per batch), at most its cap."""
    t = w.train
    compute = t.compute_time.get(t.accelerator, 0.0)
    if t.duration:
        steps = t.duration / compute if compute > 0 else MAX_STEP_RECORDS
    else:
        samples = w.dataset.num_files * w.dataset.samples_per_file
        steps = t.epochs * math.ceil(math.ceil(samples / max(1, clients)) / t.batch_size)
    return int(min(steps, step_log_cap(clients))) * STEP_RECORD_BYTES


def shard_bounds(total: int, clients: int, index: int) -> tuple[int, int]:
    """Client `index`'s contiguous share of `total` positions; shares differ by at most 1."""
    return index * total // clients, (index + 1) * total // clients


def epoch_order(mode: str, count: int, seed: int, epoch: int) -> np.ndarray | None:
    """Permutation for this epoch (seeded, identical in every client); None for identity."""
    if mode == "off":
        return None
    rng = np.random.Generator(np.random.PCG64([seed, epoch]))
    return rng.permutation(count)


def client_batches(data: ds.Dataset, shuffle: str, seed: int, epoch: int, clients: int,
                   index: int, batch_size: int) -> Iterator[Batch]:
    """This client's batches for one epoch; every sample of the dataset lands in exactly one
    client's batches exactly once (the last batch of a shard may be short)."""
    spf = data.params.samples_per_file
    lo, hi = shard_bounds(data.num_samples, clients, index)
    if shuffle == "sample":
        order = epoch_order("sample", data.num_samples, seed, epoch)[lo:hi]
        for step, b0 in enumerate(range(0, len(order), batch_size)):
            ids = order[b0:b0 + batch_size]
            files, first = ids // spf, ids % spf
            count = np.ones_like(ids)
            offsets, lengths = data.ranges(files, first, count)
            yield Batch(epoch, step, files, offsets, lengths, first, len(ids))
        return
    file_order = epoch_order(shuffle, data.num_files, seed, epoch)
    for step, b0 in enumerate(range(lo, hi, batch_size)):
        b1 = min(b0 + batch_size, hi)
        yield _contiguous_batch(data, file_order, epoch, step, b0, b1)


def _contiguous_batch(data: ds.Dataset, file_order: np.ndarray | None, epoch: int, step: int,
                      p0: int, p1: int) -> Batch:
    """Positions p0..p1 of the epoch's file-ordered sequence, one range per file touched."""
    spf = data.params.samples_per_file
    slots = np.arange(p0 // spf, (p1 - 1) // spf + 1)
    starts = np.maximum(slots * spf, p0) - slots * spf
    ends = np.minimum((slots + 1) * spf, p1) - slots * spf
    files = slots if file_order is None else file_order[slots]
    offsets, lengths = data.ranges(files, starts, ends - starts)
    return Batch(epoch, step, files, offsets, lengths, starts, p1 - p0)


# --- the client ----------------------------------------------------------------------------

STOPPED = object()  # what a loader thread takes instead of a batch when the run stops


class Loader:
    """`read_threads` threads that read batches ahead of the accelerator, as a data loader."""

    def __init__(self, ctx: ClientContext, args: TrainArgs, batches: Iterator[Batch]) -> None:
        t = args.workload.train
        self.ctx, self.args, self.batches = ctx, args, batches
        self.ready: queue.Queue = queue.Queue()
        self.permits = threading.Semaphore(t.read_threads * t.prefetch)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.go = threading.Event()
        self.armed = threading.Semaphore(0)  # one release per thread holding its first batch
        self.start_ns = 0
        self.logs: list[OpLog] = []
        self.readers: list[Reader] = []  # those of the threads that got a batch
        self.app_bytes = [0] * t.read_threads  # sample bytes delivered, per loader thread
        # Per loader thread: its log's byte count when it began the batch it is reading;
        # None between batches (`partly_read`)
        self.reading_from: list[int | None] = [None] * t.read_threads
        # Per loader thread: when the last batch it read had arrived, once it found no more
        # (None: it never did; `done_s`)
        self.ran_out_ns: list[int | None] = [None] * t.read_threads
        self.errors: list[BaseException] = []
        self.finished = 0  # loader threads that ran out of batches
        self.cpu: ClientCpu | None = None  # the client's meter, set before the start
        self.threads = [threading.Thread(target=self._work, daemon=True, name=f"loader-{i}")
                        for i in range(t.read_threads)]
        self.native = t.reader == "native"
        self.fmt = formats.get_format(args.dataset.params.format)
        # Each loader thread reads into a buffer of its own, as any real loader does: never
        # one that another read is landing in at the same time (`read_buffer_bound`).
        self.largest = read_buffer_bound(args, ctx)
        # bytes and time per server, where the filesystem said where each file lives
        self.tally = tally(args.placed, ctx.index)

    def start(self, start_ns: int) -> None:
        """Hand the threads the common start instant, ahead of it; each waits for it."""
        for log in self.logs:
            log.start_ns = start_ns
        self.start_ns = start_ns
        if self.tally is not None:
            self.tally.start_ns = start_ns
        self.go.set()

    def prepare(self) -> None:
        """Start the threads and return once each holds its first batch: the epoch's shuffle
        and the first touches of the loader's code and memory are done before the common
        start, not by every client at once inside the measured window."""
        for _ in self.threads:
            self.logs.append(OpLog(start_ns=0))
        for th in self.threads:
            th.start()
        for _ in self.threads:
            self.armed.acquire()

    def _next(self) -> Batch | None:
        with self.lock:
            return next(self.batches, None)

    def _make_reader(self, log: OpLog) -> Reader:
        transfer = self.args.workload.train.transfer_size
        if self.args.reader is not None:
            reader = self.args.reader(self.args.method, transfer, log, self.ctx.add_bytes)
        else:
            reader = self.ctx.engine.reader(transfer, log, self.ctx.add_bytes,
                                            largest=self.largest)
        reader.stop = self.stop
        self.readers.append(reader)
        return reader

    def _work(self) -> None:
        me = self.threads.index(threading.current_thread())
        log = self.logs[me]
        reader = None
        cpu0: float | None = None
        try:
            try:
                batch = self._take()
                # Only a thread with a batch to read gets a reader and its buffer (populated
                # here, before the start): half the clients of a 1,024-client demo run have
                # no sample at all.
                if isinstance(batch, Batch):
                    reader = self._make_reader(log)
            finally:
                self.armed.release()  # also after an error: prepare() must not wait forever
            self.go.wait()
            sleep_until(self.start_ns)
            read_end = self.start_ns  # a thread that read nothing had nothing to read
            if self.cpu is not None and not self.cpu.alone:  # alone: the process clock's
                cpu0 = thread_cpu_seconds()
            while batch is not STOPPED and not self.stop.is_set():
                if batch is None:
                    # the end of its last read, not now: a thread asks for the next batch only
                    # when a permit frees it, once the accelerator takes one, which on a busy
                    # machine came after the checkpoint that followed the last step
                    self.ran_out_ns[me] = read_end
                    self.ready.put(None)
                    break
                began = edge_ns()
                self.reading_from[me] = log.nbytes
                app = self._read_batch(reader, batch)
                read_end = edge_ns()
                self.reading_from[me] = None
                self.app_bytes[me] += app
                self.ready.put((batch, app, began))
                batch = self._take()
        except BaseException as exc:  # surfaced by the accelerator loop
            self.errors.append(exc)
            self.ready.put(None)
        finally:
            if reader is not None:
                reader.close()
            if cpu0 is not None and self.cpu is not None:
                self.cpu.add(thread_cpu_seconds() - cpu0)

    def partly_read(self) -> tuple[int, int]:
        """Bytes the storage delivered into batches no accelerator has taken: device bytes
        the loader threads have read of batches they are still reading, and the sample bytes
        of batches read whole and waiting in the queue (read ahead, up to the permits): a
        storage-paced client cut with a batch queued missed it as surely as one half read."""
        held = 0
        for log, began in zip(self.logs, list(self.reading_from), strict=True):
            if began is not None:
                held += max(0, log.nbytes - began)
        with self.ready.mutex:  # the queue's own lock: the threads put batches meanwhile
            # batches only: a loader's end (None) or the stop's wake-up (WAKE) hold no bytes
            queued = [item for item in self.ready.queue if isinstance(item, tuple)]
        return held, sum(app for _, app, _ in queued)

    def done_s(self) -> float | None:
        """Seconds from the start until the last byte of the last batch arrived, once every
        loader thread found no more (the whole dataset read, every epoch); None while one had
        more to read (a duration-bound run)."""
        if any(t is None for t in self.ran_out_ns):
            return None
        return max(0.0, (max(self.ran_out_ns) - self.start_ns) / 1e9)

    def _take(self) -> Batch | None | object:
        """A read-ahead permit, then the next batch (None: no more); STOPPED at a stop."""
        self.permits.acquire()
        if self.stop.is_set():
            return STOPPED
        return self._next()

    def _read_batch(self, reader: Reader, batch: Batch) -> int:
        """Read one batch; returns its application (sample) bytes delivered. The device bytes
        (widened to 4 KiB under O_DIRECT) are in the thread's op log."""
        data, app = self.args.dataset, 0
        columns = (batch.files, batch.offsets, batch.lengths, batch.first)
        for f, off, length, first in zip(*(c.tolist() for c in columns), strict=True):
            if self.stop.is_set():
                break
            path = data.path(f)
            began = edge_ns() if self.tally is not None else 0
            if self.native:
                done = self._read_native(reader.log, path, first, (off, length))
                app += length if done else 0
            else:
                try:
                    done = reader.read_file(path, off, length)
                except OSError as exc:  # named by its file, as prep's and load's are
                    raise io_failure(exc, "reading", path, off) from exc
                got = sample_bytes(off, length, done, self.args.method)
                # Never a part of a sample counted as the whole; a stop ends a read early
                if got < length and not self.stop.is_set():
                    raise RunFailed(short_sample(path, off, length, got))
                app += got
            if self.tally is not None:
                self.tally.add(f, done, began, edge_ns())
        return app

    def _read_native(self, log: OpLog, path: str, index: int, span: tuple[int, int]) -> int:
        """Read one sample through the format's own library; bytes from the thread's rchar."""
        self.ctx.engine.drop_cached(log, path)
        spf = self.args.dataset.params.samples_per_file
        before = thread_read_bytes()
        with log.timed("read") as op:
            self.fmt.read_native(path, None if spf == 1 else index, span=span)
            op.nbytes = thread_read_bytes() - before
        self.ctx.add_bytes(op.nbytes)
        return op.nbytes


def short_sample(path: str, offset: int, length: int, got: int) -> str:
    """Why a sample range read came back short: its file changed after generation."""
    return (f"{path} is shorter than the dataset's index says: {got} of the {length} bytes "
            f"at offset {offset} were there; the file changed after the dataset was "
            "generated (remove the dataset folder to generate it again)")


def sample_bytes(offset: int, length: int, nread: int, method: str) -> int:
    """The part of [offset, offset+length) that a read of `nread` bytes covered: under
    O_DIRECT the read began at the 4 KiB boundary below `offset`."""
    start = align_down(offset) if method == METHOD_DIRECT else offset
    return max(0, min(offset + length, start + nread) - offset)


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """One emulated accelerator: loader threads feed batches; compute sleeps per batch."""
    args: TrainArgs = ctx.args
    w = args.workload
    if ctx.engine is not None:  # None in the rehearsal, which reads nothing
        # a bucket sizes its connection pool to the loader threads and checkpoint writers
        writers = args.checkpoint.threads if args.checkpoint is not None else 0
        ctx.engine = ctx.engine.with_streams(w.train.read_threads + writers)
    loader = Loader(ctx, args, _all_batches(args, ctx))
    loader.prepare()
    wake_on_stop(ctx, loader)
    hook = train_checkpoints.checkpointer(ctx, args)
    totals = StepTotals(ByteSeries().bucket_s, step_log_cap(ctx.count),
                        w.train.read_threads * w.train.prefetch, computes=args.compute_s > 0)
    # The loader threads wait for the start instant; this thread next waits for a batch.
    run = Window(ctx.ready())
    if ctx.stop.is_set():  # stopped before the start: the loaders read nothing
        loader.stop.set()  # asked once here, ahead of the start, not by every loader at it
    start_ns = run.start_ns
    cpu = ClientCpu(alone=ctx.shares_process == 1)
    loader.cpu = cpu
    loader.start(start_ns)
    if hook is not None:
        hook.start(start_ns)
    _accelerate(ctx, args, loader, run, totals, hook)
    if not totals.steps:  # no batch taken: its window is its whole run, and it ends now
        totals.close_step(0.0, *loader.partly_read())
    if hook is not None:
        hook.finish()  # a synchronous checkpoint may be waiting for this client
    end_ns = run.close()
    loader.stop.set()
    for _ in loader.threads:
        loader.permits.release()
    for th in loader.threads:
        th.join(timeout=30)
    if loader.errors:
        raise loader.errors[0]
    out = client_identity(ctx.index)
    out.update(client_io_figures(loader.logs, start_ns, end_ns))
    out["app_bytes"] = sum(loader.app_bytes)
    out["loaders_done_s"] = loader.done_s()
    if loader.tally is not None:
        out["placement"] = loader.tally.to_dict()
    out.update(totals.figures(args.compute_s, w.train.batch_size))
    if hook is not None:
        out.update(hook.figures(out))
    out["cpu_s"] = cpu.seconds()
    if not cpu.alone:  # the process its clients share: one interpreter, one core at a time
        out.update(process_cpu_s=cpu.process_seconds(), process_clients=ctx.shares_process)
    cpu.close()
    window = consumed_window(out)
    out["samples_per_s"] = out["samples"] / window if window else 0.0
    out["consumed_mib_s"] = mib_per_s(out["consumed_bytes"], window)
    if ctx.engine is not None:
        out.update(ctx.engine.client_figures(out, out["elapsed_s"]))  # a bucket's requests
    return out


def _rehearsal_client(ctx: ClientContext) -> dict[str, Any]:
    """`run_client` with no engine: the rehearsal reads nothing, and a bucket's engine would
    connect and send a request for it."""
    ctx.engine = None
    return run_client(ctx)


REHEARSAL_S = 0.25            # the rehearsal's run: hundreds of steps of every kind of call
REHEARSAL_COMPUTE_S = 0.001   # its emulated compute per step, at most


class _RehearsalReader(Reader):
    """The rehearsal's reader: the null method's bookkeeping, with no file opened."""

    def read_file(self, path: str, offset: int = 0, length: int | None = None) -> int:
        return self.read_range(-1, offset, length or 0)  # the null method never uses the fd


def _rehearsal_reader(method: str, transfer_size: int, log: OpLog, counter: Any) -> Reader:
    return _RehearsalReader(METHOD_NULL, transfer_size, log, counter)


def rehearsal_args(args: TrainArgs) -> TrainArgs | None:
    """The arguments of a rehearsal of `run_client` (aiio.run.clients.rehearse): the same dataset
    and workload, for a moment, reading nothing, writing no checkpoint; None with the native
    reader (the format's library opens and reads the files itself)."""
    if args.workload.train.reader == "native":
        return None
    return replace(args, method=METHOD_NULL, reader=_rehearsal_reader, checkpoint=None,
                   placed=None,
                   epochs=None, duration_s=REHEARSAL_S,
                   compute_s=min(args.compute_s, REHEARSAL_COMPUTE_S))


def read_buffer_bound(args: TrainArgs, ctx: ClientContext) -> int:
    """The most bytes a loader thread's buffer must hold (0: no bound, the transfer size).
    No range read goes past its file, so the largest file bounds it on local files (an object
    engine's GET bodies arrive in buffers of its own); the native reader's thread reads
    through its format's library, and its reader keeps only the op log: a page.

    Never one buffer for several threads or clients, though training never looks at the
    bytes: an O_DIRECT read lands by DMA in the reader's pages and a layer below may check
    them there (btrfs's data checksums: another read landing in the same pages failed the
    check, EIO, and btrfs counted corruption errors on a sound device), and two processes
    copying buffered reads into the same pages spent 20 % more CPU a byte than into their own
    (docs/PERFORMANCE.md, "A read buffer a loader thread")."""
    if args.reader is not None or not ctx.engine.caps.local_files:
        return 0
    if args.workload.train.reader == "native":
        return mmap.PAGESIZE
    return align_up(int(args.dataset.index()["file_sizes"].max()))


def _all_batches(args: TrainArgs, ctx: ClientContext) -> Iterator[Batch]:
    w = args.workload
    epoch = 0
    while args.epochs is None or epoch < args.epochs:
        got = 0
        for batch in client_batches(args.dataset, w.train.shuffle, w.run.seed, epoch, ctx.count,
                                    ctx.index, w.train.batch_size):
            got += 1
            yield batch
        if not got:
            return  # no samples for this client: every epoch is empty, do not loop over them
        epoch += 1


def _accelerate(ctx: ClientContext, args: TrainArgs, loader: Loader, run: Window,
                totals: StepTotals, hook: Any = None) -> None:
    """The accelerator loop: wait for a batch, compute, repeat; every step goes to totals."""
    deadline = run.deadline(args.duration_s) if args.epochs is None else NEVER
    step = StepClock(run.start_ns)
    while not ctx.stop.is_set():
        if deadline.passed():
            break
        step.wait()
        item = _next_ready(loader, ctx, deadline)
        if item is None:
            break
        batch, app, began = item
        step.compute(args.compute_s)
        loader.permits.release()
        ctx.add_units(1)
        totals.record(batch.epoch, batch.step, *step.spans(), batch.samples, app,
                      run.since_start_s(began))
        # A due checkpoint stalls this loop (the loaders keep reading); one whose barrier
        # opened past the deadline ends it, on every host alike.
        done = hook is not None and hook.after_step(batch.epoch, batch.step)
        totals.close_step(run.since_start_s(run.lap()), *loader.partly_read())
        if done:
            break


WAKE = object()  # put in a ready queue when the run stops: wakes the accelerator loop


def wake_on_stop(ctx: Any, loader: Loader) -> None:
    """A thread that blocks until the run is told to stop, then wakes the accelerator loop.
    The loop used to poll the stop flag 20 times a second; at 1,024 clients those wake-ups
    took both CPUs of the client host and every client read at a tenth of its share.
    A bare thread, not a threading.Thread: nothing joins it (the client leaves with os._exit),
    and threading's objects for it (events, locks, its registry entry, the code that makes
    them) cost each client about 0.1 MiB of pages of its own (docs/PERFORMANCE.md, Density).
    The rehearsal waits for it all the same (aiio.run.clients.rehearse). Its error ends the
    loop as a loader's does: a bare thread's exception is only printed, and a stop would
    never wake the loop."""
    def watch() -> None:
        try:
            ctx.wait_for_stop()
        except BaseException as exc:  # surfaced by the accelerator loop
            loader.errors.append(exc)
            loader.ready.put(None)
            return
        loader.ready.put(WAKE)
    _thread.start_new_thread(watch, ())


def _next_ready(loader: Loader, ctx: ClientContext, deadline: Deadline):
    """The next batch, blocking until it is read; None at a stop, the deadline or the end."""
    while True:
        try:
            item = loader.ready.get(timeout=deadline.remaining_s())
        except queue.Empty:  # the deadline passed
            return None
        # a wait cut to 0 s still hands over a batch that lay ready: one taken past the
        # deadline is not the run's (a 1 us run once consumed a step so)
        if item is WAKE or deadline.passed():
            return None
        if item is None and not loader.errors:
            # One loader thread ran out of batches; the others may still be reading theirs.
            loader.finished += 1
            if loader.finished < len(loader.threads):
                continue
        return item


def _compute_per_step(c: dict) -> float | None:
    """Measured compute per step, warm-up steps included (their compute is emulated like any
    other's): from the exact totals, else the step records, else the measured steps."""
    if c.get("steps") and "compute_all_s" in c:
        return c["compute_all_s"] / c["steps"]
    log = c.get("step_log")
    if log:
        return sum(s[4] for s in log) / len(log)
    measured = c.get("measured_steps", 0)
    return c["compute_s"] / measured if measured else None


def compute_warnings(clients: list[dict], asked_s: float) -> list[dict[str, str]]:
    """Emulated compute that ran long: the client machine is overloaded, so AU reads high
    (the accelerator seems busy) while the client asks less of the storage than it should."""
    if asked_s <= 0:
        return []  # nothing asked, so nothing can run long
    slow = []
    for c in clients:
        per_step = _compute_per_step(c)
        if per_step is not None and per_step > COMPUTE_OVERSHOOT * asked_s:
            slow.append((c["client"], per_step))
    if not slow:
        return []
    worst = max(s for _, s in slow)
    # of a run that measured no AU (too short, too few samples) the warning claims none
    au = ("AU reads high and " if any(c.get("au") is not None for c in clients)
          else "(the run measured no AU) ")
    return [{"code": "compute_ran_long", "message": (
        f"emulated compute took up to {worst * 1000:.1f} ms per batch against "
        f"{asked_s * 1000:.1f} ms asked on {len(slow)} client(s): the client machine is "
        f"overloaded, {au}the storage was asked for less than the workload needs")}]


def consumed_window(c: Mapping[str, Any]) -> float:
    """A client's consumed window, s: from the common start to the end of its last step (its
    checkpoint included); its whole window when it took no batch (or recorded no end)."""
    return c.get("consumed_elapsed_s") or c["elapsed_s"]


# --- the parent side -----------------------------------------------------------------------

# The share of the bytes fed into batches that a run's consumed headline may miss: more than
# this partly read when the clients' last steps ended, or falling between a client's last step
# and the run's (`not_measured`), and the headline is not given.
PARTLY_READ_LIMIT = 0.05
# A client whose accelerator was busy at least this share of its measured steps was paced by
# its compute: what its loaders held partly read is read-ahead, not consumption it missed.
COMPUTE_PACED_AU = 0.95


def byte_figures(clients: list[dict]) -> dict[str, Any]:
    """Consumed sample bytes as the headline aggregate (first done, last done, spread), each
    client over its consumed window; the bytes the storage delivered to the loaders under
    `delivered`, device and sample bytes, over the clients' whole windows."""
    delivered = io_aggregate(clients)
    series = [ByteSeries.from_dict(c["consumed_series"]) for c in clients]
    ends = [consumed_window(c) for c in clients]
    per_client = [c["consumed_mib_s"] for c in clients]
    total = ByteSeries()
    for s in series:
        total.merge(s)
    consumed = sum(c["consumed_bytes"] for c in clients)
    working = with_samples(clients)
    return {
        "first_done": stats.first_done([series[i] for i in working], [ends[i] for i in working]),
        "last_done": stats.last_done(series, ends),
        "per_client_mib_s": stats.spread(per_client),
        "jain": stats.jain(per_client) if any(per_client) else 0.0,
        "series_mib_s": total.per_second(max(ends)),
        "bytes": consumed, "consumed_bytes": consumed,
        "partly_read_bytes": sum(c.get("partly_read_bytes", 0) for c in clients
                                 if storage_paced(c))
        + sum(c.get("queued_bytes", 0) for c in clients if waited_for_data(c)),
        "ended_early_bytes": ended_early(clients, ends),
        "read_bytes": delivered["bytes"],
        "ops": delivered["ops"], "latency": delivered["latency"],
        "histograms": delivered["histograms"],
        "delivered": {  # bytes and ops: what the storage moved, as every I/O section says
            "bytes": delivered["bytes"], "ops": delivered["ops"],
            "device_bytes": delivered["bytes"],
            "app_bytes": sum(c["app_bytes"] for c in clients),
            **{k: delivered[k] for k in ("first_done", "last_done", "per_client_mib_s", "jain",
                                         "series_mib_s")},
        },
    }


def ended_early(clients: list[dict], ends: list[float]) -> float:
    """Bytes the storage-paced clients whose last step came before the longest consumed window
    ended would have consumed until then at their own rate: the last-done window counts that
    time against them, though it only fell between two of their batches. A client whose
    loaders had read the whole dataset (an epoch-bound run) was done, not between batches."""
    last = max(ends, default=0.0)
    return sum(c["consumed_bytes"] / end * (last - end)
               for c, end in zip(clients, ends, strict=True)
               if end > 0 and storage_paced(c) and c.get("loaders_done_s") is None)


def storage_paced(c: Mapping[str, Any]) -> bool:
    """The client's accelerator waited for data (compute 0, AU below COMPUTE_PACED_AU, or no
    AU measured): its consumed bytes follow what the storage delivered."""
    au = c.get("au_without_checkpoints", c.get("au"))
    return au is None or au < COMPUTE_PACED_AU


def waited_for_data(c: Mapping[str, Any]) -> bool:
    """The client's measured steps show its accelerator waiting for data (AU measured and
    below COMPUTE_PACED_AU): a batch queued when its window closed is one it missed. With no
    AU measured (every step an epoch's first) a queued batch is read-ahead, as in any
    compute-paced client."""
    au = c.get("au_without_checkpoints", c.get("au"))
    return au is not None and au < COMPUTE_PACED_AU


def not_measured(agg: Mapping[str, Any], batch_bytes: int, read_threads: int,
                 clients: int) -> str | None:
    """Why the consumed headline cannot be given within 5 %, or None. Consumed bytes move a
    whole batch at a time: when a client's window closes its loader threads may be part way
    through batches the storage was feeding all along, and those bytes are in no consumed
    figure; a client whose last step came well before another's loses the time between in the
    last-done window. An epoch-bound run ends with every batch taken; a short duration-bound
    run of large batches can miss most of what the storage delivered."""
    consumed = agg["consumed_bytes"]
    held = agg["partly_read_bytes"] + agg["ended_early_bytes"]
    if not held and not consumed:  # nothing went into a batch: no rate, not a rate of 0
        return (f"the training headline cannot be measured: no accelerator took a batch and "
                f"no loader had read into one in the run's {agg['last_done']['seconds']:.3g} s"
                "; run longer (--duration)")
    if held <= PARTLY_READ_LIMIT * (held + consumed):
        return None
    rate = agg["delivered"]["last_done"]["mib_s"] * MiB
    # At worst every loader thread of every client holds a batch partly read and a client's
    # last step comes a batch before the run's: a run that consumes enough for that to stay
    # within the limit, at the delivered rate, is measured whatever the batches' timing
    worst = clients * (read_threads + 1) * batch_bytes
    need_s = worst * (1 / PARTLY_READ_LIMIT - 1) / rate if rate > 0 else math.inf
    # a client that stalled can hold more than that bound: the bytes held stay about the same
    # as a run grows while those consumed grow with it, so this run's own share names a floor
    if consumed:
        need_s = max(need_s, agg["last_done"]["seconds"] * held * (1 / PARTLY_READ_LIMIT - 1)
                     / consumed)
    longer = (f"a run of {math.ceil(need_s):,} s (--duration) measures it however the batches "
              "fall" if math.isfinite(need_s) else "run longer (--duration)")
    return (f"the training headline cannot be measured within 5 %: consumed bytes move a "
            f"batch at a time ({batch_bytes / MiB:,.1f} MiB), and "
            f"{held / (held + consumed):.0%} of what the storage fed into batches "
            f"({held / MiB:,.1f} MiB) was in batches still being read when the clients' last "
            f"steps ended, or fell between a client's last step and the run's; {longer}, or "
            "use smaller batches")


def with_samples(clients: list[dict]) -> list[int]:
    """Indices of the clients that had a sample to read (all of them when none had): one with
    none ends at once, and would close the first-done window near 0 s."""
    return [i for i, c in enumerate(clients) if c.get("samples", 1)] or list(range(len(clients)))


def idle_warnings(clients: list[dict], dataset_samples: int) -> list[dict]:
    """Clients that had no sample to read: said, and how the figures treat them."""
    idle = len(clients) - len(with_samples(clients))
    if not idle:
        return []
    return [{"code": "clients_without_samples", "message": (
        f"{idle} of {len(clients)} clients had no sample to read (the dataset's "
        f"{dataset_samples:,} samples over {len(clients)} clients): the first-done window "
        "leaves them out; the per-client spread and Jain fairness count them at 0 MiB/s; "
        "use a larger dataset or fewer clients")}]


# Why the native reader needs files: docs/OBJECT.md, "What a bucket does not run".
NATIVE_NEEDS_FILES = ("--reader native reads files through format libraries; s3:// targets "
                      "are read with GET requests (--reader raw)")


PROCESSES_AT_MOST = 256  # client processes a host forks for training, by default


class TrainPhase(Phase):
    name = "train"
    cli_options = ("scale", "checkpoint_every")
    main_op = "read"
    hero_test = "seq_read"
    fio_job = "train_job"
    console = "train_tables"
    duration_key = ("train", "duration")
    streams_key = ("train", "read_threads")
    accelerators = True
    checkpoint_at = ("checkpoint",)
    other_series = (("consumed", "consumed_"),)  # what the accelerators consumed, over time
    workload_sections = ("dataset", "train")

    def sections_read(self, w: Mapping[str, Any]) -> tuple[str, ...]:
        """Its own, and the checkpoint phase's when it saves checkpoints (--checkpoint-every)."""
        saves = dig(w, "checkpoint", "every", default=0)
        if isinstance(saves, (int, float)) and saves > 0:
            return (*self.workload_sections, *checkpoint.PHASE.workload_sections)
        return self.workload_sections

    def client_memory(self, w: Workload, clients: int, lifecycle: bool = False) -> ClientMemory:
        """The loader's read buffers and threads, the checkpoint writers it runs (with
        --checkpoint-every, or every epoch as a lifecycle stage), and its step log."""
        t = w.train
        # A buffer a loader thread (`read_buffer_bound`), at most the transfer size.
        buffers = t.read_threads * t.transfer_size
        base = OBJECT_CLIENT_BASE if self.object_store else MEMORY_BASE
        if t.reader == "native":  # each thread holds the sample it reads, at most 2 stdev long
            buffers += t.read_threads * (w.dataset.sample_size + 2 * w.dataset.sample_size_stdev)
            base = NATIVE_MEMORY_BASES.get(w.dataset.format, max(NATIVE_MEMORY_BASES.values()))
        threads = t.read_threads
        if lifecycle or w.checkpoint.every > 0:  # training saves but never restores
            writers, n = checkpoint.writer_memory(w, self.object_store, restore=False)
            buffers, threads = buffers + writers, threads + n
        return ClientMemory(base, buffers, threads, step_log_bytes(w, clients))

    def io_sections(self, part: Mapping[str, Any], client: bool) -> dict[str, Where]:
        """The reads (the accelerators' consumed bytes), flat; in the aggregate also the loaders'
        side (read-ahead included); and each checkpoint burst's writes."""
        return train_sections(part, client)

    def prepare(self, rc: RunContext) -> TrainArgs:
        """Make sure the dataset exists and matches, then fix the run's plan."""
        w = rc.workload
        if w.train.reader == "native" and not rc.engine.caps.local_files:
            raise ConfigError(NATIVE_NEEDS_FILES)  # before the dataset is made or uploaded
        if w.train.reader == "native" and not rc.engine.caps.library_reads:
            raise ConfigError(f"--reader native reads through the format's own library, past "
                              f"the {rc.engine.name} engine: use --reader raw with it")
        data = ensure_dataset(rc)
        data.index()  # load before the fork so clients share one copy of it
        formats.get_format(data.params.format)  # imported once here, shared by every client
        if w.train.batch_size * rc.clients > data.num_samples:
            rc.note(f"note: {rc.clients} clients x batch {w.train.batch_size} exceeds the "
                    f"{data.num_samples} samples; some clients get a single short batch")
        method = rc.method
        if w.train.reader == "native":
            method = METHOD_FADVISE  # libraries read through the page cache; drop it per file
        return TrainArgs(w, data, method, w.compute_time,
                         None if w.train.duration > 0 else w.train.epochs, w.train.duration,
                         train_checkpoints.plan(rc, data.num_samples),
                         placed=locate(str(data.folder), data.num_files, data.path)
                         if rc.engine.caps.folders else None)

    def total_units(self, args: TrainArgs, clients: int) -> int | None:
        """Total steps over all clients, when the run is epoch-bound."""
        if args.epochs is None:
            return None
        n, b = args.dataset.num_samples, args.workload.train.batch_size
        per_epoch = sum(-(-(hi - lo) // b) for lo, hi in
                        (shard_bounds(n, clients, i) for i in range(clients)))
        return per_epoch * args.epochs

    client = staticmethod(run_client)

    def rehearsal(self, args: TrainArgs) -> tuple[Any, TrainArgs] | None:
        """The file client, whatever the storage (object storage's makes its first request
        as it starts), with `rehearsal_args`."""
        rehearsed = rehearsal_args(args)
        return None if rehearsed is None else (_rehearsal_client, rehearsed)

    def client_processes(self, args: TrainArgs, clients: int) -> int:
        """At most `run.client_processes` processes (PROCESSES_AT_MOST by default) a host
        (an MPI rank's share): past that its clients share them as threads. Each process
        copies about 3 MiB of the parent's pages (docs/PERFORMANCE.md, Density); a
        compute-paced client spends its time asleep or in calls that let go of the
        interpreter, so its own threads are all it needs. Never with the native reader: a
        format's library may run one call at a time in a process (h5py holds one lock over
        every HDF5 call: 8 clients as 2 processes read a quarter of 8 processes)."""
        cap = self.process_cap(args.workload)
        return clients if cap is None else min(clients, cap)

    def process_cap(self, w: Workload) -> int | None:
        return None if w.train.reader == "native" else w.run.client_processes or PROCESSES_AT_MOST

    def summarize(self, rc: RunContext, args: TrainArgs, clients: list[dict]) -> dict[str, Any]:
        """The headline is what the accelerators consumed; `delivered` is the storage's side."""
        t = args.workload.train
        agg = byte_figures(clients)
        elapsed = max(consumed_window(c) for c in clients)
        samples = sum(c["samples"] for c in clients)
        agg.update({
            "samples": samples,
            "samples_per_s": samples / elapsed if elapsed else 0.0,
            "compute_s_per_batch": args.compute_s,
            **train_au.au_aggregate(clients, t.au_goal, t.au_rule, args.compute_s,
                                    t.batch_size, args.dataset.num_samples,
                                    args.dataset.params.samples_per_file),
            **train_au.demand(args.workload),
        })
        if args.checkpoint is not None:
            agg["checkpoint"] = train_checkpoints.summarize(args.checkpoint, clients)
            agg["write_bytes"] = agg["checkpoint"].get("write_bytes", 0)
        agg.update(rc.engine.aggregate(clients))  # a bucket's requests and retries
        if rc.engine.caps.multipart:  # the part sizes its dataset and checkpoints were sent in
            own = agg[rc.engine.name]  # (a reused dataset keeps its own)
            own["dataset_part_size"] = args.dataset.manifest.get("part_size")
            if args.checkpoint is not None:
                own["checkpoint_part_size"] = args.checkpoint.part_size
        placed = recorded(args.placed, clients, "the dataset's files, as the clients read them")
        if placed is not None:
            agg["placement"] = placed
        why = not_measured(agg, t.batch_size * args.dataset.params.sample_size,
                           t.read_threads, len(clients))
        if why:
            agg["not_measured"] = why
        return agg

    def validate(self, w: Workload, options: RunOptions) -> None:
        train_checkpoints.validate(w, options)

    def warnings(self, rc: RunContext, args: TrainArgs, out: dict[str, Any]) -> list[dict]:
        return (train_checkpoints.warnings(rc, args.checkpoint, out)
                + compute_warnings(out["clients"], args.compute_s)
                + idle_warnings(out["clients"], args.dataset.num_samples)
                + rc.engine.warnings(out["aggregate"], args.dataset.total_bytes))

    def cleanup(self, rc: RunContext, args: TrainArgs | None, status: str) -> None:
        """The dataset is kept for reuse (a bucket's local copy of its index goes);
        checkpoints written during training are removed."""
        if args is None:
            return
        args.dataset.discard_local()
        if args.checkpoint is not None:
            train_checkpoints.remove(rc, args.checkpoint)


PHASE = TrainPhase()
