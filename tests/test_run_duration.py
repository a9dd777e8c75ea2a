"""`aiio run --duration` limits the phase that runs, through its own run-time key
(`Phase.duration_key`), whichever spelling names the phase; a phase that is not time-based
refuses it in one line instead of ignoring it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import call_cli, run_cli

MIX = ("--clients", "1", "--set", "prep.file_size=1MiB", "--set", "prep.threads=1",
       "--json", "-q", "--no-report", "--no-history")


@pytest.mark.parametrize("spelling", [("--phase", "randrw"),
                                      ("--phase", "prep", "--set", "prep.mode=randrw")])
def test_duration_limits_the_random_mix(spelling: tuple[str, ...], target: Path,
                                        results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   *spelling, *MIX, "--duration", "0.5s", "--target", str(target),
                   "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["workload"]["prep"]["duration"] == 0.5


def test_duration_is_refused_by_a_phase_that_is_not_time_based(target: Path,
                                                                results: Path) -> None:
    proc = call_cli("run", "--phase", "checkpoint", "--duration", "5s", "--target", str(target),
                    "--results", str(results), "-q")
    assert proc.returncode == 2
    assert "--duration" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
