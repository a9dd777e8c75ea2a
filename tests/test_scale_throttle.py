"""Ground truth for the verdict: storage with ONE shared read limit must be reported saturated,
not linear, with the aggregate at the limit at every point (root only)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from aiio import result
from aiio.units import MiB

from .conftest import REPO
from .storage import can_build_storage, small_tmpfs, throttled_disk

LIMIT = 40 * MiB

# Clients that ask far more than the limit: 1 MiB every 1 ms of compute, with four loader
# threads each keeping 1 MiB reads queued, so even one client keeps the throttle busy while the
# backing disk (shared with whatever else runs on the machine) is slow to answer. The headline
# counts consumed batches, so the batches still being read at the end are delivered but not
# consumed: one-sample batches and 5 s keep that lag well inside the tolerance.
WORKLOAD = """
[workload]
name = "throttled"
[dataset]
format = "npz"
num_files = 32
sample_size = "1MiB"
files_per_dir = 32
[train]
accelerator = "h100"
batch_size = 1
read_threads = 4
transfer_size = "1MiB"
[train.compute_time]
h100 = 0.001
"""

REASON = can_build_storage()


@pytest.mark.root
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_one_shared_limit_is_saturated_at_the_limit(tmp_path):
    spec = tmp_path / "throttled.toml"
    spec.write_text(WORKLOAD)
    # The image lives in RAM (a tmpfs), so the only limit on the loop device is the throttle,
    # not a backing disk that other work on the machine may be keeping busy.
    with small_tmpfs(tmp_path, 112) as ram, throttled_disk(ram, LIMIT, size_mib=96) as disk:
        # the aiio process joins the throttled group before it starts; its clients inherit it
        proc = subprocess.run(
            disk.command(sys.executable, "-m", "aiio", "scale", "--workload", str(spec),
                         "--clients", "1,2,4", "--duration", "5s", "--target", str(disk.mount),
                         "--results", str(tmp_path / "reports"), "-q"),
            cwd=REPO, capture_output=True, text=True, timeout=300,
            env=dict(os.environ, COLUMNS="160"))
    assert proc.returncode == 0, proc.stderr
    # the results folder also holds the history database: take the sweep's folder
    (folder,) = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    sweep = result.load(folder)
    assert sweep["points"][0]["result"]["method"] == "o_direct"
    for row in sweep["table"]:
        assert row["aggregate_mib_s"] == pytest.approx(LIMIT / MiB, rel=0.10), row
    for p in sweep["points"]:  # what the storage delivered, read-ahead included
        delivered = p["result"]["aggregate"]["delivered"]["first_done"]["mib_s"]
        assert delivered == pytest.approx(LIMIT / MiB, rel=0.10), p["clients"]
    v = sweep["verdict"]
    assert v["shape"] == "saturated", v["statements"]
    assert v["knee"] == 2 and v["linear_up_to"] == 1
    assert v["plateau"]["from_clients"] == 1
    assert v["efficiency"][-1]["efficiency"] < 0.5
    assert "saturated" in proc.stdout and "scales linearly up to 4" not in proc.stdout
    assert sorted(sweep["charts"]) == ["aggregate.png", "aggregate.svg", "per_client.png",
                                       "per_client.svg"]
