"""The randrw phase: fio's `randrw` as aiio measures it (also the prep phase's randrw mode,
`prep.mode = "randrw"`, and its settings are the prep section's). Every client owns one large
file (written before the run, with block checksums); its threads issue random, block-aligned
reads and writes (`read_share` of them reads) for `duration`. Threads own disjoint blocks, so
with --verify no read can race a write of the same block. The closing fsync is timed apart and
not counted in the mix's elapsed time (fio's randrw does not fsync either).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from aiio import stats
from aiio.cache_methods import METHOD_DIRECT, METHOD_NULL
from aiio.document import Where
from aiio.engines import blocks, compiled, depth
from aiio.engines.seam import OpLog, ReadFailed, io_failure
from aiio.engines.timing import Deadline, DeadlineOrStop, PolledStop, Window, cpu_seconds
from aiio.errors import ConfigError
from aiio.options import RunOptions
from aiio.phases.base import (
    ClientMemory,
    Phase,
    RunContext,
    client_identity,
    client_io_figures,
    io_aggregate,
    read_write_sections,
)
from aiio.phases.rundata import new_run_tag, remove_run_folder, verify_summary
from aiio.phases.threads import run_parallel
from aiio.run.clients import ClientContext
from aiio.units import MiB, format_size, mib_per_s
from aiio.workload import Workload

if TYPE_CHECKING:
    from aiio.engines.base import Engine

BATCH = 1024  # random choices drawn at once
# At depth, offsets handed to the ring a call: each call ends by waiting for every request in
# flight (the depth falls to 0 for about one request's latency), so a call's reads are
# many: at 16,384 that bubble is under 0.1 % of the call, in 512 KiB of per-call arrays
DEPTH_BATCH = 16 * BATCH
# The fewest reads in a row that go to the compiled loop in one call; shorter runs read one
# call at a time in Python, where the loop's set-up per call costs more than it saves
MIN_RUN = 4
NO_READS = "none (no reads)"  # a mix of writes only: its read loop


@dataclass
class RandrwArgs:
    folder: str
    method: str
    threads: int
    file_size: int
    block_size: int
    read_share: float
    duration_s: float
    seed: int
    checksum: bool
    iodepth: int = 1
    mode: str = "randrw"

    def name(self, client: int) -> str:
        return f"randrw-{client:05d}.bin"

    def path(self, client: int) -> str:
        return os.path.join(self.folder, self.name(client))

    def tag(self, client: int) -> int:
        return blocks.file_tag(self.seed, self.name(client))


def refuse_engine(rc: RunContext) -> None:
    """Refuse, in one line, an engine that cannot run the mix: one that cannot rewrite a block
    in place (a bucket), or keep the reads asked for in flight."""
    eng, depth_asked = rc.engine, rc.workload.prep.iodepth
    if not eng.caps.partial_overwrite:
        raise ConfigError(getattr(eng, "overwrite_refusal", "") or (
            f"randrw rewrites blocks of its files in place, and the {eng.name} engine cannot "
            "rewrite part of a file"))
    if depth_asked > eng.caps.queue_depth:
        raise ConfigError(f"prep.iodepth = {depth_asked}: the {eng.name} engine keeps at most "
                          f"{eng.caps.queue_depth} read(s) in flight")


def prepare(rc: RunContext, folder: str) -> RandrwArgs:
    """Check space, then write one file per client (durable, cache dropped) in `folder`."""
    refuse_engine(rc)
    p, w = rc.workload.prep, rc.workload
    # Whole blocks only, so every random I/O is a full, aligned block.
    size = p.file_size // p.block_size * p.block_size
    if size // p.block_size < p.threads:
        raise ConfigError(f"prep.file_size holds {size // p.block_size} blocks of "
                          f"{format_size(p.block_size)}, fewer than the {p.threads} threads; "
                          "use a larger file or fewer threads")
    if rc.options.space_check:
        rc.target.require_space(size * rc.clients,
                                f"randrw files ({rc.clients} x {format_size(size)})")
    rc.target.make_run_folder(Path(folder))
    a = RandrwArgs(folder, rc.method, p.threads, size, p.block_size, p.read_share,
                   p.duration, w.run.seed, rc.options.verify, p.iodepth)
    writers = [rc.engine.setup().writer(1024 * 1024, OpLog(0), seed=w.run.seed + i,
                                        checksum=True)
               for i in range(min(4, rc.clients))]
    rc.note(f"writing {rc.clients} randrw file(s) of {format_size(size)}")
    try:
        run_parallel(range(rc.clients), writers,
                     lambda wr, c: wr.write_file(a.path(c), size, a.tag(c)))
    except BaseException:  # cleanup never sees args that prepare did not return
        remove_run_folder(rc, folder)
        raise
    finally:
        for wr in writers:
            wr.close()
    return a


class _Mixer:
    """One thread's random mix over its own blocks of the client's file: a Reader (checking
    blocks with --verify) and a Writer (stamping them) on one shared descriptor."""

    def __init__(self, a: RandrwArgs, client: int, thread: int, threads: int,
                 eng: Engine) -> None:
        self.a, self.thread, self.threads = a, thread, threads
        self.rng = np.random.Generator(np.random.PCG64([a.seed, client, thread, 1]))
        self.tag = a.tag(client)
        self.path = a.path(client)
        self.verifier = blocks.Verifier()
        self.reader = eng.reader(a.block_size, OpLog(0), depth=a.iodepth)
        self.writer = eng.writer(a.block_size, OpLog(0),
                                 seed=(a.seed * 1_000_003 + client) * 256 + thread,
                                 checksum=a.checksum)
        if a.checksum:
            self.reader.check = lambda view, n, pos: self.verifier.check(view, n, self.path,
                                                                         self.tag, pos)
        nblocks = a.file_size // a.block_size
        self.mine = (nblocks - thread + threads - 1) // threads  # blocks b with b % threads == t

    @property
    def read_loop(self) -> str:
        """Which loop timed this thread's reads, as the result says it."""
        if self.a.read_share <= 0:  # no loop was asked for: not a fallback to report
            return NO_READS
        return self.reader.loop_label

    def run(self, fd: int, deadline: Deadline, stop: Any, counter: Any) -> None:
        if self.a.iodepth > 1:
            return self._run_depth(fd, deadline, stop, counter)
        a, bs = self.a, self.a.block_size
        mix = self._by_runs if self.reader.fast else self._batch
        # The stop is looked at in the clock reading for the deadline: once per batch of
        # 1,024 was a 41 s wait on a disk that does 25 reads a second
        until = DeadlineOrStop(deadline, stop)
        while not until.passed():
            reads = self.rng.random(BATCH) < a.read_share
            offs = (self.rng.integers(0, self.mine, BATCH) * self.threads + self.thread) * bs
            done, over = mix(fd, reads, offs, until)
            # live progress once per batch: a store to the shared counter costs about
            # 0.2 us, per I/O a tenth of a 4 KiB read on tmpfs
            counter(done)
            if over:
                return

    def _batch(self, fd: int, reads: np.ndarray, offs: np.ndarray,
               until: DeadlineOrStop) -> tuple[int, bool]:
        """A batch one I/O at a time: bytes asked for, and whether the deadline or the
        stop came."""
        return self._each(fd, reads.tolist(), offs.tolist(), until)

    def _by_runs(self, fd: int, reads: np.ndarray, offs: np.ndarray,
                 until: DeadlineOrStop) -> tuple[int, bool]:
        """A batch with each run of MIN_RUN or more reads in a row made by the compiled loop
        in one call, the rest as `_batch` makes them. The loop stops after the first read
        that reaches the instant the deadline and the stop are next looked at, as `_each`
        looks after every I/O; the run's rest follows in another call."""
        listed, bs, done = offs.tolist(), self.a.block_size, 0
        try:
            for is_read, i, j in _runs(reads):
                while is_read and j - i >= MIN_RUN:
                    made = self._read_run(fd, offs[i:j], until.at_ns)
                    done, i = done + made * bs, i + made
                    if until.passed():
                        return done, True
                got, over = self._each(fd, [is_read] * (j - i), listed[i:j], until)
                done += got
                if over:
                    return done, True
            return done, False
        finally:  # the batch's runs go to the log as one batch, on an error too
            self.reader.record_runs()

    def _each(self, fd: int, kinds: list[bool], offs: list[int],
              until: DeadlineOrStop) -> tuple[int, bool]:
        """Reads (True) and writes at these offsets, one call each, as `_batch` says."""
        read, write, path, tag = (self.reader.read_block, self.writer.write_range, self.path,
                                  self.tag)
        bs, passed, done = self.a.block_size, until.passed, 0
        for is_read, off in zip(kinds, offs, strict=True):
            if is_read:
                try:
                    read(fd, off)
                except OSError as exc:
                    raise io_failure(exc, "reading", path, off) from exc
            else:
                write(fd, path, off, bs, tag)
            done += bs
            if passed():
                return done, True
        return done, False

    def _read_run(self, fd: int, offsets: np.ndarray, until_ns: int) -> int:
        """One call of the compiled loop; how many reads it made."""
        try:
            return self.reader.read_run(fd, offsets, self.a.block_size, until_ns, record=False)
        except ReadFailed as exc:
            raise io_failure(exc, "reading", self.path, exc.offset) from exc

    def _run_depth(self, fd: int, deadline: Deadline, stop: Any, counter: Any) -> None:
        """Reads only, `iodepth` in flight: batches of random blocks until the deadline."""
        reader, a = self.reader, self.a
        # the client's stop is a multiprocessing Event: its is_set() takes a lock shared by
        # every client (0.8 us), and the reader looks at its stop after every reap
        reader.stop = stop = PolledStop(stop)
        reader.counter = counter  # told as the reads go: a call may last minutes
        while not (reader.expired or stop.is_set()):
            offs = (self.rng.integers(0, self.mine, DEPTH_BATCH) * self.threads + self.thread)
            try:
                reader.read_blocks(fd, offs * a.block_size, deadline.at_ns)
            except depth.ReadFailed as exc:
                raise io_failure(exc, "reading", self.path, exc.offset) from exc

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


