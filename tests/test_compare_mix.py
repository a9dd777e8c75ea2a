"""`aiio compare` on a random mix: its first-done, per-client and latency rows stand beside
fio's rand_mix (they were all '-', read from where a randrw result does not keep them); the
first done has no fio figure beside it (fio's aggregate is last done)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import call_cli, run_cli

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def test_a_random_mix_is_compared_figure_by_figure(target: Path, results: Path) -> None:
    proc = run_cli("fio", "--target", str(target), "--results", str(results), "--clients", "1",
                   "--runtime", "500ms", "--ramp-time", "0", "--size", "4MiB", "--tests",
                   "rand_mix", "--quiet")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("run", "--phase", "randrw", "--target", str(target), "--results",
                   str(results), "--clients", "1", "--set", "prep.threads=1", "--set",
                   "prep.file_size=4MiB", "--duration", "0.5s", "--json", "--quiet",
                   "--no-report", "--no-history")
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    proc = call_cli("compare", str(results / run["id"]), "--json")
    assert proc.returncode == 0, proc.stderr
    [item] = json.loads(proc.stdout)
    rows = {r["figure"]: r["phase"] for r in item["rows"]}
    agg = run["aggregate"]
    assert rows["aggregate MiB/s, first done"] == pytest.approx(
        agg["read"]["first_done"]["mib_s"] + agg["write"]["first_done"]["mib_s"])
    assert rows["per client MiB/s, mean"] == agg["per_client_mib_s"]["mean"]
    assert rows["per client MiB/s, min"] == agg["per_client_mib_s"]["min"]
    assert rows["read latency p99"] == agg["read"]["latency"]["read"]["p99_ns"]
    # fio's figure is last done: a first done is never set against it
    first = next(r for r in item["rows"] if r["figure"] == "aggregate MiB/s, first done")
    assert first["fio"] is None and first["percent"] is None
