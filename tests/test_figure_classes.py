"""One class per figure section: the class a phase builds and serialises (`to_dict`) is the
class the readers read back (`from_dict`), in aiio/results below the phases, so the section's
two sides cannot drift. A section a real run saved reads back and writes again as it was
saved; a stored result of an older schema reads with what it lacks as None."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from aiio.results import result
from aiio.results.bursts import ClientRound, ClientTrainingRound
from aiio.run import runner

from .conftest import tiny_workload
from .test_kvcache import run as kv_run
from .test_vector_inserts import run_inserts
from .test_vector_phase import run_vector

ROOT = Path(__file__).parent.parent
READERS = Path(__file__).parent / "data" / "results-v3-readers"
# class name: why a class of that name is both where a figure is built and where it is read
SAME_NAME = {
    "CheckpointPlan": "the phase's plan (phases/shards.py) and what its describe() recorded",
}


def _classes(folder: str) -> set[str]:
    return {node.name for path in sorted((ROOT / folder).rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)}


def test_no_figure_class_is_defined_where_it_is_built_and_again_where_it_is_read() -> None:
    both = _classes("aiio/phases") & _classes("aiio/results")
    assert not both - set(SAME_NAME), sorted(both - set(SAME_NAME))


def _saved(folder: Path) -> dict:
    return json.loads((folder / "result.json").read_text())


def test_a_kvcache_runs_figures_read_back_as_they_were_saved(target: Path, results: Path) -> None:
    res = kv_run(target, results)
    doc = json.loads(json.dumps(res))
    kv = result.model(doc).kvcache
    assert kv is not None and kv.to_dict() == doc["aggregate"]["kvcache"]
    assert kv.verdict.word == doc["aggregate"]["kvcache"]["verdict"]["word"]


def test_a_stored_kvcache_result_from_before_the_duration_rates_reads_them_as_none() -> None:
    run = result.load(READERS / "20261203-083410-kvcache-demo-c2" / "result.json")
    kv = run.kvcache
    assert kv is not None and kv.requests_in_duration is None and kv.rate_window_s is None
    assert kv.requests == run.summary.figures["kvcache"]["requests"]
    assert kv.verdict.recorded and kv.verdict.word == "steady"


def test_a_vector_runs_figures_and_index_read_back_as_they_were_saved(
        target: Path, results: Path) -> None:
    doc = json.loads(json.dumps(run_vector(str(target), results, vector__queries=5)))
    run = result.model(doc)
    assert run.vector is not None and run.vector.to_dict() == doc["aggregate"]["vector"]
    assert run.vector_index.to_dict() == doc["aggregate"]["index"]


def test_a_vector_runs_insert_stream_reads_back_as_it_was_saved(target: Path,
                                                                 results: Path) -> None:
    # a merge every 8 inserts at 50 a second: the first starts within the run's first quarter
    # second, so a client starved beside other work still merges (at 200 a second and a merge
    # every 60, a CI run's starved client made 8 of 384 inserts durable and never merged)
    doc = json.loads(json.dumps(run_inserts(target, results, vector__insert_rate=50,
                                            vector__merge_every=8)))
    run = result.model(doc)
    ins = run.inserts
    assert ins is not None and ins.to_dict() == doc["aggregate"]["inserts"]
    assert ins.merge_list and ins.merge_list[0].client in (0, 1) and ins.verdict.recorded, ins
    assert run.vector.to_dict() == doc["aggregate"]["vector"]


def test_a_stored_vector_result_from_before_its_verdict_keeps_its_own_overload_flag() -> None:
    run = result.load(READERS / "20261203-083420-vector-demo-c2" / "result.json")
    v = run.vector
    assert v is not None and v.verdict is None
    assert v.overloaded is run.summary.figures["vector"]["overloaded"]
    assert run.vector_index.vectors == 3000 and run.vector_index.path is None


def test_a_run_of_another_phase_has_none_of_them() -> None:
    run = result.load(READERS / "20261203-083424-randrw-demo-c2" / "result.json")
    assert run.kvcache is None and run.vector is None and run.inserts is None


# --- checkpoint bursts ---------------------------------------------------------------------

def _run(phase: str, target: Path, results: Path, **sets: object) -> dict:
    res, _ = runner.run(runner.RunRequest(phase, tiny_workload(**sets), str(target),
                                          str(results)))
    assert res["status"] == "ok", res.get("error")
    return json.loads(json.dumps(res))


def test_a_checkpoint_runs_bursts_read_back_as_they_were_saved(target: Path,
                                                                results: Path) -> None:
    doc = _run("checkpoint", target, results, checkpoint__size="2MiB", checkpoint__count=2)
    bursts = result.model(doc).checkpoint.bursts
    assert [b.to_dict() for b in bursts] == doc["aggregate"]["checkpoints"]
    assert bursts[1].n == 1 and bursts[1].read is not None and bursts[1].window_s is None
    # each client's rounds, as it sent them to the parent and the result saved them
    for c in doc["clients"]:
        rounds = [ClientRound.from_dict(r) for r in c["checkpoints"]]
        assert [r.to_dict() for r in rounds] == c["checkpoints"]
        assert [r.n for r in rounds] == [0, 1] and all(r.read is not None for r in rounds)
        assert rounds[1].write.start_s < rounds[1].read.start_s
    assert ClientRound.from_dict(doc["clients"][0]["checkpoints"][0]).write.durable


def test_checkpoints_during_training_read_back_with_what_they_cost(target: Path,
                                                                   results: Path) -> None:
    doc = _run("train", target, results, checkpoint__size="1MiB", checkpoint__every=1)
    run = result.model(doc)
    bursts = run.checkpoint.bursts
    assert [b.to_dict() for b in bursts] == doc["aggregate"]["checkpoint"]["checkpoints"]
    assert bursts and all(b.read is None and b.window_s is not None for b in bursts)
    for c in doc["clients"]:
        rounds = [ClientTrainingRound.from_dict(r) for r in c["checkpoints"]]
        assert [r.to_dict() for r in rounds] == c["checkpoints"] and rounds
        assert [r.round.n for r in rounds] == list(range(len(rounds)))
        for r in rounds:  # the stall is the parts the accelerator waited for, in one window
            assert r.round.read is None and r.round.write.files >= 1
            assert r.stall_s == pytest.approx(r.own_shard_s + r.wait_for_others_s + r.retire_s)
            assert r.end_s - r.start_s == pytest.approx(r.stall_s + r.release_lead_s)


def _reads_of_checkpoints(tree: ast.AST) -> bool:
    """`x["checkpoints"]` or `x.get("checkpoints", ...)` anywhere in `tree`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            key = node.slice
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and node.args):
            key = node.args[0]
        else:
            continue
        if isinstance(key, ast.Constant) and key.value == "checkpoints":
            return True
    return False


