"""A real GlusterFS distributed volume on one host, each brick's disk at a known rate.

Parts nobody on the project wrote: glusterd and its brick daemons (Debian's glusterfs-server),
the FUSE client (glusterfs-client), ext4, loop devices and the kernel's cgroup-v1 blkio
throttle. Each brick is an ext4 on its own loop device (direct I/O to its backing file),
mounted `-o sync` so that writes are issued by the brick daemon itself rather than flushed
later by kernel threads outside the throttle's cgroup; one cgroup limits each device's reads
and writes, and glusterd starts inside it, so every brick daemon and thread it spawns
inherits the limits. glusterd runs without systemd from its own volfile, with its working,
run and log folders inside the rig's folder, bound to 127.0.0.2 (`volume create` refuses
127.0.0.1 and localhost even with `force`). The volume turns the
client's caching translators off and lets O_DIRECT reach the bricks.

`gluster_volume` builds it and takes every part down again in every outcome: the mount, the
daemons (every process in the cgroup), the brick filesystems, the loop devices, the cgroup.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.storage import end_members, small_tmpfs

HOST = "127.0.0.2"  # loopback, but not the address `volume create` refuses
# glusterd's port: the brick daemons it starts ask for their volfiles on this one whatever
# glusterd listens on, so only one rig runs on a machine at a time
PORT = 24007
# The daemons and the client run at a raised priority, as the oracle lab's clients do: on a
# machine shared with other work, a brick daemon or the client waiting for a CPU would
# deliver less than its disk's limit, and the lab would measure the scheduler
FIRST = ("nice", "-n", "-10")
BLKIO = Path("/sys/fs/cgroup/blkio")
PATHINFO = "trusted.glusterfs.pathinfo"
UP_S = 30.0  # how long glusterd, a brick or the mount gets to come up

# Every translator that would answer the client from its own memory, or delay its writes.
NO_CACHE = ("io-cache", "quick-read", "read-ahead", "write-behind", "stat-prefetch",
            "open-behind", "readdir-ahead", "nl-cache", "client-io-threads")
OPTIONS = (*((f"performance.{name}", "off") for name in NO_CACHE),
           ("performance.strict-o-direct", "on"), ("network.remote-dio", "disable"))


def can_gluster() -> str | None:
    """None when a GlusterFS volume can be built here, else the reason."""
    if os.geteuid() != 0:
        return "needs root for glusterd, loop devices, mounts and blkio throttles"
    if not (BLKIO / "blkio.throttle.read_bps_device").exists():
        return "no cgroup-v1 blkio controller with throttling at /sys/fs/cgroup/blkio"
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse on this machine"
    for tool, package in (("glusterd", "glusterfs-server"), ("gluster", "glusterfs-server"),
                          ("glusterfs", "glusterfs-client"), ("losetup", "mount"),
                          ("mkfs.ext4", "e2fsprogs"), ("lsblk", "util-linux")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian package {package})"
    return None


def _run(*cmd: str, timeout: float = 60) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): "
                           f"{(proc.stdout + proc.stderr)[-1500:]}")
    return proc.stdout.strip()


@dataclass(frozen=True)
class Volume:
    """A mounted distributed volume: `mount` is the client's mount point, `bricks` the brick
    folders in the order `volume create` got them, `bps` each brick disk's read and write
    limit in bytes/s."""

    name: str
    mount: Path
    bricks: tuple[Path, ...]
    bps: int
    cgroup: Path
    devices: tuple[str, ...]

    def brick_of(self, path: Path) -> int:
        """The index of the brick that holds the file at `path` (on the mount), from the
        client's pathinfo attribute: `<POSIX(<brick folder>):<host>:<file on the brick>>`."""
        info = os.getxattr(path, PATHINFO).decode()
        found = [i for i, brick in enumerate(self.bricks) if f"({brick})" in info]
        if len(found) != 1:
            raise RuntimeError(f"{path}: pathinfo names no single brick: {info}")
        return found[0]

    def place(self, path: Path, brick: int) -> None:
        """Move the file at `path` onto brick `brick`, keeping its name and content.

        DHT puts a new file on the brick its name hashes to, and a rename keeps the data
        where it is (a link file on the new name's brick points to it): so the content is
        copied to a fresh name, tried until one hashes to `brick`, that then takes the
        file's name, as a file renamed on a real volume lives away from its hash."""
        if self.brick_of(path) == brick:
            return
        spare = self.new_file(path.parent, brick)
        shutil.copyfile(path, spare)
        with open(spare, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(spare, path)
        if self.brick_of(path) != brick:
            raise RuntimeError(f"{path} stayed on brick {self.brick_of(path)}, not {brick}")

    def new_file(self, folder: Path, brick: int, stem: str = ".placed") -> Path:
        """An empty new file in `folder` that lives on brick `brick`: names are tried one
        after another, each created and read back, until one hashes there."""
        for k in range(64 * len(self.bricks)):
            path = folder / f"{stem}-{brick}-{k}"
            path.touch()
            if self.brick_of(path) == brick:
                return path
            path.unlink()
        raise RuntimeError(f"no name in {folder} hashed to brick {brick}")

    def _limit(self, bps: int) -> None:
        for device in self.devices:
            dev = _major_minor(device)
            for way in ("read", "write"):
                (self.cgroup / f"blkio.throttle.{way}_bps_device").write_text(f"{dev} {bps}\n")

    @contextlib.contextmanager
    def unthrottled(self) -> Iterator[None]:
        """The bricks' disks at full speed for the block (writing a dataset, placing it),
        back at their limit after."""
        self._limit(0)
        try:
            yield
        finally:
            self._limit(self.bps)


def _port_free() -> None:
    """glusterd's port is free on HOST, or an error that says who has it."""
    with socket.socket() as sock:
        # as glusterd binds it: a connection of an earlier rig in TIME_WAIT does not count
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, PORT))
        except OSError as exc:
            raise RuntimeError(f"{HOST}:{PORT} is taken (another glusterd?): {exc}") from exc


