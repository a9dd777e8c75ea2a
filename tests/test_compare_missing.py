"""`aiio compare` with no fio result to set a run against: the run's own figures are still
listed, and one line says which figure is missing and how to make it."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from .conftest import TINY_ARGS, call_cli, flat, run_cli

QUICK = ("--runtime", "500ms", "--ramp-time", "0", "--size", "8MiB")


def test_compare_without_fio_lists_the_run_and_names_the_missing_figure(
        target: Path, results: Path) -> None:
    run = run_cli("run", "--target", str(target), "--results", str(results), "--quiet",
                  "--no-report", *TINY_ARGS)
    assert run.returncode == 0, run.stderr
    (folder,) = results.glob("*-train-*")
    res = json.loads((folder / "result.json").read_text())
    out = call_cli("compare", str(folder), "--json")
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)
    assert item["fio_result"] is None
    assert item["fio_test"] == "seq_read"  # paired, its fio side missing: the note says so
    rows = {r["figure"]: r for r in item["rows"]}
    first = rows["aggregate MiB/s (the % of hero figure)"]
    assert first["phase"] == res["aggregate"]["delivered"]["last_done"]["mib_s"]
    assert first["fio"] is None and first["percent"] is None
    assert rows["read latency p99"]["phase"] == res["aggregate"]["latency"]["read"]["p99_ns"]
    assert "fio seq_read" in item["note"] and "missing" in item["note"]
    text = call_cli("compare", str(folder))
    assert text.returncode == 0, text.stderr
    assert "aggregate MiB/s, first done" in flat(text.stdout)
    notes = [line for line in text.stdout.splitlines() if "missing" in line]
    assert len(notes) == 1 and "fio seq_read" in notes[0] and "aiio fio --target" in notes[0]


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_compare_falls_back_only_to_a_fio_result_of_the_runs_concurrency(
        target: Path, results: Path) -> None:
    # the run first (nothing recorded to pair with), then fio at another concurrency: compare
    # must not set 2 clients x 2 streams against 2 fio jobs x iodepth 1
    run = run_cli("run", "--target", str(target), "--results", str(results), "--quiet",
                  "--no-report", *TINY_ARGS, "--read-threads", "2")
    assert run.returncode == 0, run.stderr
    (folder,) = results.glob("*-train-*")
    other = run_cli("fio", "--target", str(target), "--results", str(results), "-q",
                    "--tests", "seq_read", *QUICK, "--clients", "2")
    assert other.returncode == 0, other.stderr
    out = call_cli("compare", str(folder), "--json")
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)
    assert item["fio_result"] is None
    assert all(r["fio"] is None and r["percent"] is None for r in item["rows"])
    assert "at this run's concurrency" in item["note"]
    words = shlex.split(item["note"].split("run: aiio ", 1)[1])
    assert words[words.index("--clients") + 1] == "2" and words[words.index("--iodepth") + 1] == "2"
    # the command it names makes a result the fallback takes
    made = run_cli(*words, "--results", str(results), "-q", *QUICK)
    assert made.returncode == 0, made.stderr
    (fio_folder,) = [p for p in results.glob("*-fio-*")
                     if json.loads((p / "result.json").read_text())["options"]["iodepth"] == 2]
    again = json.loads(call_cli("compare", str(folder), "--json").stdout)[0]
    assert again["fio_result"] == fio_folder.name and again["note"] is None


def test_refusing_another_kind_of_result_reads_as_english(tmp_path):
    """'is a accept result', 'a 'all' result': the kind is quoted as a name, not read as a word."""
    import json

    from .conftest import call_cli

    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps({"schema": "aiio.result/2", "kind": "accept"}))
    out = call_cli("compare", str(folder))
    assert out.returncode == 2 and "a accept" not in out.stderr, out.stderr
    assert "kind 'accept'" in out.stderr, out.stderr
