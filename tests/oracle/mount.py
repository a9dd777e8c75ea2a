"""Mount the oracle filesystems for a test, and take them down in every outcome."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.storage import small_tmpfs

REPO = Path(__file__).resolve().parents[2]
WARM_READ = 16 * 1024  # bytes each warm-up read asks for: a quarter of a second at 64 KiB/s


def can_mount_fuse() -> str | None:
    """None when FUSE filesystems can be mounted here, else the reason."""
    if os.geteuid() != 0:
        return "needs root to mount FUSE filesystems"
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse on this machine"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (Debian package fuse3)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"mfusepy or libfuse is missing: {exc}"
    return None


def can_bindfs() -> str | None:
    return can_mount_fuse() or (None if shutil.which("bindfs") else "bindfs is not installed")


@dataclass(frozen=True)
class Rates:
    """Bytes/s for one mount; 0 means no limit."""

    read_stream: float = 0
    read_cap: float = 0
    write_stream: float = 0
    write_cap: float = 0
    read_burst: float = 0  # bytes read at the start of a mount that pass the cap untouched
    read_delay: float = 0  # seconds every read request waits before it is answered

    def argv(self) -> list[str]:
        return [f"--read-stream={self.read_stream}", f"--read-cap={self.read_cap}",
                f"--write-stream={self.write_stream}", f"--write-cap={self.write_cap}",
                f"--read-burst={self.read_burst}", f"--read-delay={self.read_delay}"]


def _mounted(path: Path) -> bool:
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as fh:
        return any(line.split()[1] == real for line in fh)


def _wait_mounted(path: Path, proc: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + 20
    while not _mounted(path):
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before mounting: "
                               f"{log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not mount {path} within 20 s")
        time.sleep(0.05)


def _take_down(path: Path, proc: subprocess.Popen) -> None:
    """Unmount (lazily if busy), then make sure the daemon is gone."""
    if _mounted(path):
        if subprocess.run(["fusermount3", "-u", str(path)], capture_output=True).returncode:
            subprocess.run(["fusermount3", "-uz", str(path)], capture_output=True)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextlib.contextmanager
def _daemon(argv: list[str], mount: Path, what: str,
            env: dict[str, str] | None = None) -> Iterator[None]:
    # its messages go to a file: a pipe nobody reads would fill up and stall every request
    log = mount.with_name(mount.name + ".log")
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=out,
                                env=dict(os.environ, **(env or {})))
    try:
        _wait_mounted(mount, proc, what, log)
        yield
    finally:
        _take_down(mount, proc)


@contextlib.contextmanager
def ratefs(tmp: Path, rates: Rates, cache: bool = False, size_mib: int = 512,
           threads: int = 0, log: Path | None = None) -> Iterator[Path]:
    """The rate-limited filesystem over a fresh tmpfs of `size_mib`; yields its mount.

    The backing store is in RAM so the limits are the only ones: no disk that other work on
    the machine keeps busy can slow the oracle down. `threads` > 0 serves that many
    concurrent requests (libfuse 3's max_threads). Through libfuse 2, mfusepy's default, 1,024
    concurrent 256 KiB reads at 64 KiB/s per stream took 21.8 s where the limits allow 4 s;
    through libfuse 3 with 2,048 threads, 5.9 s (a loaded machine). Forty streams are served
    at their rate either way. `log`: a file that gets one JSON line per closed stream
    (ratefs.StreamLog).
    """
    mount = tmp / f"ratefs-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    with small_tmpfs(tmp, size_mib) as backing, \
            serving(backing, mount, rates, cache, threads, log):
        yield mount


@contextlib.contextmanager
def serving(backing: Path, mount: Path, rates: Rates, cache: bool = False, threads: int = 0,
            log: Path | None = None) -> Iterator[Path]:
    """A ratefs daemon over `backing`, mounted at the empty folder `mount` for the block.

    Mounted again over the same backing, the files are still there and the daemon and the
    kernel's side of the mount start afresh: a measurement that must not depend on what ran
    before it takes a fresh one. (What made one mount serve later 1,024-client runs worse,
    the kernel's cached names expiring between runs, is mended in ratefs itself.)
    """
    name = f"ratefs-{uuid.uuid4().hex[:8]}"
    argv = [sys.executable, "-m", "tests.oracle.ratefs", str(backing), str(mount),
            *rates.argv(), f"--name={name}", *(["--cache"] if cache else []),
            *([f"--threads={threads}"] if threads else []),
            *([f"--log={log}"] if log else [])]
    env = {"FUSE_LIBRARY_NAME": "fuse3"} if threads else None
    with _daemon(argv, mount, "ratefs", env):
        if threads and rates.read_stream:
            _warm(mount, threads)
        yield mount


def _warm(mount: Path, threads: int) -> None:
    """Have the daemon start its worker threads before anything is measured on it.

    libfuse starts a thread when every other one is busy, and keeps it. A read held back by
    the stream limit keeps its thread busy, so `threads` such reads at once start them all.
    Otherwise the first run on a fresh mount pays for starting them, inside its window (1,024
    clients opening their first files at once waited up to 3 s), and a second run on the same
    mount does not: the side measured second would be favoured.
    """
    probe = mount / f".warm-{uuid.uuid4().hex[:8]}"
    probe.write_bytes(bytes(WARM_READ))

    def read(_: int) -> None:
        fd = os.open(probe, os.O_RDONLY)
        try:
            os.pread(fd, WARM_READ, 0)
        finally:
            os.close(fd)

    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(read, range(threads)))
    finally:
        probe.unlink()


@contextlib.contextmanager
def bindfs(tmp: Path, source: Path) -> Iterator[Path]:
    """Debian's bindfs over `source`: a passthrough that serves reads from its page cache."""
    mount = tmp / f"bindfs-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    with _daemon(["bindfs", "-f", str(source), str(mount)], mount, "bindfs"):
        yield mount
