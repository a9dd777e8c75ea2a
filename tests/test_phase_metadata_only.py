"""A phase that only touches metadata, added by the walk-through alone (tests/statlist_phase.py
and one registry line): its main operation is stat, no fio test pairs with it, and the
commands show its stat latency where they show a latency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiio.phases import REGISTRY
from aiio.results import figures, result

from .conftest import TINY_DATA, call_cli, flat, registered_run


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


FIO = Path(__file__).parent / "data" / "results-v1" / "20261130-230552-fio-c2"


@pytest.mark.parametrize("fio", [False, True], ids=["no-fio", "fio-given"])
def test_compare_says_no_fio_test_pairs_with_it(statted: Path, fio: bool) -> None:
    # the title said "vs fio seq_read (no fio result)" and the note "fio seq_read missing";
    # given a fio result, its seq_read figures stood beside the stats as if they were paired
    given = ("--fio", str(FIO)) if fio else ()
    out = call_cli("compare", str(statted), "--json", *given)
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)
    assert all(r["test"] is None and r["fio"] is None and r["percent"] is None
               for r in item["rows"]), item["rows"]
    assert item["note"] == "no fio test pairs with phase 'statlist': its figures stand alone"
    # given a fio result, the JSON named it and listed its suite as the run's counterpart;
    # a script tests `fio_test` (null: no fio test pairs), as the console says "no fio
    # counterpart"
    assert item["fio_result"] is None and item["hero_suite"] == {}, item
    assert item["fio_test"] is None, item
    text = call_cli("compare", str(statted), *given)
    assert text.returncode == 0, text.stderr
    assert "seq_read" not in text.stdout, text.stdout
    assert "(statlist): no fio counterpart" in flat(text.stdout), text.stdout
    assert "stat latency p99" in flat(text.stdout)


def test_a_sweep_of_it_makes_up_no_verdict(target: Path, results: Path, monkeypatch) -> None:
    # its sweep was judged on the MiB/s it never moves: "sublinear ... E(2) = 0.00"
    monkeypatch.setitem(REGISTRY, "statlist", "tests.statlist_phase")
    out = call_cli("scale", "--phase", "statlist", "--clients", "1,2", "--target", str(target),
                   "--results", str(results), *TINY_DATA, "--no-history", "-q")
    assert out.returncode == 0, out.stderr
    (folder,) = results.glob("*-scale-*")
    saved = result.load(folder)
    assert [r["aggregate_mib_s"] for r in saved["table"]] == [0.0, 0.0]
    # E(N) and C(N) against a baseline that moved nothing are undefined, not 0
    assert [(r["efficiency"], r["consistency"]) for r in saved["table"]] == [(None, None)] * 2
    v = saved["verdict"]
    assert v["shape"] == "not_measurable", v
    assert v["statements"][0].startswith("not measurable: the phase moves no bytes"), v
    assert v["knee"] is None and v["linear_up_to"] is None and not v["efficiency"], v
    assert "E(2)" not in out.stdout and "sublinear" not in out.stdout, out.stdout
    assert "verdict: not measurable" in flat(out.stdout), out.stdout
    assert (folder / "aggregate.svg").exists()  # the charts draw no undefined E(N)
    page = (folder / "report.html").read_text()
    assert "not measurable: the phase moves no bytes" in page and "sublinear" not in page
    # the page says it in words, and lists no threshold or linear range it could not judge
    assert "Scaling: not measurable" in page and "scales linearly up to" not in page
    assert "scaling_efficiency" not in figures.sweep_figures(saved)  # nor does the history


def test_find_max_refuses_it_in_one_line(target: Path, monkeypatch) -> None:
    # --find-max searches for the AU goal, which a phase of stats does not have
    monkeypatch.setitem(REGISTRY, "statlist", "tests.statlist_phase")
    out = call_cli("scale", "--phase", "statlist", "--find-max", "--max-clients", "4",
                   "--target", str(target))
    assert out.returncode == 2 and "--find-max searches for the AU goal" in out.stderr
    assert not (target / "aiio").exists()


def test_accept_of_its_sweep_says_why_there_is_no_efficiency(target: Path, results: Path,
                                                             tmp_path: Path, monkeypatch) -> None:
    # min_scaling_efficiency on a sweep of it errored with "has no lowest scaling efficiency
    # of the sweep" and no reason, where the sweep's verdict says why
    monkeypatch.setitem(REGISTRY, "statlist", "tests.statlist_phase")
    spec = tmp_path / "spec.toml"
    spec.write_text('[spec]\nname = "stats"\n\n[[check]]\nname = "stat-sweep"\n'
                    'phase = "statlist"\nworkload = "demo"\nclients = [1, 2]\n\n'
                    '[check.require]\nmin_scaling_efficiency = 0.5\n')
    out = call_cli("accept", str(spec), "--target", str(target), "--results", str(results),
                   "--no-report", "--no-history", "-q")
    assert out.returncode == 1, out.stderr
    (folder,) = results.glob("*-accept-*")
    (check,) = result.load(folder)["checks"]
    assert check["status"] == "error", check
    assert "not measurable: the phase moves no bytes" in check["reason"], check["reason"]
