"""Storage of known behaviour, built from real kernel parts (root only), for the test suite
and the bench alike (tests import it from here: tools never import tests).

`throttled_disk` gives an ext4 filesystem on a loop device whose reads are limited by a
cgroup-v1 blkio throttle; commands run through `ThrottledDisk.command`, and this process
inside `ThrottledDisk.joined`, are subject to it. `small_tmpfs` gives a size-limited tmpfs:
a disk that fills up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
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
    for tool in ("losetup", "mkfs.ext4", "mount", "lsblk"):  # lsblk: the device's numbers
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

    def bytes_read(self) -> int:
        """Bytes read from the device by the cgroup's processes so far: what went through
        its throttle."""
        major_minor = _major_minor(self.device)
        for line in (self.cgroup / "blkio.throttle.io_service_bytes").read_text().splitlines():
            dev, op, *value = line.split()
            if dev == major_minor and op == "Read":
                return int(value[0])
        return 0


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
def throttled_disk(tmp: Path, read_bps: int, size_mib: int = 512,
                   write_bps: int = 0) -> Iterator[ThrottledDisk]:
    """ext4 on a loop device (direct I/O to its backing file, so no double caching) with a
    blkio read limit of `read_bps` bytes/s (and a write limit of `write_bps`, 0 for none) for
    processes in its cgroup. cgroup v1 throttles only the writes its processes issue
    themselves: O_DIRECT writes, not the page cache's later writeback."""
    image, mount = tmp / "disk.img", tmp / "mnt"
    mount.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(size_mib * 2**20)
    _run("mkfs.ext4", "-q", "-F", str(image))
    device = _run("losetup", "--direct-io=on", "-f", "--show", str(image))
    cgroup = BLKIO / f"aiio-test-{uuid.uuid4().hex[:8]}"
    try:
        _run("mount", device, str(mount))
        cgroup.mkdir()
        major_minor = _major_minor(device)
        (cgroup / "blkio.throttle.read_bps_device").write_text(f"{major_minor} {read_bps}\n")
        if write_bps:
            (cgroup / "blkio.throttle.write_bps_device").write_text(
                f"{major_minor} {write_bps}\n")
        yield ThrottledDisk(mount, device, cgroup, read_bps, write_bps)
    finally:
        # A Ctrl-C reaches the tools' processes as it reaches this one: one still reading
        # kept the filesystem busy, its umount failed, and the device, the cgroup and the
        # tmpfs under them stayed. The cgroup's processes are the ones run on the device.
        _end_members(cgroup)
        if subprocess.run(["umount", str(mount)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)
        subprocess.run(["losetup", "-d", device], capture_output=True)
        if cgroup.exists():
            with contextlib.suppress(OSError):
                cgroup.rmdir()


MEMBERS_GONE_S = 10.0  # how long the cgroup's killed processes get to leave it


def _end_members(cgroup: Path) -> None:
    """Kill every process left in the throttled cgroup (but this one) and wait until it is
    empty, so that its filesystem can be unmounted."""
    procs = cgroup / "cgroup.procs"
    deadline = time.monotonic() + MEMBERS_GONE_S
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            pids = [int(p) for p in procs.read_text().split() if int(p) != os.getpid()]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
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
