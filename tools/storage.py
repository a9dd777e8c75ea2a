"""Storage of known behaviour, built from real kernel parts (root only), for the test suite
and the bench alike (tests import it from here: tools never import tests).

`throttled_disk` gives an ext4 filesystem on a loop device whose reads are limited by a
cgroup-v1 blkio throttle; commands run through `ThrottledDisk.command`, and this process
inside `ThrottledDisk.joined`, are subject to it. `write_through=True` makes it a disk on
which a server that writes through the page cache is held to the write throttle too, and
`ThrottledDisk.evicting` keeps that server's reads off the page cache. `small_tmpfs` gives
a size-limited tmpfs: a disk that fills up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BLKIO = Path("/sys/fs/cgroup/blkio")


def can_build_storage() -> str | None:
    """None when loop devices, mkfs and blkio throttles are usable, else the reason."""
    if os.geteuid() != 0:
        return "needs root for loop devices, mounts and blkio throttles"
    if not (BLKIO / "blkio.throttle.read_bps_device").exists():
        return "no cgroup-v1 blkio controller with throttling at /sys/fs/cgroup/blkio"
    # lsblk: the device's numbers; blockdev: its readahead
    for tool in ("losetup", "mkfs.ext4", "mount", "lsblk", "blockdev"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            return f"{tool} is not installed"
    return None


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


@dataclass
class ThrottledDisk:
    mount: Path
    device: str
    cgroup: Path
    read_bps: int
    write_bps: int = 0

    def command(self, *argv: str) -> list[str]:
        """argv wrapped so the process joins the throttled cgroup before it starts."""
        procs = self.cgroup / "cgroup.procs"
        return ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *argv]

    @contextlib.contextmanager
    def joined(self) -> Iterator[None]:
        """This process (every thread) inside the throttled cgroup for the block, so that
        every process it starts meanwhile (client forks, fio) is too; back in its own
        blkio cgroup after."""
        home = BLKIO / _blkio_cgroup().lstrip("/")
        (self.cgroup / "cgroup.procs").write_text(f"{os.getpid()}\n")
        try:
            yield
        finally:
            (home / "cgroup.procs").write_text(f"{os.getpid()}\n")

    @contextlib.contextmanager
    def evicting(self, folder: Path, every_s: float = 0.02) -> Iterator[None]:
        """For the block, drop the cached pages of every file below `folder` every `every_s`
        from a thread inside the throttled cgroup, so that a server reading those files
        (SeaweedFS's volumes) reads them off the device: a page written during a run is
        read back from the device, not from memory. Dropping starts writeback of a dirty
        page; from inside the cgroup that write is throttled and counted as the server's."""
        stop = threading.Event()

        def drop() -> None:
            (self.cgroup / "tasks").write_text(f"{threading.get_native_id()}\n")
            while not stop.wait(every_s):
                drop_pages(folder)

        dropper = threading.Thread(target=drop, name="evicting", daemon=True)
        dropper.start()
        try:
            yield
        finally:
            stop.set()
            dropper.join()

    def bytes_read(self) -> int:
        """Bytes read from the device by the cgroup's processes so far: what went through
        its throttle."""
        major_minor = _major_minor(self.device)
        for line in (self.cgroup / "blkio.throttle.io_service_bytes").read_text().splitlines():
            dev, op, *value = line.split()
            if dev == major_minor and op == "Read":
                return int(value[0])
        return 0


def drop_pages(folder: Path) -> None:
    """POSIX_FADV_DONTNEED on every file below `folder`; files that come and go meanwhile
    (a server's temporary ones) are passed over."""
    for where, _, names in os.walk(folder):
        for name in names:
            try:
                fd = os.open(os.path.join(where, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
            finally:
                os.close(fd)


def _blkio_cgroup() -> str:
    """This process's blkio cgroup, as /proc/self/cgroup names it ("/" for the root)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "blkio" in controllers.split(","):
            return path
    return "/"


def _major_minor(device: str) -> str:
    return _run("lsblk", "-dno", "MAJ:MIN", device).replace(" ", "")


@contextlib.contextmanager
def throttled_disk(tmp: Path, read_bps: int, size_mib: int = 512, write_bps: int = 0,
                   read_iops: int = 0, write_through: bool = False) -> Iterator[ThrottledDisk]:
    """ext4 on a loop device (direct I/O to its backing file, so no double caching) with a
    blkio read limit of `read_bps` bytes/s (0 for none; a write limit of `write_bps` and a
    read request limit of `read_iops` a second likewise) for processes in its cgroup.
    cgroup v1 throttles only the writes its processes issue themselves: O_DIRECT writes,
    not the page cache's later writeback.

    `write_through`: every write reaches the device before its call returns, issued by the
    writing process (mounted `-o sync`), and no journal thread writes data for it (no
    journal), so a buffered write is throttled and counted as the writer's; no readahead,
    so a read takes only the pages asked for off the device."""
    image, mount = tmp / "disk.img", tmp / "mnt"
    mount.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(size_mib * 2**20)
    _run("mkfs.ext4", "-q", "-F", *(("-O", "^has_journal") if write_through else ()),
         str(image))
    device = _run("losetup", "--direct-io=on", "-f", "--show", str(image))
    cgroup = BLKIO / f"aiio-test-{uuid.uuid4().hex[:8]}"
    try:
        _run("mount", *(("-o", "sync") if write_through else ()), device, str(mount))
        if write_through:
            _run("blockdev", "--setra", "0", device)
        cgroup.mkdir()
        major_minor = _major_minor(device)
        if read_bps:
            (cgroup / "blkio.throttle.read_bps_device").write_text(
                f"{major_minor} {read_bps}\n")
        if read_iops:
            (cgroup / "blkio.throttle.read_iops_device").write_text(
                f"{major_minor} {read_iops}\n")
        if write_bps:
            (cgroup / "blkio.throttle.write_bps_device").write_text(
                f"{major_minor} {write_bps}\n")
        yield ThrottledDisk(mount, device, cgroup, read_bps, write_bps)
    finally:
        # A Ctrl-C reaches the tools' processes as it reaches this one: one still reading
        # kept the filesystem busy, its umount failed, and the device, the cgroup and the
        # tmpfs under them stayed. The cgroup's processes are the ones run on the device.
        end_members(cgroup)
        if subprocess.run(["umount", str(mount)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)
        subprocess.run(["losetup", "-d", device], capture_output=True)
        if cgroup.exists():
            with contextlib.suppress(OSError):
                cgroup.rmdir()


MEMBERS_GONE_S = 10.0  # how long the cgroup's killed processes get to leave it


def end_members(cgroup: Path, grace_s: float = 0.0) -> None:
    """Kill every process left in the throttled cgroup (but this one) and wait until it is
    empty, so that its filesystem can be unmounted. Within `grace_s` they are asked
    (SIGTERM), so that daemons can let go of their files; after it, killed."""
    procs = cgroup / "cgroup.procs"
    start = time.monotonic()
    while time.monotonic() - start < grace_s + MEMBERS_GONE_S:
        sig = signal.SIGTERM if time.monotonic() - start < grace_s else signal.SIGKILL
        with contextlib.suppress(OSError):
            pids = [int(p) for p in procs.read_text().split() if int(p) != os.getpid()]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
        time.sleep(0.05)


@contextlib.contextmanager
def small_tmpfs(tmp: Path, size_mib: int) -> Iterator[Path]:
    """A tmpfs of `size_mib` MiB: a disk that fills up."""
    mount = tmp / f"tmpfs-{size_mib}"
    mount.mkdir()
    _run("mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(mount))
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
