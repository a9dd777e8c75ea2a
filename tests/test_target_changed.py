"""A target lazily unmounted while a run measures (`fusermount3 -uz`): the path now names
another directory, so the run ends failed with one line saying the target changed under it,
and removes its files from the filesystem it wrote them to, which it still holds open."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import REPO, TINY_DATA, client_processes, run_cli
from .oracle.mount import bindfs, can_bindfs

# randrw keeps its files open and runs on; training opens each file by path, so its clients
# find the files gone and fail: either way the line says what happened first.
PHASES = {"randrw": ("--set", "prep.file_size=1MiB", "--set", "prep.duration=3s"),
          "train": ("--duration", "30s")}


@pytest.mark.skipif(can_bindfs() is not None, reason=can_bindfs() or "")
@pytest.mark.parametrize("phase", sorted(PHASES))
def test_a_target_unmounted_mid_run_fails_the_run_and_leaves_no_files(tmp_path: Path,
                                                                      phase: str) -> None:
    source = tmp_path / "source"
    source.mkdir()
    results = tmp_path / "reports"
    with bindfs(tmp_path, source) as mount:
        if phase == "train":  # the dataset first, so the clients start at once
            made = run_cli("datagen", "--target", str(mount), *TINY_DATA)
            assert made.returncode == 0, made.stderr
        proc = subprocess.Popen(
            [sys.executable, "-m", "aiio", "run", "--phase", phase, "--target", str(mount),
             "--results", str(results), "--clients", "2", *TINY_DATA, *PHASES[phase], "-q"],
            cwd=REPO, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            deadline = time.monotonic() + 120
            while not client_processes(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert client_processes(proc.pid), "the clients never started"
            time.sleep(0.5)  # measuring
            subprocess.run(["fusermount3", "-uz", str(mount)], check=True)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=60)
    assert proc.returncode == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"aiio: target {mount} changed under the run"), err
    (path,) = results.glob("*/result.json")
    res = json.loads(path.read_text())
    assert res["status"] == "failed" and "changed under the run" in res["error"]
    # the run's files went, from the filesystem they were written to
    assert not list(source.rglob("randrw-*.bin")), sorted(source.rglob("*"))
    assert not list(mount.rglob("*"))  # and nothing was written where the path now leads
