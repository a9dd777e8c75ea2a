"""`aiio compare` with no fio result to set a run against: the run's own figures are still
listed, and one line says which figure is missing and how to make it."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import TINY_ARGS, run_cli


def test_compare_without_fio_lists_the_run_and_names_the_missing_figure(
        target: Path, results: Path) -> None:
    run = run_cli("run", "--target", str(target), "--results", str(results), "--quiet",
                  "--no-report", *TINY_ARGS)
    assert run.returncode == 0, run.stderr
    (folder,) = results.glob("*-train-*")
    res = json.loads((folder / "result.json").read_text())
    out = run_cli("compare", str(folder), "--json")
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)
    assert item["fio_result"] is None
    rows = {r["figure"]: r for r in item["rows"]}
    first = rows["aggregate MiB/s (the % of hero figure)"]
    assert first["phase"] == res["aggregate"]["last_done"]["mib_s"]
    assert first["fio"] is None and first["percent"] is None
    assert rows["read latency p99"]["phase"] == res["aggregate"]["latency"]["read"]["p99_ns"]
    assert "fio seq_read" in item["note"] and "missing" in item["note"]
    text = run_cli("compare", str(folder))
    assert text.returncode == 0, text.stderr
    assert "aggregate MiB/s, first done" in text.stdout
    notes = [line for line in text.stdout.splitlines() if "missing" in line]
    assert len(notes) == 1 and "fio seq_read" in notes[0] and "aiio fio --target" in notes[0]
