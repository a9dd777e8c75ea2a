"""`aiio scale --phase kvcache --find-max --max-users N`, stopped or killed: the search kept
nothing of its own until it ended (a Ctrl-C in its third probe left two probes' runs and no
answer), and a finished search had no page. Real runs of a tiny KV cache, each probe about a
second."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from aiio.results.result import load

from .conftest import call_cli, ctrl_c_after_runs
from .test_kvcache_users import SETS

# Apart from the parallel pass: a search goes on past its first probe only if that run was
# not overloaded, and beside eight workers on two cores a closed loop's latency can rise
# through a short run (tests/test_kvcache.py's search is apart for the same reason).
pytestmark = pytest.mark.serial

SEARCH = ("scale", "-p", "kvcache", "--clients", "2", "--duration", "0.5s", *SETS,
          "--set", "kvcache.goals.lenient=100", "--find-max", "--max-users", "4",
          "--goal", "lenient")


def _search(target: Path, results: Path) -> tuple[str, ...]:
    return (*SEARCH, "-t", str(target), "--results", str(results))


def test_ctrl_c_in_a_later_probe_saves_the_probes_done(target: Path, results: Path) -> None:
    code, out, err = ctrl_c_after_runs(_search(target, results), results, target=target)
    assert code == 130, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "the search stopped after 1 probe" in err, err
    (folder,) = results.glob("*-find-max-users-kvcache")
    assert str(folder) in err
    found = json.loads((folder / "result.json").read_text())
    assert found["status"] == "interrupted" and found["error"]
    assert [p["users"] for p in found["probes"]] == [1]
    assert found["max_users_at_goal"] == 1 and found["first_not_held"] is None
    # what it knows, said as no more than that: 1 held, nothing above it was decided
    assert "held up to 1 user per client" in found["statement"], found["statement"]
    assert "stopped before" in found["statement"], found["statement"]
    assert " ".join(found["statement"].split()) in " ".join(out.split())
    page = (folder / "report.html").read_text()
    assert "interrupted" in page and found["probes"][0]["runs"][0]["folder"] in page


def test_a_search_killed_outright_keeps_the_probes_done(target: Path, results: Path) -> None:
    code, _, _ = ctrl_c_after_runs(_search(target, results), results, target=target,
                                   sig=signal.SIGKILL)
    assert code == -signal.SIGKILL
    (folder,) = results.glob("*-find-max-users-kvcache")
    found = load(folder)
    assert found.status == "interrupted" and "process gone" in found.doc["error"]
    assert [p["users"] for p in found.doc["probes"]] == [1]
    shown = call_cli("report", str(folder))
    assert shown.returncode == 0, shown.stderr
    assert "process gone" in (folder / "report.html").read_text()


def test_a_finished_search_has_a_page_of_its_probes(target: Path, results: Path) -> None:
    got = call_cli(*_search(target, results))
    assert got.returncode == 0, got.stderr
    (folder,) = results.glob("*-find-max-users-kvcache")
    found = json.loads((folder / "result.json").read_text())
    assert found["status"] == "ok" and found["probes"], found
    assert f"report: {folder / 'report.html'}" in got.stdout
    page = (folder / "report.html").read_text()
    assert "has no view" not in page
    assert " ".join(found["statement"].split()) in " ".join(page.split())
    for probe in found["probes"]:  # a row each, linked to its run's own page
        (run,) = probe["runs"]
        assert f'href="../{run["folder"]}/report.html"' in page
        assert (results / run["folder"] / "report.html").exists()
