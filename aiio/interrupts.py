"""A signal's exception that a finalizer swallowed, raised again where the main thread waits.

Python runs a signal's handler in the main thread between two bytecodes, wherever it is. When
that is inside a finalizer (an object's `__del__`, `close` of an HTTP response the garbage
collector frees, a weakref callback), the handler's KeyboardInterrupt or StopSignal is
printed as "Exception ignored" and dropped: the signal is lost and the command goes on. A
Ctrl-C during a ten-million-object upload was dropped so, and the upload went on. Here the
dropped exception is kept and raised again at the next `pending()` check, which the waits
of aiio.phases.threads make every WAKE_S."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiio.errors import Terminated

# The exception kept and the process it was kept in: a client forked meanwhile got no signal
_dropped: tuple[int, BaseException] | None = None
_previous: Any = sys.unraisablehook  # the hook install() replaced, which still sees each one


def _hook(unraisable: Any) -> None:
    global _dropped
    exc = unraisable.exc_value
    if (isinstance(exc, KeyboardInterrupt | Terminated)
            and threading.current_thread() is threading.main_thread()):
        _dropped = (os.getpid(), exc)
    _previous(unraisable)


def install() -> None:
    """Keep the signal exceptions finalizers swallow (once per process, at the command's start;
    again does nothing). The hook in place is still called for every one."""
    global _previous
    if sys.unraisablehook is not _hook:
        _previous = sys.unraisablehook
        sys.unraisablehook = _hook


def pending() -> None:
    """Raise again a signal's exception a finalizer swallowed, if one did (main thread only)."""
    global _dropped
    if _dropped is not None and threading.current_thread() is threading.main_thread():
        (pid, exc), _dropped = _dropped, None
        if pid == os.getpid():
            raise exc


@contextmanager
def held(note: Callable[[str], None], doing: str) -> Iterator[list[int]]:
    """Ctrl-C held while a run saves how it ended and removes its files (`doing`): people
    press it again when a run does not end at once, and the second one cut the removal short
    (a checkpoint's files stayed) and lost the line naming the saved result. Each Ctrl-C
    meanwhile is counted in the list yielded, the first said through `note`; SIGTERM and
    SIGKILL still end the process. The handler before comes back after (main thread only:
    elsewhere nothing is held)."""
    heard: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield heard
        return

    def handler(signum: int, frame: object) -> None:
        if not heard:
            note(f"Ctrl-C: {doing} first (SIGKILL leaves them for the next run here)")
        heard.append(signum)
    before = signal.signal(signal.SIGINT, handler)
    try:
        yield heard
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.default_int_handler)
