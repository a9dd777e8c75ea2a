"""Ownership, free space and cleanup: aiio never deletes what it did not create."""

from __future__ import annotations

import os

import pytest

from aiio.errors import SpaceError, TargetError
from aiio.storage.target import MARKER, Target, probe, remove_tree

from .conftest import call_cli


def test_claim_creates_marker_and_probe_describes(target):
    t = Target(target)
    root = t.claim()
    assert (root / MARKER).is_file()
    info = probe(t)
    assert info.fstype and info.free_bytes > 0
    assert info.o_direct in (True, False)


def test_foreign_aiio_folder_is_refused_and_kept(target):
    foreign = target / "aiio"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("someone's data")
    with pytest.raises(TargetError, match="not created by aiio"):
        Target(target).claim()
    with pytest.raises(TargetError, match="refusing to delete"):
        Target(target).clean()
    assert (foreign / "precious.txt").read_text() == "someone's data"


def test_clean_removes_only_aiio_folder_and_not_through_symlinks(target, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.bin").write_bytes(b"x" * 100)
    neighbour = target / "neighbour.txt"
    neighbour.write_text("not ours")
    t = Target(target)
    root = t.claim()
    (root / "data").mkdir()
    (root / "data" / "f").write_bytes(b"y" * 4096)
    os.symlink(outside, root / "data" / "link-out")
    t.clean()
    assert not root.exists()
    assert (outside / "keep.bin").exists() and neighbour.exists()


def test_remove_tree_refuses_paths_outside_root(target, tmp_path):
    root = Target(target).claim()
    with pytest.raises(TargetError):
        remove_tree(tmp_path, root)


def test_symlinked_aiio_folder_is_refused(target, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, target / "aiio")
    with pytest.raises(TargetError, match="symlink"):
        Target(target).claim()


def test_space_check_names_sizes(target):
    with pytest.raises(SpaceError, match="needs"):
        Target(target).require_space(1 << 60, "a dataset")


def test_cli_clean_keeps_other_files(target):
    (target / "mine.txt").write_text("keep")
    Target(target).claim()
    proc = call_cli("clean", "--target", str(target))
    assert proc.returncode == 0, proc.stderr
    assert (target / "mine.txt").exists() and not (target / "aiio").exists()


def _plain_file(p):
    (p / "file").write_text("x")
    return p / "file"


@pytest.mark.parametrize("make, fragment", [
    (lambda p: p / "missing", "does not exist"),
    (_plain_file, "not a directory"),
])
def test_bad_targets_exit_2_with_one_line(tmp_path, make, fragment):
    path = make(tmp_path)
    proc = call_cli("run", "--target", str(path), "--quiet")
    assert proc.returncode == 2
    assert fragment in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr
