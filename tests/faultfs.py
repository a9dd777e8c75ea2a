"""A passthrough FUSE filesystem whose reads go wrong on cue: one thread's reads fail with EIO,
or every read hangs, once the clients' files have been read `--after` times; or whose closes
fail.

Run as `python -m tests.faultfs BACKING MOUNT --mode fail|hang|close --after N --log FILE`;
it stays in the foreground until unmounted. Only reads of files whose name starts with `--name`
(`randrw-` by default: a randrw client's file) count and go wrong, so a run's set-up (its
target probe, writing its files) is served as by any passthrough.

- `fail`: the thread making the N-th read gets EIO for it and for every later read of its
  own (FUSE names the calling thread); every other thread is served. The log gets one line
  `failed T TID`, then `served T TID` for each read served after it (T: CLOCK_MONOTONIC
  seconds, the machine's one clock), so a test sees what the failing thread's siblings did
  after the failure.
- `hang`: the N-th read and every later one do not answer (storage that stops answering)
  until the file `.release` appears in BACKING (`FaultMount.release`: the storage answers
  again, each held read with EIO); the log gets one line `hung T`. Ending the daemon aborts
  them (ENOTCONN).
- `close`: every read is served, and every close of a matching file fails with EIO (FUSE's
  flush, whose error close(2) returns: storage that reports a failure only at the close).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import mfusepy as fuse

from tests.oracle.pacing import Limits
from tests.oracle.ratefs import RateFS

RELEASE = ".release"


class FaultFS(RateFS):
    """RateFS without limits, whose reads of matching files go wrong after `after` of them."""

    def __init__(self, backing: str, mode: str, after: int, name: str, log: str) -> None:
        super().__init__(backing, Limits(0, 0), Limits(0, 0), cache=False)
        self.mode, self.after, self.name = mode, after, name
        self.out = open(log, "a", buffering=1)  # noqa: SIM115 (open for the mount's life)
        self.count = 0
        self.failing: int | None = None  # the thread whose reads fail
        self.release_path = os.path.join(backing, RELEASE)

    def flush(self, path, fi):
        if self.mode == "close" and os.path.basename(path).startswith(self.name):
            raise fuse.FuseOSError(errno.EIO)
        return super().flush(path, fi)

    def read(self, path, size, offset, fi):
        if self.mode == "close" or not os.path.basename(path).startswith(self.name):
            return super().read(path, size, offset, fi)
        tid = fuse.fuse_get_context()[2]
        with self.guard:
            self.count += 1
            due = self.count >= self.after
            if due and self.mode == "fail" and self.failing is None:
                self.failing = tid
                self.out.write(f"failed {time.monotonic()} {tid}\n")
            elif due and self.mode == "hang" and self.count == self.after:
                self.out.write(f"hung {time.monotonic()}\n")
        if due and self.mode == "hang":
            while not os.path.exists(self.release_path):
                time.sleep(0.05)
            raise fuse.FuseOSError(errno.EIO)
        if tid == self.failing:
            raise fuse.FuseOSError(errno.EIO)
        data = super().read(path, size, offset, fi)
        if self.failing is not None:
            self.out.write(f"served {time.monotonic()} {tid}\n")
        return data


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("backing")
    ap.add_argument("mount")
    ap.add_argument("--mode", choices=("fail", "hang", "close"), required=True)
    ap.add_argument("--after", type=int, default=100)
    ap.add_argument("--name", default="randrw-")
    ap.add_argument("--log", required=True)
    a = ap.parse_args(argv)
    fs = FaultFS(os.path.abspath(a.backing), a.mode, a.after, a.name, a.log)
    fuse.FUSE(fs, a.mount, foreground=True, raw_fi=True, fsname="faultfs", subtype="faultfs",
              default_permissions=True)


@dataclass(frozen=True)
class FaultMount:
    mount: Path
    log: Path
    backing: Path

    def release(self) -> None:
        """The storage answers again (hang mode), written beside the mount, not through it."""
        (self.backing / RELEASE).touch()


@contextlib.contextmanager
def faultfs(tmp: Path, mode: str, after: int, size_mib: int = 256,
            name: str = "randrw-") -> Iterator[FaultMount]:
    """The faulty filesystem over a fresh tmpfs; only reads of files named `name`... count."""
    from tests.oracle.mount import _daemon
    from tests.storage import small_tmpfs

    mount, log = tmp / f"faultfs-{uuid.uuid4().hex[:8]}", tmp / "faultfs-events.log"
    mount.mkdir()
    log.touch()
    argv = [sys.executable, "-m", "tests.faultfs", "", str(mount), f"--mode={mode}",
            f"--after={after}", f"--log={log}", f"--name={name}"]
    with small_tmpfs(tmp, size_mib) as backing:
        argv[3] = str(backing)
        with _daemon(argv, mount, "faultfs"):
            yield FaultMount(mount, log, backing)


def events(log: Path) -> list[tuple[str, float, int]]:
    """The log's lines as (what, monotonic seconds, thread; 0 where none is named)."""
    out = []
    for line in log.read_text().splitlines():
        what, at, *tid = line.split()
        out.append((what, float(at), int(tid[0]) if tid else 0))
    return out


if __name__ == "__main__":
    main()
