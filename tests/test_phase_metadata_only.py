"""A phase that only touches metadata, added by the walk-through alone (tests/statlist_phase.py
and one registry line): its main operation is stat, no fio test pairs with it, and the
commands show its stat latency where they show a latency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiio import result
from aiio.phases import REGISTRY

from .conftest import call_cli, registered_run


@pytest.fixture
def statted(target: Path, results: Path, monkeypatch) -> Path:
    """The folder of a real run of the metadata-only phase, registered with one line."""
    return registered_run("statlist", target, results, monkeypatch)


@pytest.mark.parametrize("known", [True, False], ids=["registered", "unknown"])
def test_compare_shows_the_latency_of_its_main_operation(statted: Path, known: bool,
                                                         monkeypatch) -> None:
    # compare took the latency of the fio test's operation (read, by default) even where no
    # fio test pairs with the run: "read latency p99: -" for a run of stats
    if not known:
        monkeypatch.delitem(REGISTRY, "statlist")
    res = result.load(statted)
    assert res.main_op == "stat" and res.first().p("stat") is not None
    out = call_cli("compare", str(statted), "--json")
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)
    rows = {r["figure"]: r["phase"] for r in item["rows"]}
    assert rows.get("stat latency p99") == res.first().p("stat"), rows
