"""A run killed outright (SIGKILL, an OOM kill, a batch system's limit) cannot remove its
scratch files. They stayed on the target, unseen, taking its space, until `aiio clean`. The
next run on the target now removes the folders of runs that are certainly gone, and says so;
it keeps those of runs that may still be going (alive, on another host) and those it cannot
attribute."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiio.run import owner
from aiio.storage.target import RUN_MARK

from .conftest import REPO, TINY_ARGS, call_cli


def _randrw_killed_while_writing(target: Path, results: Path) -> Path:
    """Start a randrw run, SIGKILL it (and its clients) once its files are on the target;
    returns the run's scratch folder, left behind."""
    cmd = [sys.executable, "-m", "aiio", "run", "--phase", "randrw", "--target", str(target),
           "--results", str(results), "--clients", "2", "--set", "prep.file_size=256MiB",
           "--duration", "60s", "--quiet", "--no-report", "--no-history"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        prep = target / "aiio" / "prep"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(prep.glob("*/randrw-*.bin")):
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    left = [p for p in prep.iterdir() if p.is_dir()]
    assert len(left) == 1 and any(left[0].glob("randrw-*.bin")), "nothing was left to find"
    return left[0]


def test_the_next_run_removes_the_files_of_a_killed_run(target: Path, results: Path) -> None:
    left = _randrw_killed_while_writing(target, results)
    done = call_cli("run", "--target", str(target), "--results", str(results), *TINY_ARGS,
                    "--no-report", "--no-history")
    assert done.returncode == 0, done.stderr
    assert not left.exists(), "the killed run's files are still on the target"
    said = done.stdout + done.stderr
    assert f"removed {left}" in said and "has ended" in said, said


def _marked(folder: Path, mark: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / RUN_MARK).write_text(json.dumps(mark))
    (folder / "data.bin").write_bytes(b"x" * 4096)
    return folder


def test_folders_of_runs_that_may_still_go_on_are_kept(target: Path, results: Path) -> None:
    prep = target / "aiio" / "prep"
    alive = _marked(prep / "alive", owner.mark())  # this process: it lives
    elsewhere = _marked(prep / "elsewhere", {**owner.mark(), "host": "another-host",
                                            "pid": 999_999_999})
    unmarked = prep / "unmarked"  # an older aiio's, or not a run's at all: not ours to judge
    unmarked.mkdir()
    (target / "aiio" / ".aiio-owned").write_text("{}\n")
    empty = target / "aiio" / "models"  # a folder the check did not empty is not its business
    empty.mkdir()
    done = call_cli("run", "--target", str(target), "--results", str(results), *TINY_ARGS,
                    "--no-report", "--no-history")
    assert done.returncode == 0, done.stderr
    assert alive.exists() and elsewhere.exists() and unmarked.exists() and empty.exists()
    assert "removed" not in done.stdout + done.stderr


# A process in its own pid namespace (a container on this host sharing the target) marks its
# scratch folder, then lives on while another run starts.
_MARK_AND_WAIT = """
import json, sys, time
from aiio.run import owner
from aiio.storage.target import RUN_MARK
open(sys.argv[1] + "/" + RUN_MARK, "w").write(json.dumps(owner.mark()))
print("marked", flush=True)
time.sleep(120)
"""


def test_a_live_run_in_another_pid_namespace_keeps_its_folder(target: Path, results: Path) -> None:
    folder = target / "aiio" / "prep" / "container"
    folder.mkdir(parents=True)
    (target / "aiio" / ".aiio-owned").write_text("{}\n")
    cmd = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", _MARK_AND_WAIT,
           str(folder)]
    try:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
    except FileNotFoundError:
        pytest.skip("no unshare here")
    try:
        if proc.stdout.readline().strip() != "marked":
            pytest.skip(f"cannot start a process in a pid namespace here: {proc.stderr.read()}")
        mark = json.loads((folder / RUN_MARK).read_text())
        done = call_cli("run", "--target", str(target), "--results", str(results), *TINY_ARGS,
                        "--no-report", "--no-history")
        assert proc.poll() is None, "the marking process ended early"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert done.returncode == 0, done.stderr
    assert folder.exists(), f"a live run's folder was removed (its mark: {mark})"
    assert "removed" not in done.stdout + done.stderr
