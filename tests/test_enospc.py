"""A filesystem that fills up mid-run: the run stops, aiio's partial files go, the partial
result is saved as failed, exit 1. Needs root for a size-limited tmpfs mount."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import call_cli, is_root, run_cli, saved_result


@pytest.fixture
def small_fs(tmp_path: Path):
    """A 64 MiB tmpfs: a disk that fills up."""
    if not is_root():
        pytest.skip("needs root to mount a size-limited tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_enospc_mid_checkpoint_fails_cleanly(small_fs: Path, results: Path) -> None:
    proc = run_cli("run", "--no-report", "--phase", "checkpoint", "-t", str(small_fs), "--results",
                   str(results), "--clients", "2", "--set", "checkpoint.size=128MiB",
                   "--no-space-check", "-q")
    assert proc.returncode == 1, proc.stderr
    assert "filled up (ENOSPC)" in proc.stderr and "partial result saved" in proc.stderr
    res = saved_result(results)
    assert res["status"] == "failed" and "ENOSPC" in res["error"]
    left = sorted(str(p.relative_to(small_fs)) for p in (small_fs / "aiio").rglob("*"))
    # the lock file stays (aiio.storage.locks)
    assert left == ["aiio/.aiio-owned", "aiio/.runs.lock"]


def test_space_check_refuses_before_writing(small_fs: Path, results: Path) -> None:
    proc = call_cli("run", "--phase", "checkpoint", "-t", str(small_fs), "--results",
                    str(results), "--clients", "2", "--set", "checkpoint.size=128MiB", "-q")
    assert proc.returncode == 2, proc.stderr
    assert "needs 128.00 MiB" in proc.stderr
    assert not (small_fs / "aiio").exists()  # the target as it was: not even aiio's marker
