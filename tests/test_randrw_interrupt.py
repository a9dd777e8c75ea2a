"""Ctrl-C while randrw writes its files (before any client starts): one line, exit 130, and
the files it had written are removed. It was a BufferError traceback (the writers' buffers
closed under threads still writing), exit 1, and the files stayed on the target."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .conftest import REPO


def test_ctrl_c_while_writing_the_files_leaves_nothing(target: Path, results: Path) -> None:
    cmd = [sys.executable, "-m", "aiio", "run", "--phase", "randrw", "--target", str(target),
           "--results", str(results), "--clients", "4", "--set", "prep.file_size=1GiB",
           "--duration", "60s", "--quiet", "--no-report", "--no-history"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        prep = target / "aiio" / "prep"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(prep.glob("*/randrw-*.bin")):
            time.sleep(0.02)
        assert any(prep.glob("*/randrw-*.bin")), "the files were never written"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not list(prep.glob("*/*")), "randrw files left on the target"
