"""Ctrl-C pressed more than once, as people do when a run does not end at once: the second
cut short the run's ending, so the checkpoint files it was removing stayed on the target and
the line naming the saved result was lost ("aiio: interrupted"). Once a run is ending, a
Ctrl-C waits for its result to be saved and its files removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO

HANG_GUARD_S = 60  # a guard against a hang, not a timing


def _writing(target: Path) -> bool:
    return any(target.glob("aiio/checkpoints/*/ckpt-*/*.bin"))


# Ctrl-C as the first files are written (as the run prepares), and once clients write
@pytest.mark.parametrize("after_s", [0.0, 1.0])
def test_ctrl_c_again_while_the_run_ends_leaves_no_file_and_names_the_result(
        target: Path, results: Path, after_s: float) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiio", "run", "-p", "checkpoint", "-t", str(target),
         "--results", str(results), "--clients", "2", "--set", "checkpoint.size=256MiB",
         "--checkpoints", "8", "--quiet", "--no-report", "--no-history"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        while not _writing(target):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        time.sleep(after_s)
        # a Ctrl-C, then more while it stops: every 20 ms for a second, over its ending
        for _ in range(50):
            if proc.poll() is not None:
                break
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.02)
        _, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("aiio: interrupted by the user") and "partial result saved in " \
        in last, err
    (saved,) = [json.loads(p.read_text()) for p in results.glob("*/result.json")]
    assert saved["status"] == "interrupted"
    left = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert left == ["aiio/.aiio-owned", "aiio/.runs.lock"], left
