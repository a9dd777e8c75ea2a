"""Names the history and the monitoring export cannot take as they are: a target folder whose
name is not UTF-8 (Linux allows any bytes) reaches SQLite and the textfile as readable text."""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from aiio.results import monitoring
from aiio.results.history import History, Record

RAW = os.fsdecode(b"/mnt/scratch\xff")  # the str Python gives for that folder name


def _rec(target: str) -> Record:
    return Record(kind="check", name="nightly", target=target, status="pass", passed=True,
                  figures={"aggregate_mib_s": 100.0}, phase="train", workload="demo",
                  clients="2", ts=1000.0)


def test_a_target_name_that_is_not_utf8_is_recorded(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite") as h:
        h.add(_rec(RAW))
        h.add(_rec(RAW))
        (first, second) = h.records()
    assert first.target == second.target == "/mnt/scratch\\xff"  # one series, readable


def test_a_target_name_that_is_not_utf8_is_exported(tmp_path: Path) -> None:
    prom = monitoring.write(tmp_path / "aiio.prom", [(_rec(RAW), [])])
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    (sample,) = families["aiio_aggregate_bytes_per_second"].samples
    assert sample.labels["target"] == "/mnt/scratch\\xff"


def test_records_of_a_target_that_is_not_utf8_are_found(tmp_path: Path) -> None:
    """Acceptance asks for a check's earlier records by the target path as the OS gave it."""
    with History(tmp_path / "h.sqlite") as h:
        h.add(_rec(RAW))
        assert len(h.records(name="nightly", target=RAW)) == 1
