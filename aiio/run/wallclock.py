"""Wall-clock timestamps that label results; nothing is ever measured with them (the engine
measures on the monotonic clock)."""

from __future__ import annotations

import time


def now_iso() -> str:
    """This instant in local time with its UTC offset, e.g. 2026-11-30T23:05:00+0000."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def now_stamp() -> str:
    """This instant in local time as a folder name's stamp, e.g. 20261130-230500."""
    return time.strftime("%Y%m%d-%H%M%S")


def now_unix() -> float:
    """This instant as Unix time: orders saved results (never a duration)."""
    return time.time()
