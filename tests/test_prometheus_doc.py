"""docs/METHOD.md lists the Prometheus export's metrics with their units; a dashboard is built
from that list, so it is read here against a real export: every metric the export writes is
listed, every listed metric is written, and each value is the history's figure converted to
the unit the list states (a list saying MiB/s where the file holds bytes/s is off by 2^20)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from aiio.results.figures import FIGURES
from aiio.results.history import History, Record

from .conftest import REPO, call_cli

# (the history's unit, the unit the list states) -> the factor between them; a pair not here
# is a unit the list must not state for that figure
CONVERT = {("MiB/s", "bytes per second"): 2.0**20, ("s", "seconds"): 1.0,
           ("ms", "seconds"): 1e-3, ("%", "ratio 0..1"): 1.0, ("", "no unit"): 1.0,
           ("", "samples per second"): 1.0, ("", "queries per second"): 1.0,
           ("", "tokens per second"): 1.0}
ROW = re.compile(r"^\| `(aiio_\w+)` \| (`\w+`|-) \| ([^|]+?) \|")


def _listed() -> dict[str, tuple[str | None, str]]:
    """METHOD.md's metric rows: name -> (the history figure, or None, and its unit)."""
    text = (REPO / "docs" / "METHOD.md").read_text()
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            figure = m.group(2).strip("`") if m.group(2) != "-" else None
            rows[m.group(1)] = (figure, m.group(3).strip())
    return rows


def _export(tmp_path: Path) -> dict[str, float]:
    """`aiio history --prometheus` of one record holding every figure, each at a value whose
    conversion shows (1.5 of the history's unit): metric name -> value."""
    db = tmp_path / "h.sqlite"
    with History(db) as h:
        h.add(Record(kind="check", name="n", target="/mnt/a", status="pass", passed=True,
                     figures=dict.fromkeys(FIGURES, 1.5), required={"p99_ms": 1.5},
                     phase="train", workload="demo", clients="2", spec="s", ts=1000.0))
    prom = tmp_path / "aiio.prom"
    proc = call_cli("history", "--history", str(db), "--prometheus", str(prom))
    assert proc.returncode == 0, proc.stderr
    out = {}
    for family in text_string_to_metric_families(prom.read_text()):
        for sample in family.samples:
            out.setdefault(sample.name, sample.value)
    return out


def test_method_lists_the_exported_metrics_with_their_units(tmp_path):
    listed, written = _listed(), _export(tmp_path)
    assert listed, "docs/METHOD.md lists no Prometheus metric (| `aiio_...` | rows)"
    assert set(listed) == set(written)
    for name, (figure, unit) in listed.items():
        if figure is None:
            continue  # pass/fail, status, regression, required, timestamp: not figures
        factor = CONVERT.get((FIGURES[figure].unit, unit))
        assert factor is not None, f"{name}: listed in {unit!r}, history keeps {figure} in " \
            f"{FIGURES[figure].unit!r}"
        assert written[name] == pytest.approx(1.5 * factor), (name, unit)
