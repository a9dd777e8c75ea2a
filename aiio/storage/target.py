"""The target directory: owning TARGET/aiio, free-space checks, probing, and safe cleanup.

aiio writes only below TARGET/aiio/, and only after that folder carries aiio's marker file.
Cleanup refuses any folder without the marker and never follows a symlink.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import mmap
import os
import shutil
import socket
import stat
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from aiio import __version__
from aiio.errors import CleanFailed, SpaceError, TargetError
from aiio.run import owner
from aiio.run.ranks import THIS_HOST, Ranks
from aiio.storage.locks import FolderLock, Note
from aiio.units import format_size

OWN_DIR = "aiio"
MARKER = ".aiio-owned"
RUN_MARK = ".aiio-run"  # in a run's scratch folder: which process writes it (aiio.run.owner)
# Beside the marker: every run holds it shared from its first write below TARGET/aiio to its
# end, and `aiio clean` takes it alone or refuses (aiio.storage.locks)
RUN_LOCK = ".runs.lock"
MEMORY_FS = {"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"}
NETWORK_FS = {"nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "ceph", "fuse.glusterfs",
              "glusterfs", "9p", "fuse.sshfs", "wekafs", "fuse.weka", "pvfs2", "orangefs"}
# Headroom kept free on the target beyond what a run needs, so aiio never fills a shared disk.
SPACE_MARGIN = 0.02
LATE_FILE_S = 5.0  # a network filesystem may show a file another host made this late


@dataclass(frozen=True)
class TargetInfo:
    """What aiio learned about the target; saved in every result."""

    path: str
    fstype: str
    mountpoint: str
    device: str
    memory_backed: bool
    network: bool
    o_direct: bool
    direct_align: int
    total_bytes: int
    free_bytes: int
    # The local block device whose counters see the target's I/O ("" when there is none:
    # FUSE, ZFS, network and overlay filesystems): only then can a run confirm its bytes.
    confirm_device: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


class Target:
    """A directory under test; aiio's own data lives in `root` = TARGET/aiio."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path).absolute()
        self.root = self.path / OWN_DIR
        self._fd: int | None = None  # the directory a run started on, held open (pin)
        self._locks: dict[Path, FolderLock] = {}  # held until release (aiio.storage.locks)
        self.note: Note = _silent  # where the run lock's wait and warning are said
        self._kept = False  # held across several runs (`kept`): their ends let go of nothing
        # this run has written (`hold`); a kept target's lock says so of an earlier run too
        self._wrote = False
        self._claimed = False  # this object made TARGET/aiio (`claim`); `unclaim` undoes it

    # --- identity ----------------------------------------------------------------------
    def pin(self) -> None:
        """Hold the target directory open for the run: its identity (device, inode) to check
        against at the end, and a handle that still reaches it if the path stops leading
        there (a lazy unmount detaches a mount that open handles keep alive)."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)

    @contextlib.contextmanager
    def kept(self) -> Iterator[Target]:
        """Hold this target across several runs (a sweep's points): each run's end lets go
        of nothing, so its run lock and its dataset's lock stay taken between them (no
        `aiio clean`, no regeneration in a gap), and all goes when the last has ended."""
        self._kept = True
        try:
            yield self
        finally:
            self._kept = False
            self.release()

    def release(self) -> None:
        """Let go of the pinned directory and of every lock taken through `lock` (not while
        `kept`); never fails (the kernel frees a descriptor whatever its close says, e.g.
        ENOTCONN on a FUSE mount whose daemon is gone)."""
        self._wrote = False  # a run's end: the next run on a kept target has written nothing
        if self._kept:
            return
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        for held in self._locks.values():
            held.close()
        self._locks.clear()

    def lock(self, folder: str, name: str, what: str) -> FolderLock:
        """The lock on TARGET/aiio/<folder>/<name>, whose file .<name>.lock sits beside it
        (made inside aiio's marked folder), held until `release`: one per name, so a run that
        asks again (the stages of the lifecycle) holds the one it has instead of waiting on
        itself."""
        path = self._folder(folder) / f".{name}.lock"  # no write of the run's yet: no hold
        if path not in self._locks:
            self._locks[path] = FolderLock(path, what, _folder_maker(self, folder))
        return self._locks[path]

    def hold(self) -> None:
        """Hold the target's run lock shared until `release`, so that `aiio clean` refuses
        while this process (and the clients it forks) use the target. Taken on the run's
        first write below TARGET/aiio (`subdir`, `make_run_folder`; the readers of a dataset
        or of weights hold their lock): bad input, refused before any, leaves nothing but the
        marker (which `unclaim` takes back), and a run that holds it has written
        (`written`). Held already, it is not taken again; a clean that removed aiio's folder
        while this waited is the lock's to see (`FolderLock`: the folder made again, the new
        file taken)."""
        self._run_lock().shared(self.note, f"waiting for aiio clean to finish removing "
                                           f"{self.root} ...")
        self._wrote = True

    @property
    def written(self) -> bool:
        """Whether this run has written below TARGET/aiio (it holds the run lock, or would
        where none can be taken): from then on a failure leaves something to account for.
        Not a run before it on a kept target (a sweep's earlier point), whose lock stays taken."""
        lock = self._locks.get(self.root / RUN_LOCK)
        return self._wrote and lock is not None and (lock.mode is not None or lock.unlockable)

    def _run_lock(self) -> FolderLock:
        path = self.claim() / RUN_LOCK
        if path not in self._locks:
            self._locks[path] = FolderLock(path, f"the target {self.path}", _folder_maker(self))
        return self._locks[path]

    def changed(self) -> str | None:
        """Why the path no longer leads to the directory pinned at the start, else None."""
        if self._fd is None:
            return None
        was = os.fstat(self._fd)
        try:
            now = os.stat(self.path)
        except OSError as exc:
            return f"target {self.path} changed under the run: it is gone ({exc.strerror})"
        if (now.st_dev, now.st_ino) == (was.st_dev, was.st_ino):
            return None
        how = "another filesystem (unmounted or mounted over)" if now.st_dev != was.st_dev \
            else "another directory (moved or replaced)"
        return (f"target {self.path} changed under the run: the path now leads to {how}, "
                f"device {_dev(now.st_dev)} where the run started on {_dev(was.st_dev)}; "
                "its figures are not that target's")

    def remove(self, path: Path) -> None:
        """remove_tree through the directory the run started on, when pinned: the run's files
        go from where they were written even if the path now leads elsewhere."""
        if self._fd is None:
            remove_tree(path, self.root)
            return
        if not inside(path, self.root):
            raise TargetError(f"refusing to delete {path}: outside aiio's folder {self.root}")
        rel = os.path.relpath(os.path.abspath(path), self.path)
        try:
            st = os.lstat(rel, dir_fd=self._fd)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(rel, dir_fd=self._fd)  # the fd-based walk never follows a symlink
        else:
            os.unlink(rel, dir_fd=self._fd)

    def remove_if_empty(self, path: Path) -> None:
        """Remove an empty folder inside aiio's root (through the pinned directory)."""
        if not inside(path, self.root):
            return
        rel = os.path.relpath(os.path.abspath(path), self.path)
        try:
            os.rmdir(rel if self._fd is not None else path, dir_fd=self._fd)
        except OSError:
            pass  # other runs' folders are still there

    # --- ownership ---------------------------------------------------------------------
    def check_usable(self) -> None:
        """The target must exist, be a directory and be writable."""
        if not self.path.exists():
            raise TargetError(f"target {self.path} does not exist; create it or pass --target DIR")
        if not self.path.is_dir():
            raise TargetError(f"target {self.path} is not a directory")
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise TargetError(f"target {self.path} is not writable by this user")

    def is_owned(self) -> bool:
        return self.root.is_dir() and not self.root.is_symlink() and (self.root / MARKER).is_file()

    def claim(self) -> Path:
        """Create TARGET/aiio with its marker, or confirm it is ours; refuse a foreign folder."""
        self.check_usable()
        if self.root.is_symlink():
            raise TargetError(f"{self.root} is a symlink; aiio will not write through it")
        if self.root.exists() and not self.is_owned():
            raise TargetError(f"{self.root} exists but was not created by aiio (no {MARKER}); "
                              "move it away or choose another --target")
        if not self.root.exists():
            try:
                self.root.mkdir()
                marker = {"tool": "aiio", "version": __version__, "host": socket.gethostname(),
                          "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
                (self.root / MARKER).write_text(json.dumps(marker) + "\n")
            except OSError as exc:
                raise TargetError(f"cannot create {self.root}: {exc.strerror}") from exc
            self._claimed = True
        return self.root

    def unclaim(self) -> None:
        """Remove TARGET/aiio again when this object made it and a refused run left nothing
        in it but the marker: bad input leaves the target as aiio found it. Never while kept
        (a sweep's later points) or once anything else is there; under the run lock held
        alone, as `clean` removes it, so a run that claimed the folder meanwhile keeps it.
        Never fails: at worst the marked folder stays, for `aiio clean`."""
        if not self._claimed or self._kept:
            return
        self._claimed = False
        runs = FolderLock(self.root / RUN_LOCK, "the target")
        try:
            alone = runs.try_exclusive()
            if alone and {p.name for p in self.root.iterdir()} <= {MARKER, RUN_LOCK}:
                runs.close()
                (self.root / RUN_LOCK).unlink(missing_ok=True)
                _remove_marked(self.root, self.root / MARKER)
        except OSError:
            pass  # a file came, or the folder will not go: it stays marked
        finally:
            runs.close()

    def subdir(self, *parts: str) -> Path:
        """A folder inside aiio's own root (created), under the run lock (`hold`)."""
        self.hold()
        return self._folder(*parts)

    def _folder(self, *parts: str) -> Path:
        path = self.claim().joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    # --- a run's scratch folders ------------------------------------------------------
    def make_run_folder(self, path: Path) -> None:
        """Create a run's scratch folder, marked with the process that writes it: a run killed
        outright cannot remove its files, and the mark lets a later run tell they are left."""
        self.subdir(os.path.relpath(path.parent, self.root))
        path.mkdir()
        (path / RUN_MARK).write_text(json.dumps(owner.mark()) + "\n")

    def remove_leftovers(self) -> list[str]:
        """Remove the scratch folders (TARGET/aiio/<kind>/<run>) of runs that are certainly
        gone; one line per folder. A folder whose writer may live (on this host, or on any
        other) or that has no readable mark is kept."""
        said = []
        for kind in _subfolders(self.root):
            removed = 0
            for run in _subfolders(kind):
                why = owner.gone(_read_mark(run / RUN_MARK))
                if why is None:
                    continue
                size = tree_bytes(run)
                self.remove(run)
                removed += 1
                said.append(f"removed {run} ({format_size(size)}), left by a run that could "
                            f"not clean up: {why}")
            if removed:  # an empty folder aiio did not just empty is not this check's business
                self.remove_if_empty(kind)
        return said

    # --- space -------------------------------------------------------------------------
    def free_bytes(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def require_space(self, needed: int, what: str) -> None:
        """Refuse before writing when `needed` bytes (plus a margin) do not fit."""
        st = os.statvfs(self.path)
        free = st.f_bavail * st.f_frsize
        margin = int(st.f_blocks * st.f_frsize * SPACE_MARGIN)
        if needed + margin > free:
            raise SpaceError(f"{what} needs {format_size(needed)} but {self.path} has "
                             f"{format_size(free)} free (keeping {format_size(margin)} spare); "
                             "free space, shrink the workload, or choose another --target")

    # --- cleanup -----------------------------------------------------------------------
    def clean(self) -> int:
        """Remove TARGET/aiio entirely; returns bytes freed. Refuses a folder without marker."""
        if not self.root.exists():
            return 0
        if not self.is_owned():
            raise TargetError(f"refusing to delete {self.root}: it has no {MARKER} marker, "
                              "so aiio did not create it")
        held = self._kept_alone()
        runs = FolderLock(self.root / RUN_LOCK, "the target")
        held.append(runs)
        if not runs.try_exclusive():
            for lock in held:
                lock.close()
            raise TargetError(f"refusing to clean {self.root}: another aiio run is using the "
                              "target; clean once it has ended")
        marker = self.root / MARKER
        try:
            freed = tree_bytes(self.root)
            kept = {lock.path for lock in held} | {marker}
            _remove_all_but(self.root, kept, self.root)
        except OSError as exc:
            raise self._clean_failed(exc) from None
        finally:
            for lock in held:
                lock.close()
        # Only now the lock files, their folders and the marker last: a file removed while
        # open stays on FUSE and NFS, renamed, until it is closed, and its folder with it
        # (a clean that failed so had already removed the marker: no later one would run).
        try:
            for path in kept - {marker}:
                path.unlink(missing_ok=True)
            _remove_all_but(self.root, {marker}, self.root)  # fails with the marker still there
            _remove_marked(self.root, marker)
        except OSError as exc:
            raise self._clean_failed(exc) from None
        return freed

    def _clean_failed(self, exc: OSError) -> CleanFailed:
        """What clean could not remove and why, in one line; the marker stays for the next."""
        what = exc.filename or self.root
        return CleanFailed(f"could not remove {what}: {exc.strerror or exc}; {self.root} keeps "
                           f"aiio's marker, so `aiio clean` can finish once that is fixed")

    def _kept_alone(self) -> list[FolderLock]:
        """The lock of every dataset and set of weights (kept for later runs; their readers
        hold only these), held alone, or a refusal naming the first one another run holds:
        it reads those files or writes them."""
        held: list[FolderLock] = []
        for folder, kind in (("datasets", "dataset"), ("models", "model weights"),
                             ("indexes", "vector index")):
            for path in sorted((self.root / folder).glob(".*.lock")):
                held.append(FolderLock(path, f"{kind} {path.name[1:-len('.lock')]}"))
        for lock in held:
            if not lock.try_exclusive():
                for taken in held:
                    taken.close()
                raise TargetError(f"refusing to clean {self.root}: another aiio run uses "
                                  f"{lock.what} there; clean once it has ended")
        return held


def _remove_marked(root: Path, marker: Path) -> None:
    """Remove the marker, then its folder; the marker is put back when the folder will not
    go (a file appeared in it meanwhile, a file held open on FUSE or NFS stays renamed), so
    that what is left is still aiio's to clean."""
    mark = marker.read_bytes()
    marker.unlink()
    try:
        root.rmdir()
    except OSError:
        marker.write_bytes(mark)
        raise


def _silent(_line: str) -> None:
    """Says nothing (a target opened outside a run)."""


def _subfolders(path: Path) -> list[Path]:
    """The real folders in path (never through a symlink); none when path is not one."""
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []


def _read_mark(path: Path) -> dict | None:
    """A run folder's mark, or None when it has none or it cannot be read."""
    try:
        mark = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return mark if isinstance(mark, dict) else None


def _dev(dev: int) -> str:
    return f"{os.major(dev)}:{os.minor(dev)}"


def check_shared(target: Target, ranks: Ranks = THIS_HOST) -> None:
    """Under MPI: every rank must see the files rank 0 writes in TARGET/aiio (one shared mount
    at one path), or each host would measure, and write to, a different filesystem."""
    if ranks.size == 1:
        return
    token = f"{socket.gethostname()}-{os.getpid()}-{time.time_ns()}"
    path = target.claim() / f".hosts-{token}"
    path.write_text(token)
    try:
        ranks.call_all(_see_token, [(str(path), token, str(target.path))] * ranks.size,
                       bounded=True, own_s=LATE_FILE_S)
    finally:
        path.unlink(missing_ok=True)


def _see_token(args: tuple[str, str, str], report: object = None) -> None:
    path, token, where = args
    deadline = time.monotonic() + LATE_FILE_S
    while True:
        try:
            with open(path) as fh:
                if fh.read() == token:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TargetError(f"does not see the files rank 0 writes in {where}: the target "
                              "must be one shared filesystem mounted at the same path on "
                              "every host")
        time.sleep(0.2)


def inside(path: Path, root: Path) -> bool:
    """True when `path` (not resolved through symlinks) lies under `root`."""
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
    except ValueError:
        return False
    return True


def _remove_all_but(folder: Path, kept: set[Path], root: Path) -> None:
    """Delete what is in `folder` but the files in `kept` (and the folders leading to them)."""
    for entry in folder.iterdir():
        if entry in kept:
            continue
        if any(entry in path.parents for path in kept) and not entry.is_symlink():
            _remove_all_but(entry, kept, root)
        else:
            remove_tree(entry, root)


def remove_tree(path: Path, root: Path) -> None:
    """Delete `path` (a folder or file inside aiio's root) without following symlinks."""
    if not inside(path, root):
        raise TargetError(f"refusing to delete {path}: outside aiio's folder {root}")
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
        return
    if path.exists():
        # rmtree never follows symlinks to directories: it unlinks the link itself.
        errors: list[OSError] = []
        shutil.rmtree(path, **{_RMTREE_HANDLER: functools.partial(_note_error, errors)})
        if errors:
            raise errors[0]


# Python 3.12 passes the exception to `onexc` and deprecates `onerror` (an exc_info triple).
_RMTREE_HANDLER = "onexc" if sys.version_info >= (3, 12) else "onerror"


def _note_error(errors: list[OSError], func: object, path: str,
                exc: BaseException | tuple) -> None:
    """rmtree's error handler: an entry another process removed meanwhile (under MPI, a rank
    removing its own share's files as it ends) is no error; any other is noted and the
    removal goes on (a folder not yet empty must not keep the rest)."""
    err = exc if isinstance(exc, BaseException) else exc[1]
    if not isinstance(err, FileNotFoundError):
        # the walk goes by descriptors: its errors name an entry without its folder
        errors.append(OSError(err.errno, err.strerror, path) if isinstance(err, OSError)
                      else err)


def tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


# --- probing -------------------------------------------------------------------------------

def find_mount(path: Path) -> psutil._common.sdiskpart | None:
    """The mount holding `path`: the longest mount point that prefixes it."""
    best = None
    real = os.path.realpath(path)
    for part in psutil.disk_partitions(all=True):
        mp = part.mountpoint
        if real == mp or real.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) > len(best.mountpoint):
                best = part
    return best


def confirming_device(fstype: str, device: str) -> str:
    """The block device (as named in /proc/diskstats) that sees every byte of this mount, or ''.

    Only a local block filesystem qualifies. FUSE (bindfs, caching clients), ZFS datasets,
    network and overlay mounts have no such device, or one that sees only part of the story,
    so they can serve O_DIRECT reads from a cache nobody can observe.
    """
    if fstype.startswith("fuse.") or fstype == "fuse" or fstype in NETWORK_FS \
            or fstype in MEMORY_FS or not device.startswith("/dev/"):
        return ""
    name = os.path.basename(os.path.realpath(device))
    return name if name in (psutil.disk_io_counters(perdisk=True) or {}) else ""


def probe_direct_io(folder: Path) -> tuple[bool, int]:
    """Can this filesystem do O_DIRECT? Write and read one aligned block to find out.

    Returns (works, alignment); alignment is the smallest length that worked (512 or 4096).
    """
    if not hasattr(os, "O_DIRECT"):
        return False, 0
    probe = folder / f".odirect-probe-{os.getpid()}"
    buf = mmap.mmap(-1, 4096)
    buf.write(os.urandom(4096))
    try:
        try:
            fd = os.open(probe, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o600)
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                return False, 0
            raise TargetError(f"cannot write in {folder}: {exc.strerror}") from exc
        try:
            os.pwrite(fd, buf, 0)
            for align in (512, 4096):
                try:
                    os.preadv(fd, [memoryview(buf)[:align]], 0)
                    return True, align
                except OSError:
                    continue
            return False, 0
        except OSError:
            return False, 0
        finally:
            os.close(fd)
    finally:
        buf.close()
        probe.unlink(missing_ok=True)


def probe(target: Target) -> TargetInfo:
    """Filesystem type, mount, device, memory-backed?, O_DIRECT? and space of the target."""
    root = target.claim()
    part = find_mount(root)
    fstype = part.fstype if part else "unknown"
    works, align = probe_direct_io(root)
    usage = shutil.disk_usage(root)
    return TargetInfo(
        path=str(target.path), fstype=fstype,
        mountpoint=part.mountpoint if part else "", device=part.device if part else "",
        memory_backed=fstype in MEMORY_FS, network=fstype in NETWORK_FS or ":" in (
            part.device if part else ""),
        o_direct=works, direct_align=align, total_bytes=usage.total, free_bytes=usage.free,
        confirm_device=confirming_device(fstype, part.device if part else ""))


def _folder_maker(target: Target, *parts: str) -> Callable[[], object]:
    """Make a folder again under the target's root (the root itself without `parts`, with
    its marker), holding the target weakly: a lock that
    held it strongly made a cycle (target -> lock -> maker -> target), and a Target dropped
    without `release` kept its locks until the cyclic collector ran; the next lock of the
    same folder in the process then waited on itself."""
    ref = weakref.ref(target)

    def make() -> object:
        held = ref()
        return held._folder(*parts) if held is not None else None
    return make
