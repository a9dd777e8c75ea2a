"""A table whose history cannot be written says so once: since each run is recorded as it
is saved, the same warning came once per row."""

from __future__ import annotations

from pathlib import Path

from .conftest import call_cli
from .test_kvcache_users import SETS


def test_a_history_that_cannot_be_written_is_said_once(target: Path, results: Path,
                                                       tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    history.mkdir()  # not a regular file
    got = call_cli("scale", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   "--clients", "2", "--duration", "0.5s", *SETS, "--users", "1,2",
                   "--history", str(history), "--no-report")
    assert got.returncode == 0, got.stderr
    said = [line for line in got.stderr.splitlines() if "not recorded in the history" in line]
    assert len(said) == 1, got.stderr
