"""A disk of known read bandwidth, for ground-truth tests (root only): an ext4 image on a loop
device with direct I/O to its backing file (so the host's page cache can't serve it), and a
cgroup-v1 blkio group that throttles reads from that device. Every process placed in the group
shares the one limit."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BLKIO = Path("/sys/fs/cgroup/blkio")


@dataclass
class ThrottledDisk:
    mount: Path
    device: str
    cgroup: Path
    read_bps: int

    def join(self) -> None:
        """Put the calling process in the throttled group (use as a subprocess preexec_fn)."""
        (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))


def why_not() -> str | None:
    """The reason a throttled disk can't be made here, or None."""
    if os.geteuid() != 0:
        return "needs root (loop devices, mounts, blkio cgroups)"
    if not (BLKIO / "blkio.throttle.read_bps_device").exists():
        return "no cgroup-v1 blkio controller with read throttling at /sys/fs/cgroup/blkio"
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def throttled_disk(workdir: Path, read_bps: int, size_mib: int = 96) -> Iterator[ThrottledDisk]:
    """Yield a mounted, read-throttled ext4; removes mount, loop device and cgroup after."""
    image, mount = workdir / "disk.img", workdir / "mnt"
    with image.open("wb") as fh:
        fh.truncate(size_mib * 2**20)
    mount.mkdir()
    device = cgroup = None
    try:
        device = _run("losetup", "--find", "--show", "--direct-io=on", str(image))
        _run("mkfs.ext4", "-q", "-F", device)
        _run("mount", device, str(mount))
        rdev = os.stat(device).st_rdev
        cgroup = BLKIO / f"aiio-test-{os.getpid()}-{time.monotonic_ns()}"
        cgroup.mkdir()
        (cgroup / "blkio.throttle.read_bps_device").write_text(
            f"{os.major(rdev)}:{os.minor(rdev)} {read_bps}")
        yield ThrottledDisk(mount, device, cgroup, read_bps)
    finally:
        _teardown(mount, device, cgroup)


def _teardown(mount: Path, device: str | None, cgroup: Path | None) -> None:
    if os.path.ismount(mount):
        if subprocess.run(["umount", str(mount)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)
    if device:
        subprocess.run(["losetup", "-d", device], capture_output=True)
    if cgroup is not None and cgroup.exists():
        for _ in range(50):  # the group can be removed once its last process has gone
            try:
                cgroup.rmdir()
                break
            except OSError:
                time.sleep(0.1)
