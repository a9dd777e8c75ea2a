"""Figures as a user reads them, from real tiny runs: each with the unit of what it is (a count
is a count, not a percentage), no row of a figure the result does not hold, and a figure of
nothing (the write latency of a mix with no writes) read as absent, never as 0 ns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aiio.report import html as h
from aiio.report.common import section_pairs
from aiio.report.run import io_pairs
from aiio.results import result
from aiio.stats import Histogram

from .conftest import TINY_DATA, run_cli


def _run(target: Path, results: Path, *extra: str) -> tuple[dict, Path, str]:
    """A real run through the CLI; returns its result, its folder and what it printed."""
    out = run_cli("run", "--target", str(target), "--results", str(results), *TINY_DATA, *extra)
    assert out.returncode == 0, out.stderr
    (path,) = results.glob("*/result.json")
    return json.loads(path.read_text()), path.parent, out.stdout


def _report_value(folder: Path, key: str) -> str:
    """The text the HTML report shows beside a figure's key."""
    page = (folder / "report.html").read_text()
    found = re.search(rf'<td class="k">{key}</td><td class="v">([^<]*)</td>', page)
    assert found, f"{key} is not in the report"
    return found.group(1)


@pytest.fixture(scope="module")
def no_au(tmp_path_factory) -> tuple[dict, Path]:
    """Training in which no client measured AU: a batch as large as each client's share, so
    every step is an epoch's first (warm-up); the result then says how many samples AU needs."""
    base = tmp_path_factory.mktemp("no-au")
    (base / "t").mkdir()
    res, folder, _ = _run(base / "t", base / "r", "--phase", "train", "--clients", "2",
                          "--epochs", "1", "--batch-size", "12", "-q")
    return res, folder


def test_counts_are_shown_as_counts_not_percentages(no_au) -> None:
    res, folder = no_au
    agg = res["aggregate"]
    counts = ("au_clients_measured", "au_samples_per_client_needed", "au_dataset_samples_needed")
    for key in counts:
        assert isinstance(agg[key], int), key
        assert h.by_name(key, agg[key]) == f"{agg[key]:,}", key
        assert _report_value(folder, key) == f"{agg[key]:,}", key
    assert agg["au_clients_measured"] == 0
    # fractions keep their percentage: the goal is 0.9 of the accelerators' time
    assert h.by_name("au_goal", 0.9) == "90.0 %"
    assert h.by_name("scaling_efficiency_min", 0.85) == "85.0 %"


def test_workload_durations_carry_their_unit(no_au) -> None:
    """restore_within is a duration (seconds) by its key declaration, not a bare 30."""
    res, _ = no_au
    rows = dict(section_pairs(res["workload"]["checkpoint"], "checkpoint"))
    assert rows["restore_within"] == "30.0 s"


def test_train_delivered_side_has_bytes_and_operations(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    res, folder, out = _run(tmp_path / "t", tmp_path / "r", "--phase", "train", "--clients",
                            "2", "--epochs", "2", "--batch-size", "2")
    d = res["aggregate"]["delivered"]
    assert d["bytes"] == d["device_bytes"] == res["aggregate"]["read_bytes"] > 0
    assert d["ops"] == res["aggregate"]["ops"] > 0
    rows = dict(io_pairs(result.model(res).section("delivered"), "delivered"))
    assert "n/a" not in rows["delivered bytes moved / operations"]
    assert f"{d['ops']} ops" in rows["delivered bytes moved / operations"]
    page = (folder / "report.html").read_text()
    assert "n/a / n/a" not in page


def test_an_empty_histogram_has_no_latency_figures() -> None:
    s = Histogram().summary()
    assert s["count"] == 0
    assert all(s[k] is None for k in s if k.endswith("_ns"))


def test_a_mix_without_writes_shows_no_write_latency(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    res, folder, out = _run(tmp_path / "t", tmp_path / "r", "--phase", "randrw", "--clients",
                            "1", "--set", "prep.file_size=1MiB", "--set", "prep.duration=0.3s",
                            "--set", "prep.read_share=1")
    agg = res["aggregate"]
    assert agg["write"]["ops"] == 0
    for c in res["clients"]:
        assert c["write"]["latency"]["count"] == 0
        assert c["write"]["latency"]["p99_ns"] is None
    assert " 0 ns" not in out
    (row,) = [line for line in out.splitlines() if "write latency p50 / p99" in line]
    assert "n/a / n/a" in row
    assert "0 ns" not in (folder / "report.html").read_text()