def command_socket(root: Path) -> Path:
    """glusterd's command socket: in a short folder of its own under the system's temp
    folder, as a unix socket's path must fit in 108 bytes (a test's tmp_path on a pytest-xdist
    worker did not)."""
    return Path(tempfile.gettempdir(), f"aiio-{root.name}", "glusterd.socket")


def _volfile(root: Path) -> Path:
    """glusterd's own volfile: its working, run and log folders in `root`, bound to HOST."""
    for sub in ("work", "run", "log"):
        (root / sub).mkdir()
    command_socket(root).parent.mkdir()
    vol = root / "glusterd.vol"
    vol.write_text(f"""volume management
    type mgmt/glusterd
    option working-directory {root / 'work'}
    option run-directory {root / 'run'}
    option logging-directory {root / 'log'}
    option glusterd-sockfile {command_socket(root)}
    option transport-type socket
    option transport.socket.bind-address {HOST}
    option transport.socket.listen-port {PORT}
    option transport.socket.read-fail-log off
    option ping-timeout 0
    option event-threads 1
    option max-port 60999
end-volume
""")
    return vol


def _major_minor(device: str) -> str:
    return _run("lsblk", "-dno", "MAJ:MIN", device).replace(" ", "")


@dataclass
class _Parts:
    """What the rig has made so far, so that teardown undoes exactly that."""

    root: Path
    images: Path  # the tmpfs that holds the brick disks' backing files
    cgroup: Path
    devices: list[str]
    brick_mounts: list[Path]
    client: Path | None = None


def _brick(parts: _Parts, index: int, size_mib: int, bps: int) -> Path:
    """ext4 on a fresh loop device, mounted -o sync, limited to `bps` both ways."""
    # named after the rig's folder: a loop device still attached can be told apart
    image = parts.images / f"{parts.root.name}-brick{index}.img"
    mount = parts.root / f"brick{index}"
    mount.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(size_mib * 2**20)
    _run("mkfs.ext4", "-q", "-F", str(image))
    device = _run("losetup", "--direct-io=on", "-f", "--show", str(image))
    parts.devices.append(device)
    _run("mount", "-o", "sync", device, str(mount))
    parts.brick_mounts.append(mount)
    dev = _major_minor(device)
    for way in ("read", "write"):
        (parts.cgroup / f"blkio.throttle.{way}_bps_device").write_text(f"{dev} {bps}\n")
    brick = mount / "brick"
    brick.mkdir()
    return brick


def _start_glusterd(parts: _Parts) -> None:
    """glusterd inside the cgroup (it daemonizes; its pid is in the cgroup), up when its
    command socket answers."""
    procs = parts.cgroup / "cgroup.procs"
    vol = _volfile(parts.root)
    log = parts.root / "log" / "glusterd.log"
    try:
        _run("sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *FIRST, "glusterd", "-f",
             str(vol), "-l", str(log), "-p", str(parts.root / "glusterd.pid"))
    except RuntimeError as exc:  # it says why in its log only
        raise RuntimeError(f"{exc} {_tail(log)}") from None
    deadline = time.monotonic() + UP_S
    while subprocess.run(_cli(parts.root, "volume", "list"), capture_output=True).returncode:
        if time.monotonic() > deadline:
            raise RuntimeError(f"glusterd did not answer within {UP_S:.0f} s: {_tail(log)}")
        time.sleep(0.2)


def _cli(root: Path, *args: str) -> list[str]:
    return ["gluster", f"--glusterd-sock={command_socket(root)}",
            f"--log-file={root / 'log' / 'cli.log'}", "--mode=script", *args]


def _tail(path: Path) -> str:
    return path.read_text()[-1500:] if path.exists() else "(no log)"


def _create(parts: _Parts, name: str, bricks: list[Path]) -> None:
    _run(*_cli(parts.root, "volume", "create", name, "transport", "tcp",
               *(f"{HOST}:{b}" for b in bricks), "force"))
    _run(*_cli(parts.root, "volume", "set", name, *(word for kv in OPTIONS for word in kv)))
    _run(*_cli(parts.root, "volume", "start", name))


