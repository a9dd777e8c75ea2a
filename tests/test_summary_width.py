"""The summary of a run read in an 80-column terminal: the per-client table stays a table
(a row per client), no cell cut to an ellipsis, nothing wider than the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import TINY_DATA, call_cli, widest

CLIENTS = 16


def test_sixteen_clients_fit_80_columns_a_line_each(tmp_path: Path) -> None:
    # drawn as one block per client (a line per figure), 16 clients printed 187 lines
    target = tmp_path / "t"
    target.mkdir()
    proc = call_cli("run", "--target", str(target), "--results", str(tmp_path / "r"),
                    *TINY_DATA, "--set", f"dataset.num_files={4 * CLIENTS}", "--epochs", "1",
                    "--batch-size", "1", "--clients", str(CLIENTS), "--no-report",
                    "--no-history", env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "…" not in proc.stdout and widest(proc.stdout) <= 80, proc.stdout
    table = lines[next(i for i, line in enumerate(lines) if line.strip() == "per client"):]
    rows = [line for line in table if line.startswith("│")]
    assert len(rows) <= CLIENTS + 2, proc.stdout  # a line per client (a header may wrap)
    head = " ".join(line for line in table[:6])
    for column in ("client", "AU", "p99"):
        assert column in head, proc.stdout
    assert "report.html" in " ".join(table), proc.stdout  # where the columns left out are


# each phase's own per-client table, at the narrowest width the console promises a table in
OWN_TABLES = {
    "prep": ("per client", ()),
    "randrw": ("per client", ("--duration", "1s")),
    "checkpoint": ("per client (all checkpoints)", ("--set", "model.parameters=4M")),
    "load": ("per replica", ("--set", "load.size=4MiB")),
}


def _summary(tmp_path: Path, phase: str, clients: int, columns: int) -> str:
    """A real run of the phase, its summary as printed at `columns`."""
    target = tmp_path / "t"
    target.mkdir()
    proc = call_cli("run", "--phase", phase, "--target", str(target), "--results",
                    str(tmp_path / "r"), *TINY_DATA, *OWN_TABLES[phase][1], "--clients",
                    str(clients), "--no-report", "--no-history", "--quiet",
                    env={"COLUMNS": str(columns)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _table(out: str, title: str) -> tuple[str, list[str]]:
    """The title line of the table that starts with `title`, and its body's lines."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(title))
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("└"))
    return lines[start], [line for line in lines[start:end] if line.startswith("│")]


@pytest.mark.parametrize("phase", sorted(OWN_TABLES))
def test_each_phase_per_client_table_keeps_a_line_a_client_at_60_columns(
        tmp_path: Path, phase: str) -> None:
    # prep's was drawn as one block per client at 60 columns: 7 lines a client
    out = _summary(tmp_path, phase, CLIENTS, 60)
    assert "…" not in out and widest(out) <= 60, out
    _title, rows = _table(out, OWN_TABLES[phase][0])
    assert len(rows) <= CLIENTS + 2, out  # a line per client (a header may wrap)


@pytest.mark.parametrize("phase", ["prep", "load"])
def test_a_long_client_list_shows_the_slowest_and_fastest(tmp_path: Path, phase: str) -> None:
    # training's table showed 16 of any number of clients; the other phases' printed a row
    # for every client: 1,024 lines at 1,024 clients
    out = _summary(tmp_path, phase, 20, 80)
    title, rows = _table(out, OWN_TABLES[phase][0])
    assert "slowest and fastest 8 of 20" in title, out
    assert 16 <= len(rows) <= 18, out
