"""`aiio clean` when the storage will not let something of aiio's go: one line naming what
stays and why, exit code 1 (a failure of the storage, as a run's), and the ownership marker
kept so that a later clean can finish. It printed the raw OSError (`[Errno 1] Operation not
permitted: 'f0000013.npz'`, a name without its folder), and when the last folder would not go
(`[Errno 39] Directory not empty`) the marker was already gone: every later clean refused the
folder as not aiio's (test_clean_on_fuse.py). Real files, a real immutable file."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import TINY_DATA, is_root, run_cli


def one_line_exit_1(proc: subprocess.CompletedProcess, *words: str) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "Errno" not in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _datagen(target: Path) -> None:
    made = run_cli("datagen", "--target", str(target), *TINY_DATA)
    assert made.returncode == 0, made.stderr


@pytest.fixture
def immutable(target: Path) -> Iterator[Path]:
    """A dataset file marked immutable (chattr +i): no one may remove it, root included."""
    if not is_root():
        pytest.skip("chattr +i needs root")
    _datagen(target)
    sample = sorted((target / "aiio" / "datasets").rglob("*.npz"))[0]
    if subprocess.run(["chattr", "+i", str(sample)], capture_output=True).returncode:
        pytest.skip(f"the filesystem of {target} has no immutable files")
    try:
        yield sample
    finally:
        if sample.exists():  # a failed check: let the temp folder go
            subprocess.run(["chattr", "-i", str(sample)], check=True)


def test_a_file_that_cannot_go_is_named_in_one_line(target: Path, immutable: Path) -> None:
    failed = run_cli("clean", "--target", str(target))
    one_line_exit_1(failed, str(immutable), "Operation not permitted", "aiio clean")
    assert (target / "aiio" / ".aiio-owned").exists()
    subprocess.run(["chattr", "-i", str(immutable)], check=True)
    again = run_cli("clean", "--target", str(target))
    assert again.returncode == 0, again.stdout + again.stderr
    assert not (target / "aiio").exists()
