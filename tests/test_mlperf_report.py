"""The page and the console of an `aiio mlperf` result: MLPerf's published columns, every run
the rules made, the rule checks and what marked the result, drawn from the summary it saved."""

from __future__ import annotations

import json
import os
import re
from html import unescape
from pathlib import Path

import pytest

from aiio import report

from .conftest import TINY_DATA, run_cli

WIDTH = 80


def _run(target: Path, results: Path, *args: str) -> tuple[str, Path]:
    """The console of one `aiio mlperf` on a wide terminal, and the folder it saved."""
    env = {**os.environ, "COLUMNS": "200"}
    proc = run_cli("mlperf", "-t", str(target), "--results", str(results), "-q", *args,
                   env=env)
    assert proc.returncode == 0, proc.stderr
    (folder,) = results.glob("*-mlperf-*")
    return proc.stdout, folder


def _text(page: str) -> str:
    """The page's words as a reader sees them: tags out, entities read, spaces collapsed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture(scope="module")
def training(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    base = tmp_path_factory.mktemp("mlperf-train")
    (base / "target").mkdir()
    return _run(base / "target", base / "reports", *TINY_DATA, "--epochs", "2",
                "--batch-size", "2", "--clients", "2", "--runs", "1")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    base = tmp_path_factory.mktemp("mlperf-ckpt")
    (base / "target").mkdir()
    return _run(base / "target", base / "reports", "-w", "llama3-8b", "--scale", "1e-5",
                "--clients", "2")


def test_the_mlperf_command_writes_its_page_beside_the_summary(training) -> None:
    console, folder = training
    assert (folder / "report.html").is_file()
    assert f"report: {folder / 'report.html'}" in console


def test_a_training_page_has_the_published_columns_the_runs_and_the_marks(training,
                                                                           tmp_path) -> None:
    _, folder = training
    out = tmp_path / "page.html"
    proc = run_cli("report", str(folder), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    s = json.loads((folder / "mlperf.json").read_text())
    text = _text(out.read_text())
    for column in ("accelerator type", "client nodes", "simulated accelerators",
                   "read B/W (GiB/s)"):
        assert column in text
    p = s["published"]
    assert f"{p['accelerator_type']} 1 {p['simulated_accelerators']} " \
           f"{p['read_gib_s']:.3f}" in text  # the published row, in MLPerf's order
    assert "NOT A VALID RESULT" in text
    assert s["marks"] and all(mark in text for mark in s["marks"])
    for check in s["checks"]:
        assert check["check"] in text
    for run in (s["warmup"], *s["runs"]):
        assert run["id"] in text
    assert f"{s['runs'][0]['au']:.1%}".replace("%", " %") in text


def test_a_checkpoint_page_has_both_rates_and_their_difference(checkpoint) -> None:
    _, folder = checkpoint
    s = json.loads((folder / "mlperf.json").read_text())
    text = _text((folder / "report.html").read_text())
    for op in ("write", "read"):
        r = s[op]
        assert f"{r['mlperf_gib_s']:.3f}" in text and f"{r['aiio_gib_s']:.3f}" in text
        assert f"{r['difference_pct']:+.1f} %" in text
    assert "mean of the 10 per-checkpoint rates" in text
    assert "the slowest process" in text  # duration: the maximum over ranks
    for column in ("model", "client nodes", "processes", "checkpoint size (GiB)",
                   "save (GiB/s)", "load (GiB/s)"):
        assert column in text


@pytest.mark.parametrize("which", ["training", "checkpoint"])
def test_the_console_fits_80_columns(which: str, request: pytest.FixtureRequest) -> None:
    console, _ = request.getfixturevalue(which)
    lines = [ln for ln in console.splitlines() if not ln.startswith(("summary: ", "report: "))]
    assert lines
    too_wide = [ln for ln in lines if len(ln) > WIDTH]
    assert not too_wide, too_wide


def test_a_summary_saved_before_it_named_its_kind_still_gets_its_page(training,
                                                                      tmp_path) -> None:
    _, folder = training
    s = json.loads((folder / "mlperf.json").read_text())
    s.pop("kind")
    old = tmp_path / "mlperf.json"
    old.write_text(json.dumps(s))
    proc = run_cli("report", str(old))
    assert proc.returncode == 0, proc.stderr
    assert "simulated accelerators" in _text((tmp_path / "report.html").read_text())


def test_a_damaged_summary_shows_what_it_holds() -> None:
    page = report.render({"kind": "mlperf", "phase": "train", "published": 3})
    assert "could not be drawn" in page and "NOT A VALID RESULT" in page


def test_a_valid_summary_says_so_and_marks_nothing(training) -> None:
    _, folder = training
    s = {**json.loads((folder / "mlperf.json").read_text()), "marks": [], "valid": True}
    text = _text(report.render(s))
    assert "Valid by MLPerf Storage v3.0's rules" in text and "NOT A VALID" not in text


def test_a_search_the_scored_runs_do_not_confirm_is_not_called_confirmed(training) -> None:
    """The search found a count; a scored run at that count then fell under the floor (the
    search's probe and the scored runs are different runs): neither the page nor the console
    may say the scored runs confirm it."""
    from aiio.cli.mlperf import summary_lines

    _, folder = training
    s = json.loads((folder / "mlperf.json").read_text())
    s["au_pass"], s["runs"][0]["au"] = False, 0.847
    s["search"] = {"supported": 9, "first_failing": 10, "upper": 16, "probes": [
        {"accelerators": 9, "au": 0.946, "holds": True, "id": "probe-c9"},
        {"accelerators": 10, "au": 0.774, "holds": False, "id": "probe-c10"}]}
    for text in (_text(report.render(s)), " ".join(summary_lines(s))):
        assert "confirm it" not in text.replace("do not confirm it", "")
        assert "do not confirm it" in text
    s["au_pass"], s["runs"][0]["au"] = True, 0.95
    for text in (_text(report.render(s)), " ".join(summary_lines(s))):
        assert "confirm it" in text and "do not confirm it" not in text
