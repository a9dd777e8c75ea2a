"""`aiio history` read in an 80-column terminal (ssh, tmux, CI logs): no cell cut to an
ellipsis, every watched figure, the host and the aiio version of a check still shown."""

from __future__ import annotations

from pathlib import Path

from aiio.results.history import History, Record

from .conftest import call_cli

NAME = "nightly-train-64-clients-against-the-lustre"
REQUIRED = {"aggregate_mib_s": 50.0, "au_min": 0.5, "p99_ms": 20.0, "client_mib_s_min": 10.0,
            "jain": 0.9, "checkpoint_s": 5.0}
HOST = "gpu-node-0123.cluster.example.org"


def _history(tmp_path: Path) -> Path:
    """The database, named relative to tmp_path: the command runs there (_at_80), so its
    "history: PATH" line has the same width wherever the temporary folder is."""
    db = tmp_path / "h.sqlite"
    with History(db) as h:
        for i in range(6):
            h.add(Record(kind="check", name=NAME, target="/mnt/lustre/projects/ai/scratch",
                         status="pass", passed=True,
                         figures={k: v * 1.3 for k, v in REQUIRED.items()}, required=REQUIRED,
                         phase="train", workload="unet3d", clients="64", host=HOST,
                         version="0.1.0.dev123+g94faf9c", ts=1.79e9 + i * 86400))
    return db.relative_to(tmp_path)


def _at_80(tmp_path: Path, *args: str) -> str:
    # A path is printed whole (a cut path cannot be used), so the line naming the database
    # would grow with the temporary folder's path: run where the relative name resolves.
    proc = call_cli("history", *args, cwd=tmp_path, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout, proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80, proc.stdout
    return proc.stdout


def test_one_check_over_time_fits_80_columns(tmp_path: Path) -> None:
    out = _at_80(tmp_path, "--history", str(_history(tmp_path)), "--check", NAME)
    for word in (*REQUIRED, HOST, "0.1.0.dev123+g94faf9c", "pass", "2026-09-2"):
        assert word in out, (word, out)


def test_the_overview_fits_80_columns(tmp_path: Path) -> None:
    out = _at_80(tmp_path, "--history", str(_history(tmp_path)))
    lines = out.splitlines()
    rows = lines[next(i for i, line in enumerate(lines) if "───" in line) + 1:]
    series = "".join(line.split("  ")[0].replace(" ", "") for line in rows[:rows.index(next(
        line for line in rows if not line.strip()))])
    assert series == f"{NAME}(6)", out  # the name folded over lines, whole


def _variants(tmp_path: Path) -> Path:
    """Records of one check and one run shape, each also timed by other read loops: three
    series apiece, told apart by the loop the name ends with."""
    db = tmp_path / "v.sqlite"
    names = [("check", "nightly"), ("check", "nightly [python loop]"),
             ("check", "nightly [io_uring (depth 16)]"), ("run", "run randrw demo c2"),
             ("run", "run randrw demo c2 [python loop]")]
    with History(db) as h:
        for i, (kind, name) in enumerate(names):
            h.add(Record(kind=kind, name=name, target="/mnt/a", status="pass", passed=True,
                         figures={"aggregate_mib_s": 100.0 + i}, phase="randrw",
                         workload="demo", clients="2", ts=1.79e9 + i))
    return db.relative_to(tmp_path)


def test_a_series_read_by_another_loop_shows_its_loop_at_80_columns(tmp_path):
    # "[python loop]" is no markup: printed as such it vanished, and three series of one
    # check looked like one listed thrice
    db = _variants(tmp_path)
    out = _at_80(tmp_path, "--history", str(db))  # the series column folds at spaces
    assert out.count("[python") == 2 and out.count("[io_uring") == 1, out
    out = _at_80(tmp_path, "--history", str(db), "--check", "nightly [python loop]")
    assert "nightly [python loop] on" in out, out
