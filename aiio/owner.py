"""Which process writes a result while it runs, and whether that process is gone.

A result is saved as "running" when it starts and rewritten when it ends; a process killed
outright (SIGKILL, a power cut) never rewrites it. The mark names the process (pid, host, the
kernel's boot id, and the process's start time, so a reused pid is not taken for it), and a
later reader on the same host can tell the writer has ended.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

import psutil

BOOT_ID = "/proc/sys/kernel/random/boot_id"


def boot_id() -> str | None:
    """This boot of the kernel (a new one after every restart); None where there is none."""
    try:
        with open(BOOT_ID) as f:
            return f.read().strip() or None
    except OSError:
        return None


def mark() -> dict[str, Any]:
    """This process, as a result records its writer."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "boot_id": boot_id(),
            "process_started": psutil.Process().create_time()}


def gone(writer: Any) -> str | None:
    """Why the writer process is certainly gone, or None when it may be alive (it lives, or
    it is on another host, or the mark is missing or damaged)."""
    if not isinstance(writer, Mapping) or writer.get("host") != socket.gethostname():
        return None
    pid, started, boot = writer.get("pid"), writer.get("process_started"), writer.get("boot_id")
    if boot and boot_id() and boot != boot_id():
        return f"host {writer['host']} restarted since pid {pid} wrote it"
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        now_started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return f"pid {pid} on host {writer['host']} has ended"
    except psutil.Error:
        return None  # cannot look: assume it lives
    if isinstance(started, int | float) and abs(now_started - started) > 0.5:
        return f"pid {pid} on host {writer['host']} has ended (the pid is another process's now)"
    return None
