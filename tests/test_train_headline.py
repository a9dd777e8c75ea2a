"""The training headline (consumed bytes) against a blkio-throttled loop device (root only):
an I/O-bound run of large samples reads the throttle whatever the batch size, or it says it
cannot be measured and is not "ok"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO
from .storage import can_build_storage, small_tmpfs, throttled_disk

REASON = can_build_storage()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]
MiB = 2**20
LIMIT = 40  # MiB/s
# 12 samples of 24 MiB: a batch of 2 is 48 MiB, 1.2 s of the whole throttle
DATA = ("--set", "dataset.num_files=12", "--set", "dataset.sample_size=24MiB",
        "--set", "dataset.sample_size_stdev=0", "--set", "dataset.format=raw")
IO_BOUND = ("--set", "train.batch_size=2", "--set", "train.compute_time.h100=0")
# 24 samples of 8 MiB +- 3 MiB: two loader threads of a client fall out of step
VARIED = ("--set", "dataset.num_files=24", "--set", "dataset.sample_size=8MiB",
          "--set", "dataset.sample_size_stdev=3MiB", "--set", "dataset.format=raw")


@pytest.fixture(scope="module")
def disk(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("headline")
    # the image lives in RAM, so the throttle is the loop device's only limit
    with small_tmpfs(tmp, 560) as ram, throttled_disk(ram, LIMIT * MiB, size_mib=540) as d:
        for data in (DATA, VARIED):
            gen = subprocess.run([sys.executable, "-m", "aiio", "datagen", "--target",
                                  str(d.mount), *data], cwd=REPO, capture_output=True, text=True)
            assert gen.returncode == 0, gen.stderr
        yield d


def _train(disk, results: Path, *args: str, data: tuple[str, ...] = DATA,
           ) -> subprocess.CompletedProcess:
    cmd = disk.command(sys.executable, "-m", "aiio", "run", "--phase", "train", "--target",
                       str(disk.mount), "--results", str(results), "--json", "--quiet",
                       "--no-history", "--no-report", *data, *IO_BOUND, *args)
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


def _saved(results: Path) -> dict:
    (found,) = results.rglob("result.json")
    return json.loads(found.read_text())


def test_a_deadline_between_large_batches_leaves_the_headline_at_the_throttle(disk, tmp_path):
    # One client of one loader thread: a 48 MiB batch every 1.2 s; the 4.5 s deadline falls
    # 0.9 s into the fourth. Counting that wait read 32 MiB/s, not 40 (with 2 clients at 7 s,
    # 27). Clients out of step are the next test's.
    proc = _train(disk, tmp_path, "--clients", "1", "--duration", "4.5s",
                  "--set", "train.read_threads=1")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    agg = res["aggregate"]
    assert agg["delivered"]["last_done"]["mib_s"] == pytest.approx(LIMIT, rel=0.05)
    assert agg["first_done"]["mib_s"] == pytest.approx(LIMIT, rel=0.05)
    assert agg["last_done"]["mib_s"] == pytest.approx(LIMIT, rel=0.05)
    (c,) = res["clients"]
    # the window ends with the client's last step, not at the deadline
    assert c["consumed_elapsed_s"] < c["elapsed_s"] - 0.5


def test_a_run_too_short_for_its_batches_says_so_and_is_not_ok(disk, tmp_path):
    # 2 clients of 2 loader threads: each thread gets 10 MiB/s, so no 48 MiB batch is whole
    # before the 3 s deadline. It read consumed 0.0 MiB/s, status ok, no warning.
    proc = _train(disk, tmp_path, "--clients", "2", "--duration", "3s",
                  "--set", "train.read_threads=2")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "cannot be measured" in proc.stderr
    assert "--duration" in proc.stderr
    res = _saved(tmp_path)
    assert res["status"] == "failed"
    assert "cannot be measured" in res["error"]
    agg = res["aggregate"]  # the figures are kept: the storage's side reads the throttle
    assert agg["delivered"]["last_done"]["mib_s"] == pytest.approx(LIMIT, rel=0.10)
    assert agg["partly_read_bytes"] > 0.05 * (agg["partly_read_bytes"] + agg["consumed_bytes"])


def test_loader_threads_out_of_step_read_the_throttle_or_say_they_cannot(disk, tmp_path):
    # Two loader threads per client on samples of varied size: when a client's last step
    # ends, its other thread is part way through a batch, and one client's last step may come
    # a batch before the other's. Either the headline holds within 5 % of the throttle, or
    # the run says it cannot be measured. First done read 35.6 MiB/s, "ok", when one client
    # was cut just before a batch its other thread had read for 1.6 s (each batch's bytes
    # now run from its read's start), and last done 38.1 at 12 s when one client's last step
    # came 0.6 s before the other's (now counted against the 5 %). Over 5 runs at 10 s: 3
    # held (last done 38.4), 2 said they could not.
    proc = _train(disk, tmp_path, "--clients", "2", "--duration", "10s",
                  "--set", "train.read_threads=2", data=VARIED)
    assert "Traceback" not in proc.stderr
    if proc.returncode:
        assert proc.returncode == 1 and "cannot be measured within 5 %" in proc.stderr
        assert _saved(tmp_path)["status"] == "failed"
        return
    agg = json.loads(proc.stdout)["aggregate"]
    for window in ("first_done", "last_done"):
        assert agg[window]["mib_s"] == pytest.approx(LIMIT, rel=0.05), (window, agg[window])
