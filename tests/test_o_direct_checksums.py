"""O_DIRECT training on a filesystem that checks its data checksums in the reader's pages."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import TINY_DATA, run_cli


@pytest.fixture
def btrfs_mount(tmp_path: Path):
    """btrfs (data checksums on, its default) on a loop device; skips where it cannot be made."""
    if os.geteuid() != 0:
        pytest.skip("needs root for a loop device and a mount")
    for tool in ("mkfs.btrfs", "btrfs", "losetup", "mount"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (btrfs-progs, util-linux)")
    image, mount = tmp_path / "btrfs.img", tmp_path / "mnt"
    mount.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(512 * 2**20)
    subprocess.run(["mkfs.btrfs", "-q", "-f", str(image)], check=True, capture_output=True)
    device = subprocess.run(["losetup", "-f", "--show", str(image)], check=True,
                            capture_output=True, text=True).stdout.strip()
    try:
        if subprocess.run(["mount", device, str(mount)], capture_output=True).returncode:
            pytest.skip("this kernel does not mount btrfs")
        try:
            yield mount
        finally:
            subprocess.run(["umount", str(mount)], check=False)
    finally:
        subprocess.run(["losetup", "-d", device], check=False)


def corruption_errors(mount: Path) -> int:
    out = subprocess.run(["btrfs", "device", "stats", str(mount)], check=True,
                         capture_output=True, text=True).stdout
    return sum(int(line.split()[-1]) for line in out.splitlines() if "corruption_errs" in line)


def test_o_direct_training_on_btrfs_reads_every_sample_and_corrupts_no_counter(btrfs_mount,
                                                                              tmp_path):
    # Two clients of two loader threads each, as the demo runs: reads into one buffer failed
    # btrfs's checksum check on the pages another read had just overwritten (EIO), and the
    # filesystem counted hundreds of corruption errors that were never on the disk.
    got = run_cli("run", "--phase", "train", "-t", str(btrfs_mount), "--cache", "o_direct",
                  "--results", str(tmp_path / "r"), "--no-history", "--no-report", "-q",
                  *TINY_DATA, "--set", "dataset.num_files=96", "--epochs", "3",
                  "--batch-size", "2", "--clients", "2", "--read-threads", "2",
                  "--set", "train.compute_time.h100=0")
    assert got.returncode == 0, got.stderr
    assert corruption_errors(btrfs_mount) == 0
