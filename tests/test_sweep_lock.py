"""A sweep holds the target as one run does, from its first point to its last: its run lock
and its dataset's lock. It let go of both at the end of each point, so another aiio process
could take the target between two points: `aiio clean` removed the dataset and the next point
failed on a target that was gone, and `aiio datagen --force` wrote the dataset anew while the
next point waited for it. Two real processes: the sweep, and a regeneration of its dataset
that waits for the dataset's lock from the sweep's first point on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import TINY_DATA, call_cli, finish, saved_result, wait_for
from tests.test_enospc import small_fs  # noqa: F401 - the fixture: a 64 MiB tmpfs

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


def test_a_refusal_at_a_later_point_leaves_no_result_of_that_point(
        small_fs: Path, results: Path) -> None:  # noqa: F811
    """The sweep's target, kept from its first point, had been written by that point: a later
    point refused before it wrote anything (its files do not fit) then counted as one that had
    written, and kept a result saved "failed" of a run that never ran. By the rule of a run's
    stages it leaves none; the sweep keeps the points before it, saved "failed", exit 1."""
    proc = call_cli("scale", "--phase", "randrw", "--set", "prep.file_size=8MiB",
                    "--clients", "1,16", "--duration", "2s", "--target", str(small_fs),
                    "--results", str(results), "--quiet", "--no-report", "--no-history",
                    "--no-charts")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "randrw files (16 x 8.00 MiB)" in proc.stderr, proc.stderr
    assert "partial result saved" not in proc.stderr, proc.stderr
    sweep = saved_result(results, "scale")
    assert sweep["status"] == "failed" and [p["clients"] for p in sweep["points"]] == [1]
    points = sorted(p.name for p in next(results.glob("*-scale-*")).joinpath("points").iterdir())
    assert len(points) == 1 and points[0].endswith("-c1"), points
