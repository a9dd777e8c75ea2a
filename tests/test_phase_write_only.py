"""A phase that only writes, added by the walk-through alone (tests/scribble_phase.py and one
registry line): its writes are its I/O section, the device check counts no reads it never
made, and `aiio compare` sets it against fio's sequential writes, known or not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiio.phases import REGISTRY, get_phase
from aiio.results import result
from aiio.run import runner

from .conftest import call_cli, registered_run

STORED = Path(__file__).parent / "data" / "results-v1"


@pytest.fixture
def scribbled(target: Path, results: Path, monkeypatch) -> Path:
    """The folder of a real run of the write-only phase, registered with one line."""
    return registered_run("scribble", target, results, monkeypatch)


def test_its_writes_are_its_io_section(scribbled: Path) -> None:
    res = result.load(scribbled)
    assert list(res.io) == ["write"] and res.section("write").bytes == res["aggregate"]["bytes"]
    assert all(list(c.io) == ["write"] for c in res.clients)
    assert res.main_op == "write" and list(res["io"]["aggregate"]) == ["write"]


def test_the_device_check_counts_no_reads_it_never_made(scribbled: Path) -> None:
    # its bytes were taken for reads: a block device that read none of them (they were
    # written) gave a false device_saw_fewer_bytes whenever the machine's disk was quiet
    res = result.load(scribbled)
    assert res["aggregate"]["bytes"] > 0
    assert runner.bytes_read(get_phase("scribble"), res["aggregate"]) == 0
    train = result.load(STORED / "20261130-230529-train-demo-c2")
    assert runner.bytes_read(get_phase("train"), train["aggregate"]) == \
        train["aggregate"]["read_bytes"] > 0
    if res["monitor"].get("device"):
        assert "device_saw_fewer_bytes" not in [w.code for w in res.warnings]


@pytest.mark.parametrize("known", [True, False], ids=["registered", "unknown"])
def test_compare_sets_it_against_sequential_writes(scribbled: Path, known: bool,
                                                   monkeypatch) -> None:
    if not known:  # another aiio, without the phase: the recorded main operation decides
        monkeypatch.delitem(REGISTRY, "scribble")
    out = call_cli("compare", str(scribbled), "--json")
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)
    assert {r["test"] for r in item["rows"]} == {"seq_write"}
    assert "write latency p99" in [r["figure"] for r in item["rows"]]
    assert "fio seq_write missing" in item["note"]
