"""A search or table stopped by a Ctrl-C keeps every run that ended before the stop. Two runs
were dropped: an ok run whose ending heard a Ctrl-C (its result saved "ok" and recorded in
the history, then RunInterrupted), and the repeats a probe had finished when a Ctrl-C came
in its next repeat. Both stay on disk and in the history, but the search's probes and the
table's rows leave them out, and the statement says the search "stopped before it tried
more" though it had measured more. Real runs of a tiny KV cache; the Ctrl-C is sent at a
chosen point by a wrapper, so the test does not rest on timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO
from .test_kvcache_users import SETS

# Apart from the parallel pass: a search goes on past its first probe only if that run was
# not overloaded, and beside eight workers on two cores a closed loop's latency can rise
# through a short run (tests/test_kvcache.py's search is apart for the same reason).
pytestmark = pytest.mark.serial

# aiio, with a Ctrl-C sent to itself as the Nth run that ended ok saves its result
CTRL_C_AS_OK_RUN_ENDS = """
import os, signal, sys
import aiio.run.runner as r
orig, n = r._finish, [0]
def finish(phase, rc, args, out, folder, on_saved=None):
    if out["status"] == "ok":
        n[0] += 1
        if n[0] == int(sys.argv[1]):
            os.kill(os.getpid(), signal.SIGINT)
    return orig(phase, rc, args, out, folder, on_saved)
r._finish = finish
from aiio.cli import main
main(sys.argv[2:])
"""

# aiio, with a Ctrl-C as the Nth run starts (before it wrote anything)
CTRL_C_AS_RUN_STARTS = """
import sys
import aiio.run.runner as r
orig, n = r.run, [0]
def run(req, ui=None):
    n[0] += 1
    if n[0] == int(sys.argv[1]):
        raise KeyboardInterrupt
    return orig(req, ui)
r.run = run
from aiio.cli import main
main(sys.argv[2:])
"""

COMMON = ("scale", "-p", "kvcache", "--clients", "2", "--duration", "0.5s", *SETS)
SEARCH = (*COMMON, "--set", "kvcache.goals.lenient=100", "--find-max", "--max-users", "8",
          "--goal", "lenient")


def _aiio(code: str, at: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, str(at), *args], cwd=REPO, text=True,
                          capture_output=True, timeout=180)


def _ok_runs(results: Path) -> set[str]:
    return {p.parent.name for p in results.glob("*-kvcache-*/result.json")
            if json.loads(p.read_text())["status"] == "ok"}


def _kept(doc: dict) -> set[str]:
    return {r["folder"] for step in doc.get("probes", doc.get("rows", []))
            for r in step.get("runs", [step]) if isinstance(r.get("folder"), str)}


def _stopped(code: str, at: int, results: Path, kind: str, *args: str) -> tuple[str, dict]:
    """aiio ARGS stopped by the wrapper `code` at its `at`th run: its stderr, and the search
    or table (`kind`: its folder's ending) it saved."""
    got = _aiio(code, at, *args, "--results", str(results))
    assert got.returncode == 130, got.stderr
    (folder,) = results.glob(f"*-{kind}")
    return got.stderr, json.loads((folder / "result.json").read_text())


def test_a_search_keeps_the_ok_run_whose_ending_heard_a_ctrl_c(target: Path,
                                                                results: Path) -> None:
    err, found = _stopped(CTRL_C_AS_OK_RUN_ENDS, 2, results, "find-max-users-kvcache",
                          *SEARCH, "-t", str(target))
    assert "the search stopped after 2 probes" in err, err
    # both runs ended ok and are in the history; the search kept only the first
    assert _kept(found) == _ok_runs(results), (found["probes"], found["statement"])


def test_a_table_keeps_the_ok_run_whose_ending_heard_a_ctrl_c(target: Path,
                                                               results: Path) -> None:
    err, table = _stopped(CTRL_C_AS_OK_RUN_ENDS, 2, results, "users-kvcache", *COMMON,
                          "--users", "1,2,4", "-t", str(target))
    assert len(table["rows"]) == 2, (err, table["rows"])


def test_a_search_stopped_between_repeats_keeps_the_repeat_done(target: Path,
                                                                results: Path) -> None:
    # probe 1: runs 1 and 2; probe 2: run 3 ends ok, the Ctrl-C comes as run 4 starts
    _, found = _stopped(CTRL_C_AS_RUN_STARTS, 4, results, "find-max-users-kvcache", *SEARCH,
                        "--repeat", "2", "-t", str(target))
    assert len(_ok_runs(results)) == 3
    assert _kept(found) == _ok_runs(results), (found["probes"], found["statement"])
    assert "before it tried more" not in found["statement"], found["statement"]
    assert "within the probe of 2 (1 of 2 repeats done" in found["statement"]
