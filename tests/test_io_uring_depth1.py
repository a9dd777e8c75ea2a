"""`--engine io_uring` at depth 1 reads through the ring, as fio's io_uring engine does at
iodepth=1: one request in flight, submitted and reaped by io_uring_enter, never a pread.
psync (`posix`) at depth 1 stays pread. Seen from outside, by strace of the real run."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from aiio.engines import depth

from .conftest import REPO

READS = ("pread64", "preadv", "preadv2", "read")


@pytest.fixture
def ring_here() -> None:
    """Skips, saying why, where a ring of depth 1 cannot be had. Asked when a test starts:
    the check compiles the ring's loop, and every worker collects this module."""
    if (why := depth.unavailable(1)) is not None:
        pytest.skip(why)


pytestmark = [pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace"),
              pytest.mark.usefixtures("ring_here")]


def traced_randrw(tmp_path: Path, engine: str, read_share: str) -> tuple[Counter, dict]:
    """Run randrw under strace; the system calls made on the clients' files (by name), and
    the result."""
    target, log = tmp_path / "target", tmp_path / "strace.log"
    target.mkdir()
    cmd = ["strace", "-f", "-qq", "-y", "-o", str(log), "-e",
           f"trace=io_uring_enter,{','.join(READS)}",
           sys.executable, "-m", "aiio", "run", "-p", "randrw", "-t", str(target),
           "--results", str(tmp_path / "r"), "--json", "-q", "--no-history", "--no-report",
           "--engine", engine, "--clients", "1", "--duration", "1s",
           "--set", "prep.file_size=4MiB", "--set", "prep.threads=1",
           "--set", "prep.iodepth=1", "--set", f"prep.read_share={read_share}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    calls: Counter = Counter()
    for line in log.read_text().splitlines():
        m = re.match(r"\d+\s+(\w+)\((\d+)<([^>]*)>", line)
        if m and ("/aiio/prep/" in m.group(3) or m.group(1) == "io_uring_enter"):
            calls[m.group(1)] += 1
    return calls, json.loads(proc.stdout)


@pytest.mark.parametrize("read_share", ["1", "0.7"])
def test_io_uring_reads_at_depth_1_through_the_ring(tmp_path: Path, read_share: str) -> None:
    calls, res = traced_randrw(tmp_path, "io_uring", read_share)
    reads = res["aggregate"]["read"]["ops"]
    assert reads > 100
    assert not any(calls[c] for c in READS), calls  # no read of the file but the ring's
    assert calls["io_uring_enter"] >= reads  # one request in flight: an enter for each
    assert res["aggregate"]["read_loop"].startswith("io_uring (depth 1)"), res["aggregate"]


def test_psync_reads_at_depth_1_by_pread(tmp_path: Path) -> None:
    calls, res = traced_randrw(tmp_path, "posix", "1")
    assert res["aggregate"]["read"]["ops"] > 100
    assert calls["io_uring_enter"] == 0 and sum(calls[c] for c in READS) > 100, calls