def test_the_parent_reads_its_clients_rounds_only_through_their_classes() -> None:
    """What a client sent of its checkpoints is read back in one place, by the round classes'
    `from_dict` (shards.every_round); a phase that read the records' keys itself could read
    a key the classes no longer write, or miss one they added."""
    found = [f"{path.name}:{fn.name}"
             for path in sorted((ROOT / "aiio" / "phases").glob("*.py"))
             for fn in ast.walk(ast.parse(path.read_text()))
             if isinstance(fn, ast.FunctionDef) and _reads_of_checkpoints(fn)]
    assert found == ["shards.py:every_round"], found


# --- huge counts ---------------------------------------------------------------------------

def test_a_count_past_a_floats_exact_integers_reads_back_as_recorded() -> None:
    """A count read through a float lost its last digits past 2**53 (9 PiB of bytes, a long
    run's requests over many hosts) and read as missing past a float's range: the reader
    printed, and wrote back, a count the run never recorded."""
    saved = _saved(READERS / "20261203-083410-kvcache-demo-c2")
    kv = saved["aggregate"]["kvcache"]
    huge = 2**53 + 1
    kv.update(requests=huge, context_tokens=10**30, generated_tokens=10**400)
    kv["hits"]["storage"] = huge
    got = result.model(saved).kvcache
    assert got is not None and got.requests == huge and got.hits["storage"] == huge
    assert got.context_tokens == 10**30 and got.generated_tokens == 10**400


def test_a_kvcache_result_missing_its_rates_still_draws_its_section() -> None:
    """The classes read a missing figure as None so a damaged result still opens; the
    report's KV-cache section then formatted the None rates as numbers, raised, and the
    whole section was dropped for 'could not be drawn'. A missing rate reads as missing."""
    from aiio import report

    for before in (True, False):  # a result from before the duration rates, and one after
        saved = _saved(READERS / "20261203-083410-kvcache-demo-c2")
        kv = saved["aggregate"]["kvcache"]
        if not before:
            kv.update(requests_in_duration=kv["requests"], rate_window_s=1.0)
        for key in ("requests", "requests_per_s", "tokens_per_s"):
            kv.pop(key)
        page = report.render(result.model(saved))
        assert "could not be drawn" not in page, before
        assert "tokens/s" in page, before
