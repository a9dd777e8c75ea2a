"""% of hero compares like windows: fio leaves out its first second (its ramp), so the run's
side leaves out the same first second of its own, counted from its common start, and the
bytes on both sides are what the storage delivered. On storage whose first second is fast
(burst credits, an SLC or write-back cache) a run counted from its start read ~145 % of fio
and the run blamed fio ("re-run aiio fio on a quiet system"). A run that cannot leave the ramp
out (a checkpoint's bursts, a run barely longer than the ramp) is paired only with a fio
result that had none, and says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aiio.fio import hero
from aiio.run import runner
from aiio.units import MiB

from .conftest import REPO, call_cli, tiny_workload
from .oracle.mount import Rates, can_mount_fuse, serving
from .storage import small_tmpfs
from .test_live_hero import _fio_result
from .test_oracle_lab import _workload  # one loader thread, 2 MiB samples, no compute

CAP, BURST = 16 * MiB, 24 * MiB  # the first 24 MiB read at once, then 16 MiB/s

def _aiio(*args: str) -> subprocess.CompletedProcess:
    # at the oracle's raised priority, as the oracle lab runs its clients
    proc = subprocess.run(["nice", "-n", "-10", sys.executable, "-m", "aiio", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, COLUMNS="160"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.root
@pytest.mark.serial  # the FUSE oracle paces in user space: fio and aiio both need the CPU it has
@pytest.mark.skipif(can_mount_fuse() is not None or shutil.which("fio") is None,
                    reason=can_mount_fuse() or "fio is not installed")
def test_a_first_second_burst_is_left_out_of_both_sides(tmp_path):
    spec, results = _workload(tmp_path), tmp_path / "r"
    mount = tmp_path / "burst"
    mount.mkdir()
    with small_tmpfs(tmp_path, 256) as backing:
        # each mount starts with a full burst, as a volume does after an idle while
        with serving(backing, mount, Rates(read_cap=CAP, read_burst=BURST)):
            _aiio("fio", "--target", str(mount), "--results", str(results), "--clients", "1",
                  "--runtime", "1s", "--ramp-time", "1s", "--size", "16MiB", "--tests",
                  "seq_read", "--quiet")
        with serving(backing, mount, Rates(read_cap=CAP, read_burst=BURST)):
            proc = _aiio("run", "--workload", str(spec), "--clients", "1", "--duration", "2500ms",
                         "--target", str(mount), "--results", str(results), "--json",
                         "--quiet", "--no-history", "--no-report")
    res = json.loads(proc.stdout)
    h = res["hero"]
    assert h["fio_mib_s"] == pytest.approx(CAP / MiB, rel=0.10)  # fio left its burst out
    # counted from the start, the run's delivered bytes include the burst: ~45 % above
    delivered = res["aggregate"]["delivered"]["last_done"]["mib_s"]
    assert delivered > 1.25 * CAP / MiB, delivered
    assert h["phase_mib_s"] == pytest.approx(CAP / MiB, rel=0.10), h["text"]
    assert h["percent"] == pytest.approx(100.0, abs=10.0), h["text"]
    assert h["ramp_s"] == 1.0 and "after the first 1 s" in h["text"], h["text"]
    assert "above the hero" not in h["text"]
    # aiio compare sets the same figures side by side; a client's MiB/s is over its whole run,
    # so fio's per-job figures (after the ramp) are not set beside it
    proc = call_cli("compare", str(results / res["id"]), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["figure"]: r for r in json.loads(proc.stdout)[0]["rows"]}
    head = rows["aggregate MiB/s (the % of hero figure)"]
    assert head["phase"] == pytest.approx(h["phase_mib_s"]) and head["fio"] == h["fio_mib_s"]
    for name in ("per client MiB/s, mean", "per client MiB/s, min"):
        assert rows[name]["fio"] is None and rows[name]["percent"] is None, rows[name]


def _run(phase: str, w, target: Path, results: Path) -> dict:
    res, _ = runner.run(runner.RunRequest(phase, w, str(target), str(results),
                                          hero=hero.Pairing(results)))
    assert res["status"] == "ok", res.get("error")
    return res


def test_a_checkpoint_is_not_set_against_fio_after_a_ramp(target, results):
    """A checkpoint's bursts have no first second to leave out: only fio without a ramp."""
    _fio_result(results, target, "20260101-000000-fio-c2", 1.0, iodepth=1, mib_s=100.0,
                tests=("seq_write",), ramp_s=1.0)
    w = tiny_workload(checkpoint__size="4MiB", checkpoint__threads=1)
    res = _run("checkpoint", w, target, results)
    h = res["hero"]
    assert h.get("percent") is None, h
    assert "ramp" in h["text"] and "--ramp-time 0" in h["text"], h["text"]
    # aiio compare told to take that fio result says why no % stands beside the run
    proc = call_cli("compare", str(results / res["id"]), "--fio",
                    str(results / "20260101-000000-fio-c2"), "--json")
    assert proc.returncode == 0, proc.stderr
    [item] = json.loads(proc.stdout)
    assert all(r["percent"] is None for r in item["rows"]), item["rows"]
    assert item["note"] and "1 s ramp" in item["note"] and "--ramp-time 0" in item["note"]
    _fio_result(results, target, "20260102-000000-fio-c2", 2.0, iodepth=1, mib_s=100.0,
                tests=("seq_write",), ramp_s=0.0)
    h = _run("checkpoint", w, target, results)["hero"]
    assert h["fio_result_id"] == "20260102-000000-fio-c2" and h["percent"] is not None, h
    assert h["window"] == "last done" and h["ramp_s"] == 0.0


def test_a_run_too_short_to_leave_the_ramp_out_says_so(target, results):
    _fio_result(results, target, "20260101-000000-fio-c2", 1.0, iodepth=2, mib_s=100.0,
                ramp_s=1.0)
    h = _run("train", tiny_workload(train__read_threads=2), target, results)["hero"]
    assert h.get("percent") is None, h
    assert "1 s ramp" in h["text"] and "--ramp-time 0" in h["text"], h["text"]
