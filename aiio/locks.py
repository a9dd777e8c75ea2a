"""A lock that concurrent aiio processes take on one of aiio's folders: flock(2) on a lock file.

Shared while a process reads the folder, exclusive while it writes or removes it. The lock
file is never removed while aiio may use it (a process that opened the old file and one that
made a new one would both think they hold the lock): it lives in aiio's own folder and goes
with `aiio clean`. A lock is held until it is closed or its process ends, whatever ends it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import weakref
from collections.abc import Callable
from pathlib import Path

# flock fails so on a filesystem that has no locks: an NFS mount with `nolock` or without a
# lock manager (ENOLCK), some FUSE and network filesystems (EOPNOTSUPP, ENOSYS).
NO_LOCKS = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS}
Note = Callable[[str], None]


class FolderLock:
    """flock on `path`; `what` names the folder in the lines it says while it waits."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        self.mode: int | None = None  # fcntl.LOCK_SH or LOCK_EX while held
        self.unlockable = False  # the filesystem has no locks: said once, then none taken
        self._fd: int | None = None
        self._closer: weakref.finalize | None = None

    def shared(self, note: Note) -> None:
        """Hold it shared: waits (saying so once) while another process holds it alone."""
        self._take(fcntl.LOCK_SH, note, f"waiting for another aiio run that is generating "
                                        f"{self.what} to finish it ...")

    def exclusive(self, note: Note) -> None:
        """Hold it alone: waits (saying so once) while any other process holds it. From
        shared, the shared lock is given up first (flock converts so): whatever was read
        under it must be read again."""
        self._take(fcntl.LOCK_EX, note, f"waiting for another aiio run using {self.what} to "
                                        "end before generating it ...")

    def try_exclusive(self) -> bool:
        """Hold it alone if no other process holds it, without waiting; True also where the
        filesystem has no locks (nothing can be told there)."""
        try:
            fcntl.flock(self._open(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as exc:
            if exc.errno not in NO_LOCKS:
                raise
            return True
        self.mode = fcntl.LOCK_EX
        return True

    def close(self) -> None:
        """Let it go (also from forked children: the lock ends with its last holder)."""
        if self._closer is not None:
            self._closer()
        self._fd, self._closer, self.mode = None, None, None

    def _take(self, how: int, note: Note, waiting: str) -> None:
        if self.mode == how or self.unlockable:
            return
        fd = self._open()
        try:
            try:
                fcntl.flock(fd, how | fcntl.LOCK_NB)
            except BlockingIOError:
                note(waiting)
                self.mode = None  # a conversion that cannot be made at once drops the lock
                fcntl.flock(fd, how)  # until the other lets go; a Ctrl-C ends the wait
        except OSError as exc:
            if exc.errno not in NO_LOCKS:
                raise
            self.unlockable = True
            note(f"warning: cannot lock {self.what} ({self.path}: {exc.strerror}); the "
                 "filesystem has no locks, so another aiio run on it at the same time could "
                 "corrupt it: run one at a time")
            return
        self.mode = how

    def _open(self) -> int:
        if self._fd is None:
            # Read and write: on NFS, flock is a byte-range lock, and an exclusive one needs
            # a file open for writing.
            # a file planted as a symlink is refused, never followed out of aiio's folder
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                               0o644)
            self._closer = weakref.finalize(self, os.close, self._fd)
        return self._fd
