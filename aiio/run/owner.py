"""Which process writes a result while it runs, and whether that process is gone.

A result is saved as "running" when it starts and rewritten when it ends; a process killed
outright (SIGKILL, a power cut) never rewrites it. The mark names the process (pid, host, the
kernel's boot id, the process's start time, so a reused pid is not taken for it, and its pid
namespace), and a later reader on the same host can tell the writer has ended. A writer in
another pid namespace (a container on the same host, whose hostname may be the host's) is out
of sight: its pid means another process here, or none.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

import psutil

BOOT_ID = "/proc/sys/kernel/random/boot_id"
PID_NS = "/proc/self/ns/pid"


def boot_id() -> str | None:
    """This boot of the kernel (a new one after every restart); None where there is none."""
    try:
        with open(BOOT_ID) as f:
            return f.read().strip() or None
    except OSError:
        return None


def pid_namespace() -> str | None:
    """This process's pid namespace, e.g. 'pid:[4026531836]'; None where it cannot be read."""
    try:
        return os.readlink(PID_NS)
    except OSError:
        return None


def mark() -> dict[str, Any]:
    """This process, as a result records its writer."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "boot_id": boot_id(),
            "process_started": psutil.Process().create_time(), "pid_ns": pid_namespace()}


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
    namespace = writer.get("pid_ns")  # absent from the marks of older versions
    if namespace is not None and namespace != pid_namespace():
        return None  # its pid cannot be looked up from here
    try:
        process = psutil.Process(pid)
        now_started = process.create_time()
        # exited but not yet reaped (a killed MPI rank until its launcher waits for it); a
        # first thread that ended while others run shows as a zombie too, the process alive
        ended = process.status() == psutil.STATUS_ZOMBIE and process.num_threads() <= 1
    except psutil.NoSuchProcess:
        ended = True
    except psutil.Error:
        return None  # cannot look: assume it lives
    if ended:
        return f"pid {pid} on host {writer['host']} has ended"
    if isinstance(started, int | float) and abs(now_started - started) > 0.5:
        return f"pid {pid} on host {writer['host']} has ended (the pid is another process's now)"
    return None