def _runs(reads: np.ndarray) -> list[tuple[bool, int, int]]:
    """A batch's runs of reads and of writes, in order: (reads or not, first, end)."""
    edges = [0, *(np.flatnonzero(reads[1:] != reads[:-1]) + 1).tolist(), len(reads)]
    return list(zip(reads[edges[:-1]].tolist(), edges[:-1], edges[1:], strict=True))


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """One client's random mix on its own file for the run's duration."""
    a: RandrwArgs = ctx.args
    fd = ctx.engine.open_rw(a.path(ctx.index))
    mixers = [_Mixer(a, ctx.index, t, a.threads, ctx.engine) for t in range(a.threads)]
    errors: list[BaseException] = []
    stop = _FirstError(ctx.stop)
    try:
        run = Window(ctx.ready_and_wait())
        start_ns = run.start_ns
        cpu0 = cpu_seconds()
        deadline = run.deadline(a.duration_s)
        for m in mixers:
            m.reader.log, m.writer.log = OpLog(start_ns), OpLog(start_ns)
        threads = [threading.Thread(target=_guard, args=(m, fd, deadline, ctx, stop, errors))
                   for m in mixers]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        end_ns = run.close()
        if errors:
            raise errors[0]
        fsync_log = OpLog(start_ns)
        ctx.engine.fsync(fsync_log, fd, a.path(ctx.index))
    finally:
        os.close(fd)
        for m in mixers:
            m.close()
    return _client_figures(ctx, a, mixers, fsync_log, start_ns, end_ns, cpu0)


