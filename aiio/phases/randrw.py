"""The prep phase's randrw mode: fio's `randrw` as aiio measures it. Every client owns one large
file (written before the run, with block checksums); its threads issue random, block-aligned
reads and writes (`read_share` of them reads) for `duration`. Threads own disjoint blocks, so
with --verify no read can race a write of the same block. The closing fsync is timed apart and
not counted in the mix's elapsed time (fio's randrw does not fsync either).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from aiio import blocks, stats
from aiio.clients import ClientContext
from aiio.engine import METHOD_DIRECT, O_DIRECT, OpLog, Writer, aligned_buffer, io_failure
from aiio.errors import ConfigError
from aiio.phases.base import (
    RunContext,
    client_identity,
    client_io_figures,
    cpu_seconds,
    io_aggregate,
)
from aiio.phases.ckptio import verify_summary
from aiio.phases.threads import run_parallel
from aiio.units import format_size, mib_per_s

BATCH = 1024  # random choices drawn at once


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
    mode: str = "randrw"

    def name(self, client: int) -> str:
        return f"randrw-{client:05d}.bin"

    def path(self, client: int) -> str:
        return os.path.join(self.folder, self.name(client))

    def tag(self, client: int) -> int:
        return blocks.file_tag(self.seed, self.name(client))


def prepare(rc: RunContext, folder: str) -> RandrwArgs:
    """Check space, then write one file per client (durable, cache dropped)."""
    p, w = rc.workload.prep, rc.workload
    # Whole blocks only, so every random I/O is a full, aligned block.
    size = p.file_size // p.block_size * p.block_size
    if size // p.block_size < p.threads:
        raise ConfigError(f"prep.file_size holds {size // p.block_size} blocks of "
                          f"{format_size(p.block_size)}, fewer than the {p.threads} threads; "
                          "use a larger file or fewer threads")
    if rc.options.get("space_check", True):
        rc.target.require_space(size * rc.clients,
                                f"randrw files ({rc.clients} x {format_size(size)})")
    os.makedirs(folder)
    a = RandrwArgs(folder, rc.method, p.threads, size, p.block_size, p.read_share,
                   p.duration, w.run.seed, bool(rc.options.get("verify")))
    writers = [Writer(rc.method, 1024 * 1024, OpLog(0), seed=w.run.seed + i, checksum=True)
               for i in range(min(4, rc.clients))]
    rc.note(f"writing {rc.clients} randrw file(s) of {format_size(size)}")
    try:
        run_parallel(range(rc.clients), writers,
                     lambda wr, c: wr.write_file(a.path(c), size, a.tag(c)), time.monotonic_ns())
    finally:
        for wr in writers:
            wr.close()
    return a


class _Mixer:
    """One thread's random mix over its own blocks of the client's file."""

    def __init__(self, a: RandrwArgs, client: int, thread: int, threads: int) -> None:
        self.a, self.thread, self.threads = a, thread, threads
        self.buf = aligned_buffer(a.block_size)
        self.view = memoryview(self.buf)
        self.view[:] = np.random.Generator(np.random.PCG64([a.seed, client, thread])).integers(
            0, 256, len(self.buf), dtype=np.uint8)
        self.rng = np.random.Generator(np.random.PCG64([a.seed, client, thread, 1]))
        self.tag = a.tag(client)
        self.path = a.path(client)
        self.verifier = blocks.Verifier()
        self.log = OpLog(0)
        self.wlog = OpLog(0)
        nblocks = a.file_size // a.block_size
        self.mine = (nblocks - thread + threads - 1) // threads  # blocks b with b % threads == t

    def run(self, fd: int, deadline_ns: int, stop: Any, counter: Any) -> None:
        a, log, wlog = self.a, self.log, self.wlog
        while time.monotonic_ns() < deadline_ns and not stop.is_set():
            reads = self.rng.random(BATCH) < a.read_share
            offs = (self.rng.integers(0, self.mine, BATCH) * self.threads + self.thread) \
                * a.block_size
            for is_read, off in zip(reads.tolist(), offs.tolist(), strict=True):
                if is_read:
                    self._read(fd, off, log)
                else:
                    self._write(fd, off, wlog)
                counter(a.block_size)
                if time.monotonic_ns() >= deadline_ns:
                    return

    def _read(self, fd: int, off: int, log: OpLog) -> None:
        t0 = time.monotonic_ns()
        try:
            n = os.preadv(fd, [self.view], off)
        except OSError as exc:
            raise io_failure(exc, "reading", self.path, off) from exc
        log.add("read", t0, time.monotonic_ns(), n)
        if self.a.checksum:
            c0 = time.monotonic_ns()
            self.verifier.check(self.view, n, self.path, self.tag, off)
            log.add("verify", c0, time.monotonic_ns(), 0)

    def _write(self, fd: int, off: int, log: OpLog) -> None:
        c0 = time.monotonic_ns()
        blocks.stamp(self.view, self.a.block_size, self.tag, off, self.a.checksum)
        if self.a.checksum:
            log.add("checksum", c0, time.monotonic_ns(), 0)
        t0 = time.monotonic_ns()
        try:
            n = os.pwritev(fd, [self.view], off)
        except OSError as exc:
            raise io_failure(exc, "writing", self.path, off) from exc
        log.add("write", t0, time.monotonic_ns(), n)

    def close(self) -> None:
        self.view.release()
        self.buf.close()


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """One client's random mix on its own file for the run's duration."""
    a: RandrwArgs = ctx.args
    flags = os.O_RDWR | (O_DIRECT if a.method == METHOD_DIRECT else 0)
    fd = os.open(a.path(ctx.index), flags)
    if a.method != METHOD_DIRECT:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    mixers = [_Mixer(a, ctx.index, t, a.threads) for t in range(a.threads)]
    errors: list[BaseException] = []
    try:
        start_ns = ctx.ready_and_wait()
        cpu0 = cpu_seconds()
        deadline = start_ns + int(a.duration_s * 1e9)
        for m in mixers:
            m.log, m.wlog = OpLog(start_ns), OpLog(start_ns)
        threads = [threading.Thread(target=_guard, args=(m, fd, deadline, ctx, errors))
                   for m in mixers]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        end_ns = time.monotonic_ns()
        if errors:
            raise errors[0]
        fsync_log = OpLog(start_ns)
        t0 = time.monotonic_ns()
        os.fsync(fd)
        fsync_log.add("fsync", t0, time.monotonic_ns(), 0)
    finally:
        os.close(fd)
        for m in mixers:
            m.close()
    return _client_figures(ctx, a, mixers, fsync_log, start_ns, end_ns, cpu0)


def _guard(m: _Mixer, fd: int, deadline: int, ctx: ClientContext,
           errors: list[BaseException]) -> None:
    try:
        m.run(fd, deadline, ctx.stop, ctx.add_bytes)
    except BaseException as exc:  # raised again in the client's main thread
        errors.append(exc)


def _client_figures(ctx: ClientContext, a: RandrwArgs, mixers: list[_Mixer], fsync_log: OpLog,
                    start_ns: int, end_ns: int, cpu0: float) -> dict[str, Any]:
    out = client_identity(ctx.index)
    elapsed = (end_ns - start_ns) / 1e9
    read = client_io_figures([m.log for m in mixers], start_ns, end_ns, main_op="read")
    write = client_io_figures([m.wlog for m in mixers], start_ns, end_ns, main_op="write")
    for fig, op in ((read, "read"), (write, "write")):
        fig["iops"] = fig["histograms"].get(op, {}).get("count", 0) / elapsed
    fsync_log.flush()
    out.update(elapsed_s=elapsed, cpu_s=cpu_seconds() - cpu0, read=read, write=write,
               bytes=read["bytes"] + write["bytes"], iops=read["iops"] + write["iops"],
               fsync_s=fsync_log.hist["fsync"].sum / 1e9)
    if a.checksum:
        merged = blocks.Verifier()
        for m in mixers:
            merged.merge(m.verifier)
        out["verify"] = merged.to_dict()
        out["verify_s"] = sum(m.log.hist.get("verify").sum for m in mixers
                              if "verify" in m.log.hist) / 1e9
        out["checksum_s"] = sum(m.wlog.hist.get("checksum").sum for m in mixers
                                if "checksum" in m.wlog.hist) / 1e9
    return out


def summarize(a: RandrwArgs, clients: list[dict]) -> dict[str, Any]:
    """Read and write aggregates and IOPS over every client."""
    read = io_aggregate([c["read"] for c in clients])
    write = io_aggregate([c["write"] for c in clients])
    last = max(c["elapsed_s"] for c in clients)
    for agg, op in ((read, "read"), (write, "write")):
        agg["iops"] = agg["latency"].get(op, {}).get("count", 0) / last if last else 0.0
    out = {"mode": "randrw", "read": read, "write": write,
           "iops": read["iops"] + write["iops"],
           "per_client_iops": stats.spread([c["iops"] for c in clients]),
           "read_bytes": read["bytes"], "write_bytes": write["bytes"],
           "bytes": read["bytes"] + write["bytes"],
           "read_mib_s": mib_per_s(read["bytes"], last),
           "write_mib_s": mib_per_s(write["bytes"], last),
           "block_size": a.block_size, "read_share": a.read_share, "file_size": a.file_size}
    if a.checksum:
        out["verify"] = verify_summary(clients)
    return out


def warnings(rc: RunContext, a: RandrwArgs, out: dict[str, Any]) -> list[dict[str, str]]:
    if a.method != METHOD_DIRECT:
        return [{"code": "randrw_buffered", "message": (
            "randrw ran without O_DIRECT: writes went to the page cache and reads of blocks "
            "written during the run may have been served from RAM")}]
    return []
