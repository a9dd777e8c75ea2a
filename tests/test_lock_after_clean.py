"""A run that waited on a dataset's (or the weights') lock while `aiio clean` removed the folder.

Clean holds every dataset's and weights' lock alone while it removes TARGET/aiio, lock files
included. A run that opened such a lock file meanwhile got its lock once clean let go, on a
file no longer there: it then generated the dataset holding nothing anyone else could see, and
a second run, making a new lock file, generated the same dataset beside it (the race the lock
is there to prevent). A lock taken on a removed file is taken again on the file at its path.
Real files, real flock; nothing timed."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from aiio.storage.locks import FolderLock
from aiio.storage.target import Target


@pytest.mark.parametrize("folder", ["datasets", "models"])
def test_a_lock_waited_for_through_a_clean_is_on_the_file_at_its_path(tmp_path: Path,
                                                                     folder: str) -> None:
    target = Target(tmp_path)
    path = target.root / folder / ".w.lock"
    target.lock(folder, "w", "w")  # the folder and its lock file, as an earlier run left them
    cleaner = FolderLock(path, "w")
    assert cleaner.try_exclusive()  # as `aiio clean` holds it while it removes the folder
    waited = threading.Event()
    run = Target(tmp_path)
    lock = run.lock(folder, "w", "w")
    waiter = threading.Thread(target=lock.shared, args=(lambda _line: waited.set(),))
    waiter.start()
    assert waited.wait(60), "the run never waited for the clean"
    shutil.rmtree(target.root)  # what clean removes, lock files with it
    cleaner.close()
    waiter.join(60)
    assert not waiter.is_alive()
    assert lock.still_there(), "the run holds a lock on a file clean removed"
    other = FolderLock(path, "w")  # a second run's, or a later clean's
    assert not other.try_exclusive(), "another run could take the lock alone meanwhile"
    other.close()
    lock.close()
