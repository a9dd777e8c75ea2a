"""A passthrough FUSE filesystem with known bandwidth: a rate per open stream and a global cap.

Run as `python -m tests.oracle.ratefs BACKING MOUNT --read-stream BPS --read-cap BPS
--write-stream BPS --write-cap BPS [--read-delay S] [--cache] [--log FILE]`; it stays in the
foreground until unmounted. With --log, every stream writes one JSON line when it is closed
(see StreamLog). With --read-delay every read request is answered that long after it arrived
(a latency oracle).

Every open file handle is one stream. Files are opened with direct_io, so the kernel keeps no
page cache for them and every read and write reaches this process and its limits. With
--cache it behaves like a caching network client instead: bytes of a file it has already read
or written are served from its own memory at once, without the limits, and the kernel may
cache pages too. That is the trap aiio must warn about.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import threading
import time

import mfusepy as fuse

from tests.oracle.pacing import Limits, Pacer

CACHE_S = 86400.0  # how long the kernel keeps names and attributes (see main)


def _process_of(tid: int) -> int:
    """The process of the thread that made a request (FUSE names the thread), or 0."""
    try:
        with open(f"/proc/{tid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("Tgid:"))
    except (OSError, StopIteration, ValueError):
        return 0


class StreamLog:
    """One JSON line per closed stream: the process that opened it, when it was opened, when
    each read request arrived and when it was answered (monotonic seconds, the clients'
    clock), and its bytes. Tells time the storage spent from time the client spent before or
    between its requests."""

    def __init__(self, path: str) -> None:
        self.out = open(path, "a", buffering=1)  # noqa: SIM115 (open for the mount's life)
        self.lock = threading.Lock()
        self.streams: dict[int, dict] = {}
        self.processes: dict[int, int] = {}  # thread -> process, looked up once per thread

    def opened(self, fd: int, path: str) -> None:
        # the thread only: its process is looked up at the close, off the open's path
        self.streams[fd] = {"path": path, "tid": fuse.fuse_get_context()[2],
                            "open": time.monotonic(), "reads": []}

    def read(self, fd: int, asked: float, nbytes: int) -> None:
        self.streams[fd]["reads"].append((asked, time.monotonic(), nbytes))

    def closed(self, fd: int) -> None:
        entry = self.streams.pop(fd, None)
        if entry is not None:
            entry["close"] = time.monotonic()
            tid = entry["tid"]  # kept: clients that share a process read on threads of their own
            with self.lock:
                if tid not in self.processes:
                    self.processes[tid] = _process_of(tid)
                entry["pid"] = self.processes[tid]
                self.out.write(json.dumps(entry) + "\n")


class RateFS(fuse.Operations):
    """Passthrough to `backing`, with `reads` and `writes` limits per stream and in total."""

    use_ns = True

    def __init__(self, backing: str, reads: Limits, writes: Limits, cache: bool,
                 log: StreamLog | None = None, read_delay: float = 0.0) -> None:
        self.backing = backing
        self.read_delay = read_delay  # a latency oracle: every read answered this late
        self.reads, self.writes, self.cache = reads, writes, cache
        self.log = log
        self.streams: dict[int, tuple[Pacer, Pacer]] = {}
        self.warm: set[str] = set()  # files whose bytes the --cache mode holds
        self.guard = threading.Lock()  # not "lock": that name is a FUSE operation

    def _full(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    # --- metadata: plain passthrough -----------------------------------------------------
    def getattr(self, path, fh=None):
        st = os.lstat(self._full(path))
        keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime_ns",
                "st_mtime_ns", "st_ctime_ns", "st_blocks", "st_blksize")
        out = {k: getattr(st, k) for k in keys}
        for k in ("st_atime", "st_mtime", "st_ctime"):
            out[k] = out.pop(k + "_ns")
        return out

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self._full(path))]

    def mkdir(self, path, mode):
        os.mkdir(self._full(path), mode)

    def rmdir(self, path):
        os.rmdir(self._full(path))

    def unlink(self, path):
        os.unlink(self._full(path))
        self.warm.discard(path)

    def rename(self, old, new):
        os.rename(self._full(old), self._full(new))
        if old in self.warm:
            self.warm.discard(old)
            self.warm.add(new)

    def chmod(self, path, mode):
        os.chmod(self._full(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._full(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._full(path), ns=times)

    def truncate(self, path, length, fh=None):
        os.truncate(self._full(path), length)

    def statfs(self, path):
        st = os.statvfs(self._full(path))
        return {k: getattr(st, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize",
                                            "f_favail", "f_ffree", "f_files", "f_flag",
                                            "f_frsize", "f_namemax")}

    # --- data: one stream per handle ------------------------------------------------------
    def _open_handle(self, fi, fd: int, path: str) -> int:
        fi.fh = fd
        # direct_io: the kernel neither caches nor reads ahead, so the limits see every byte
        fi.direct_io = 0 if self.cache else 1
        fi.keep_cache = 1 if self.cache else 0
        with self.guard:
            self.streams[fd] = (self.reads.new_stream(), self.writes.new_stream())
            if self.log is not None:
                self.log.opened(fd, path)
        return 0

    def open(self, path, fi):
        # O_DIRECT is the kernel's business: the backing file is read through its cache
        flags = fi.flags & ~(os.O_DIRECT | os.O_CREAT | os.O_EXCL)
        return self._open_handle(fi, os.open(self._full(path), flags), path)

    def create(self, path, mode, fi):
        flags = (fi.flags & ~os.O_DIRECT) | os.O_CREAT
        return self._open_handle(fi, os.open(self._full(path), flags, mode), path)

    def read(self, path, size, offset, fi):
        asked = time.monotonic()
        data = os.pread(fi.fh, size, offset)
        if self.read_delay:
            time.sleep(max(0.0, asked + self.read_delay - time.monotonic()))
        if not (self.cache and path in self.warm):
            self.reads.wait(self.streams[fi.fh][0], len(data))
        if self.log is not None:
            self.log.read(fi.fh, asked, len(data))
        return data

    def write(self, path, data, offset, fi):
        self.writes.wait(self.streams[fi.fh][1], len(data))
        return os.pwrite(fi.fh, data, offset)

    def flush(self, path, fi):
        return 0

    def fsync(self, path, datasync, fi):
        os.fsync(fi.fh)
        return 0

    def release(self, path, fi):
        with self.guard:
            self.streams.pop(fi.fh, None)
        if self.log is not None:
            self.log.closed(fi.fh)
        os.close(fi.fh)
        if self.cache:
            self.warm.add(path)  # read or written once: held in this client's cache
        return 0


def serve_first(nice: int = -10) -> None:
    """Let the oracle keep its rates on a busy machine: it serves before the clients run.

    A nice value alone is not enough. With the kernel's autogroup scheduling every session
    shares the CPUs equally with every other, whatever its processes' nice values, and each
    aiio client and each fio job runs in a session of its own: with 128 clients waking at a
    common start the oracle, one session among 129, waited about 0.1 s to answer the first
    request. So the oracle takes a session of its own and raises that session's priority.
    Not to the most: the oracle needs CPU for every request too, and in one run at -20 (as
    much weight as 87 busy sessions) 1,024 aiio clients, which need more CPU per request than
    fio's jobs, got less and fio's jobs more (docs/PERFORMANCE.md).
    """
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader
    try:
        with open("/proc/self/autogroup", "w") as fh:
            fh.write(str(nice))
    except OSError:
        pass  # no autogroup scheduling here, or not allowed: the nice value still counts
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError:
        pass


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("backing")
    ap.add_argument("mount")
    for name in ("read-stream", "read-cap", "write-stream", "write-cap"):
        ap.add_argument(f"--{name}", type=float, default=0.0, help="bytes/s, 0 = unlimited")
    ap.add_argument("--read-burst", type=float, default=0.0,
                    help="bytes, the first read at the mount's start, that pass the read cap")
    ap.add_argument("--read-delay", type=float, default=0.0,
                    help="seconds every read request waits from its arrival to its answer")
    ap.add_argument("--cache", action="store_true")
    ap.add_argument("--name", default="ratefs")
    ap.add_argument("--threads", type=int, default=0,
                    help="libfuse3's max_threads (run with FUSE_LIBRARY_NAME=fuse3): one "
                    "thread per concurrent stream; 0 keeps the library's default")
    ap.add_argument("--log", help="append one JSON line per closed stream to this file")
    a = ap.parse_args(argv)
    serve_first()
    fs = RateFS(os.path.abspath(a.backing), Limits(a.read_stream, a.read_cap, a.read_burst),
                Limits(a.write_stream, a.write_cap), a.cache,
                StreamLog(a.log) if a.log else None, a.read_delay)
    # A request waiting for its stream's rate holds a FUSE thread; with more concurrent
    # streams than threads, requests would queue and the oracle would under-deliver.
    threads = {"max_threads": a.threads} if a.threads else {}
    # Names and attributes stay in the kernel's cache for a day (libfuse's default is 1 s):
    # only this process changes the backing folder, and the limits are on data, not on
    # metadata, so many clients opening their first files at once do not queue here for
    # path lookups the kernel could answer itself. A minute was not enough: a run started
    # more than a minute after the last one found every cached name expired, and 1,024
    # clients opening at the common start each sent this process a lookup of every folder
    # on their path (one mount, runs 70 s apart: median shares 0.911, 0.772, 0.621 of the
    # stream rate; with a day, 0.925 and 0.913 after the first).
    fuse.FUSE(fs, a.mount, foreground=True, raw_fi=True, fsname=a.name, subtype="ratefs",
              default_permissions=True, entry_timeout=CACHE_S, attr_timeout=CACHE_S,
              **threads)


if __name__ == "__main__":
    try:
        main()
    except OSError as exc:
        raise SystemExit(f"ratefs: {exc}") from None
    except fuse.FuseOSError as exc:
        raise SystemExit(f"ratefs: {errno.errorcode.get(exc.errno, exc.errno)}") from None
