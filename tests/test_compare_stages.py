"""`aiio compare` of a lifecycle run: its headline stage (training's reads) against that
stage's fio test, the % of hero figure included, and the title says which stage it is."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import call_cli

LIFECYCLE = Path(__file__).parent / "data" / "results-v1" / "20261130-230544-all-demo-c2"


def test_a_lifecycle_run_is_compared_by_its_headline_stage() -> None:
    doc = json.loads((LIFECYCLE / "result.json").read_text())
    out = call_cli("compare", str(LIFECYCLE), "--json")
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)
    assert item["stage"] == "train"
    rows = {r["figure"]: r for r in item["rows"]}
    assert {r["test"] for r in item["rows"]} == {"seq_read"}
    assert rows["aggregate MiB/s (the % of hero figure)"]["phase"] == \
        doc["aggregate"]["train"]["last_done"]["mib_s"]
    text = call_cli("compare", str(LIFECYCLE))
    assert text.returncode == 0, text.stderr
    assert "(all, its train stage) vs fio seq_read" in " ".join(text.stdout.split())
