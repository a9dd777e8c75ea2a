"""`aiio workloads` at 80 and 60 columns: every row on one line, its figures whole, no line
wider than the terminal. The training table needed 85 columns and rich wrapped its cells
("512.00" over "KiB", "771" over "(h100)"): a row became two lines that read as two rows."""

from __future__ import annotations

import json

import pytest

from aiio.units import format_size
from tests.conftest import call_cli


def _listed() -> dict:
    proc = call_cli("workloads", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _rows(listed: dict) -> list[tuple[str, ...]]:
    """Each workload's name with the figures that must stay on its line."""
    rows = [(r["name"], format_size(r["sample_size"]), format_size(r["dataset_bytes"]))
            for r in listed["datasets"]]
    rows += [(m["name"], format_size(m["checkpoint_bytes"])) for m in listed["models"]]
    rows += [(m["name"], format_size(m["file_size"])) for m in listed["mixes"]]
    return rows


@pytest.mark.parametrize("width", [80, 60])
def test_workloads_fit_a_row_a_line(width: int) -> None:
    proc = call_cli("workloads", env={"COLUMNS": str(width)})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    wide = [line for line in lines if len(line) > width]
    assert not wide, "\n".join(wide)
    for name, *figures in _rows(_listed()):
        row = [line for line in lines if line.strip().startswith(name + " ")]
        assert len(row) == 1, f"{name}: {row}\n{proc.stdout}"
        for figure in figures:
            assert figure in row[0], f"{name}: {figure} not whole on {row[0]!r}\n{proc.stdout}"