class _FirstError:
    """The threads' stop: the client's, or set by the first thread whose I/O fails, so its
    siblings stop at their next look (every 20 ms) instead of at the duration's end."""

    def __init__(self, stop: Any) -> None:
        self.stop = stop
        self.failed = threading.Event()

    def is_set(self) -> bool:
        return self.failed.is_set() or self.stop.is_set()


def _guard(m: _Mixer, fd: int, deadline: Deadline, ctx: ClientContext, stop: _FirstError,
           errors: list[BaseException]) -> None:
    try:
        m.run(fd, deadline, stop, ctx.add_bytes)
    except BaseException as exc:  # raised again in the client's main thread
        errors.append(exc)
        stop.failed.set()


def _client_figures(ctx: ClientContext, a: RandrwArgs, mixers: list[_Mixer], fsync_log: OpLog,
                    start_ns: int, end_ns: int, cpu0: float) -> dict[str, Any]:
    out = client_identity(ctx.index)
    elapsed = (end_ns - start_ns) / 1e9
    read = client_io_figures([m.reader.log for m in mixers], start_ns, end_ns, main_op="read")
    write = client_io_figures([m.writer.log for m in mixers], start_ns, end_ns,
                              main_op="write")
    for fig, op in ((read, "read"), (write, "write")):
        fig["iops"] = fig["histograms"].get(op, {}).get("count", 0) / elapsed
    fsync_log.flush()
    fsync = fsync_log.hist["fsync"]
    write["histograms"]["fsync"] = fsync.to_dict()  # timed apart: not in the mix's ops
    out.update(elapsed_s=elapsed, cpu_s=cpu_seconds() - cpu0, read=read, write=write,
               bytes=read["bytes"] + write["bytes"], iops=read["iops"] + write["iops"],
               fsync_s=fsync.sum / 1e9, read_loop=mixers[0].read_loop)
    if a.checksum:
        merged = blocks.Verifier()
        for m in mixers:
            merged.merge(m.verifier)
        out["verify"] = merged.to_dict()
        out["verify_s"] = _op_seconds(read, "verify")
        out["checksum_s"] = _op_seconds(write, "checksum")
    return out


