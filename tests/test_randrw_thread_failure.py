"""One randrw thread's I/O fails: its sibling threads must stop at once, not read on until the
run's duration ends. The storage is a real FUSE filesystem (tests/faultfs.py) that answers one
thread's reads with EIO and serves every other thread; it logs each read it serves after the
failure, so the test sees what the siblings did, not how long the run took."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiio.engines import depth
from tests.faultfs import events, faultfs
from tests.oracle.mount import can_mount_fuse

from .conftest import run_cli, saved_result

REASON = can_mount_fuse()
DURATION_S = 60


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("iodepth", [1, 8])
def test_one_threads_eio_stops_its_siblings_and_fails_the_run(tmp_path: Path,
                                                              iodepth: int) -> None:
    if iodepth > 1 and (why := depth.unavailable(iodepth)):
        pytest.skip(why)
    results = tmp_path / "results"
    with faultfs(tmp_path, "fail", after=200) as fs:
        proc = run_cli("run", "--phase", "randrw", "--target", str(fs.mount), "--results",
                       str(results), "--clients", "1", "--duration", f"{DURATION_S}s",
                       "--set", "prep.threads=4", "--set", "prep.read_share=1.0",
                       "--set", "prep.file_size=16MiB", "--set", f"prep.iodepth={iodepth}",
                       "--quiet", "--no-report",
                       "--no-history", timeout=DURATION_S * 4)
        seen = events(fs.log)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    said = proc.stderr
    assert "Input/output error" in said and "partial result saved" in said, said
    assert saved_result(results)["status"] == "failed"
    (failed,) = [e for e in seen if e[0] == "failed"]
    served = [at for what, at, tid in seen if what == "served" and tid != failed[2]]
    # The siblings look at their stop every 20 ms; before, they read on to the duration's
    # end (about 60 s of reads after the failure). A quarter of it is a bound no load reaches.
    last = max(served, default=failed[1])
    assert last - failed[1] < DURATION_S / 4, \
        f"{len(served)} reads served {last - failed[1]:.1f} s after the failure"
