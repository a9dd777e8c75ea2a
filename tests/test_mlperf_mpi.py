"""`aiio mlperf` across MPI ranks (hosts): MLPerf's validator asks the same accelerator count
on every host, so a search for the most accelerators steps by whole hosts, and a run whose
hosts hold different counts is marked."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import TINY_DATA
from .mpi import mpi_run, needs_mpi


def _mlperf(target: Path, results: Path, *args: str) -> dict:
    done = mpi_run(2, "mlperf", "-t", str(target), "--results", str(results), "--json", "-q",
                   *TINY_DATA, "--epochs", "2", "--batch-size", "2", "--runs", "1", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_mpi
def test_hosts_holding_different_accelerator_counts_are_marked(target: Path,
                                                               results: Path) -> None:
    s = _mlperf(target, results, "--clients", "3")
    (check,) = [c for c in s["checks"] if c["check"] == "accelerators_per_host"]
    assert check["ok"] is False and "2, 1" in check["value"], check
    assert s["valid"] is False
    assert any("accelerators_per_host" in m for m in s["marks"])


@needs_mpi
def test_the_search_steps_by_whole_hosts(target: Path, results: Path) -> None:
    """Two hosts, up to 5 accelerators: the counts probed are 2 and then 4 (1 and 2 a host),
    never an odd count that no submission could run; the answer is one of them (4 when both
    hold, as on an idle host; a loaded 2-core host can drop the probe at 4 under the floor)."""
    s = _mlperf(target, results, "--find-max", "5")
    search = s["search"]
    probed = [p["accelerators"] for p in search["probes"]]
    assert probed == [2, 4][:len(probed)] and search["upper"] == 4, search
    assert search["supported"] == max(p["accelerators"] for p in search["probes"]
                                      if p["holds"])
    assert s["published"]["simulated_accelerators"] == search["supported"]
    (check,) = [c for c in s["checks"] if c["check"] == "accelerators_per_host"]
    assert check["ok"] is True, check
