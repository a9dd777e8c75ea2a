"""A Ctrl-C held while a run ends, and a search cut within its first probe.

- `aiio run`: a Ctrl-C as an ok run saves its result is kept and raised at the command's end
  as a bare KeyboardInterrupt: the command exits 130 with "aiio: interrupted", a line that
  names no saved result (before, it said "its result, ok, saved in FOLDER").
- a search stopped within the repeats of its first probe (1 user per client) has no count
  that held and none that failed; its statement says the goal "does not hold even with 1
  user per client", quoting a repeat that held well within the goal.
Real runs of a tiny KV cache; the Ctrl-C is sent at a chosen point by a wrapper."""

from __future__ import annotations

import json
from pathlib import Path

from .test_kvcache_users import SETS
from .test_stopped_runs_kept import CTRL_C_AS_OK_RUN_ENDS, CTRL_C_AS_RUN_STARTS, _aiio


def test_ctrl_c_as_an_ok_run_ends_names_its_saved_result(target: Path, results: Path) -> None:
    got = _aiio(CTRL_C_AS_OK_RUN_ENDS, 1, "run", "-p", "kvcache", "--clients", "2",
                "--duration", "0.5s", *SETS, "-t", str(target), "--results", str(results),
                "--no-history", "--no-report", "--quiet")
    (saved,) = results.glob("*/result.json")
    assert json.loads(saved.read_text())["status"] == "ok"
    assert got.returncode == 130, got.stderr
    last = got.stderr.strip().splitlines()[-1]
    assert str(saved.parent) in last, got.stderr  # the line names the result the run saved


def test_a_search_cut_within_its_first_probe_claims_no_failure(target: Path,
                                                               results: Path) -> None:
    # probe of 1 user: its first repeat ends ok (well within 100 ms), the Ctrl-C as the
    # second starts
    got = _aiio(CTRL_C_AS_RUN_STARTS, 2, "scale", "-p", "kvcache", "--clients", "2",
                "--duration", "0.5s", *SETS, "--set", "kvcache.goals.lenient=100",
                "--find-max", "--max-users", "8", "--goal", "lenient", "--repeat", "2",
                "-t", str(target), "--results", str(results), "--no-history", "--quiet")
    assert got.returncode == 130, got.stderr
    (folder,) = results.glob("*-find-max-users-kvcache")
    found = json.loads((folder / "result.json").read_text())
    assert [p["decision"] for p in found["probes"]] == ["undecided"]
    assert found["probes"][0]["runs"][0]["held"], found["probes"]
    assert "does not hold" not in found["statement"], found["statement"]
    assert "within the probe of 1 (1 of 2 repeats done" in found["statement"], \
        found["statement"]
