"""Take the free blocks of the interpreter's small-object pools before clients are forked.

A forked client's new small objects go first to the free blocks of the pools the parent has in
use. Those blocks lie on pages the client shares with the parent (and its siblings), so each
one filled copies a whole 4 KiB page into the client for one object of 16 to 512 bytes. Taken
in the parent before the forks, the free blocks leave a client's new objects to pools of its
own, packed in pages that hold nothing else. The parent gives them back once every client is
forked (its own pages: the clients are not touched).
"""

from __future__ import annotations

import array
import ctypes
import os
import re
import sys
import tempfile

# One row of sys._debugmallocstats(): class, size, num pools, blocks in use, avail blocks
_ROW = re.compile(r"^\s*\d+\s+(\d+)\s+\d+\s+\d+\s+(\d+)\s*$", re.M)

_MALLOC = ctypes.pythonapi.PyObject_Malloc
_MALLOC.restype = ctypes.c_void_p
_MALLOC.argtypes = [ctypes.c_size_t]
_FREE = ctypes.pythonapi.PyObject_Free
_FREE.restype = None
_FREE.argtypes = [ctypes.c_void_p]


def free_blocks() -> list[tuple[int, int]]:
    """(block size, free blocks in the pools in use) per size class; [] without pymalloc, or
    without a stderr to borrow (started with it closed)."""
    if sys.stderr is not None:
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # fd 2 closed: the temporary file below could land on it
        return []
    try:
        text = _stats_through(saved)
    except OSError:  # no temporary file to be had: the fill is only a saving
        return []
    finally:
        os.close(saved)
    return [(int(size), int(free)) for size, free in _ROW.findall(text)]


def _stats_through(stderr: int) -> str:
    """sys._debugmallocstats()'s text, caught in a temporary file; fd 2 is `stderr` again
    after."""
    with tempfile.TemporaryFile() as fh:
        # The statistics go to the C-level stderr only.
        os.dup2(fh.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(stderr, 2)
        fh.seek(0)
        return fh.read().decode(errors="replace")


def take_free_blocks() -> array.array:
    """Allocate every free block of the pools in use; the addresses, for `give_back`.

    The addresses are kept in an array, not a list: a list's integers would be new small
    objects themselves, filling blocks as they are taken."""
    held = array.array("Q")
    for size, free in free_blocks():
        for _ in range(free):
            held.append(_MALLOC(size))
    return held


def give_back(held: array.array) -> None:
    """Free the blocks `take_free_blocks` took."""
    for block in held:
        _FREE(block)
    del held[:]
