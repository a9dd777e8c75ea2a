"""A passthrough FUSE filesystem with known bandwidth: a rate per open stream and a global cap.

Run as `python -m tests.oracle.ratefs BACKING MOUNT --read-stream BPS --read-cap BPS
--write-stream BPS --write-cap BPS [--cache]`; it stays in the foreground until unmounted.

Every open file handle is one stream. Files are opened with direct_io, so the kernel keeps no
page cache for them and every read and write reaches this process and its limits. With
--cache it behaves like a caching network client instead: bytes of a file it has already read
or written are served from its own memory at once, without the limits, and the kernel may
cache pages too. That is the trap aiio must warn about.
"""

from __future__ import annotations

import argparse
import errno
import os
import threading

import mfusepy as fuse

from tests.oracle.pacing import Limits, Pacer


class RateFS(fuse.Operations):
    """Passthrough to `backing`, with `reads` and `writes` limits per stream and in total."""

    use_ns = True

    def __init__(self, backing: str, reads: Limits, writes: Limits, cache: bool) -> None:
        self.backing = backing
        self.reads, self.writes, self.cache = reads, writes, cache
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
    def _open_handle(self, fi, fd: int) -> int:
        fi.fh = fd
        # direct_io: the kernel neither caches nor reads ahead, so the limits see every byte
        fi.direct_io = 0 if self.cache else 1
        fi.keep_cache = 1 if self.cache else 0
        with self.guard:
            self.streams[fd] = (self.reads.new_stream(), self.writes.new_stream())
        return 0

    def open(self, path, fi):
        # O_DIRECT is the kernel's business: the backing file is read through its cache
        flags = fi.flags & ~(os.O_DIRECT | os.O_CREAT | os.O_EXCL)
        return self._open_handle(fi, os.open(self._full(path), flags))

    def create(self, path, mode, fi):
        flags = (fi.flags & ~os.O_DIRECT) | os.O_CREAT
        return self._open_handle(fi, os.open(self._full(path), flags, mode))

    def read(self, path, size, offset, fi):
        data = os.pread(fi.fh, size, offset)
        if not (self.cache and path in self.warm):
            self.reads.wait(self.streams[fi.fh][0], len(data))
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
        os.close(fi.fh)
        if self.cache:
            self.warm.add(path)  # read or written once: held in this client's cache
        return 0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("backing")
    ap.add_argument("mount")
    for name in ("read-stream", "read-cap", "write-stream", "write-cap"):
        ap.add_argument(f"--{name}", type=float, default=0.0, help="bytes/s, 0 = unlimited")
    ap.add_argument("--cache", action="store_true")
    ap.add_argument("--name", default="ratefs")
    ap.add_argument("--threads", type=int, default=0,
                    help="libfuse3's max_threads (run with FUSE_LIBRARY_NAME=fuse3): one "
                    "thread per concurrent stream; 0 keeps the library's default")
    a = ap.parse_args(argv)
    try:  # the oracle must keep its rates on a busy machine: serve before the clients run
        os.setpriority(os.PRIO_PROCESS, 0, -10)
    except OSError:
        pass
    fs = RateFS(os.path.abspath(a.backing), Limits(a.read_stream, a.read_cap),
                Limits(a.write_stream, a.write_cap), a.cache)
    # A request waiting for its stream's rate holds a FUSE thread; with more concurrent
    # streams than threads, requests would queue and the oracle would under-deliver.
    threads = {"max_threads": a.threads} if a.threads else {}
    fuse.FUSE(fs, a.mount, foreground=True, raw_fi=True, fsname=a.name, subtype="ratefs",
              default_permissions=True, **threads)


if __name__ == "__main__":
    try:
        main()
    except OSError as exc:
        raise SystemExit(f"ratefs: {exc}") from None
    except fuse.FuseOSError as exc:
        raise SystemExit(f"ratefs: {errno.errorcode.get(exc.errno, exc.errno)}") from None
