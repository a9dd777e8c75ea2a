"""A sweep holds the target as one run does, from its first point to its last: its run lock
and its dataset's lock. It let go of both at the end of each point, so another aiio process
could take the target between two points: `aiio clean` removed the dataset and the next point
failed on a target that was gone, and `aiio datagen --force` wrote the dataset anew while the
next point waited for it. Two real processes: the sweep, and a regeneration of its dataset
that waits for the dataset's lock from the sweep's first point on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import TINY_DATA, finish, wait_for

SWEEP = ("scale", "--clients", "1,2", "--duration", "2s", "--batch-size", "2", *TINY_DATA,
         "--no-report", "--no-history", "--no-charts")


def _points_done(results: Path) -> int:
    """The sweep's point results that have ended (saved with a status other than running)."""
    found = [json.loads(p.read_text()) for p in results.glob("*/points/*/result.json")]
    return sum(1 for r in found if r.get("status") != "running")


def test_a_regeneration_waits_for_the_whole_sweep_not_one_point(target: Path, results: Path,
                                                                tmp_path: Path, start) -> None:
    sweep_log, gen_log = tmp_path / "sweep.log", tmp_path / "datagen.log"
    sweep = start(sweep_log, *SWEEP, "--target", str(target), "--results", str(results))
    wait_for(sweep, lambda: "point 1/2" in sweep_log.read_text()
             and (target / "aiio" / "datasets" / "demo" / "manifest.json").exists(),
             "the sweep's first point with its dataset")
    gen = start(gen_log, "datagen", "--force", "--target", str(target), *TINY_DATA)
    code, said = finish(gen, gen_log)
    done_then = _points_done(results)  # the regeneration has ended: how far was the sweep?
    sweep_code, sweep_said = finish(sweep, sweep_log)
    assert code == 0, said
    assert sweep_code == 0, sweep_said
    assert done_then == 2, (f"the dataset was generated anew after {done_then} of the sweep's "
                            f"2 points:\n{sweep_said}")
    assert "waiting for another aiio run" not in sweep_said, sweep_said
