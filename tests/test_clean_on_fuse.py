"""`aiio clean` on a FUSE mount (and NFS alike): a file removed while it is open is renamed
(.fuse_hiddenXXXX, .nfsXXXX) until it is closed. Clean held its lock files open (the target's
run lock, every dataset's and weights' lock) while it removed the tree, so their folders were
never empty: it failed with "Directory not empty" after removing the ownership marker, and
every later clean refused the folder as not aiio's. Real FUSE (bindfs), real files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import TINY_DATA, run_cli
from .oracle.mount import bindfs, can_bindfs
from .test_clean_failures import one_line_exit_1


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    """A bindfs mount whose target holds a dataset (and so its lock file)."""
    if can_bindfs() is not None:
        pytest.skip(can_bindfs() or "")
    source = tmp_path / "source"
    source.mkdir()
    with bindfs(tmp_path, source) as mounted:
        made = run_cli("datagen", "--target", str(mounted), *TINY_DATA)
        assert made.returncode == 0, made.stderr
        yield mounted


def test_clean_removes_everything_on_a_fuse_mount(mount: Path) -> None:
    assert any((mount / "aiio" / "datasets").glob(".*.lock"))  # a lock clean holds
    proc = run_cli("clean", "--target", str(mount))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (mount / "aiio").exists(), sorted(p.name for p in (mount / "aiio").rglob("*"))


def test_a_clean_that_cannot_finish_keeps_the_marker_for_the_next(mount: Path) -> None:
    # a file another program holds open stays (renamed) until it is closed, and its folder
    sample = next(p for p in (mount / "aiio" / "datasets").rglob("*") if p.is_file()
                  and not p.name.startswith("."))
    with sample.open("rb"):
        failed = run_cli("clean", "--target", str(mount))
    assert failed.returncode != 0, failed.stdout
    assert (mount / "aiio" / ".aiio-owned").exists()  # so that a clean may run again
    again = run_cli("clean", "--target", str(mount))
    assert again.returncode == 0, again.stdout + again.stderr
    assert not (mount / "aiio").exists()


def test_the_last_folder_that_cannot_go_keeps_the_marker(mount: Path) -> None:
    # another program holds the target's run lock file open (without locking it): on FUSE
    # the removed file stays, renamed, and aiio's folder is not empty once the marker is
    # removed last
    with (mount / "aiio" / ".runs.lock").open("rb"):
        failed = run_cli("clean", "--target", str(mount))
    one_line_exit_1(failed, str(mount / "aiio"), "Directory not empty", "aiio clean")
    assert (mount / "aiio" / ".aiio-owned").exists()  # so that a clean may run again
    again = run_cli("clean", "--target", str(mount))
    assert again.returncode == 0, again.stdout + again.stderr
    assert not (mount / "aiio").exists()
