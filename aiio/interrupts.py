"""A signal's exception that a finalizer swallowed, raised again where the main thread waits.

Python runs a signal's handler in the main thread between two bytecodes, wherever it is. When
that is inside a finalizer (an object's `__del__`, `close` of an HTTP response the garbage
collector frees, a weakref callback), the handler's KeyboardInterrupt or StopSignal is
printed as "Exception ignored" and dropped: the signal is lost and the command goes on. A
Ctrl-C during a ten-million-object upload was dropped so, and the upload went on. Here the
dropped exception is kept and raised again at the next `pending()` check, which the waits
of aiio.phases.threads make every WAKE_S."""

from __future__ import annotations

import sys
import threading
from typing import Any

from aiio.errors import Terminated

_dropped: BaseException | None = None
_default_hook = sys.unraisablehook


def _hook(unraisable: Any) -> None:
    global _dropped
    exc = unraisable.exc_value
    if (isinstance(exc, KeyboardInterrupt | Terminated)
            and threading.current_thread() is threading.main_thread()):
        _dropped = exc
    _default_hook(unraisable)


def install() -> None:
    """Keep the signal exceptions finalizers swallow (once per process, at the command's start)."""
    sys.unraisablehook = _hook


def pending() -> None:
    """Raise again a signal's exception a finalizer swallowed, if one did (main thread only)."""
    global _dropped
    if _dropped is not None and threading.current_thread() is threading.main_thread():
        exc, _dropped = _dropped, None
        raise exc
