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
from collections.abc import Iterator
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


def say(message: str) -> None:
    """A line on stderr, as the command's own lines are."""
    print(f"aiio: {message}", file=sys.stderr, flush=True)


@contextmanager
def held(doing: str, then: str = "") -> Iterator[None]:
    """Ctrl-C held while aiio is `doing` what must not be cut short (collecting what the
    clients measured, saving a result, removing a run's files): people press it again when a
    run does not stop at once, and the second one cut the removal short (a checkpoint's files
    stayed), lost the clients' figures or the line naming the saved result. The first held is
    said on stderr (`say`: a plain line, as a console may be mid-print when it comes).
    Held while nothing else was ending the command (the block did not raise), one is kept to
    be raised at the next `pending()` (the next run of a table, the command's end), so what
    was done is kept and what was to come is stopped; its words are `then` (where what was
    done is saved), else none. SIGTERM and SIGKILL are not held. The handler before comes
    back after (main thread only: elsewhere nothing is held)."""
    global _dropped
    heard: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        first = not heard
        heard.append(signum)  # counted before anything that could fail
        if first:
            try:  # a handler never raises: it would land in the removal it protects
                say(f"Ctrl-C: {doing} first (SIGKILL leaves its files for the next run "
                     "here)")
            except Exception:  # noqa: BLE001 - e.g. a console mid-import when it came
                pass
    before = signal.signal(signal.SIGINT, handler)
    raised = True  # the block's own exception already ends the command
    try:
        yield
        raised = False
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.default_int_handler)
        if heard and not raised:
            _dropped = (os.getpid(), KeyboardInterrupt(*([then] if then else [])))