def _mount(parts: _Parts, name: str) -> Path:
    """The FUSE client, direct-io-mode on, logging into the rig's folder."""
    mount = parts.root / "mnt"
    mount.mkdir()
    _run(*FIRST, "glusterfs", f"--volfile-server={HOST}", f"--volfile-server-port={PORT}",
         f"--volfile-id={name}", "--direct-io-mode=enable",
         f"--log-file={parts.root / 'log' / 'client.log'}",
         f"--pid-file={parts.root / 'client.pid'}", str(mount))
    parts.client = mount
    deadline = time.monotonic() + UP_S
    while not _mounted(mount):
        if time.monotonic() > deadline:
            log = _tail(parts.root / "log" / "client.log")
            raise RuntimeError(f"the client did not mount within {UP_S:.0f} s: {log}")
        time.sleep(0.1)
    return mount


def _mounted(path: Path) -> bool:
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as fh:
        return any(line.split()[1] == real for line in fh)


@contextlib.contextmanager
def gluster_volume(tmp: Path, bricks: int, bps: int, size_mib: int = 512) -> Iterator[Volume]:
    """A distributed volume of `bricks` bricks, each disk limited to `bps` bytes/s for reads
    and for writes, mounted through the FUSE client; yields it, then takes everything down."""
    root = tmp / f"gluster-{uuid.uuid4().hex[:8]}"
    root.mkdir()
    # The disks' backing files in RAM, so the throttles are the only limits: on the
    # machine's shared disk one synchronous stream wrote 16.8 MiB/s unthrottled
    with small_tmpfs(root, bricks * size_mib + 16) as images:
        parts = _Parts(root, images, BLKIO / f"aiio-gluster-{uuid.uuid4().hex[:8]}", [], [])
        parts.cgroup.mkdir()
        try:
            folders = [_brick(parts, i, size_mib, bps) for i in range(bricks)]
            _port_free()
            _start_glusterd(parts)
            name = f"lab{uuid.uuid4().hex[:8]}"
            _create(parts, name, folders)
            mount = _mount(parts, name)
            yield Volume(name, mount, tuple(folders), bps, parts.cgroup, tuple(parts.devices))
        finally:
            _teardown(parts)


def _teardown(parts: _Parts) -> None:
    """Undo what was made, last first; each step runs whatever the one before did."""
    if parts.client is not None:
        _unmount(parts.client)
    _end_client(parts.root / "client.pid")
    sockets = brick_sockets(parts.cgroup)
    end_members(parts.cgroup, grace_s=1.0)  # glusterd and its brick daemons
    for path in sockets:  # glusterd puts them in /var/run/gluster whatever its run folder
        with contextlib.suppress(OSError):
            path.unlink()
    shutil.rmtree(command_socket(parts.root).parent, ignore_errors=True)
    for mount in reversed(parts.brick_mounts):
        _unmount(mount)
    for device in reversed(parts.devices):
        _detach(device)
    if parts.cgroup.exists():
        with contextlib.suppress(OSError):
            parts.cgroup.rmdir()


GONE_S = 10.0  # how long a busy mount or loop device gets to let go


def _unmount(path: Path) -> None:
    """Unmount, trying again while it is busy (a killed brick daemon's files close a moment
    after it leaves its cgroup), lazily at last."""
    deadline = time.monotonic() + GONE_S / 2
    while _mounted(path):
        if not subprocess.run(["umount", str(path)], capture_output=True).returncode:
            return
        if time.monotonic() > deadline:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)
            return
        time.sleep(0.1)


def _detach(device: str) -> None:
    """Detach the loop device and wait until it has let go of its image: one still held by
    a lazily unmounted filesystem goes when that lets go of it."""
    subprocess.run(["losetup", "-d", device], capture_output=True)
    backing = Path("/sys/block", Path(device).name, "loop", "backing_file")
    deadline = time.monotonic() + GONE_S
    while backing.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def brick_sockets(cgroup: Path) -> list[Path]:
    """The unix sockets the cgroup's brick daemons were told to make (`-S PATH`)."""
    found = []
    with contextlib.suppress(OSError):
        for pid in (cgroup / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
                found += [Path(argv[i + 1]) for i, arg in enumerate(argv[:-1]) if arg == "-S"]
    return found


def _end_client(pidfile: Path) -> None:
    """The FUSE client's daemon (outside the cgroup) is gone: it leaves when its mount goes,
    but not one that never mounted, or whose mount was only detached."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(pidfile.read_text().split()[0])
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and _is_client(pid):
            os.kill(pid, signal.SIGTERM if time.monotonic() < deadline - 8 else signal.SIGKILL)
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)


def _is_client(pid: int) -> bool:
    """The pid is still the client's (not a number used again since)."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/comm").read_text().strip() == "glusterfs"
    return False

