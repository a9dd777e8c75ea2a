"""The live view's % of fio holds the running aggregate against the hero the saved result is
paired with: the same test at the run's concurrency (fio jobs x iodepth = clients x streams
per client), and none when the live counter mixes directions no single fio test has (prep's
reads plus writes were shown against seq_read)."""

from __future__ import annotations

import json
from pathlib import Path

from aiio.fio import hero
from aiio.run import runner
from aiio.ui import QuietUI

from .conftest import tiny_workload


def _fio_result(results: Path, target: Path, name: str, saved_at: float, iodepth: int,
                mib_s: float, tests: tuple[str, ...] = ("seq_read",), ramp_s: float = 0.0) -> None:
    """A successful fio result on `target`, 2 jobs at `iodepth` after a ramp of `ramp_s`, as
    `aiio fio` saves one."""
    (results / name).mkdir(parents=True)
    entry = {"block_size": 1 << 20, "clients": [{}, {}],
             "aggregate": {"mib_s": mib_s, "iops": mib_s}}
    (results / name / "result.json").write_text(json.dumps({
        "schema": "aiio.result/1", "kind": "fio", "status": "ok", "id": name,
        "saved_at": saved_at, "target": {"path": str(target)},
        "options": {"iodepth": iodepth, "ramp_s": ramp_s},
        "tests": {t: {**entry, "description": t} for t in tests}}))


class Watched(QuietUI):
    """Shows nothing; keeps the hero the live view was given."""

    def __init__(self) -> None:
        self.heroes: list = []

    def start(self, label, total, clients, *, compute_s=None, hero=None) -> None:
        self.heroes.append(hero)


def _live_hero(phase: str, w, target: Path, results: Path) -> tuple[dict | None, dict]:
    ui = Watched()
    res, _ = runner.run(runner.RunRequest(phase, w, str(target), str(results),
                                          hero=hero.Pairing(results)), ui)
    assert res["status"] == "ok", res.get("error")
    [shown] = ui.heroes
    return shown, res


def test_live_hero_is_the_one_at_the_runs_concurrency(target, results):
    # 2 clients x 2 loader threads: the older result at iodepth 2 matches, the newer does not
    _fio_result(results, target, "20260101-000000-fio-c2", 1.0, iodepth=2, mib_s=100.0)
    _fio_result(results, target, "20260102-000000-fio-c2", 2.0, iodepth=1, mib_s=900.0)
    shown, res = _live_hero("train", tiny_workload(train__read_threads=2), target, results)
    assert res["hero"]["fio_result_id"] == "20260101-000000-fio-c2"
    assert shown is not None and shown["fio_mib_s"] == 100.0, shown


def test_live_hero_of_prep_is_none_its_counter_is_reads_plus_writes(target, results):
    w = tiny_workload(prep__threads=1, prep__iodepth=1)
    _fio_result(results, target, "20260101-000000-fio-c2", 1.0, iodepth=1, mib_s=100.0,
                tests=("seq_read", "seq_write"))
    shown, res = _live_hero("prep", w, target, results)
    assert {p["test"] for p in res["hero"]["pairs"]} == {"seq_read", "seq_write"}
    assert shown is None, shown
