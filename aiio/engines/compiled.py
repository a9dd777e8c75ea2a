"""The compiled read loop: small random reads timed call by call without the interpreter.

`Reader.read_blocks` (and the random mix's runs of reads) spend about 0.5 us of CPython per
4 KiB read on top of the kernel's 1.2 us (docs/PERFORMANCE.md, "Per call"): more than fio's
whole psync read leaves room for. This loop makes the same calls from machine code compiled
by numba (the optional `fast` extra): per call one CLOCK_MONOTONIC reading (`time.monotonic_ns`'s
clock), `pread` into the reader's buffer, another reading, the bytes it returned; a failed
call stops it with its errno. Its readings go to the same `OpLog.add_many` batch the Python
loop's go to, so a call's time means what it meant.

numba is imported (about 0.35 s of CPU) and the loop compiled (about 0.5 s) only by `load()`:
a run calls it in the parent before its clients are forked, and they inherit the machine code.
Nothing else imports numba (aiio's start-up time matters: a process that never reads through
the loop never pays for it); where it is missing, `load()` returns None and `why()` says so.
"""

from __future__ import annotations

import ctypes
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

CLOCK_MONOTONIC = 1  # Linux's number for the clock time.monotonic_ns reads
INSTALL = "pip install 'aiio[fast]'"
MISSING = f"numba is not installed: {INSTALL}"
T = TypeVar("T")


@dataclass(frozen=True)
class Loop:
    """The compiled loop and what a result calls it ("compiled (numba 0.68.1)").

    `run(fd, address, size, offsets, starts, ends, got, until_ns)` reads `size` bytes at
    each offset into the buffer at `address`, filling each call's start and end reading and
    what it returned (minus its errno when it failed); it returns how many calls it made,
    stopping after a failed call or after the first call that ends at or past `until_ns`.
    """

    run: Callable[..., int]
    label: str


_loop: Loop | None = None
_why: str | None = None  # why load() found no loop


def unavailable() -> str | None:
    """Why the loop cannot be had here (one line), or None when numba is installed; imports
    nothing."""
    return MISSING if importlib.util.find_spec("numba") is None else None


def load() -> Loop | None:
    """The loop, compiled on the first call in this process (or in the parent before the
    fork); None when it cannot be had, and `why()` says why."""
    global _loop, _why
    if _loop is None and _why is None:
        _loop, _why = build_once(_build)
    return _loop


def build_once(build: Callable[[], T]) -> tuple[T | None, str | None]:
    """What `build` compiles, or None and why it could not (one line): numba missing, not
    importable here, or refusing the code."""
    try:
        return build(), None
    except ModuleNotFoundError as exc:
        return None, MISSING if exc.name in ("numba", "llvmlite") else f"numba: {exc}"
    except ImportError as exc:  # installed, but not for this numpy or Python
        return None, f"numba could not be imported: {exc}"
    except Exception as exc:  # numba or LLVM refused: say so, do not crash the run
        return None, f"numba could not compile the read loop: {exc}"


def loaded() -> Loop | None:
    """The loop if `load()` has compiled it in this process or before its fork; never
    imports or compiles."""
    return _loop


def why() -> str:
    """Why there is no loop: numba missing, its failure, or that none was asked for."""
    return _why or "not compiled before the clients started"


def _build() -> Loop:
    """Import numba, bind libc's calls and compile the loop for its one signature."""
    import numba
    import numpy as np

    libc = ctypes.CDLL(None)
    pread = libc.pread
    pread.restype = ctypes.c_ssize_t
    pread.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long]
    clock = libc.clock_gettime
    clock.restype = ctypes.c_int
    clock.argtypes = [ctypes.c_int, ctypes.c_void_p]
    errno_at = libc.__errno_location  # this thread's errno, read right after the failed call
    errno_at.restype = ctypes.POINTER(ctypes.c_int)
    errno_at.argtypes = []
    mono = CLOCK_MONOTONIC

    sig = "int64(int64, uintp, int64, int64[::1], int64[::1], int64[::1], int64[::1], int64)"

    @numba.njit(sig, nogil=True, cache=False)
    def run(fd, address, size, offsets, starts, ends, got, until_ns):  # pragma: no cover
        ts = np.empty(2, np.int64)  # struct timespec: seconds, nanoseconds
        at = ts.ctypes.data
        for i in range(offsets.shape[0]):
            clock(mono, at)
            starts[i] = ts[0] * 1000000000 + ts[1]
            n = pread(fd, address, size, offsets[i])
            clock(mono, at)
            ends[i] = ts[0] * 1000000000 + ts[1]
            if n < 0:
                got[i] = -errno_at()[0]
                return i + 1
            got[i] = n
            if ends[i] >= until_ns:
                return i + 1
        return offsets.shape[0]

    # One call here, of no read: numba's first call in a process fills caches and makes
    # objects. Made in the parent, that lands in pages the clients share; made in each
    # client, it cost each about 6 MiB of its own (a client of the random mix held 11.0 MiB
    # instead of 4.3; docs/PERFORMANCE.md, "The compiled loop").
    none = np.empty(0, np.int64)
    run(-1, 0, 0, none, none, none, none, 0)
    return Loop(run, f"compiled (numba {numba.__version__})")
