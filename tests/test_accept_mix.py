"""Acceptance checks of the phases that read and write at once (randrw under either name,
prep): the bandwidth, fairness and latency thresholds judge figures the result holds, and the
check's `duration` limits the phase that runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

CHECK = """
[[check]]
name = "{name}"
phase = "{phase}"
workload = "demo"
clients = 1
duration = "0.5s"

[check.set]
prep.file_size = "1MiB"
prep.threads = 1
{extra}

[check.require]
min_aggregate_mib_s = 0.001
min_client_mib_s = 0.001
max_cv = 10
max_p99_ms = 100000
"""


def test_a_random_mix_check_is_judged_on_its_figures(target: Path, results: Path,
                                                     tmp_path: Path) -> None:
    spec = tmp_path / "mix.toml"
    spec.write_text('[spec]\nname = "mix"\n'
                    + CHECK.format(name="randrw", phase="randrw", extra="")
                    + CHECK.format(name="prep-randrw", phase="prep",
                                   extra='prep.mode = "randrw"'))
    proc = run_cli("accept", "--no-report",
                   str(spec), "--target", str(target), "--results", str(results),
                   "--quiet", "--no-history")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = next(p for p in results.iterdir() if "-accept-" in p.name)
    out = json.loads((folder / "result.json").read_text())
    assert (out["passed"], out["errors"]) == (2, 0)
    for check in out["checks"]:
        run = json.loads((results / check["result_id"] / "result.json").read_text())
        agg = run["aggregate"]
        assert run["workload"]["prep"]["duration"] == pytest.approx(0.5)
        # read plus write, as the sweep judges the mix
        assert check["measured"]["aggregate_mib_s"] == pytest.approx(
            agg["read"]["first_done"]["mib_s"] + agg["write"]["first_done"]["mib_s"])
        assert check["measured"]["p99_ms"] == agg["read"]["latency"]["read"]["p99_ns"] / 1e6
        assert check["measured"]["client_mib_s_min"] == agg["per_client_mib_s"]["min"]