def _op_seconds(fig: dict[str, Any], op: str) -> float:
    h = fig["histograms"].get(op)
    return h["sum"] / 1e9 if h else 0.0


def summarize(a: RandrwArgs, clients: list[dict]) -> dict[str, Any]:
    """Read and write aggregates and IOPS over every client."""
    read = io_aggregate([c["read"] for c in clients])
    write = io_aggregate([c["write"] for c in clients])
    last = max(c["elapsed_s"] for c in clients)
    for agg, op in ((read, "read"), (write, "write")):
        agg["iops"] = agg["latency"].get(op, {}).get("count", 0) / last if last else 0.0
    own = [c["read"]["mib_s"] + c["write"]["mib_s"] for c in clients]  # each client's mix
    out = {"mode": "randrw", "read": read, "write": write,
           "per_client_mib_s": stats.spread(own),
           "jain": stats.jain(own) if any(own) else 0.0,
           "iops": read["iops"] + write["iops"],
           "per_client_iops": stats.spread([c["iops"] for c in clients]),
           "read_bytes": read["bytes"], "write_bytes": write["bytes"],
           "bytes": read["bytes"] + write["bytes"],
           "read_mib_s": mib_per_s(read["bytes"], last),
           "write_mib_s": mib_per_s(write["bytes"], last),
           "block_size": a.block_size, "read_share": a.read_share, "file_size": a.file_size,
           "read_loop": read_loops(clients)}
    if a.checksum:
        out["verify"] = verify_summary(clients)
    return out


