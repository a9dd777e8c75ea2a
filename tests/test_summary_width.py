"""The summary of a run read in an 80-column terminal: the per-client table stays a table
(a row per client), no cell cut to an ellipsis, nothing wider than the terminal."""

from __future__ import annotations

from pathlib import Path

from .conftest import TINY_DATA, call_cli

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
    assert "…" not in proc.stdout and max(len(line) for line in lines) <= 80, proc.stdout
    table = lines[next(i for i, line in enumerate(lines) if line.strip() == "per client"):]
    rows = [line for line in table if line.startswith("│")]
    assert len(rows) <= CLIENTS + 2, proc.stdout  # a line per client (a header may wrap)
    head = " ".join(line for line in table[:6])
    for column in ("client", "AU", "p99"):
        assert column in head, proc.stdout
    assert "report.html" in " ".join(table), proc.stdout  # where the columns left out are
