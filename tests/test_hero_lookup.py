"""A run reads the fio results it is paired with before it measures: the hero the live view
shows is the one the saved result is set against, whatever lands in the folder meanwhile."""

from __future__ import annotations

import json
from pathlib import Path

from aiio.fio import hero
from aiio.run import runner
from aiio.ui import QuietUI

from .conftest import tiny_workload

LATE = "20990101-000000-fio-late"


def _fio_result(folder: Path, target: Path) -> None:
    """A successful fio result on `target` holding seq_read, as `aiio fio` saves one."""
    (folder / LATE).mkdir(parents=True)
    (folder / LATE / "result.json").write_text(json.dumps({
        "schema": "aiio.result/1", "kind": "fio", "status": "ok", "id": LATE, "saved_at": 1.0,
        "target": {"path": str(target)}, "options": {"iodepth": 1},
        "tests": {"seq_read": {"description": "sequential read", "block_size": 1 << 20,
                               "clients": [{}, {}],
                               "aggregate": {"mib_s": 100.0, "iops": 100.0}}}}))


class FioLandsDuringTheRun(QuietUI):
    """Shows nothing; while the clients run, a fio result appears in the results folder."""

    def __init__(self, results: Path, target: Path) -> None:
        self.results, self.target, self.heroes = results, target, []

    def start(self, label, total, clients, *, compute_s=None, hero=None) -> None:
        self.heroes.append(hero)

    def tick(self, nbytes, units, elapsed) -> None:
        if not (self.results / LATE).exists():
            _fio_result(self.results, self.target)


def test_pairing_uses_the_fio_results_read_before_measuring(target, results):
    ui = FioLandsDuringTheRun(results, target)
    req = runner.RunRequest("train", tiny_workload(train__epochs=40), str(target), str(results),
                            hero=hero.Pairing(results))
    res, _ = runner.run(req, ui)
    assert (results / LATE).exists(), "the run ended before its first tick"
    assert ui.heroes == [None]  # the live view had no hero ...
    assert LATE not in json.dumps(res["hero"])  # ... and the result is paired with none
    assert "no fio result for this target" in res["hero"]["text"]
