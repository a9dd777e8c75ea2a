"""Every stored result of every schema (tests/data/results-v1, -v2, -v3: real results of tiny
runs made by the code of each schema) opens in `aiio report`, `aiio compare`, `aiio history`
and `aiio size --from`, and each command shows a figure the stored JSON holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiio.results import history, result

from .test_results_v1 import _aiio

DATA = Path(__file__).parent / "data"
STORED = sorted(p.parent for p in DATA.glob("results-v*/*/result.json"))
# what `aiio size --from` takes: a train run, a checkpoint run or a train sweep
SIZED = ("train", "checkpoint")


def _doc(folder: Path) -> dict:
    return json.loads((folder / "result.json").read_text())


def _id(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name.split('-', 2)[2]}"


@pytest.mark.parametrize("folder", STORED, ids=_id)
def test_a_stored_result_opens_in_report_and_history(folder: Path, tmp_path: Path) -> None:
    doc = _doc(folder)
    page = tmp_path / "page.html"
    _aiio("report", str(folder), "-o", str(page), "--no-charts")
    assert doc["id"] in page.read_text()
    res = result.load(folder)
    if doc["kind"] == "run":
        rec = history.run_record(res)
        assert (rec.result_id, rec.status) == (doc["id"], doc["status"])
    elif doc["kind"] == "sweep":
        assert history.sweep_record(res).result_id == doc["id"]


@pytest.mark.parametrize("folder", [f for f in STORED if _doc(f)["kind"] == "run"], ids=_id)
def test_a_stored_run_opens_in_compare(folder: Path) -> None:
    doc = _doc(folder)
    [shown] = json.loads(_aiio("compare", str(folder), "--json"))
    assert (shown["run"], shown["phase"]) == (doc["id"], doc["phase"])
    rows = {r["figure"]: r["phase"] for r in shown["rows"]}
    assert rows["clients / fio jobs"] == len(doc["clients"])


@pytest.mark.parametrize("folder", [f for f in STORED if _doc(f).get("phase") in SIZED
                                    and _doc(f)["kind"] in ("run", "sweep")], ids=_id)
def test_a_stored_train_or_checkpoint_result_opens_in_size(folder: Path) -> None:
    doc = _doc(folder)
    values = json.loads(_aiio("size", "--json", "-w", "demo", "--from", str(folder)))["values"]
    if doc["phase"] == "checkpoint":
        assert values["checkpoint_measured_mib_s"] == doc["aggregate"]["write_mib_s"]
    elif doc["kind"] == "run":
        assert values["peak_mib_s"] == doc["aggregate"]["first_done"]["mib_s"]
    else:
        assert values["peak_mib_s"] == max(p["result"]["aggregate"]["first_done"]["mib_s"]
                                           for p in doc["points"])
