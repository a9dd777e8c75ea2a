"""A sweep's table and verdict, made again from the run results of its points, are the ones it
stored: what the sweep reads of each run (through the typed result) gives the same rows,
verdict and charts (drawn from the table) as when the sweep ran.

tests/data/sweeps-v3/ holds real sweeps (1 and 2 clients) of every phase, made with the /3
code before the sweep read its runs through the typed model: train, prep, randrw, checkpoint,
load, all, vector and kvcache. tests/data/sweep-rows.json holds, for every stored run of
schema /1, /2 and /3, the table row a sweep made of it as its one point, computed by that same
code (`rows_of_stored_runs`); a run of each older schema is read through the same model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aiio.sweep import run

DATA = Path(__file__).parent / "data"
SWEEPS = sorted((DATA / "sweeps-v3").glob("*/result.json")) + \
    sorted((DATA / "results-v3").glob("*-scale-*/result.json"))
ROWS = DATA / "sweep-rows.json"
PHASES = {"train", "prep", "randrw", "checkpoint", "load", "all", "vector", "kvcache"}


def _doc(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _json(value: Any) -> Any:
    """As the result file holds it (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(value))


def test_the_stored_sweeps_cover_every_phase() -> None:
    assert {_doc(p)["phase"] for p in SWEEPS} == PHASES


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.parent.name)
def test_a_stored_sweep_tables_and_judges_its_points_as_it_did(path: Path) -> None:
    doc = _doc(path)
    rows = _json(run.table_rows(doc["points"], doc["phase"]))
    assert rows == doc["table"]
    assert _json(run.verdict({**doc, "table": rows}, doc["sweep"]["threshold"])) == \
        doc["verdict"]
    # the phase's own columns are those it declares, each figure found in every point
    declared = [key for key, _, _ in run.per_point.extras(doc["phase"])]
    assert all(list(row["figures"]) == declared for row in rows)


def _stored_runs() -> list[Path]:
    return sorted(p for schema in ("results-v1", "results-v2", "results-v3")
                  for p in (DATA / schema).glob("*/result.json")
                  if _doc(p).get("kind", "run") == "run")


def rows_of_stored_runs() -> dict[str, Any]:
    """Each stored run (folder name -> its one-point table row)."""
    out = {}
    for path in _stored_runs():
        doc = _doc(path)
        point = {"clients": len(doc["clients"]), "repeat": 0, "result": doc}
        out[f"{path.parent.parent.name}/{path.parent.name}"] = \
            _json(run.table_rows([point], doc["phase"]))
    return out


def test_a_stored_run_of_each_schema_makes_the_row_it_made() -> None:
    want = _doc(ROWS)
    assert {name.split("/")[0] for name in want} == {"results-v1", "results-v2", "results-v3"}
    assert rows_of_stored_runs() == want


def users_rows_of_stored_runs() -> dict[str, Any]:
    """Each KV-cache run of the stored sweep (point -> goal -> what it gives a row over
    users and a probe of the search over users)."""
    from aiio.sweep import find_users, users_sweep

    [path] = [p for p in SWEEPS if _doc(p)["phase"] == "kvcache"]
    out = {}
    for n, point in enumerate(_doc(path)["points"]):
        goals = [g["name"] for g in point["result"]["aggregate"]["kvcache"]["goals"]]
        out[str(n)] = {goal: _json({"row": users_sweep.run_figures(point["result"], goal),
                                    "probe": find_users.probe_figures(point["result"], goal)})
                       for goal in [*goals, "no such goal"]}
    return out


def test_a_stored_kvcache_run_gives_the_users_row_and_probe_it_gave() -> None:
    want = _doc(DATA / "users-rows.json")
    assert len(want) == 2 and all(len(goals) > 1 for goals in want.values())
    assert users_rows_of_stored_runs() == want


def _runs_of(phase: str) -> list[Path]:
    return [p for p in _stored_runs() if _doc(p)["phase"] == phase]


def mlperf_figures_of_stored_runs() -> dict[str, Any]:
    """MLPerf's figures of each stored train and checkpoint run (folder -> figures)."""
    from aiio.sweep import mlperf_checks as checks
    from aiio.sweep import mlperf_rules as rules

    out: dict[str, Any] = {}
    trains = [_doc(p) for p in _runs_of("train")]
    for path in _runs_of("train"):
        res = _doc(path)
        out[path.parent.name] = {"run": rules.training_run(res),
                                 "hosts": rules.host_memory(res)}
    out["summary"] = rules.training_summary(trains[0], trains[1:], {"met": True})
    for path in _runs_of("checkpoint"):
        res = _doc(path)
        out[path.parent.name] = {"summary": rules.checkpoint_summary(res),
                                 "restore": checks.restore_cache_check(res)}
    return _json(out)


def test_stored_runs_give_the_mlperf_figures_they_gave() -> None:
    want = _doc(DATA / "mlperf-figures.json")
    runs = [v["run"] for v in want.values() if "run" in v]
    assert len(runs) == 4 and any(r["au_per_epoch"] for r in runs)
    assert all(v["summary"]["write"] for v in want.values() if "restore" in v)
    assert mlperf_figures_of_stored_runs() == want
