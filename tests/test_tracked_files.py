"""What the repository tracks: its own files, nothing of the machine it was committed on."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import aiio

REPO = Path(aiio.__file__).parent.parent


def tracked_symlinks() -> list[tuple[str, str]]:
    """(path, target) of every symbolic link the checkout's index holds."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-s", "-z"], check=True,
                         capture_output=True, text=True).stdout
    links = []
    for entry in filter(None, out.split("\0")):
        mode, blob, _stage_path = entry.split(" ", 2)
        if mode == "120000":
            path = _stage_path.split("\t", 1)[1]
            target = subprocess.run(["git", "-C", str(REPO), "cat-file", "blob", blob],
                                    check=True, capture_output=True, text=True).stdout
            links.append((path, target))
    return links


def test_no_tracked_link_points_outside_the_repository():
    # A virtual environment linked from another checkout was once committed as a link to that
    # checkout's absolute path: every clone got a link to nowhere where `make venv` expects
    # to make one, and the checkout it named got a link to itself in place of its environment.
    for path, target in tracked_symlinks():
        assert not os.path.isabs(target), (path, target)
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
        assert not resolved.startswith(".."), (path, target)


def test_the_virtual_environment_is_never_tracked():
    assert not any(path == ".venv" or path.startswith(".venv/")
                   for path, _ in tracked_symlinks())
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "--no-index",
                              ".venv"], check=False).returncode
    assert ignored == 0  # a link named .venv as well as a folder
