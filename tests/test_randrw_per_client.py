"""A random mix's per-client figures count reads and writes, as its aggregate does: with reads
only the per-client spread of a write-heavy mix read near zero, and a write-only mix's sweep
said every client's bandwidth fell to 0.00 of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiio.results import figures, result
from aiio.run import runner
from aiio.sweep import per_point
from tests.conftest import tiny_workload


def test_a_write_only_mix_keeps_each_clients_bandwidth(target: Path, results: Path) -> None:
    w = tiny_workload(prep__mode="randrw", prep__file_size="1MiB", prep__threads=1,
                      prep__duration="300ms", prep__read_share=0.0)
    res, folder = runner.run(runner.RunRequest("randrw", w, str(target), str(results)))
    res = result.load(folder)
    own = [c["read"]["mib_s"] + c["write"]["mib_s"] for c in res["clients"]]
    assert min(own) > 0
    point = per_point.point_figures("randrw", res["aggregate"])
    assert point.per_client_mib_s.mean == pytest.approx(sum(own) / len(own))
    assert point.per_client_mib_s.min == pytest.approx(min(own))
    assert point.jain > 0
    assert figures.run_figures(res)["client_mib_s_min"] == pytest.approx(min(own))