def read_loops(clients: list[dict]) -> str:
    """Which loop timed the clients' reads: one, or each with how many clients it timed
    (hosts of an MPI run may differ)."""
    count = Counter(str(c.get("read_loop", "python")) for c in clients)
    if len(count) == 1:
        return next(iter(count))
    return "; ".join(f"{loop} on {n} client{'s' * (n != 1)}"
                     for loop, n in sorted(count.items()))


def uses_compiled_loop(a: RandrwArgs) -> bool:
    """Whether its clients read through the compiled loop where it can be had: one read in
    flight, real reads, and no check after each."""
    return a.iodepth == 1 and not a.checksum and a.method != METHOD_NULL and a.read_share > 0


def warnings(rc: RunContext, a: RandrwArgs, out: dict[str, Any]) -> list[dict[str, str]]:
    if a.method != METHOD_DIRECT:
        return [{"code": "randrw_buffered", "message": (
            "randrw ran without O_DIRECT: writes went to the page cache and reads of blocks "
            "written during the run may have been served from RAM")}]
    return []


# A client's memory besides its blocks (docs/PERFORMANCE.md, "Memory per client"; Dec 2 2026,
# under load): 9.82 MiB for a lone client of a 150 s run less its 16 KiB of blocks, rounded up
# to 0.5 MiB. A client alone keeps the disk to itself and its USS grows for a minute or two;
# the 10 s demo runs of 4, 64 and 256 clients read 6.04, 5.23 and 5.31 MiB, 3 clients in 45 s
# 7.1 MiB.
MEMORY_BASE = 10 * MiB


class RandrwPhase(Phase):
    name = "randrw"
    main_op = "read"
    hero_test = "rand_mix"
    fio_job = "randrw_job"
    console = "randrw_tables"
    duration_key = ("prep", "duration")
    streams_key = ("prep", "threads")
    judged_on = "read_plus_write"  # as prep in randrw mode always was
    hero_pairing = "mix_side"
    workload_sections = ("prep",)  # the mode's keys live in prep's section


    def client_memory(self, w: Workload, clients: int, lifecycle: bool = False) -> ClientMemory:
        """Each thread's reader holds iodepth blocks in flight, its writer one more."""
        p = w.prep
        return ClientMemory(MEMORY_BASE, p.threads * p.block_size * (p.iodepth + 1), p.threads)

    def io_sections(self, part: Mapping[str, Any], client: bool) -> dict[str, Where]:
        return read_write_sections(part)

    def validate(self, w: Workload, options: RunOptions) -> None:
        """A depth this machine cannot run (no numba, no io_uring) is refused here, before
        the target's folder or a result is made: it was found in prepare, and a run failed
        with a saved result for input it could tell at once."""
        depth.require(w.prep.iodepth, "prep.iodepth")

    def prepare(self, rc: RunContext) -> RandrwArgs:
        # the prep folder: a randrw run is data staging, and its files go where prep's do
        return prepare(rc, str(rc.target.root / "prep" / new_run_tag()))

    def client(self, ctx: ClientContext) -> dict[str, Any]:
        return run_client(ctx)

    def before_fork(self, args: RandrwArgs) -> None:
        """Compile the read loop here, once, when the clients will use it: each client
        compiling its own costs it about 0.5 s of CPU and the compiler's memory
        (aiio.engines.compiled; at depth, aiio.engines.ringloop)."""
        if uses_compiled_loop(args):
            compiled.load()
        # the ring's loop: compiled where the run checked its depth, but an MPI rank forks
        # its clients without that check
        depth.require(args.iodepth, "prep.iodepth")

    def summarize(self, rc: RunContext, args: RandrwArgs, clients: list[dict]) -> dict:
        return summarize(args, clients)

    def warnings(self, rc: RunContext, args: RandrwArgs, out: dict[str, Any]) -> list[dict]:
        return warnings(rc, args, out)

    def cleanup(self, rc: RunContext, args: RandrwArgs | None, status: str) -> None:
        """The run's files go."""
        if args is not None:
            remove_run_folder(rc, args.folder)


PHASE = RandrwPhase()
