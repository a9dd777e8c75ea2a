"""Runs that fail or are interrupted reach the history with their status, and `aiio history`
shows them as failures: a client killed mid-run, Ctrl-C, and an acceptance check whose run dies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from aiio.results.history import History

from .conftest import REPO, call_cli
from .test_accept import _check, _spec
from .test_faults import _clients, _start


def _records(results: Path) -> list:
    with History(results / "history.sqlite") as h:
        return h.records()


def _trend_row(results: Path, series: str) -> str:
    proc = call_cli("history", "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    return next(line for line in proc.stdout.splitlines() if series in line)


def test_killed_client_run_is_recorded_as_failed(target, results):
    proc = _start(target, results)
    _clients(proc, 2)[0].kill()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    (rec,) = _records(results)
    assert (rec.kind, rec.status, rec.passed) == ("run", "failed", False)
    assert rec.result_id and rec.name == "run train demo c2"
    row = _trend_row(results, "run train demo c2")
    assert "failed" in row and "(1, 1 failed)" in row and "×" in row
    # the history page lists it too, as a failure, though it has no figure to draw
    page = results / "history.html"
    proc = call_cli("report", "--history-db", str(results / "history.sqlite"), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    summary = page.read_text()
    summary = summary[summary.index('id="summary"'):summary.index('id="trends"')]
    assert "run train demo c2" in summary and ">FAILED<" in summary


def test_failed_acceptance_run_shows_in_history_as_a_failure(target, results, tmp_path):
    spec = _spec(tmp_path, _check("doomed", "min_au = 0.05", extra='duration = "60s"\n'))
    cmd = [sys.executable, "-m", "aiio", "accept", str(spec), "--target", str(target),
           "--results", str(results), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    _clients(proc, 2)[0].kill()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    by_kind = {r.kind: r for r in _records(results)}
    assert by_kind["check"].status == "error" and not by_kind["check"].passed
    # the check's run died: its partial result is in the history, failed, linked by its id
    run = by_kind["run"]
    assert run.status == "failed" and not run.passed
    assert (results / run.result_id / "result.json").exists()
    assert "error" in _trend_row(results, "doomed")
    assert "failed" in _trend_row(results, "run train demo c2")
    proc = call_cli("history", "--results", str(results), "--check", "doomed", "--json")
    (record,) = json.loads(proc.stdout)
    assert record["status"] == "error" and record["passed"] is False
