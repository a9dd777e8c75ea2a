"""Running aiio with a pseudo-terminal on its output, as a person at a shell sees it."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path


def run_on_terminal(args: tuple[str, ...], cwd: Path, stdout: Path | None = None,
                    **env: str) -> tuple[str, int]:
    """Run `python -m aiio ARGS` with stderr (and stdout, unless a file is given) on a pty;
    returns what the pty showed and the exit code."""
    leader, follower = pty.openpty()
    full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    full.update({"COLUMNS": "80", "TERM": "xterm-256color", **env})
    # a file, not a pipe, when stdout is kept apart: --json output outgrows a pipe's buffer
    out = stdout.open("wb") if stdout else None
    proc = subprocess.Popen([sys.executable, "-m", "aiio", *args], stdout=out or follower,
                            stderr=follower, env=full, cwd=cwd)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the pty closes when the process and its children have exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    code = proc.wait(timeout=120)
    if out:
        out.close()
    return b"".join(chunks).decode(errors="replace"), code
