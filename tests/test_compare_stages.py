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
    # the storage's side, as fio's is: the bytes the loaders were delivered
    assert rows["aggregate MiB/s (the % of hero figure)"]["phase"] == \
        doc["aggregate"]["train"]["delivered"]["last_done"]["mib_s"]
    # so are the per-client rows beside fio's per-job figures, and the first done
    delivered = doc["aggregate"]["train"]["delivered"]
    assert rows["per client MiB/s, mean"]["phase"] == delivered["per_client_mib_s"]["mean"]
    assert rows["per client MiB/s, min"]["phase"] == delivered["per_client_mib_s"]["min"]
    assert rows["aggregate MiB/s, first done"]["phase"] == delivered["first_done"]["mib_s"]
    text = call_cli("compare", str(LIFECYCLE))
    assert text.returncode == 0, text.stderr
    assert "(all, its train stage) vs fio seq_read" in " ".join(text.stdout.split())
